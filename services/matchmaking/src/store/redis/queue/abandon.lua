-- ARGV: room, lease, now, grace. Only the current lease holder gives a group up: its
-- room could not be made in the attempts allowed. Its pending members' searches end
-- (cancelled, cause room_unavailable), kept `grace` for their streams and resumes.
local room, now, grace = ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4])
local gk = Q .. ':g:' .. room
local js = redis.call('GET', gk)
if not js then return 0 end
local g = cjson.decode(js)
if tonumber(g.lease) ~= tonumber(ARGV[2]) then return 0 end
for _, m in ipairs(g.members) do
  local k = tkey(m.ticket_id)
  if redis.call('HGET', k, 'state') == 'pending' then
    redis.call('HSET', k, 'state', 'cancelled', 'res', 'room_unavailable', 'unav', '0')
    redis.call('ZADD', Q .. ':alive', now + grace, m.ticket_id)
    notify(m.ticket_id)
  end
end
redis.call('DEL', gk)
redis.call('ZREM', Q .. ':pending', room)
return 1
