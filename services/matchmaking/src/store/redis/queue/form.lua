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
--
-- What it costs Redis (the round runs in Redis's one thread, so this bounds the pairs
-- one Redis forms per second): a ticket is read once per round (one HMGET, its card)
-- and only when the round reaches it, as an anchor or as the nearest candidate left;
-- candidates are read a few at a time (PAGE of the K per side, ratings with them), as
-- far as the nearest ones need, not all K each time. A ranked pair of two costs two
-- HMGETs, two short range reads and its writes.
local now = tonumber(ARGV[1])
local wstart, growth, wmax = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local bot_after, lease = tonumber(ARGV[5]), tonumber(ARGV[6])
local max_groups, scan, K = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local interval = tonumber(ARGV[10])
-- Candidates read per range call (pages of the K per side).
local PAGE = 4
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
-- A ticket's fields (its account, the accounts it blocks, rating, queue time, …),
-- read once per round, when first needed.
local cards = {}
local function card(t)
  local c = cards[t]
  if not c then
    local f = redis.call('HMGET', tkey(t), 'user', 'guest', 'rating', 'enq', 'bots', 'blocks')
    c = {user = f[1], guest = f[2], rating = f[3], enq = f[4], bots = f[5], blocks = {}}
    if f[6] and f[6] ~= '' then
      for u in string.gmatch(f[6], '%S+') do c.blocks[u] = true end
    end
    cards[t] = c
  end
  return c
end
-- Whether ticket c may join the group of anchor a and `picked` (mirrors
-- `State::fits` of the memory store).
local function fits(c, a, picked)
  local pc = card(c)
  local function clash(m)
    local pm = card(m)
    return pm.blocks[pc.user] or pc.blocks[pm.user]
  end
  if clash(a) then return false end
  for _, m in ipairs(picked) do
    if clash(m) then return false end
  end
  return true
end
local out = {}
-- The groups' records (key, JSON) and leases (deadline, room), written at the end.
local records, leases = {}, {}
local deadline = tostring(now + lease)
local fmt = FMT
do
  local ranked = string.sub(fmt, 1, 1) == 'r'
  local seats = tonumber(string.match(fmt, '^%a%.(%d+)%.'))
  local need = seats - 1
  local wkey, rkey = Q .. ':w', Q .. ':r'
  local anchors = redis.call('ZRANGE', wkey, 0, scan - 1)
  local taken, left_w = {}, {}
  for _, a in ipairs(anchors) do
    if #out >= max_groups then break end
    if not taken[a] then
      local ca = card(a)
      local ra, ea = tonumber(ca.rating), tonumber(ca.enq)
      local picked = {}
      if ranked then
        local wa = width(ea)
        -- The two sides of the anchor's rating, each nearest first and at most K
        -- tickets (the anchor among them), read a page at a time.
        local sides = {
          {cmd = 'ZRANGEBYSCORE', from = ca.rating, to = ra + wa, items = {}, done = false},
          {cmd = 'ZREVRANGEBYSCORE', from = ca.rating, to = ra - wa, items = {}, done = false},
        }
        local function fetch(s)
          local got = #s.items
          local n = math.min(PAGE, K - got)
          local list = {}
          if n > 0 then
            list = redis.call(s.cmd, rkey, s.from, s.to, 'WITHSCORES', 'LIMIT', got, n)
          end
          for i = 1, #list, 2 do
            local rc = tonumber(list[i + 1])
            s.items[#s.items + 1] = {math.abs(rc - ra), list[i], rc}
          end
          if #list < 2 * n or #s.items >= K then s.done = true end
        end
        -- The nearest candidate not yet looked at (least distance, then least id: the
        -- memory store's order), or nil. A side is read further only while its last
        -- ticket read is no farther than the nearest so far (what follows is farther).
        local looked = {}
        local function next_nearest()
          while true do
            local best = nil
            for _, s in ipairs(sides) do
              for _, x in ipairs(s.items) do
                local c = x[2]
                if c ~= a and not taken[c] and not looked[c] and x[1] <= wa
                  and (not best or x[1] < best[1] or (x[1] == best[1] and c < best[2])) then
                  best = x
                end
              end
            end
            local more = false
            for _, s in ipairs(sides) do
              local last = s.items[#s.items]
              if not s.done and (not best or not last or last[1] <= best[1]) then
                fetch(s)
                more = true
              end
            end
            if not more then
              if best then looked[best[2]] = true end
              return best
            end
          end
        end
        -- Nearest first; a candidate whose own window does not cover the anchor is
        -- passed over (its queue time is read only when it is reached).
        local lo, hi, minw = ra, ra, wa
        while #picked < need do
          local x = next_nearest()
          if not x then break end
          local d, c, rc = x[1], x[2], x[3]
          local wc = width(tonumber(card(c).enq))
          if d <= wc then
            local nlo, nhi, nminw = math.min(lo, rc), math.max(hi, rc), math.min(minw, wc)
            if nhi - nlo <= nminw and fits(c, a, picked) then
              lo, hi, minw = nlo, nhi, nminw
              picked[#picked + 1] = c
            end
          end
        end
      else
        -- The oldest others, at most need + K of them (the anchor aside), read a
        -- page at a time.
        local list, cap, i, looked = {}, need + K + 1, 0, 0
        while #picked < need and looked < need + K do
          i = i + 1
          if i > #list and #list < cap then
            local n = math.min(need + 2, cap - #list)
            local page = redis.call('ZRANGE', wkey, #list, #list + n - 1)
            for _, c in ipairs(page) do list[#list + 1] = c end
            if #page < n then cap = #list end
          end
          local c = list[i]
          if not c then break end
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
      elseif ca.bots == '1' and now - ea >= bot_after then
        members = {a}
      end
      if members then
        local room = rooms[#out + 1]
        local g = {room = room, fmt = fmt, formed = ARGV[1], lease = 1, members = {}}
        for _, m in ipairs(members) do
          taken[m] = true
          local cm = card(m)
          redis.call('HSET', tkey(m), 'state', 'pending')
          g.members[#g.members + 1] = {ticket_id = m, user_id = cm.user, guest = cm.guest,
            rating = cm.rating, enqueued_ms = cm.enq}
        end
        redis.call('ZREM', rkey, unpack(members))
        if ranked then
          for _, m in ipairs(members) do left_w[#left_w + 1] = m end
        else
          -- The next anchor's candidates are read from this pool.
          redis.call('ZREM', wkey, unpack(members))
        end
        local js = cjson.encode(g)
        records[#records + 1] = Q .. ':g:' .. room
        records[#records + 1] = js
        leases[#leases + 1] = deadline
        leases[#leases + 1] = room
        out[#out + 1] = js
      end
    end
  end
  -- The round's writes that no later anchor reads, once for all its groups (a ranked
  -- format's anchors come from the list read above and skip the tickets taken).
  batched('ZREM', wkey, left_w)
end
batched('MSET', nil, records)
batched('ZADD', Q .. ':pending', leases)
if interval > 0 and #out >= max_groups then redis.call('DEL', Q .. ':round') end
return out
