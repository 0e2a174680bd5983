-- A shard's outbox entries for a consumer: abandoned ones first, else new ones.
-- KEYS: 1 outbox; ARGV: 1 group, 2 consumer, 3 min idle ms, 4 count
local out = {}
local claimed = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], '0-0', 'COUNT', ARGV[4])
for _, e in ipairs(claimed[2]) do
  if e[2] then table.insert(out, e[1]); table.insert(out, e[2][2]) end
end
if #out == 0 then
  local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[4], 'STREAMS', KEYS[1], '>')
  if r then
    for _, e in ipairs(r[1][2]) do table.insert(out, e[1]); table.insert(out, e[2][2]) end
  end
end
return out
