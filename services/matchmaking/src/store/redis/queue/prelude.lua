-- Helpers shared by the queue scripts. `KEYS[1]` is `P:{q:F}`, the slot of format F:
-- its tickets, its pools, deadlines, groups and leases (see the key table in mod.rs).
local Q = KEYS[1]
local FMT = string.match(Q, '{q:(.*)}$')
local function tkey(id) return Q .. ':t:' .. id end
local function pool_add(id, rating, enq)
  redis.call('ZADD', Q .. ':w', enq, id)
  redis.call('ZADD', Q .. ':r', rating, id)
end
local function pool_rem(id)
  redis.call('ZREM', Q .. ':w', id)
  redis.call('ZREM', Q .. ':r', id)
end
-- `redis.call(cmd, key, ...)` (or `redis.call(cmd, ...)` without a key) with the
-- values of `list` as its last arguments, in calls of at most 1000 of them (Lua's
-- unpack has a limit; an even count keeps pairs together).
local function batched(cmd, key, list)
  for i = 1, #list, 1000 do
    local j = math.min(i + 999, #list)
    if key then
      redis.call(cmd, key, unpack(list, i, j))
    else
      redis.call(cmd, unpack(list, i, j))
    end
  end
end
local function notify(id) redis.call('SPUBLISH', Q .. ':events', id) end
local function view(id)
  local f = redis.call('HMGET', tkey(id), 'state', 'att', 'unav', 'res', 'fmt', 'enq',
    'rating', 'user', 'bots')
  if not f[1] then return false end
  local pos, waiting = 0, 0
  if f[1] == 'queued' then
    waiting = redis.call('ZCARD', Q .. ':w')
    if f[2] == '1' then
      local r = redis.call('ZRANK', Q .. ':w', id)
      if r then pos = r + 1 end
    end
  end
  return {f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], tostring(pos), tostring(waiting)}
end
