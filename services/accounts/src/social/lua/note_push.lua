-- Appends a notification to a player's feed and numbers it. One player's keys.
-- KEYS[1] the counter (never expires, so numbers only rise), KEYS[2] the log (a stream
-- whose ids are `seq-1`).
-- ARGV[1] the encoded notification; ARGV[2] how many to keep; ARGV[3] how long the log
-- is kept after its last entry (ms).
-- Returns the notification's seq.
local seq = redis.call('INCR', KEYS[1])
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], seq .. '-1', 'n', ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return seq
