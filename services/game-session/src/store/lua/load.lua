-- A room as stored: its version, its snapshot, and when plain plays followed it (`st`
-- holds the snapshot's seq then) that seq and the events after it, read at once.
-- KEYS: 1 state, 2 log. Returns nil when the room does not exist; false and no events
-- when no plain play followed the snapshot.
local s = redis.call('HMGET', KEYS[1], 'v', 'data', 'st')
if not s[1] or not s[2] then return nil end
local from = tonumber(s[3] or '')
if not from then return {s[1], s[2], false, {}} end
return {s[1], s[2], from, redis.call('LRANGE', KEYS[2], from, -1)}
