-- Claims a due room: moves its deadline to the claim's end if it is still due.
-- KEYS: 1 the shard's deadlines; ARGV: 1 room id, 2 now ms, 3 claim end ms
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if s and tonumber(s) <= tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
  return 1
end
return 0
