-- One pairing round. ARGV: now, window start, growth per second, window
-- max, bot wait, lease, max groups, scan limit, candidates per side, least
-- interval between rounds (real ms; 0: none), then the room ids to use.
-- Returns the groups formed, as JSON.
--
-- One format's round (the format of the slot, `KEYS[1]` = `P:{q:F}`; the store runs
-- one per format, walking the registry of formats).
--
-- Rounds are throttled across replicas (`P:{q:F}:round`, real time): with N
-- replicas a round still runs about once per interval, not N times, since
-- a round over many unpairable tickets costs Redis time. A round that hit
-- its group limit frees the next one at once (more are waiting).
--
-- Oldest ticket first (the anchor): in a ranked format, the
-- nearest ratings within the anchor's window (both sides, bounded) whose
-- own window also covers the anchor, greedily while the group's spread stays
-- within every member's window; in an unranked one, the oldest others. A
-- lone anchor that allows bots and has waited long enough gets bots. A candidate
-- joins a group only when no member blocks its account and it blocks none of
-- theirs (`fits`; unranked formats look past at most K such candidates).
local now = tonumber(ARGV[1])
local wstart, growth, wmax = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local bot_after, lease = tonumber(ARGV[5]), tonumber(ARGV[6])
local max_groups, scan, K = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local interval = tonumber(ARGV[10])
if interval > 0 and not redis.call('SET', Q .. ':round', '1', 'NX', 'PX', interval) then
  return {}
end
local rooms = {}
for i = 11, #ARGV do rooms[#rooms + 1] = ARGV[i] end
if #rooms < max_groups then max_groups = #rooms end
local function width(enq)
  local waited = now - enq
  if waited < 0 then waited = 0 end
  local w = wstart + growth * waited / 1000
  if w > wmax then w = wmax end
  return w
end
-- Each ticket's account and the accounts it blocks, read once per round.
local who = {}
local function person(t)
  local p = who[t]
  if not p then
    local f = redis.call('HMGET', tkey(t), 'user', 'blocks')
    p = {user = f[1], blocks = {}}
    if f[2] then
      for u in string.gmatch(f[2], '%S+') do p.blocks[u] = true end
    end
    who[t] = p
  end
  return p
end
-- Whether ticket c may join the group of anchor a and `picked` (mirrors
-- `State::fits` of the memory store).
local function fits(c, a, picked)
  local pc = person(c)
  local function clash(m)
    local pm = person(m)
    return pm.blocks[pc.user] or pc.blocks[pm.user]
  end
  if clash(a) then return false end
  for _, m in ipairs(picked) do
    if clash(m) then return false end
  end
  return true
end
local out = {}
local fmt = FMT
do
  local ranked = string.sub(fmt, 1, 1) == 'r'
  local seats = tonumber(string.match(fmt, '^%a%.(%d+)%.'))
  local need = seats - 1
  local wkey, rkey = Q .. ':w', Q .. ':r'
  local anchors = redis.call('ZRANGE', wkey, 0, scan - 1)
  local taken = {}
  for _, a in ipairs(anchors) do
    if #out >= max_groups then break end
    if not taken[a] then
      local af = redis.call('HMGET', tkey(a), 'rating', 'enq', 'bots')
      local ra, ea = tonumber(af[1]), tonumber(af[2])
      local picked = {}
      if ranked then
        local wa = width(ea)
        local seen, cands = {}, {}
        local function consider(list)
          for i = 1, #list, 2 do
            local c, rc = list[i], tonumber(list[i + 1])
            if c ~= a and not taken[c] and not seen[c] then
              seen[c] = true
              local wc = width(tonumber(redis.call('HGET', tkey(c), 'enq')))
              local d = math.abs(rc - ra)
              if d <= wa and d <= wc then cands[#cands + 1] = {d, c, rc, wc} end
            end
          end
        end
        consider(redis.call('ZRANGEBYSCORE', rkey, ra, ra + wa, 'WITHSCORES', 'LIMIT', 0, K))
        consider(redis.call('ZREVRANGEBYSCORE', rkey, ra, ra - wa, 'WITHSCORES', 'LIMIT', 0, K))
        table.sort(cands, function(x, y)
          if x[1] ~= y[1] then return x[1] < y[1] end
          return x[2] < y[2]
        end)
        local lo, hi, minw = ra, ra, wa
        for _, c in ipairs(cands) do
          if #picked >= need then break end
          local nlo, nhi, nminw = math.min(lo, c[3]), math.max(hi, c[3]), math.min(minw, c[4])
          if nhi - nlo <= nminw and fits(c[2], a, picked) then
            lo, hi, minw = nlo, nhi, nminw
            picked[#picked + 1] = c[2]
          end
        end
      else
        local list = redis.call('ZRANGE', wkey, 0, need + K)
        local looked = 0
        for _, c in ipairs(list) do
          if #picked >= need or looked >= need + K then break end
          if c ~= a and not taken[c] then
            looked = looked + 1
            if fits(c, a, picked) then picked[#picked + 1] = c end
          end
        end
      end
      local members = nil
      if #picked == need then
        members = {a}
        for _, c in ipairs(picked) do members[#members + 1] = c end
      elseif af[3] == '1' and now - ea >= bot_after then
        members = {a}
      end
      if members then
        local room = rooms[#out + 1]
        local g = {room = room, fmt = fmt, formed = ARGV[1], lease = 1, members = {}}
        for _, m in ipairs(members) do
          taken[m] = true
          local mk = tkey(m)
          local mf = redis.call('HMGET', mk, 'user', 'guest', 'rating', 'enq')
          pool_rem(m)
          redis.call('HSET', mk, 'state', 'pending')
          g.members[#g.members + 1] = {ticket_id = m, user_id = mf[1], guest = mf[2],
            rating = mf[3], enqueued_ms = mf[4]}
        end
        local js = cjson.encode(g)
        redis.call('SET', Q .. ':g:' .. room, js)
        redis.call('ZADD', Q .. ':pending', now + lease, room)
        out[#out + 1] = js
      end
    end
  end
end
if interval > 0 and #out >= max_groups then redis.call('DEL', Q .. ':round') end
return out
