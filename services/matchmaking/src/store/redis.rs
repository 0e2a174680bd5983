//! The Redis [`Store`]: the queue and the lobby as Redis data, every state
//! change one Lua script, so any number of replicas share them safely.
//!
//! Key layout (`P` is the configured prefix):
//!
//! | key | what |
//! |---|---|
//! | `P:{q}:t:<ticket>` | hash: one ticket (account, format, rating, queue time, state, result) |
//! | `P:{q}:w:<format>` | zset: the pool of a format by queue time (positions, oldest first) |
//! | `P:{q}:r:<format>` | zset: the same pool by rating (window search) |
//! | `P:{q}:fmts` | set: formats that may have waiting tickets |
//! | `P:{q}:u:<account>` | string: the account's latest ticket (superseding) |
//! | `P:{q}:alive` | zset: ticket deadlines (heartbeat, resume grace, result retention) |
//! | `P:{q}:g:<room>` | string: a formed group (JSON, with its lease number) waiting for its room |
//! | `P:{q}:pending` | zset: groups by lease deadline or retry time (takeover, retry) |
//! | `P:{q}:events` | pub/sub channel: ids of tickets whose state changed |
//! | `P:{lobby}:room:<id>` | hash: a room (meta JSON, seats JSON, status, filter fields) |
//! | `P:{lobby}:public` | zset: open public rooms by lobby sequence (oldest first) |
//! | `P:{lobby}:code:<code>` | string: join code → room, for as long as the room is kept |
//! | `P:{lobby}:req:<account>:<request>` | string: CreateRoom idempotency → room |
//! | `P:{lobby}:guess:<account>:<bucket>` | counter: wrong join codes in a time bucket |
//! | `P:{lobby}:at:<account>` | string: the room the account was last seated in (expires) |
//!
//! The queue's keys share the hash tag `{q}` and the lobby's `{lobby}`: each
//! script touches one slot, so this works on Redis Cluster (the script
//! derives key names from its one declared key, all in that slot). The cost
//! is that the whole queue lives on one shard: a pairing round at 5,000+
//! pairs/s fits one Redis core (see the benchmark); sharding by format is
//! the next step if it ever does not.

use redis::{AsyncCommands, Script, aio::ConnectionManager};
use serde::Deserialize;
use tokio::{sync::broadcast, task::JoinHandle};
use tokio_stream::StreamExt as _;

use super::{
    CancelCause, CancelOutcome, CommitOutcome, Enqueued, Group, GroupMember, LobbyFilter,
    LobbyPage, MatchRecord, NewTicket, RoomRecord, RoomStatus, Store, TakeSeat, TicketState,
    TicketView,
};
use crate::{
    clock::Millis,
    domain::{Format, PairingParams},
    error::{MatchmakingError, Result},
};

/// Helpers shared by the queue scripts. `KEYS[1]` is `P:{q}`.
const QUEUE_PRELUDE: &str = r#"
local Q = KEYS[1]
local function tkey(id) return Q .. ':t:' .. id end
local function pool_add(id, fmt, rating, enq)
  redis.call('ZADD', Q .. ':w:' .. fmt, enq, id)
  redis.call('ZADD', Q .. ':r:' .. fmt, rating, id)
  redis.call('SADD', Q .. ':fmts', fmt)
end
local function pool_rem(id, fmt)
  redis.call('ZREM', Q .. ':w:' .. fmt, id)
  redis.call('ZREM', Q .. ':r:' .. fmt, id)
end
local function notify(id) redis.call('PUBLISH', Q .. ':events', id) end
local function view(id)
  local f = redis.call('HMGET', tkey(id), 'state', 'att', 'unav', 'res', 'fmt', 'enq',
    'rating', 'user', 'bots')
  if not f[1] then return false end
  local pos, waiting = 0, 0
  if f[1] == 'queued' then
    waiting = redis.call('ZCARD', Q .. ':w:' .. f[5])
    if f[2] == '1' then
      local r = redis.call('ZRANK', Q .. ':w:' .. f[5], id)
      if r then pos = r + 1 end
    end
  end
  return {f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], tostring(pos), tostring(waiting)}
end
"#;

/// ARGV: id, user, guest, fmt, rating, bots, now, ttl, grace.
/// Returns {resumed} .. view, {'owner'} if the id belongs to another account,
/// or {'ingroup', old} if the account's previous ticket is in a formed group.
const ENQUEUE: &str = r#"
local id, user = ARGV[1], ARGV[2]
local now, ttl, grace = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local k = tkey(id)
local resumed = '0'
if redis.call('EXISTS', k) == 1 then
  if redis.call('HGET', k, 'user') ~= user then return {'owner'} end
  resumed = '1'
  if redis.call('HGET', k, 'att') == '0' then
    redis.call('HSET', k, 'att', '1', 'unav', '0')
    if redis.call('HGET', k, 'state') == 'queued' then
      local f = redis.call('HMGET', k, 'fmt', 'rating', 'enq')
      pool_add(id, f[1], f[2], f[3])
      redis.call('ZADD', Q .. ':alive', now + ttl, id)
    end
  end
