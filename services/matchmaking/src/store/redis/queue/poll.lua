-- ARGV: id, now, ttl.
local id = ARGV[1]
local k = tkey(id)
local f = redis.call('HMGET', k, 'state', 'att')
if not f[1] then return false end
if f[1] == 'queued' and f[2] == '1' then
  redis.call('ZADD', Q .. ':alive', tonumber(ARGV[2]) + tonumber(ARGV[3]), id)
end
return view(id)
