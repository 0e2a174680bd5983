-- KEYS: 1 leases, 2 swept, 3 the instance's seats (all in the instance's shard)
-- ARGV: 1 instance, 2 seat, 3 until ms
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('ZADD', KEYS[1], 'GT', ARGV[3], ARGV[1])
return 1
