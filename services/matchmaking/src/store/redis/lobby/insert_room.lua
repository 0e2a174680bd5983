-- ARGV: id, meta, seats, seats n, target, ranked, public, code.
local id = ARGV[1]
local seats = cjson.decode(ARGV[3])
local full = all_taken(seats)
local status = 'open'
if full then status = 'full' end
local seq = 0
if ARGV[7] == '1' and not full then
  seq = redis.call('INCR', L .. ':seq')
  redis.call('ZADD', L .. ':public', seq, id)
end
redis.call('HSET', rkey(id), 'meta', ARGV[2], 'seats', ARGV[3], 'status', status,
  'n', ARGV[4], 't', ARGV[5], 'r', ARGV[6], 'pub', ARGV[7], 'seq', seq)
return seq
