-- ARGV: id, user, guest, fmt, rating, bots, now, ttl, grace.
-- Returns {resumed} .. view, {'owner'} if the id belongs to another account,
-- or {'ingroup', old} if the account's previous ticket is in a formed group.
local id, user = ARGV[1], ARGV[2]
local now, ttl, grace = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local k = tkey(id)
local resumed = '0'
if redis.call('EXISTS', k) == 1 then
  if redis.call('HGET', k, 'user') ~= user then return {'owner'} end
  resumed = '1'
  if redis.call('HGET', k, 'att') == '0' then
    redis.call('HSET', k, 'att', '1', 'unav', '0')
    if redis.call('HGET', k, 'state') == 'queued' then
      local f = redis.call('HMGET', k, 'fmt', 'rating', 'enq')
      pool_add(id, f[1], f[2], f[3])
      redis.call('ZADD', Q .. ':alive', now + ttl, id)
    end
  end
else
  local old = redis.call('GET', Q .. ':u:' .. user)
  if old and old ~= id then
    local ok = tkey(old)
    local ost = redis.call('HGET', ok, 'state')
    if ost == 'queued' then
      pool_rem(old, redis.call('HGET', ok, 'fmt'))
      redis.call('HSET', ok, 'state', 'cancelled', 'res', 'superseded')
      redis.call('ZADD', Q .. ':alive', now + grace, old)
      notify(old)
    elseif ost == 'pending' then
      -- Its group is final (the room may exist already): refuse the new one.
      return {'ingroup', old}
    end
  end
  redis.call('HSET', k, 'user', user, 'guest', ARGV[3], 'fmt', ARGV[4], 'rating', ARGV[5],
    'enq', ARGV[7], 'bots', ARGV[6], 'state', 'queued', 'att', '1', 'unav', '0', 'res', '')
  pool_add(id, ARGV[4], ARGV[5], ARGV[7])
  redis.call('ZADD', Q .. ':alive', now + ttl, id)
  redis.call('SET', Q .. ':u:' .. user, id)
end
local v = view(id)
table.insert(v, 1, resumed)
return v
