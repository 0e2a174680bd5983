-- A client move's answer: the seq of its card_played. A snapshot's commit records it in the
-- moves hash (and releases before play.lua's present form in the state's `m:` field); a
-- plain play's is its card_played on the log, which ends with the move id: the room's last
-- events are returned for the store to look through (store/plain_play.rs, `played_move`).
-- KEYS: 1 state, 2 moves, 3 log. ARGV: 1 the move key ('seat:client_move_id'), 2 how many
-- of the log's last events to return.
-- Returns {seq, 0, {}} when recorded, else {0, the seq before the first event returned,
-- the events}.
local done = redis.call('HGET', KEYS[1], 'm:' .. ARGV[1]) or redis.call('HGET', KEYS[2], ARGV[1])
if done then return {tonumber(done), 0, {}} end
local n = redis.call('LLEN', KEYS[3])
local from = math.max(0, n - tonumber(ARGV[2]))
return {0, from, redis.call('LRANGE', KEYS[3], from, -1)}
