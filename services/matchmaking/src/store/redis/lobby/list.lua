-- ARGV: after, limit, scan cap, seats filter, target filter, ranked filter
-- (empty: any). Returns {next or ''} .. {meta, seats, status, seq}*.
local last, limit, cap = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {''}
local found, scanned = 0, 0
while found < limit and scanned < cap do
  local batch = redis.call('ZRANGEBYSCORE', L .. ':public', '(' .. last, '+inf', 'WITHSCORES',
    'LIMIT', 0, 100)
  if #batch == 0 then break end
  for i = 1, #batch, 2 do
    if found >= limit or scanned >= cap then break end
    local id = batch[i]
    last = batch[i + 1]
    scanned = scanned + 1
    local f = redis.call('HMGET', rkey(id), 'n', 't', 'r', 'meta', 'seats', 'status', 'seq')
    if f[1] and (ARGV[4] == '' or ARGV[4] == f[1]) and (ARGV[5] == '' or ARGV[5] == f[2])
      and (ARGV[6] == '' or ARGV[6] == f[3]) then
      out[#out + 1] = f[4]; out[#out + 1] = f[5]; out[#out + 1] = f[6]; out[#out + 1] = f[7]
      found = found + 1
    end
  end
end
if redis.call('ZCOUNT', L .. ':public', '(' .. last, '+inf') > 0 then out[1] = last end
return out
