-- ARGV: after, limit. The mode's open public rooms after `after`, oldest first.
-- Returns {next or ''} .. {meta, seats, status, seq}*; next is the last one's seq when
-- the mode has more.
local after, limit = ARGV[1], tonumber(ARGV[2])
local ids = redis.call('ZRANGEBYSCORE', L .. ':public', '(' .. after, '+inf', 'WITHSCORES',
  'LIMIT', 0, limit)
local out = {''}
local last = after
for i = 1, #ids, 2 do
  local f = redis.call('HMGET', rkey(ids[i]), 'meta', 'seats', 'status', 'seq')
  out[#out + 1] = f[1]; out[#out + 1] = f[2]; out[#out + 1] = f[3]; out[#out + 1] = f[4]
  last = ids[i + 1]
end
if redis.call('ZCOUNT', L .. ':public', '(' .. last, '+inf') > 0 then out[1] = last end
return out