else
  local old = redis.call('GET', Q .. ':u:' .. user)
  if old and old ~= id then
    local ok = tkey(old)
    local ost = redis.call('HGET', ok, 'state')
    if ost == 'queued' then
      pool_rem(old, redis.call('HGET', ok, 'fmt'))
      redis.call('HSET', ok, 'state', 'cancelled', 'res', 'superseded')
      redis.call('ZADD', Q .. ':alive', now + grace, old)
      notify(old)
    elseif ost == 'pending' then
      -- Its group is final (the room may exist already): refuse the new one.
      return {'ingroup', old}
    end
  end
  redis.call('HSET', k, 'user', user, 'guest', ARGV[3], 'fmt', ARGV[4], 'rating', ARGV[5],
    'enq', ARGV[7], 'bots', ARGV[6], 'state', 'queued', 'att', '1', 'unav', '0', 'res', '')
  pool_add(id, ARGV[4], ARGV[5], ARGV[7])
  redis.call('ZADD', Q .. ':alive', now + ttl, id)
  redis.call('SET', Q .. ':u:' .. user, id)
end
local v = view(id)
table.insert(v, 1, resumed)
return v
"#;

/// ARGV: id, now, ttl.
const POLL: &str = r#"
local id = ARGV[1]
local k = tkey(id)
local f = redis.call('HMGET', k, 'state', 'att')
if not f[1] then return false end
if f[1] == 'queued' and f[2] == '1' then
  redis.call('ZADD', Q .. ':alive', tonumber(ARGV[2]) + tonumber(ARGV[3]), id)
end
return view(id)
"#;

/// ARGV: id, now, grace.
const DETACH: &str = r#"
local id = ARGV[1]
local k = tkey(id)
local f = redis.call('HMGET', k, 'state', 'att', 'fmt')
if not f[1] or f[2] ~= '1' then return 0 end
redis.call('HSET', k, 'att', '0')
if f[1] == 'queued' then
  pool_rem(id, f[3])
  redis.call('ZADD', Q .. ':alive', tonumber(ARGV[2]) + tonumber(ARGV[3]), id)
end
return 1
"#;

/// ARGV: id, user, cause, now, grace. Returns {'notfound'}, {'matched', json},
/// {'ingroup'} (a formed group's member stays in it) or {'cancelled'}.
const CANCEL: &str = r#"
local id = ARGV[1]
local k = tkey(id)
local f = redis.call('HMGET', k, 'state', 'user', 'res', 'fmt')
if not f[1] or f[2] ~= ARGV[2] then return {'notfound'} end
if f[1] == 'matched' then return {'matched', f[3]} end
if f[1] == 'cancelled' then return {'cancelled'} end
if f[1] == 'pending' then return {'ingroup'} end
pool_rem(id, f[4])
redis.call('HSET', k, 'state', 'cancelled', 'res', ARGV[3])
redis.call('ZADD', Q .. ':alive', tonumber(ARGV[4]) + tonumber(ARGV[5]), id)
notify(id)
return {'cancelled'}
"#;

