-- ARGV: now, retention (ms), max. Closes up to `max` of the mode's rooms whose expiry
-- (`P:{lb:F}:expiry`) is due and that still have an open seat: status closed, out of
-- the public list, the room's hash kept `retention` ms more (JoinRoom by code answers
-- "closed" until then). A full or closed room just leaves the index. Returns
-- {id, code}* of the rooms closed; the caller expires their locator and code keys,
-- which live in other slots.
local keep, max = tonumber(ARGV[2]), tonumber(ARGV[3])
local due = redis.call('ZRANGEBYSCORE', L .. ':expiry', '-inf', ARGV[1], 'LIMIT', 0, max)
local out = {}
for _, id in ipairs(due) do
  redis.call('ZREM', L .. ':expiry', id)
  local k = rkey(id)
  local f = redis.call('HMGET', k, 'status', 'meta')
  if f[1] == 'open' then
    redis.call('HSET', k, 'status', 'closed')
    redis.call('ZREM', L .. ':public', id)
    redis.call('PEXPIRE', k, keep)
    out[#out + 1] = id
    out[#out + 1] = cjson.decode(f[2]).code
  end
end
return out
