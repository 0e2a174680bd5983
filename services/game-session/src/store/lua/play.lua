-- Plain plays of several rooms of one shard, each its own atomic step (store/plain_play.rs,
-- store/play_batch.rs): the version bumped and checked, the play's events appended to the
-- log (compact; the first, card_played, ends with the client move id, which is the move's
-- answer: its seq is its index on the log + 1); then the rooms' deadlines and one
-- notification for them all. Two calls a play: the room's snapshot, `st` and `q` stay as
-- the last other commit wrote them (`q` is the snapshot's seq, unless `st` names it:
-- rooms from releases before this form); the plays on the log after it are its tail,
-- replayed on load. Each room is named by the prefix of its keys, from which its keys are
-- built; they and the shard's keys share its hash tag (one slot: a cluster node checks no
-- more).
-- KEYS: the rooms' key prefixes ('P:{gs:S}:room:ID:'), all of one shard
-- ARGV: 1 '1' to report the primary's connected replicas or '', then for each room:
--       expected version, the room's next deadline, the number of events n, the n events
-- Returns two values a room: {0, 0} another writer changed it first (nothing written),
-- {1, version} written; then the connected replicas when asked.
local out, deadlines, notices = {}, {}, {}
local shard = string.sub(KEYS[1], 1, string.find(KEYS[1], '}:', 1, true) + 1)
local a = 2
for _, room in ipairs(KEYS) do
  local version, deadline, n = tonumber(ARGV[a]), ARGV[a + 1], tonumber(ARGV[a + 2])
  local events = a + 3
  a = events + n
  local state = room .. 'state'
  local v = redis.call('HINCRBY', state, 'v', 1)
  if v ~= version + 1 then
    -- Undone: a room that did not exist is not created, a changed one keeps its version.
    if v == 1 then redis.call('DEL', state) else redis.call('HINCRBY', state, 'v', -1) end
    out[#out + 1], out[#out + 2] = 0, 0
  else
    local last = redis.call('RPUSH', room .. 'log', unpack(ARGV, events, events + n - 1))
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
