-- ARGV: id, seat, user.
local id = ARGV[1]
local k = rkey(id)
local f = redis.call('HMGET', k, 'seats', 'status', 'meta', 'pub', 'seq')
if not f[1] then return 0 end
local seats = cjson.decode(f[1])
local i = tonumber(ARGV[2]) + 1
local s = seats[i]
if not s or s.kind ~= 'player' or s.user_id ~= ARGV[3] then return 0 end
seats[i] = {kind = 'open'}
redis.call('HSET', k, 'seats', cjson.encode(seats))
if f[2] == 'full' then
  redis.call('HSET', k, 'status', 'open')
  if f[4] == '1' then redis.call('ZADD', L .. ':public', f[5], id) end
end
return 1
