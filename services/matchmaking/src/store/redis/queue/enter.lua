-- A search enters its format's queue: the last step of a new search (after the claim
-- of its locator, the swap in the account's slot and the cancel of the tickets it
-- superseded), or a resume. ARGV: id, user, guest, rating, bots, now, ttl, create,
-- blocks (the accounts this one blocks, space-separated; kept from the first insert).
--
-- - The ticket exists: a resume (a detached ticket goes back into the pool with its
--   queue time) → {'1', view}; of another account → {'owner'}.
-- - It is a tombstone (superseded or cancelled before it was inserted): it stays
--   cancelled; its fields are filled in so it reads like any ticket → {'0', view}.
-- - It does not exist: inserted when `create` is '1' → {'0', view}, else {'absent'}.
local id, user = ARGV[1], ARGV[2]
local now, ttl = tonumber(ARGV[6]), tonumber(ARGV[7])
local k = tkey(id)
local f = redis.call('HMGET', k, 'state', 'user', 'tomb', 'att')
local resumed = '0'
if f[1] then
  if f[2] ~= user then return {'owner'} end
  if f[3] == '1' then
    redis.call('HSET', k, 'guest', ARGV[3], 'rating', ARGV[4], 'enq', ARGV[6], 'bots', ARGV[5],
      'blocks', ARGV[9])
    redis.call('HDEL', k, 'tomb')
  else
    resumed = '1'
    if f[4] == '0' then
      redis.call('HSET', k, 'att', '1', 'unav', '0')
      if f[1] == 'queued' then
        local g = redis.call('HMGET', k, 'rating', 'enq')
        pool_add(id, g[1], g[2])
        redis.call('ZADD', Q .. ':alive', now + ttl, id)
      end
    end
  end
elseif ARGV[8] == '1' then
  redis.call('HSET', k, 'user', user, 'guest', ARGV[3], 'fmt', FMT, 'rating', ARGV[4],
    'enq', ARGV[6], 'bots', ARGV[5], 'state', 'queued', 'att', '1', 'unav', '0', 'res', '',
    'blocks', ARGV[9])
  pool_add(id, ARGV[4], ARGV[6])
  redis.call('ZADD', Q .. ':alive', now + ttl, id)
else
  return {'absent'}
end
local v = view(id)
table.insert(v, 1, resumed)
return v
