-- ARGV: id.
local id = ARGV[1]
local k = rkey(id)
local meta = redis.call('HGET', k, 'meta')
if not meta then return 0 end
redis.call('HSET', k, 'status', 'closed')
redis.call('ZREM', L .. ':public', id)
return 1
