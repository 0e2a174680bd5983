-- The running match's actions: its action log, then the plain plays after the room's
-- snapshot (their compact card_played, first byte 1, on the log after the snapshot's seq:
-- `st` where a release before the version-bump form named it, else `q`).
-- KEYS: 1 state, 2 log, 3 actions
local out = redis.call('LRANGE', KEYS[3], 0, -1)
local mark = redis.call('HMGET', KEYS[1], 'st', 'q')
local from = tonumber(mark[1] or '') or tonumber(mark[2] or '')
if from then
  for _, e in ipairs(redis.call('LRANGE', KEYS[2], from, -1)) do
    if string.byte(e, 1) == 1 then out[#out + 1] = e end
  end
end
return out
