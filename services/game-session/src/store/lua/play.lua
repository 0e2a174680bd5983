-- Plain plays of several rooms of one shard, each its own atomic step (store/plain_play.rs,
-- store/play_batch.rs): version check, idempotency check and move answer (the state's
-- field `m:seat:client_move_id`), its events on the log (compact); then the rooms'
-- deadlines and one notification for them all. A
-- room's snapshot is not rewritten: the plays on the log after it (from seq `st`, set by
-- the first of them) are its tail, replayed on load. Each room is named by the prefix of
-- its keys, from which its keys are built; they and the shard's keys share its hash tag
-- (one slot: a cluster node checks no more).
-- KEYS: the rooms' key prefixes ('P:{gs:S}:room:ID:'), all of one shard
-- ARGV: 1 '1' to report the primary's connected replicas or '', then for each room:
--       expected version, seat, client move id or '', the room's next deadline, the
--       number of events n, the n events (compact; the client move id is appended to the
--       first, card_played)
-- Returns two values a room: {0, 0} another writer changed it first, {2, seq} the move
-- was already played (answered by seq), {1, version} written; then the connected
-- replicas when asked.
local out, deadlines, notices = {}, {}, {}
local shard = string.sub(KEYS[1], 1, string.find(KEYS[1], '}:', 1, true) + 1)
local a = 2
for _, room in ipairs(KEYS) do
  local version, seat, move, deadline = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local n = tonumber(ARGV[a + 4])
  local events = a + 5
  a = events + n
  local state = room .. 'state'
  local answer = 'm:' .. seat .. ':' .. move
  local cur = redis.call('HMGET', state, 'v', 'q', 'st', answer)
  local first = tonumber(cur[2] or '0') + 1
  if not cur[1] or tonumber(cur[1]) ~= tonumber(version) then
    out[#out + 1], out[#out + 2] = 0, 0
  elseif move ~= '' and cur[4] then
    out[#out + 1], out[#out + 2] = 2, tonumber(cur[4])
  else
    ARGV[events] = ARGV[events] .. move
    redis.call('RPUSH', room .. 'log', unpack(ARGV, events, events + n - 1))
    local v = tonumber(cur[1] or '0') + 1
    local last = first + n - 1
    local set = {'v', v, 'q', last}
    if cur[3] == '' or not cur[3] then set[5], set[6] = 'st', first - 1 end
    if move ~= '' then set[#set + 1], set[#set + 2] = answer, first end
    redis.call('HSET', state, unpack(set))
    local id = string.sub(room, #shard + 6, -2)
    deadlines[#deadlines + 1], deadlines[#deadlines + 2] = deadline, id
    notices[#notices + 1] = last .. ' ' .. id
    out[#out + 1], out[#out + 2] = 1, v
  end
end
if #notices > 0 then
  redis.call('ZADD', shard .. 'deadlines', unpack(deadlines))
  redis.call('SPUBLISH', shard .. 'notify', table.concat(notices, '\n'))
end
if ARGV[1] == '1' then
  local info = redis.call('INFO', 'replication')
  out[#out + 1] = tonumber(string.match(info, 'connected_slaves:(%d+)')) or 0
end
return out
