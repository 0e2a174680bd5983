-- ARGV: room, lease, now, grace. Only the current lease holder releases.
local room, now, grace = ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4])
local gk = Q .. ':g:' .. room
local js = redis.call('GET', gk)
if not js then return 0 end
local g = cjson.decode(js)
if tonumber(g.lease) ~= tonumber(ARGV[2]) then return 0 end
for _, m in ipairs(g.members) do
  local k = tkey(m.ticket_id)
  if redis.call('HGET', k, 'state') == 'pending' then
    redis.call('HSET', k, 'state', 'queued', 'att', '0', 'unav', '1')
    redis.call('ZADD', Q .. ':alive', now + grace, m.ticket_id)
    notify(m.ticket_id)
  end
end
redis.call('DEL', gk)
redis.call('ZREM', Q .. ':pending', room)
return 1
