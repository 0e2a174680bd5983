-- Step 2 of a new search, in the account's slot (`KEYS[1]` = `P:{pl:A}`): ticket
-- ARGV[1] becomes the account's live search (`cur`); the one it replaces goes into
-- `old`, the set of superseded tickets whose cancel is not confirmed yet. Returns the
-- replaced ticket ('' if none), then every ticket in `old`.
local search, old = KEYS[1] .. ':search', KEYS[1] .. ':old'
local id = ARGV[1]
local cur = redis.call('HGET', search, 'cur')
if cur and cur ~= id then redis.call('SADD', old, cur) end
redis.call('SREM', old, id)
redis.call('HSET', search, 'cur', id)
local out = redis.call('SMEMBERS', old)
table.insert(out, 1, cur or '')
return out
