-- One room's atomic step: version check, idempotency check (the moves hash; the state's
-- `m:` field where releases before play.lua's present form wrote it), state, log append,
-- move answer (in the moves hash), the room's deadline and listing in its shard, outbox,
-- notification. The state written is a snapshot: the plain plays after the previous one
-- (play.lua: on the log after seq `q`, or `st` where a release before that form named it)
-- are in it, so their card_played (first byte 1) go to the action log, before this step's
-- actions, and `q` names this snapshot's seq (`st` no longer names a seq).
-- Every key is in the room's shard slot ({gs:S}); the notification is a shard channel
-- of that slot (SPUBLISH), declared as KEYS[8].
-- KEYS: 1 state, 2 log, 3 moves, 4 deadlines, 5 rooms, 6 outbox, 7 actions, 8 channel
-- ARGV: 1 expected version, 2 room state (store/codec.rs), 3 move key or '', 4 move seq, 5 status flag,
--       6 deadline or '', 7 room id, 8 created ms, 9 outbox payload or '',
--       10 the finishing action's trace context (with the outbox payload), 11 notice, 12 ttl seconds or '', 13 number of events n,
--       14 number of actions m, 15 '1' to start a new action log or '', 16 last seq,
--       17..16+n events, 17+n..16+n+m actions, 17+n+m '1' to report the primary's
--       connected replicas (a third value; the store waits for them only if there are
--       enough: a WAIT that must time out would block the shared connection)
local head = redis.call('HMGET', KEYS[1], 'v', 'st', 'q')
local cur = tonumber(head[1] or '0')
if cur ~= tonumber(ARGV[1]) then return {0, 0} end
if ARGV[3] ~= '' then
  local done = redis.call('HGET', KEYS[1], 'm:' .. ARGV[3]) or redis.call('HGET', KEYS[3], ARGV[3])
  if done then return {2, tonumber(done)} end
end
local from = tonumber(head[2] or '') or tonumber(head[3] or '')
if from then
  local played = {}
  for _, e in ipairs(redis.call('LRANGE', KEYS[2], from, -1)) do
    if string.byte(e, 1) == 1 then played[#played + 1] = e end
  end
  for i = 1, #played, 500 do
    redis.call('RPUSH', KEYS[7], unpack(played, i, math.min(i + 499, #played)))
  end
end
local n = tonumber(ARGV[13])
local m = tonumber(ARGV[14])
for i = 1, n, 500 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, 16 + i, 16 + math.min(i + 499, n)))
end
if ARGV[15] ~= '' then redis.call('DEL', KEYS[7]) end
for i = 1, m, 500 do
  redis.call('RPUSH', KEYS[7], unpack(ARGV, 16 + n + i, 16 + n + math.min(i + 499, m)))
end
local v = cur + 1
redis.call('HSET', KEYS[1], 'v', v, 'data', ARGV[2], 'st', ARGV[5], 'q', ARGV[16])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[3], ARGV[3], ARGV[4]) end
if ARGV[6] == '' then
  redis.call('ZREM', KEYS[4], ARGV[7])
else
  redis.call('ZADD', KEYS[4], ARGV[6], ARGV[7])
end
if cur == 0 then redis.call('ZADD', KEYS[5], ARGV[8], ARGV[7]) end
if ARGV[9] ~= '' then redis.call('XADD', KEYS[6], '*', 'record', ARGV[9], 'trace', ARGV[10]) end
if ARGV[12] ~= '' then
  for _, k in ipairs({1, 2, 3, 7}) do redis.call('EXPIRE', KEYS[k], ARGV[12]) end
end
redis.call('SPUBLISH', KEYS[8], ARGV[11])
if ARGV[17 + n + m] == '1' then
  local info = redis.call('INFO', 'replication')
  return {1, v, tonumber(string.match(info, 'connected_slaves:(%d+)')) or 0}
end
return {1, v}
