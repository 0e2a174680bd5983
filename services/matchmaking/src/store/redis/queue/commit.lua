-- ARGV: room, now, grace, then (ticket, match JSON) pairs. Each member is read once
-- (one HMGET); their deadlines are written with one ZADD.
local room, now, grace = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
-- The group's record goes first: none (released, abandoned or committed already)
-- leaves everything as it is.
if redis.call('DEL', Q .. ':g:' .. room) == 0 then return 'gone' end
local fields = {}
local all = true
for i = 4, #ARGV, 2 do
  local f = redis.call('HMGET', tkey(ARGV[i]), 'state', 'att', 'rating', 'enq')
  fields[i] = f
  if f[1] ~= 'pending' then all = false end
end
local alive = {}
for i = 4, #ARGV, 2 do
  local t, f = ARGV[i], fields[i]
  if all then
    redis.call('HSET', tkey(t), 'state', 'matched', 'res', ARGV[i + 1])
  elseif f[1] == 'pending' then
    redis.call('HSET', tkey(t), 'state', 'queued')
    if f[2] == '1' then pool_add(t, f[3], f[4]) end
  end
  if all or f[1] == 'pending' then
    alive[#alive + 1] = now + grace
    alive[#alive + 1] = t
    notify(t)
  end
end
batched('ZADD', Q .. ':alive', alive)
redis.call('ZREM', Q .. ':pending', room)
if all then return 'committed' end
return 'aborted'
