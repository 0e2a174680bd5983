-- A room as stored: its version, its snapshot, and the snapshot's seq with the events
-- logged after it (the plain plays' tail: play.lua), read at once. The snapshot's seq is
-- `q`, or `st` where a release before play.lua's present form named it (its plain plays
-- moved `q`).
-- KEYS: 1 state, 2 log. Returns nil when the room does not exist; false and no events
-- for a room stored before `q` was kept.
local s = redis.call('HMGET', KEYS[1], 'v', 'data', 'st', 'q')
if not s[1] or not s[2] then return nil end
local from = tonumber(s[3] or '') or tonumber(s[4] or '')
if not from then return {s[1], s[2], false, {}} end
return {s[1], s[2], from, redis.call('LRANGE', KEYS[2], from, -1)}
