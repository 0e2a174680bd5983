-- Divides the shard walks (timer loop, outbox forwarder, lease sweep) between the live
-- replicas, for one replica (the walker). Mirrored by MemoryStore::walk_shards.
--
-- KEYS[1] walkers: sorted set, walker -> end of its lease (Unix ms)
-- KEYS[2] walks:   hash, shard -> "epoch until walker" (the walk's holder and fencing number)
-- ARGV: walker, now (ms), until (ms), shard count, leaving ("1" or "")
-- Returns a flat list shard, epoch, ... of the walks the walker holds until `until`.
local walker = ARGV[1]
local now = tonumber(ARGV[2])
local untl = tonumber(ARGV[3])
local shards = tonumber(ARGV[4])
local leaving = ARGV[5] == '1'

-- Walkers whose lease ended are gone; this one is alive (or leaving).
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)
if leaving then
  redis.call('ZREM', KEYS[1], walker)
else
  redis.call('ZADD', KEYS[1], untl, walker)
end
local live = math.max(redis.call('ZCARD', KEYS[1]), 1)
local share = 0
if not leaving then
  share = math.ceil(shards / live)
end

local held, free, epochs = {}, {}, {}
for shard = 0, shards - 1 do
  local epoch, till, owner = 0, 0, nil
  local value = redis.call('HGET', KEYS[2], shard)
  if value then
    local e, t, o = string.match(value, '^(%d+) (%d+) (.*)$')
    epoch, till, owner = tonumber(e), tonumber(t), o
  end
  epochs[shard] = epoch
  if owner == walker and till >= now then
    held[#held + 1] = shard
  elseif owner == nil or till < now then
    free[#free + 1] = shard
  end
end

local out = {}
for i, shard in ipairs(held) do
  if i <= share then
    redis.call('HSET', KEYS[2], shard, epochs[shard] .. ' ' .. untl .. ' ' .. walker)
    out[#out + 1] = shard
    out[#out + 1] = epochs[shard]
  else
    -- Beyond the share (another replica joined, or this one leaves): free at once.
    redis.call('HSET', KEYS[2], shard, epochs[shard] .. ' 0 ' .. walker)
  end
end
local i = 1
while #out / 2 < share and i <= #free do
  local shard = free[i]
  local epoch = epochs[shard] + 1
  redis.call('HSET', KEYS[2], shard, epoch .. ' ' .. untl .. ' ' .. walker)
  out[#out + 1] = shard
  out[#out + 1] = epoch
  i = i + 1
end
return out
