-- A shard's outbox entries for a consumer: abandoned ones first, else new ones.
-- KEYS: 1 outbox; ARGV: 1 group, 2 consumer, 3 min idle ms, 4 count
-- Returns id, record, trace context (empty for entries written without one), per entry.
local out = {}
local function add(e)
  local record, trace = '', ''
  for i = 1, #e[2], 2 do
    if e[2][i] == 'record' then record = e[2][i + 1] elseif e[2][i] == 'trace' then trace = e[2][i + 1] end
  end
  table.insert(out, e[1]); table.insert(out, record); table.insert(out, trace)
end
local claimed = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], '0-0', 'COUNT', ARGV[4])
for _, e in ipairs(claimed[2]) do
  if e[2] then add(e) end
end
if #out == 0 then
  local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[4], 'STREAMS', KEYS[1], '>')
  if r then
    for _, e in ipairs(r[1][2]) do add(e) end
  end
end
return out
