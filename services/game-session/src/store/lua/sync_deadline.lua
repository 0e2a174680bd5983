-- Resets a room's deadline from its state, if the room is still at the version read.
-- KEYS: 1 state, 2 the shard's deadlines; ARGV: 1 version, 2 room id, 3 deadline or ''
if tonumber(redis.call('HGET', KEYS[1], 'v') or '0') ~= tonumber(ARGV[1]) then return 0 end
if ARGV[3] == '' then redis.call('ZREM', KEYS[2], ARGV[2])
else redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2]) end
return 1
