-- Plain plays of several rooms of one shard, each its own atomic step (store/plain_play.rs,
-- store/play_batch.rs): version check, idempotency check and move answer, its events on
-- the log (compact), the room's deadline; then one notification for them all. A room's
-- snapshot is not rewritten: the plays on the log after it (from seq `st`, set by the
-- first of them) are its tail, replayed on load. Each room is named by one key, its
-- state; its other keys are built from it and share its hash tag, as do the shard's (one
-- slot: a cluster node checks no more).
-- KEYS: the rooms' state keys ('P:{gs:S}:room:ID:state'), all of one shard
-- ARGV: 1 '1' to report the primary's connected replicas or '', then for each room:
--       expected version, seat, client move id or '', the room's next deadline, the
--       number of events n, the n events (compact; the client move id is appended to the
--       first, card_played)
-- Returns two values a room: {0, 0} another writer changed it first, {2, seq} the move
-- was already played (answered by seq), {1, version} written; then the connected
-- replicas when asked.
local out, notices, shard = {}, {}, ''
local a = 2
for _, state in ipairs(KEYS) do
  local version, seat, move, deadline = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local n = tonumber(ARGV[a + 4])
  local events = a + 5
  a = events + n
  local room = string.sub(state, 1, -6)
  local tag = string.find(state, '}:', 1, true)
  shard = string.sub(state, 1, tag + 1)
  local cur = redis.call('HMGET', state, 'v', 'q', 'st')
  local first = tonumber(cur[2] or '0') + 1
  if not cur[1] or tonumber(cur[1]) ~= tonumber(version) then
    out[#out + 1], out[#out + 2] = 0, 0
  elseif move ~= '' and redis.call('HSETNX', room .. 'moves', seat .. ':' .. move, first) == 0 then
    out[#out + 1], out[#out + 2] = 2, tonumber(redis.call('HGET', room .. 'moves', seat .. ':' .. move))
  else
    ARGV[events] = ARGV[events] .. move
    redis.call('RPUSH', room .. 'log', unpack(ARGV, events, events + n - 1))
    local v = tonumber(cur[1]) + 1
    local last = first + n - 1
    if cur[3] == '' or not cur[3] then
      redis.call('HSET', state, 'v', v, 'q', last, 'st', first - 1)
    else
      redis.call('HSET', state, 'v', v, 'q', last)
    end
    local id = string.sub(state, tag + 7, -7)
    redis.call('ZADD', shard .. 'deadlines', deadline, id)
    notices[#notices + 1] = last .. ' ' .. id
    out[#out + 1], out[#out + 2] = 1, v
  end
end
if #notices > 0 then redis.call('SPUBLISH', shard .. 'notify', table.concat(notices, '\n')) end
if ARGV[1] == '1' then
  local info = redis.call('INFO', 'replication')
  out[#out + 1] = tonumber(string.match(info, 'connected_slaves:(%d+)')) or 0
end
return out
