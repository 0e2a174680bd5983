-- ARGV: room, lease, retry at. Only the current lease holder defers; the
-- group (room id included) stays, its members wait detached and flagged
-- unavailable, and RECLAIM hands it out again from `retry at`.
local room = ARGV[1]
local gk = Q .. ':g:' .. room
local js = redis.call('GET', gk)
if not js then return 0 end
local g = cjson.decode(js)
if tonumber(g.lease) ~= tonumber(ARGV[2]) then return 0 end
for _, m in ipairs(g.members) do
  local k = tkey(m.ticket_id)
  if redis.call('HGET', k, 'state') == 'pending' then
    redis.call('HSET', k, 'att', '0', 'unav', '1')
    notify(m.ticket_id)
  end
end
redis.call('ZADD', Q .. ':pending', tonumber(ARGV[3]), room)
return 1
