-- Claims the expired leases of one shard.
-- KEYS: 1 leases, 2 swept; ARGV: 1 now ms, 2 claim ms, 3 limit
-- The swept mark comes first: from then on the instance can neither refresh its lease
-- nor add seats, even if it was only slow. The lease's new score is this claim's end:
-- if the sweeper dies, another claims the instance again then.
local out = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, instance in ipairs(out) do
  redis.call('ZADD', KEYS[2], ARGV[1], instance)
  redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), instance)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', tonumber(ARGV[1]) - 86400000)
return out
