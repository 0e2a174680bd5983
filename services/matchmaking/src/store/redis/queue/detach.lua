-- ARGV: id, now, grace.
local id = ARGV[1]
local k = tkey(id)
local f = redis.call('HMGET', k, 'state', 'att', 'fmt')
if not f[1] or f[2] ~= '1' then return 0 end
redis.call('HSET', k, 'att', '0')
if f[1] == 'queued' then
  pool_rem(id)
  redis.call('ZADD', Q .. ':alive', tonumber(ARGV[2]) + tonumber(ARGV[3]), id)
end
return 1
