-- ARGV: room, now, grace, then (ticket, match JSON) pairs.
local room, now, grace = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local gk = Q .. ':g:' .. room
if redis.call('EXISTS', gk) == 0 then return 'gone' end
local all = true
for i = 4, #ARGV, 2 do
  if redis.call('HGET', tkey(ARGV[i]), 'state') ~= 'pending' then all = false end
end
for i = 4, #ARGV, 2 do
  local t = ARGV[i]
  local k = tkey(t)
  local f = redis.call('HMGET', k, 'state', 'att', 'fmt', 'rating', 'enq')
  if all then
    redis.call('HSET', k, 'state', 'matched', 'res', ARGV[i + 1])
    redis.call('ZADD', Q .. ':alive', now + grace, t)
    notify(t)
  elseif f[1] == 'pending' then
    redis.call('HSET', k, 'state', 'queued')
    if f[2] == '1' then pool_add(t, f[4], f[5]) end
    redis.call('ZADD', Q .. ':alive', now + grace, t)
    notify(t)
  end
end
redis.call('DEL', gk)
redis.call('ZREM', Q .. ':pending', room)
if all then return 'committed' end
return 'aborted'