/// One pairing round. ARGV: now, window start, growth per second, window
/// max, bot wait, lease, max groups, scan limit, candidates per side, least
/// interval between rounds (real ms; 0: none), then the room ids to use.
/// Returns the groups formed, as JSON.
///
/// Rounds are throttled across replicas (`P:{q}:round`, real time): with N
/// replicas a round still runs about once per interval, not N times, since
/// a round over many unpairable tickets costs Redis time. A round that hit
/// its group limit frees the next one at once (more are waiting).
///
/// Per format, oldest ticket first (the anchor): in a ranked format, the
/// nearest ratings within the anchor's window (both sides, bounded) whose
/// own window also covers the anchor, greedily while the group's spread stays
/// within every member's window; in an unranked one, the oldest others. A
/// lone anchor that allows bots and has waited long enough gets bots.
const FORM: &str = r#"
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
local out = {}
local fmts = redis.call('SMEMBERS', Q .. ':fmts')
table.sort(fmts)
for _, fmt in ipairs(fmts) do
  if #out >= max_groups then break end
  local ranked = string.sub(fmt, 1, 1) == 'r'
  local seats = tonumber(string.match(fmt, '^%a%.(%d+)%.'))
  local need = seats - 1
  local wkey, rkey = Q .. ':w:' .. fmt, Q .. ':r:' .. fmt
  local anchors = redis.call('ZRANGE', wkey, 0, scan - 1)
  if #anchors == 0 then redis.call('SREM', Q .. ':fmts', fmt) end
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
          if nhi - nlo <= nminw then
            lo, hi, minw = nlo, nhi, nminw
            picked[#picked + 1] = c[2]
          end
        end
      else
        local list = redis.call('ZRANGE', wkey, 0, need)
        for _, c in ipairs(list) do
          if #picked >= need then break end
          if c ~= a and not taken[c] then picked[#picked + 1] = c end
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
          pool_rem(m, fmt)
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
"#;

/// ARGV: now, lease, max. Each group handed out gets the next lease number
/// (the fencing token of RELEASE and DEFER).
const RECLAIM: &str = r#"
local now, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
local due = redis.call('ZRANGEBYSCORE', Q .. ':pending', '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, room in ipairs(due) do
  local gk = Q .. ':g:' .. room
  local js = redis.call('GET', gk)
  if js then
    local g = cjson.decode(js)
    g.lease = (tonumber(g.lease) or 0) + 1
    js = cjson.encode(g)
    redis.call('SET', gk, js)
    redis.call('ZADD', Q .. ':pending', now + lease, room)
    out[#out + 1] = js
  else
    redis.call('ZREM', Q .. ':pending', room)
  end
end
return out
"#;

/// ARGV: room, now, grace, then (ticket, match JSON) pairs.
const COMMIT: &str = r#"
local room, now, grace = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local gk = Q .. ':g:' .. room
if redis.call('EXISTS', gk) == 0 then return 'gone' end
local all = true
for i = 4, #ARGV, 2 do
  if redis.call('HGET', tkey(ARGV[i]), 'state') ~= 'pending' then all = false end
end
for i = 4, #ARGV, 2 do
  local t = ARGV[i]
  local k = tkey(t)
  local f = redis.call('HMGET', k, 'state', 'att', 'fmt', 'rating', 'enq')
  if all then
    redis.call('HSET', k, 'state', 'matched', 'res', ARGV[i + 1])
    redis.call('ZADD', Q .. ':alive', now + grace, t)
    notify(t)
  elseif f[1] == 'pending' then
    redis.call('HSET', k, 'state', 'queued')
    if f[2] == '1' then pool_add(t, f[3], f[4], f[5]) end
    redis.call('ZADD', Q .. ':alive', now + grace, t)
    notify(t)
  end
end
redis.call('DEL', gk)
redis.call('ZREM', Q .. ':pending', room)
if all then return 'committed' end
return 'aborted'
"#;

/// ARGV: room, lease, now, grace. Only the current lease holder releases.
const RELEASE: &str = r#"
local room, now, grace = ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4])
local gk = Q .. ':g:' .. room
local js = redis.call('GET', gk)
if not js then return 0 end
local g = cjson.decode(js)
if tonumber(g.lease) ~= tonumber(ARGV[2]) then return 0 end
for _, m in ipairs(g.members) do
  local k = tkey(m.ticket_id)
  if redis.call('HGET', k, 'state') == 'pending' then
    redis.call('HSET', k, 'state', 'queued', 'att', '0', 'unav', '1')
    redis.call('ZADD', Q .. ':alive', now + grace, m.ticket_id)
    notify(m.ticket_id)
  end
end
redis.call('DEL', gk)
redis.call('ZREM', Q .. ':pending', room)
return 1
"#;

/// ARGV: room, lease, retry at. Only the current lease holder defers; the
/// group (room id included) stays, its members wait detached and flagged
/// unavailable, and RECLAIM hands it out again from `retry at`.
const DEFER: &str = r#"
local room = ARGV[1]
local gk = Q .. ':g:' .. room
local js = redis.call('GET', gk)
if not js then return 0 end
local g = cjson.decode(js)
if tonumber(g.lease) ~= tonumber(ARGV[2]) then return 0 end
for _, m in ipairs(g.members) do
  local k = tkey(m.ticket_id)
  if redis.call('HGET', k, 'state') == 'pending' then
    redis.call('HSET', k, 'att', '0', 'unav', '1')
    notify(m.ticket_id)
  end
end
redis.call('ZADD', Q .. ':pending', tonumber(ARGV[3]), room)
return 1
"#;

/// ARGV: now, max.
const EXPIRE: &str = r#"
local now = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', Q .. ':alive', '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local dropped = 0
for _, id in ipairs(due) do
  local k = tkey(id)
  local f = redis.call('HMGET', k, 'state', 'fmt', 'user')
  if not f[1] then
    redis.call('ZREM', Q .. ':alive', id)
  elseif f[1] == 'pending' then
    redis.call('ZADD', Q .. ':alive', now + 60000, id)
  else
    if f[1] == 'queued' then
      pool_rem(id, f[2])
      dropped = dropped + 1
      notify(id)
    end
    redis.call('DEL', k)
    redis.call('ZREM', Q .. ':alive', id)
    local uk = Q .. ':u:' .. f[3]
    if redis.call('GET', uk) == id then redis.call('DEL', uk) end
  end
end
return dropped
"#;

const LENGTHS: &str = r#"
local out = {}
for _, fmt in ipairs(redis.call('SMEMBERS', Q .. ':fmts')) do
  out[#out + 1] = fmt
  out[#out + 1] = redis.call('ZCARD', Q .. ':w:' .. fmt)
end
return out
"#;

/// Helpers of the lobby scripts. `KEYS[1]` is `P:{lobby}`.
const LOBBY_PRELUDE: &str = r#"
local L = KEYS[1]
local function rkey(id) return L .. ':room:' .. id end
local function all_taken(seats)
  for _, s in ipairs(seats) do if s.kind == 'open' then return false end end
  return true
end
"#;

/// ARGV: id, meta, seats, seats n, target, ranked, public, code.
const INSERT_ROOM: &str = r#"
local id = ARGV[1]
local seats = cjson.decode(ARGV[3])
local full = all_taken(seats)
local status = 'open'
if full then status = 'full' end
local seq = 0
if ARGV[7] == '1' and not full then
  seq = redis.call('INCR', L .. ':seq')
  redis.call('ZADD', L .. ':public', seq, id)
end
redis.call('HSET', rkey(id), 'meta', ARGV[2], 'seats', ARGV[3], 'status', status,
  'n', ARGV[4], 't', ARGV[5], 'r', ARGV[6], 'pub', ARGV[7], 'seq', seq)
return seq
"#;

/// ARGV: id, user, guest, preferred (-1: any), code.
const TAKE_SEAT: &str = r#"
local id, user = ARGV[1], ARGV[2]
local k = rkey(id)
local f = redis.call('HMGET', k, 'seats', 'status', 'meta')
if not f[1] then return {'notfound'} end
local seats = cjson.decode(f[1])
for i, s in ipairs(seats) do
  if s.kind == 'player' and s.user_id == user then return {'already', i - 1} end
end
if f[2] == 'closed' then return {'closed'} end
if f[2] == 'full' then return {'full'} end
local pref = tonumber(ARGV[4])
local seat = nil
if pref >= 0 then
  if pref >= #seats then return {'nosuchseat'} end
  if seats[pref + 1].kind ~= 'open' then return {'taken'} end
  seat = pref
else
  for i, s in ipairs(seats) do
    if s.kind == 'open' then seat = i - 1; break end
  end
end
if not seat then return {'full'} end
seats[seat + 1] = {kind = 'player', user_id = user, guest = (ARGV[3] == '1')}
redis.call('HSET', k, 'seats', cjson.encode(seats))
local full = all_taken(seats)
if full then
  redis.call('HSET', k, 'status', 'full')
  redis.call('ZREM', L .. ':public', id)
  return {'seated', seat, 1}
end
return {'seated', seat, 0}
"#;

/// ARGV: id, seat, user.
const FREE_SEAT: &str = r#"
local id = ARGV[1]
local k = rkey(id)
local f = redis.call('HMGET', k, 'seats', 'status', 'meta', 'pub', 'seq')
if not f[1] then return 0 end
local seats = cjson.decode(f[1])
local i = tonumber(ARGV[2]) + 1
local s = seats[i]
if not s or s.kind ~= 'player' or s.user_id ~= ARGV[3] then return 0 end
seats[i] = {kind = 'open'}
redis.call('HSET', k, 'seats', cjson.encode(seats))
if f[2] == 'full' then
  redis.call('HSET', k, 'status', 'open')
  if f[4] == '1' then redis.call('ZADD', L .. ':public', f[5], id) end
end
return 1
"#;

/// ARGV: id.
const CLOSE_ROOM: &str = r#"
local id = ARGV[1]
local k = rkey(id)
local meta = redis.call('HGET', k, 'meta')
if not meta then return 0 end
redis.call('HSET', k, 'status', 'closed')
redis.call('ZREM', L .. ':public', id)
return 1
"#;

/// ARGV: after, limit, scan cap, seats filter, target filter, ranked filter
/// (empty: any). Returns {next or ''} .. {meta, seats, status, seq}*.
const LIST: &str = r#"
local last, limit, cap = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {''}
local found, scanned = 0, 0
while found < limit and scanned < cap do
  local batch = redis.call('ZRANGEBYSCORE', L .. ':public', '(' .. last, '+inf', 'WITHSCORES',
    'LIMIT', 0, 100)
  if #batch == 0 then break end
  for i = 1, #batch, 2 do
    if found >= limit or scanned >= cap then break end
    local id = batch[i]
    last = batch[i + 1]
    scanned = scanned + 1
    local f = redis.call('HMGET', rkey(id), 'n', 't', 'r', 'meta', 'seats', 'status', 'seq')
    if f[1] and (ARGV[4] == '' or ARGV[4] == f[1]) and (ARGV[5] == '' or ARGV[5] == f[2])
      and (ARGV[6] == '' or ARGV[6] == f[3]) then
      out[#out + 1] = f[4]; out[#out + 1] = f[5]; out[#out + 1] = f[6]; out[#out + 1] = f[7]
      found = found + 1
    end
  end
end
if redis.call('ZCOUNT', L .. ':public', '(' .. last, '+inf') > 0 then out[1] = last end
return out
"#;

/// All the scripts, loaded once.
struct Scripts {
    enqueue: Script,
    poll: Script,
    detach: Script,
    cancel: Script,
    form: Script,
    reclaim: Script,
    commit: Script,
    release: Script,
    defer: Script,
    expire: Script,
    lengths: Script,
    insert_room: Script,
    take_seat: Script,
    free_seat: Script,
    close_room: Script,
    list: Script,
}

impl Scripts {
    fn new() -> Scripts {
        let q = |body: &str| Script::new(&format!("{QUEUE_PRELUDE}\n{body}"));
        let l = |body: &str| Script::new(&format!("{LOBBY_PRELUDE}\n{body}"));
        Scripts {
            enqueue: q(ENQUEUE),
            poll: q(POLL),
            detach: q(DETACH),
            cancel: q(CANCEL),
            form: q(FORM),
            reclaim: q(RECLAIM),
            commit: q(COMMIT),
            release: q(RELEASE),
            defer: q(DEFER),
            expire: q(EXPIRE),
            lengths: q(LENGTHS),
            insert_room: l(INSERT_ROOM),
            take_seat: l(TAKE_SEAT),
            free_seat: l(FREE_SEAT),
            close_room: l(CLOSE_ROOM),
            list: l(LIST),
        }
    }
}

/// The Redis store. Cheap to share (`Arc`); one multiplexed connection that
/// reconnects by itself, plus one pub/sub connection for ticket events.
pub struct RedisStore {
    conn: ConnectionManager,
    queue: String,
    lobby: String,
    scripts: Scripts,
    events: broadcast::Sender<String>,
    listener: JoinHandle<()>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("queue", &self.queue)
            .field("lobby", &self.lobby)
            .finish_non_exhaustive()
    }
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl RedisStore {
    /// Connects to `url` (fails if Redis is unreachable), keys under `prefix`
    /// (no `{` or `}`: hash tags are the store's business).
    pub async fn connect(url: &str, prefix: &str) -> Result<RedisStore> {
        if prefix.contains(['{', '}']) {
            return Err(MatchmakingError::Config(format!(
                "store.key_prefix {prefix:?} must not contain braces"
            )));
        }
        let client = redis::Client::open(url)?;
        // Pairing rounds block Redis for milliseconds: allow for a busy
        // server before calling it unreachable.
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_response_timeout(Some(std::time::Duration::from_secs(5)));
        let mut conn = client.get_connection_manager_with_config(config).await?;
        // Fail now, not at the first request, when Redis is not there.
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
        let queue = format!("{prefix}:{{q}}");
        let lobby = format!("{prefix}:{{lobby}}");
        let (events, _) = broadcast::channel(16 * 1024);
        // Subscribe before returning, so no event after `connect` is missed.
        let mut pubsub = client.get_async_pubsub().await?;
        let channel = format!("{queue}:events");
        pubsub.subscribe(&channel).await?;
        let listener = tokio::spawn(listen(client, channel, pubsub, events.clone()));
        Ok(RedisStore {
            conn,
            queue,
            lobby,
            scripts: Scripts::new(),
            events,
            listener,
        })
    }

    fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }
}

/// Forwards ticket events from Redis pub/sub, reconnecting after errors.
/// Events lost while disconnected are covered by the streams' own polling.
async fn listen(
    client: redis::Client,
    channel: String,
    mut pubsub: redis::aio::PubSub,
    events: broadcast::Sender<String>,
) {
    loop {
        {
            let mut messages = pubsub.on_message();
            while let Some(msg) = messages.next().await {
                if let Ok(id) = msg.get_payload::<String>() {
                    let _ = events.send(id);
                }
            }
        }
        tracing::warn!("redis pub/sub connection lost; reconnecting");
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            match client.get_async_pubsub().await {
                Ok(mut fresh) => {
                    if fresh.subscribe(&channel).await.is_ok() {
                        pubsub = fresh;
                        break;
                    }
                }
                Err(err) => tracing::debug!(error = %err, "redis pub/sub reconnect failed"),
            }
        }
    }
}

fn corrupt(what: &str) -> MatchmakingError {
    MatchmakingError::Corrupt(what.to_owned())
}

/// A ticket view from the script's array (see `view` in the prelude).
fn parse_view(id: &str, f: &[String]) -> Result<TicketView> {
    if f.len() < 11 {
        return Err(corrupt("ticket view"));
    }
    let num = |s: &str| s.parse::<f64>().map_err(|_| corrupt("ticket number"));
    let state = match f[0].as_str() {
        "queued" => TicketState::Queued,
        "pending" => TicketState::Pending,
        "matched" => TicketState::Matched(serde_json::from_str(&f[3])?),
        "cancelled" => TicketState::Cancelled(CancelCause::parse(&f[3])),
        _ => return Err(corrupt("ticket state")),
    };
    Ok(TicketView {
        id: id.to_owned(),
        user_id: f[7].clone(),
        format: Format::parse(&f[4]).ok_or_else(|| corrupt("ticket format"))?,
        rating: num(&f[6])?,
        enqueued_ms: num(&f[5])? as Millis,
        allow_bots: f[8] == "1",
        attached: f[1] == "1",
        unavailable: f[2] == "1",
        state,
        position: num(&f[9])? as u32,
        waiting: num(&f[10])? as u32,
    })
}

/// A group as FORM writes it.
#[derive(Deserialize)]
struct RawGroup {
    room: String,
    fmt: String,
    formed: String,
    /// Absent in groups stored before leases were numbered.
    #[serde(default)]
    lease: u64,
    members: Vec<RawMember>,
}

#[derive(Deserialize)]
struct RawMember {
    ticket_id: String,
    user_id: String,
    guest: String,
    rating: String,
    enqueued_ms: String,
}

fn parse_group(js: &str) -> Result<Group> {
    let raw: RawGroup = serde_json::from_str(js)?;
    let num = |s: &str| s.parse::<f64>().map_err(|_| corrupt("group number"));
    Ok(Group {
        room_id: raw.room,
        format: Format::parse(&raw.fmt).ok_or_else(|| corrupt("group format"))?,
        formed_ms: num(&raw.formed)? as Millis,
        lease: raw.lease,
        members: raw
            .members
            .into_iter()
            .map(|m| {
                Ok(GroupMember {
                    rating: num(&m.rating)?,
                    enqueued_ms: num(&m.enqueued_ms)? as Millis,
                    ticket_id: m.ticket_id,
                    user_id: m.user_id,
                    guest: m.guest == "1",
                })
            })
            .collect::<Result<_>>()?,
    })
}

fn parse_room(meta: &str, seats: &str, status: &str, seq: &str) -> Result<RoomRecord> {
    let mut room: RoomRecord = serde_json::from_str(meta)?;
    room.seats = serde_json::from_str(seats)?;
    room.status = RoomStatus::parse(status);
    room.list_seq = seq.parse().unwrap_or(0);
    Ok(room)
}

fn b(v: bool) -> &'static str {
    if v { "1" } else { "0" }
}

#[tonic::async_trait]
impl Store for RedisStore {
    async fn enqueue(
        &self,
        t: NewTicket,
        now: Millis,
        ttl_ms: Millis,
        grace_ms: Millis,
    ) -> Result<Enqueued> {
        let out: Vec<String> = self
            .scripts
            .enqueue
            .key(&self.queue)
            .arg(&t.id)
            .arg(&t.user_id)
            .arg(b(t.guest))
            .arg(t.format.key())
            .arg(t.rating.to_string())
            .arg(b(t.allow_bots))
            .arg(now)
            .arg(ttl_ms)
            .arg(grace_ms)
            .invoke_async(&mut self.conn())
            .await?;
        if out.first().map(String::as_str) == Some("owner") {
            return Err(MatchmakingError::InvalidArgument(
                "ticket_id is in use by another account: pick a fresh one".into(),
            ));
        }
        if out.first().map(String::as_str) == Some("ingroup") {
            return Err(super::memory::in_group_error(
                out.get(1).map(String::as_str).unwrap_or_default(),
            ));
        }
        Ok(Enqueued {
            resumed: out.first().map(String::as_str) == Some("1"),
            view: parse_view(&t.id, out.get(1..).unwrap_or_default())?,
        })
    }

    async fn poll(&self, id: &str, now: Millis, ttl_ms: Millis) -> Result<Option<TicketView>> {
        let out: Option<Vec<String>> = self
            .scripts
            .poll
            .key(&self.queue)
            .arg(id)
            .arg(now)
            .arg(ttl_ms)
            .invoke_async(&mut self.conn())
            .await?;
        out.map(|f| parse_view(id, &f)).transpose()
    }

    async fn detach(&self, id: &str, now: Millis, grace_ms: Millis) -> Result<()> {
        let _: i64 = self
            .scripts
            .detach
            .key(&self.queue)
            .arg(id)
            .arg(now)
            .arg(grace_ms)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    async fn cancel(
        &self,
        user_id: &str,
        id: &str,
        cause: CancelCause,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<CancelOutcome> {
        let out: Vec<String> = self
            .scripts
            .cancel
            .key(&self.queue)
            .arg(id)
            .arg(user_id)
            .arg(cause.as_str())
            .arg(now)
            .arg(grace_ms)
            .invoke_async(&mut self.conn())
            .await?;
        match out.first().map(String::as_str) {
            Some("cancelled") => Ok(CancelOutcome::Cancelled),
            Some("ingroup") => Ok(CancelOutcome::InGroup),
            Some("matched") => Ok(CancelOutcome::AlreadyMatched(serde_json::from_str(
                out.get(1).ok_or_else(|| corrupt("match record"))?,
            )?)),
            _ => Ok(CancelOutcome::NotFound),
        }
    }

    async fn form_groups(
        &self,
        now: Millis,
        params: &PairingParams,
        room_ids: &[String],
    ) -> Result<Vec<Group>> {
        let mut call = self.scripts.form.key(&self.queue);
        call.arg(now)
            .arg(params.window.start)
            .arg(params.window.growth_per_second)
            .arg(params.window.max)
            .arg(params.bot_after_ms)
            .arg(params.lease_ms)
            .arg(params.max_groups)
            .arg(params.scan_limit)
            .arg(params.candidates)
            .arg(params.min_round_interval_ms);
        for id in room_ids {
            call.arg(id);
        }
        let out: Vec<String> = call.invoke_async(&mut self.conn()).await?;
        out.iter().map(|js| parse_group(js)).collect()
    }

    async fn reclaim(&self, now: Millis, lease_ms: Millis, max: usize) -> Result<Vec<Group>> {
        let out: Vec<String> = self
            .scripts
            .reclaim
            .key(&self.queue)
            .arg(now)
            .arg(lease_ms)
            .arg(max)
            .invoke_async(&mut self.conn())
            .await?;
        out.iter().map(|js| parse_group(js)).collect()
    }

    async fn commit(
        &self,
        room_id: &str,
        records: &[(String, MatchRecord)],
        now: Millis,
        grace_ms: Millis,
    ) -> Result<CommitOutcome> {
        let mut call = self.scripts.commit.key(&self.queue);
        call.arg(room_id).arg(now).arg(grace_ms);
        for (id, record) in records {
            call.arg(id).arg(serde_json::to_string(record)?);
        }
        let out: String = call.invoke_async(&mut self.conn()).await?;
        Ok(match out.as_str() {
            "committed" => CommitOutcome::Committed,
            "aborted" => CommitOutcome::Aborted,
            _ => CommitOutcome::Gone,
        })
    }

    async fn release(
        &self,
        room_id: &str,
        lease: u64,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<bool> {
        let done: i64 = self
            .scripts
            .release
            .key(&self.queue)
            .arg(room_id)
            .arg(lease)
            .arg(now)
            .arg(grace_ms)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(done == 1)
    }

    async fn defer(&self, room_id: &str, lease: u64, retry_at: Millis) -> Result<bool> {
        let done: i64 = self
            .scripts
            .defer
            .key(&self.queue)
            .arg(room_id)
            .arg(lease)
            .arg(retry_at)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(done == 1)
    }

    async fn expire(&self, now: Millis, max: usize) -> Result<u64> {
        let n: u64 = self
            .scripts
            .expire
            .key(&self.queue)
            .arg(now)
            .arg(max)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(n)
    }

    async fn queue_lengths(&self) -> Result<Vec<(Format, u64)>> {
        let out: Vec<String> = self
            .scripts
            .lengths
            .key(&self.queue)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(out
            .chunks(2)
            .filter_map(|c| Some((Format::parse(&c[0])?, c.get(1)?.parse().ok()?)))
            .filter(|(_, n)| *n > 0)
            .collect())
    }

    fn subscribe(&self) -> broadcast::Receiver<String> {
        self.events.subscribe()
    }

    async fn claim_request(
        &self,
        user_id: &str,
        request_id: &str,
        room_id: &str,
    ) -> Result<String> {
        let key = format!("{}:req:{user_id}:{request_id}", self.lobby);
        let mut conn = self.conn();
        // A day is far longer than any client retries.
        let (existing,): (String,) = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(&key)
            .arg(room_id)
            .arg("NX")
            .arg("PX")
            .arg(86_400_000)
            .ignore()
            .get(&key)
            .query_async(&mut conn)
            .await?;
        Ok(existing)
    }

    async fn claim_code(&self, code: &str, room_id: &str) -> Result<bool> {
        let key = format!("{}:code:{code}", self.lobby);
        let set: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(room_id)
            .arg("NX")
            .query_async(&mut self.conn())
            .await?;
        Ok(set.is_some())
    }

    async fn insert_room(&self, room: &RoomRecord) -> Result<()> {
        let _: i64 = self
            .scripts
            .insert_room
            .key(&self.lobby)
            .arg(&room.id)
            .arg(serde_json::to_string(room)?)
            .arg(serde_json::to_string(&room.seats)?)
            .arg(room.settings.seat_count())
            .arg(room.settings.target_score)
            .arg(b(room.ranked))
            .arg(b(room.public))
            .arg(&room.code)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    async fn room(&self, id: &str) -> Result<Option<RoomRecord>> {
        let key = format!("{}:room:{id}", self.lobby);
        let f: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(&key)
            .arg(&["meta", "seats", "status", "seq"])
            .query_async(&mut self.conn())
            .await?;
        match f.as_slice() {
            [Some(meta), Some(seats), Some(status), seq] => Ok(Some(parse_room(
                meta,
                seats,
                status,
                seq.as_deref().unwrap_or("0"),
            )?)),
            _ => Ok(None),
        }
    }

    async fn room_by_code(&self, code: &str) -> Result<Option<String>> {
        Ok(self
            .conn()
            .get(format!("{}:code:{code}", self.lobby))
            .await?)
    }

    async fn take_seat(
        &self,
        room_id: &str,
        user_id: &str,
        guest: bool,
        preferred: Option<u32>,
    ) -> Result<TakeSeat> {
        let out: Vec<String> = self
            .scripts
            .take_seat
            .key(&self.lobby)
            .arg(room_id)
            .arg(user_id)
            .arg(b(guest))
            .arg(preferred.map_or(-1, i64::from))
            .invoke_async(&mut self.conn())
            .await?;
        let seat = || -> Result<u32> {
            out.get(1)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| corrupt("seat"))
        };
        Ok(match out.first().map(String::as_str) {
            Some("seated") => TakeSeat::Seated {
                seat: seat()?,
                full: out.get(2).map(String::as_str) == Some("1"),
            },
            Some("already") => TakeSeat::Already { seat: seat()? },
            Some("full") => TakeSeat::Full,
            Some("closed") => TakeSeat::Closed,
            Some("taken") => TakeSeat::SeatTaken,
            Some("nosuchseat") => TakeSeat::NoSuchSeat,
            _ => TakeSeat::NotFound,
        })
    }

    async fn free_seat(&self, room_id: &str, seat: u32, user_id: &str) -> Result<()> {
        let _: i64 = self
            .scripts
            .free_seat
            .key(&self.lobby)
            .arg(room_id)
            .arg(seat)
            .arg(user_id)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    async fn close_room(&self, room_id: &str) -> Result<()> {
        let _: i64 = self
            .scripts
            .close_room
            .key(&self.lobby)
            .arg(room_id)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    async fn set_player_room(&self, user_id: &str, room_id: &str, ttl_ms: Millis) -> Result<()> {
        let key = format!("{}:at:{user_id}", self.lobby);
        let _: () = self
            .conn()
            .pset_ex(key, room_id, ttl_ms.max(1) as u64)
            .await?;
        Ok(())
    }

    async fn player_room(&self, user_id: &str) -> Result<Option<String>> {
        Ok(self
            .conn()
            .get(format!("{}:at:{user_id}", self.lobby))
            .await?)
    }

    async fn queued_ticket(&self, user_id: &str) -> Result<Option<String>> {
        let mut conn = self.conn();
        let latest: Option<String> = conn.get(format!("{}:u:{user_id}", self.queue)).await?;
        let Some(id) = latest else {
            return Ok(None);
        };
        let state: Option<String> = conn.hget(format!("{}:t:{id}", self.queue), "state").await?;
        Ok(matches!(state.as_deref(), Some("queued" | "pending")).then_some(id))
    }

    async fn list_public(
        &self,
        filter: LobbyFilter,
        after: u64,
        limit: usize,
        scan_cap: usize,
    ) -> Result<LobbyPage> {
        let out: Vec<String> = self
            .scripts
            .list
            .key(&self.lobby)
            .arg(after)
            .arg(limit)
            .arg(scan_cap)
            .arg(filter.seats.map(|s| s.to_string()).unwrap_or_default())
            .arg(
                filter
                    .target_score
                    .map(|t| t.to_string())
                    .unwrap_or_default(),
            )
            .arg(filter.ranked.map(|r| b(r).to_owned()).unwrap_or_default())
            .invoke_async(&mut self.conn())
            .await?;
        let next = out
            .first()
            .filter(|s| !s.is_empty())
            .and_then(|s| s.parse().ok());
        let rooms = out
            .get(1..)
            .unwrap_or_default()
            .chunks(4)
            .filter(|c| c.len() == 4)
            .map(|c| parse_room(&c[0], &c[1], &c[2], &c[3]))
            .collect::<Result<_>>()?;
        Ok(LobbyPage { rooms, next })
    }

    async fn wrong_codes(&self, user_id: &str, bucket: i64) -> Result<u32> {
        let n: Option<u32> = self
            .conn()
            .get(format!("{}:guess:{user_id}:{bucket}", self.lobby))
            .await?;
        Ok(n.unwrap_or(0))
    }

    async fn add_wrong_code(&self, user_id: &str, bucket: i64, ttl_ms: Millis) -> Result<u32> {
        let key = format!("{}:guess:{user_id}:{bucket}", self.lobby);
        let (n,): (u32,) = redis::pipe()
            .atomic()
            .incr(&key, 1)
            .pexpire(&key, ttl_ms)
            .ignore()
            .query_async(&mut self.conn())
            .await?;
        Ok(n)
    }
}
