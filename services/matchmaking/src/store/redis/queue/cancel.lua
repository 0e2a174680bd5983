-- ARGV: id, user, cause, now, grace. Returns {'notfound'}, {'matched', json},
-- {'ingroup'} (a formed group's member stays in it) or {'cancelled'}.
local id = ARGV[1]
local k = tkey(id)
local f = redis.call('HMGET', k, 'state', 'user', 'res', 'fmt')
if not f[1] or f[2] ~= ARGV[2] then return {'notfound'} end
if f[1] == 'matched' then return {'matched', f[3]} end
if f[1] == 'cancelled' then return {'cancelled'} end
if f[1] == 'pending' then return {'ingroup'} end
pool_rem(id, f[4])
redis.call('HSET', k, 'state', 'cancelled', 'res', ARGV[3])
redis.call('ZADD', Q .. ':alive', tonumber(ARGV[4]) + tonumber(ARGV[5]), id)
notify(id)
return {'cancelled'}
