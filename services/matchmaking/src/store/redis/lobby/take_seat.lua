-- ARGV: id, user, guest, preferred (-1: any), code.
local id, user = ARGV[1], ARGV[2]
local k = rkey(id)
local f = redis.call('HMGET', k, 'seats', 'status', 'meta')
if not f[1] then return {'notfound'} end
local seats = cjson.decode(f[1])
for i, s in ipairs(seats) do
  if s.kind == 'player' and s.user_id == user then return {'already', i - 1} end
end
if f[2] == 'closed' then return {'closed'} end
if f[2] == 'full' then return {'full'} end
local pref = tonumber(ARGV[4])
local seat = nil
if pref >= 0 then
  if pref >= #seats then return {'nosuchseat'} end
  if seats[pref + 1].kind ~= 'open' then return {'taken'} end
  seat = pref
else
  for i, s in ipairs(seats) do
    if s.kind == 'open' then seat = i - 1; break end
  end
end
if not seat then return {'full'} end
seats[seat + 1] = {kind = 'player', user_id = user, guest = (ARGV[3] == '1')}
redis.call('HSET', k, 'seats', cjson.encode(seats))
local full = all_taken(seats)
if full then
  redis.call('HSET', k, 'status', 'full')
  redis.call('ZREM', L .. ':public', id)
  return {'seated', seat, 1}
end
return {'seated', seat, 0}
