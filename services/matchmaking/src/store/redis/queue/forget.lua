-- A ticket is gone (cancelled by its owner, or expired): in the account's slot
-- (`KEYS[1]` = `P:{pl:A}`) it stops being the live search if it still is, and leaves
-- the superseded set. ARGV: the ticket.
local search = KEYS[1] .. ':search'
if redis.call('HGET', search, 'cur') == ARGV[1] then redis.call('HDEL', search, 'cur') end
redis.call('SREM', KEYS[1] .. ':old', ARGV[1])
return 1
