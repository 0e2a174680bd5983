-- ARGV: id, meta, seats, public, seq (the lobby sequence number; 0 when not public),
-- expires (ms; 0: never).
local id = ARGV[1]
local seats = cjson.decode(ARGV[3])
local full = all_taken(seats)
local status = 'open'
if full then status = 'full' end
if ARGV[4] == '1' and not full then
  redis.call('ZADD', L .. ':public', ARGV[5], id)
end
redis.call('HSET', rkey(id), 'meta', ARGV[2], 'seats', ARGV[3], 'status', status,
  'pub', ARGV[4], 'seq', ARGV[5])
if tonumber(ARGV[6]) > 0 and not full then
  redis.call('ZADD', L .. ':expiry', ARGV[6], id)
end
return 1
