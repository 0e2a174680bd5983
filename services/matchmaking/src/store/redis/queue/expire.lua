-- ARGV: now, max. Returns the queued tickets dropped, then (id, account) of every
-- ticket deleted: the store then deletes their locators and the account's pointer
-- to them, each in its own slot.
local now = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', Q .. ':alive', '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local dropped = 0
local gone = {}
for _, id in ipairs(due) do
  local k = tkey(id)
  local f = redis.call('HMGET', k, 'state', 'user')
  if not f[1] then
    redis.call('ZREM', Q .. ':alive', id)
  elseif f[1] == 'pending' then
    redis.call('ZADD', Q .. ':alive', now + 60000, id)
  else
    if f[1] == 'queued' then
      pool_rem(id)
      dropped = dropped + 1
      notify(id)
    end
    redis.call('DEL', k)
    redis.call('ZREM', Q .. ':alive', id)
    gone[#gone + 1] = id
    gone[#gone + 1] = f[2]
  end
end
table.insert(gone, 1, dropped)
return gone
