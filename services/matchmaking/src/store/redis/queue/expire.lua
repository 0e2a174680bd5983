-- ARGV: now, max.
local now = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', Q .. ':alive', '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local dropped = 0
for _, id in ipairs(due) do
  local k = tkey(id)
  local f = redis.call('HMGET', k, 'state', 'fmt', 'user')
  if not f[1] then
    redis.call('ZREM', Q .. ':alive', id)
  elseif f[1] == 'pending' then
    redis.call('ZADD', Q .. ':alive', now + 60000, id)
  else
    if f[1] == 'queued' then
      pool_rem(id, f[2])
      dropped = dropped + 1
      notify(id)
    end
    redis.call('DEL', k)
    redis.call('ZREM', Q .. ':alive', id)
    local uk = Q .. ':u:' .. f[3]
    if redis.call('GET', uk) == id then redis.call('DEL', uk) end
  end
end
return dropped
