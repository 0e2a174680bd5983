-- Step 3's end, in the account's slot (`KEYS[1]` = `P:{pl:A}`). ARGV: the new ticket,
-- the superseded ticket found in a formed group ('' if none), then the superseded
-- tickets whose cancel is confirmed (they leave `old`). With a ticket in a group the
-- search is refused: that ticket leaves `old` and is the live search again, unless a
-- later search has swapped since.
local search, old = KEYS[1] .. ':search', KEYS[1] .. ':old'
for i = 3, #ARGV do redis.call('SREM', old, ARGV[i]) end
local held = ARGV[2]
if held ~= '' then
  redis.call('SREM', old, held)
  if redis.call('HGET', search, 'cur') == ARGV[1] then
    redis.call('HSET', search, 'cur', held)
  end
end
return 1
