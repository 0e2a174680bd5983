-- Ends a search: CancelFind, or a newer search of the account superseding it.
-- ARGV: id, user, cause, now, grace. Returns {'notfound'} (another account's),
-- {'matched', json}, {'ingroup'} (a formed group's member stays in it) or
-- {'cancelled'}. A ticket not stored yet (claimed, not inserted) gets a tombstone: a
-- cancelled record, so that its insert (ENTER) is refused.
local id = ARGV[1]
local now, grace = tonumber(ARGV[4]), tonumber(ARGV[5])
local k = tkey(id)
local f = redis.call('HMGET', k, 'state', 'user', 'res')
if not f[1] then
  redis.call('HSET', k, 'user', ARGV[2], 'guest', '0', 'fmt', FMT, 'rating', '0',
    'enq', now, 'bots', '0', 'state', 'cancelled', 'att', '0', 'unav', '0', 'res', ARGV[3],
    'tomb', '1')
  redis.call('ZADD', Q .. ':alive', now + grace, id)
  return {'cancelled'}
end
if f[2] ~= ARGV[2] then return {'notfound'} end
if f[1] == 'matched' then return {'matched', f[3]} end
if f[1] == 'cancelled' then return {'cancelled'} end
if f[1] == 'pending' then return {'ingroup'} end
pool_rem(id)
redis.call('HSET', k, 'state', 'cancelled', 'res', ARGV[3])
redis.call('ZADD', Q .. ':alive', now + grace, id)
notify(id)
return {'cancelled'}
