-- The work of game-session's commit script (src/store/redis_store.rs, COMMIT) with the
-- same keys and arguments but without its early returns (version mismatch, move already
-- applied), so that every call writes: version and idempotency reads, event and action
-- appends, state write, move answer, deadline, publish. Used by redis_bench.sh as the
-- "comparable EVALSHA" of the load benchmark.
-- KEYS: 1 state, 2 log, 3 moves, 4 deadlines, 5 rooms, 6 outbox, 7 actions
-- ARGV: as COMMIT (13 n events, 14 m actions, 15 reset, 16 seq, 17.. events, actions)
local cur = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if ARGV[3] ~= '' then
  local done = redis.call('HGET', KEYS[3], ARGV[3])
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
if ARGV[9] ~= '' then redis.call('XADD', KEYS[6], '*', 'record', ARGV[9]) end
if ARGV[12] ~= '' then
  for _, k in ipairs({1, 2, 3, 7}) do redis.call('EXPIRE', KEYS[k], ARGV[12]) end
end
redis.call('PUBLISH', ARGV[10], ARGV[11])
return {1, v}
