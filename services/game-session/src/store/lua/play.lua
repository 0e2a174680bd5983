-- A plain play's atomic step (store/plain_play.rs): version check, idempotency check and
-- move answer, its events on the log (compact), the room's deadline, the notification.
-- The room's snapshot is not rewritten: the plays on the log after it (from seq `st`,
-- set by the first of them) are the room's tail, replayed on load. It names one key, the
-- room's state; the others are built from it and share its hash tag (one slot: a cluster
-- node checks no more).
-- KEYS: 1 state ('P:{gs:S}:room:ID:state')
-- ARGV: 1 expected version, 2 seat, 3 client move id or '', 4 the room's next deadline,
--       5 '1' to report the primary's connected replicas or '', 6.. the events (compact;
--       the client move id is appended to the first, card_played)
local state = KEYS[1]
local room = string.sub(state, 1, -6)
local tag = string.find(state, '}:', 1, true)
local shard = string.sub(state, 1, tag + 1)
local id = string.sub(state, tag + 7, -7)
local cur = redis.call('HMGET', state, 'v', 'q', 'st')
if not cur[1] or tonumber(cur[1]) ~= tonumber(ARGV[1]) then return {0, 0} end
local first = tonumber(cur[2] or '0') + 1
if ARGV[3] ~= '' then
  local move = ARGV[2] .. ':' .. ARGV[3]
  if redis.call('HSETNX', room .. 'moves', move, first) == 0 then
    return {2, tonumber(redis.call('HGET', room .. 'moves', move))}
  end
end
local n = #ARGV - 5
ARGV[6] = ARGV[6] .. ARGV[3]
redis.call('RPUSH', room .. 'log', unpack(ARGV, 6, 5 + n))
local v = tonumber(cur[1] or '0') + 1
local last = first + n - 1
if cur[3] == '' or not cur[3] then
  redis.call('HSET', state, 'v', v, 'q', last, 'st', first - 1)
else
  redis.call('HSET', state, 'v', v, 'q', last)
end
redis.call('ZADD', shard .. 'deadlines', ARGV[4], id)
redis.call('SPUBLISH', shard .. 'notify', last .. ' ' .. id)
if ARGV[5] == '1' then
  local info = redis.call('INFO', 'replication')
  return {1, v, tonumber(string.match(info, 'connected_slaves:(%d+)')) or 0}
end
return {1, v}
