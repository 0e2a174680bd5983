-- KEYS: 1 leases, 2 swept (the instance's shard); ARGV: 1 instance, 2 until ms
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], 'GT', ARGV[2], ARGV[1])
return 1
