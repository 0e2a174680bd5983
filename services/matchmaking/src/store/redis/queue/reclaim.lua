-- ARGV: now, lease, max. Each group handed out gets the next lease number
-- (the fencing token of RELEASE and DEFER).
local now, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
local due = redis.call('ZRANGEBYSCORE', Q .. ':pending', '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, room in ipairs(due) do
  local gk = Q .. ':g:' .. room
  local js = redis.call('GET', gk)
  if js then
    local g = cjson.decode(js)
    g.lease = (tonumber(g.lease) or 0) + 1
    js = cjson.encode(g)
    redis.call('SET', gk, js)
    redis.call('ZADD', Q .. ':pending', now + lease, room)
    out[#out + 1] = js
  else
    redis.call('ZREM', Q .. ':pending', room)
  end
end
return out
