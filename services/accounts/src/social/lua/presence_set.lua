-- Sets or ends one of a player's activities and says whether what their friends see
-- changed. One player's keys, one hash slot.
-- KEYS[1] online, KEYS[2] in the queue, KEYS[3] in a match (value: the room id, or "-"
-- when it may not be watched).
-- ARGV[1] which key (1, 2 or 3); ARGV[2] the value, "" to end it; ARGV[3] how long it
-- lasts (ms); ARGV[4] on an end, the value it must still have ("" : any).
-- Returns 1 when the player's presence (the busiest activity and its room) changed.
local function seen()
  local room = redis.call('GET', KEYS[3])
  if room then return 'm' .. room end
  if redis.call('EXISTS', KEYS[2]) == 1 then return 'q' end
  if redis.call('EXISTS', KEYS[1]) == 1 then return 'o' end
  return ''
end
local before = seen()
local key = KEYS[tonumber(ARGV[1])]
if ARGV[2] == '' then
  if ARGV[4] == '' or redis.call('GET', key) == ARGV[4] then
    redis.call('DEL', key)
  end
else
  redis.call('SET', key, ARGV[2], 'PX', ARGV[3])
end
if seen() ~= before then
  return 1
end
return 0
