//! The memory store's queue: tickets, the pools of each format (by queue time and by
//! rating), deadlines, groups and their leases, one mutex over all of them. The
//! pairing round mirrors `form.lua` step for step (`tests/it/pairing_parity.rs` pins
//! the two together).

use std::{
    cmp::Ordering,
    collections::{BTreeSet, HashMap},
    sync::MutexGuard,
};

use tokio::sync::broadcast;

use super::{MemoryStore, lock};
use crate::{
    clock::Millis,
    domain::{Format, PairingParams},
    error::{MatchmakingError, Result},
    store::queue::{
        CancelCause, CancelOutcome, CommitOutcome, Enqueued, Group, GroupMember, MatchRecord,
        NewTicket, QueueStore, TicketState, TicketView, in_group_error,
    },
};

/// A rating with a total order, for the rating index.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rating(f64);

impl Eq for Rating {}

impl PartialOrd for Rating {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rating {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[derive(Debug, Clone)]
struct Ticket {
    user_id: String,
    guest: bool,
    format: Format,
    rating: f64,
    enqueued_ms: Millis,
    allow_bots: bool,
    attached: bool,
    unavailable: bool,
    state: TicketState,
    /// Accounts this one blocks (never grouped with them).
    blocks: Vec<String>,
}

#[derive(Debug, Default)]
struct Pool {
    by_wait: BTreeSet<(Millis, String)>,
    by_rating: BTreeSet<(Rating, String)>,
}

/// Everything the queue holds.
#[derive(Debug, Default)]
pub(super) struct QueueState {
    tickets: HashMap<String, Ticket>,
    pools: HashMap<Format, Pool>,
    users: HashMap<String, String>,
    alive: BTreeSet<(Millis, String)>,
    deadline: HashMap<String, Millis>,
    groups: HashMap<String, Group>,
    pending: BTreeSet<(Millis, String)>,
    lease: HashMap<String, Millis>,
}

impl QueueState {
    fn pool_add(&mut self, id: &str) {
        let t = &self.tickets[id];
        let pool = self.pools.entry(t.format).or_default();
        pool.by_wait.insert((t.enqueued_ms, id.to_owned()));
        pool.by_rating.insert((Rating(t.rating), id.to_owned()));
    }

    fn pool_rem(&mut self, id: &str) {
        let t = &self.tickets[id];
        if let Some(pool) = self.pools.get_mut(&t.format) {
            pool.by_wait.remove(&(t.enqueued_ms, id.to_owned()));
            pool.by_rating.remove(&(Rating(t.rating), id.to_owned()));
        }
    }

    fn set_deadline(&mut self, id: &str, at: Millis) {
        if let Some(old) = self.deadline.insert(id.to_owned(), at) {
            self.alive.remove(&(old, id.to_owned()));
        }
        self.alive.insert((at, id.to_owned()));
    }

    fn drop_deadline(&mut self, id: &str) {
        if let Some(old) = self.deadline.remove(id) {
            self.alive.remove(&(old, id.to_owned()));
        }
    }

    fn set_lease(&mut self, room: &str, at: Millis) {
        if let Some(old) = self.lease.insert(room.to_owned(), at) {
            self.pending.remove(&(old, room.to_owned()));
        }
        self.pending.insert((at, room.to_owned()));
    }

    fn drop_group(&mut self, room: &str) {
        self.groups.remove(room);
        if let Some(old) = self.lease.remove(room) {
            self.pending.remove(&(old, room.to_owned()));
        }
    }

    fn view(&self, id: &str) -> Option<TicketView> {
        let t = self.tickets.get(id)?;
        let (mut position, mut waiting) = (0, 0);
        if t.state == TicketState::Queued
            && let Some(pool) = self.pools.get(&t.format)
        {
            waiting = pool.by_wait.len() as u32;
            if t.attached {
                let key = (t.enqueued_ms, id.to_owned());
                position = pool.by_wait.range(..=key).count() as u32;
            }
        }
        Some(TicketView {
            id: id.to_owned(),
            user_id: t.user_id.clone(),
            format: t.format,
            rating: t.rating,
            enqueued_ms: t.enqueued_ms,
            allow_bots: t.allow_bots,
            attached: t.attached,
            unavailable: t.unavailable,
            state: t.state.clone(),
            position,
            waiting,
        })
    }

    /// Whether ticket `c` may join the group of `anchor` and `picked`: no member blocks
    /// `c`'s account, and `c` blocks none of theirs (mirrors `fits` in form.lua).
    fn fits(&self, c: &str, anchor: &str, picked: &[String]) -> bool {
        let tc = &self.tickets[c];
        std::iter::once(anchor)
            .chain(picked.iter().map(String::as_str))
            .all(|m| {
                let tm = &self.tickets[m];
                !tm.blocks.contains(&tc.user_id) && !tc.blocks.contains(&tm.user_id)
            })
    }

    /// One format's share of a pairing round (mirrors `FORM` in redis.rs).
    fn form_in(
        &mut self,
        format: Format,
        now: Millis,
        params: &PairingParams,
        room_ids: &[String],
        out: &mut Vec<Group>,
    ) {
        let limit = params.max_groups.min(room_ids.len());
        let Some(pool) = self.pools.get(&format) else {
            return;
        };
        let anchors: Vec<String> = pool
            .by_wait
            .iter()
            .take(params.scan_limit)
            .map(|(_, id)| id.clone())
            .collect();
        let need = usize::from(format.seats) - 1;
        for anchor in anchors {
            if out.len() >= limit {
                break;
            }
            let Some(a) = self.tickets.get(&anchor) else {
                continue;
            };
            if a.state != TicketState::Queued || !a.attached {
                continue;
            }
            let pool = &self.pools[&format];
            let mut picked: Vec<String> = Vec::new();
            if format.ranked {
                let wa = params.window.width(now - a.enqueued_ms);
                let ra = a.rating;
                let mut cands: Vec<(f64, String, f64, f64)> = Vec::new();
                let mut seen = std::collections::HashSet::new();
                let above = pool
                    .by_rating
                    .range((Rating(ra), String::new())..)
                    .take_while(|(r, _)| r.0 <= ra + wa)
                    .take(params.candidates);
                let below = pool
                    .by_rating
                    .range(..(Rating(ra), "\u{10FFFF}".to_owned()))
                    .rev()
                    .take_while(|(r, _)| r.0 >= ra - wa)
                    .take(params.candidates);
                for (rc, c) in above.chain(below) {
                    if *c == anchor || !seen.insert(c.clone()) {
                        continue;
                    }
                    let wc = params.window.width(now - self.tickets[c].enqueued_ms);
                    let d = (rc.0 - ra).abs();
                    if d <= wa && d <= wc {
                        cands.push((d, c.clone(), rc.0, wc));
                    }
                }
                cands.sort_by(|x, y| x.0.total_cmp(&y.0).then_with(|| x.1.cmp(&y.1)));
                let (mut lo, mut hi, mut minw) = (ra, ra, wa);
                for (_, c, rc, wc) in cands {
                    if picked.len() >= need {
                        break;
                    }
                    let (nlo, nhi, nminw) = (lo.min(rc), hi.max(rc), minw.min(wc));
                    if nhi - nlo <= nminw && self.fits(&c, &anchor, &picked) {
                        (lo, hi, minw) = (nlo, nhi, nminw);
                        picked.push(c);
                    }
                }
            } else {
                // The oldest others (looking past at most `candidates` that cannot join
                // the group for a block).
                let others: Vec<String> = pool
                    .by_wait
                    .iter()
                    .map(|(_, id)| id)
                    .filter(|id| **id != anchor)
                    .take(need + params.candidates)
                    .cloned()
                    .collect();
                for c in others {
                    if picked.len() >= need {
                        break;
                    }
                    if self.fits(&c, &anchor, &picked) {
                        picked.push(c);
                    }
                }
            }
            let members: Vec<String> = if picked.len() == need {
                std::iter::once(anchor.clone()).chain(picked).collect()
            } else if a.allow_bots && now - a.enqueued_ms >= params.bot_after_ms {
                vec![anchor.clone()]
            } else {
                continue;
            };
            let room_id = room_ids[out.len()].clone();
            let mut group = Group {
                room_id: room_id.clone(),
                format,
                members: Vec::with_capacity(members.len()),
                formed_ms: now,
                lease: 1,
            };
            for id in members {
                self.pool_rem(&id);
                let t = self.tickets.get_mut(&id).expect("pooled tickets exist");
                t.state = TicketState::Pending;
                group.members.push(GroupMember {
                    ticket_id: id,
                    user_id: t.user_id.clone(),
                    guest: t.guest,
                    rating: t.rating,
                    enqueued_ms: t.enqueued_ms,
                });
            }
            self.groups.insert(room_id.clone(), group.clone());
            self.set_lease(&room_id, now + params.lease_ms);
            out.push(group);
        }
    }

    fn requeue(&mut self, id: &str, now: Millis, grace_ms: Millis) {
        let t = self.tickets.get_mut(id).expect("exists");
        t.state = TicketState::Queued;
        if t.attached {
            self.pool_add(id);
        }
        self.set_deadline(id, now + grace_ms);
    }
}

impl MemoryStore {
    fn lock_queue(&self) -> MutexGuard<'_, QueueState> {
        lock(&self.queue)
    }

    fn notify(&self, id: &str) {
        // No receiver is fine: nobody waits on this ticket here.
        let _ = self.events.send(id.to_owned());
    }

    /// Ends the group held under `lease` (release, abandon): each member still pending
    /// is `settle`d, kept until `deadline` and told; the group goes. Whether the lease
    /// still held.
    fn end_group(
        &self,
        room_id: &str,
        lease: u64,
        deadline: Millis,
        settle: impl Fn(&mut Ticket),
    ) -> bool {
        let notify = {
            let mut s = self.lock_queue();
            let Some(group) = s.groups.get(room_id).filter(|g| g.lease == lease).cloned() else {
                return false;
            };
            let mut notify = Vec::new();
            for m in &group.members {
                let Some(t) = s.tickets.get_mut(&m.ticket_id) else {
                    continue;
                };
                if t.state == TicketState::Pending {
                    settle(t);
                    s.set_deadline(&m.ticket_id, deadline);
                    notify.push(m.ticket_id.clone());
                }
            }
            s.drop_group(room_id);
            notify
        };
        for id in notify {
            self.notify(&id);
        }
        true
    }
}

#[tonic::async_trait]
impl QueueStore for MemoryStore {
    async fn enqueue(
        &self,
        ticket: NewTicket,
        now: Millis,
        ttl_ms: Millis,
        grace_ms: Millis,
    ) -> Result<Enqueued> {
        let mut notify = Vec::new();
        let result = {
            let mut s = self.lock_queue();
            let id = ticket.id.clone();
            let resumed = if let Some(t) = s.tickets.get_mut(&id) {
                if t.user_id != ticket.user_id {
                    return Err(MatchmakingError::InvalidArgument(
                        "ticket_id is in use by another account: pick a fresh one".into(),
                    ));
                }
                if !t.attached {
                    t.attached = true;
                    t.unavailable = false;
                    if t.state == TicketState::Queued {
                        s.pool_add(&id);
                        s.set_deadline(&id, now + ttl_ms);
                    }
                }
                true
            } else {
                if let Some(old) = s.users.get(&ticket.user_id).cloned()
                    && old != id
                    && let Some(o) = s.tickets.get(&old)
                {
                    match o.state {
                        TicketState::Queued => {
                            s.pool_rem(&old);
                            s.tickets.get_mut(&old).expect("exists").state =
                                TicketState::Cancelled(CancelCause::Superseded);
                            s.set_deadline(&old, now + grace_ms);
                            notify.push(old);
                        }
                        // Its group is final: this account plays there.
                        TicketState::Pending => return Err(in_group_error(&old)),
                        _ => {}
                    }
                }
                s.tickets.insert(
                    id.clone(),
                    Ticket {
                        user_id: ticket.user_id.clone(),
                        guest: ticket.guest,
                        format: ticket.format,
                        rating: ticket.rating,
                        enqueued_ms: now,
                        allow_bots: ticket.allow_bots,
                        attached: true,
                        unavailable: false,
                        state: TicketState::Queued,
                        blocks: ticket.blocks.clone(),
                    },
                );
                s.pool_add(&id);
                s.set_deadline(&id, now + ttl_ms);
                s.users.insert(ticket.user_id.clone(), id.clone());
                false
            };
            Enqueued {
                view: s.view(&id).expect("just written"),
                resumed,
            }
        };
        for id in notify {
            self.notify(&id);
        }
        Ok(result)
    }

    async fn poll(&self, id: &str, now: Millis, ttl_ms: Millis) -> Result<Option<TicketView>> {
        let mut s = self.lock_queue();
        let Some(t) = s.tickets.get(id) else {
            return Ok(None);
        };
        if t.state == TicketState::Queued && t.attached {
            s.set_deadline(id, now + ttl_ms);
        }
        Ok(s.view(id))
    }

    async fn detach(&self, id: &str, now: Millis, grace_ms: Millis) -> Result<()> {
        let mut s = self.lock_queue();
        let Some(t) = s.tickets.get_mut(id) else {
            return Ok(());
        };
        if t.attached {
            t.attached = false;
            if t.state == TicketState::Queued {
                s.pool_rem(id);
                s.set_deadline(id, now + grace_ms);
            }
        }
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
        let outcome = {
            let mut s = self.lock_queue();
            let Some(t) = s.tickets.get(id).filter(|t| t.user_id == user_id) else {
                return Ok(CancelOutcome::NotFound);
            };
            match t.state.clone() {
                TicketState::Matched(record) => return Ok(CancelOutcome::AlreadyMatched(record)),
                TicketState::Cancelled(_) => return Ok(CancelOutcome::Cancelled),
                TicketState::Queued => s.pool_rem(id),
                // Its group is final (the room may exist already): it stays.
                TicketState::Pending => return Ok(CancelOutcome::InGroup),
            }
            s.tickets.get_mut(id).expect("exists").state = TicketState::Cancelled(cause);
            s.set_deadline(id, now + grace_ms);
            CancelOutcome::Cancelled
        };
        self.notify(id);
        Ok(outcome)
    }

    async fn form_groups(
        &self,
        now: Millis,
        params: &PairingParams,
        room_ids: &[String],
    ) -> Result<Vec<Group>> {
        let mut s = self.lock_queue();
        let mut formats: Vec<Format> = s
            .pools
            .iter()
            .filter(|(_, p)| !p.by_wait.is_empty())
            .map(|(f, _)| *f)
            .collect();
        formats.sort_by_key(|f| f.key());
        let mut out = Vec::new();
        for format in formats {
            s.form_in(format, now, params, room_ids, &mut out);
        }
        Ok(out)
    }

    async fn reclaim(&self, now: Millis, lease_ms: Millis, max: usize) -> Result<Vec<Group>> {
        let mut s = self.lock_queue();
        let due: Vec<String> = s
            .pending
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(max)
            .map(|(_, room)| room.clone())
            .collect();
        let mut out = Vec::new();
        for room in due {
            s.set_lease(&room, now + lease_ms);
            let group = s.groups.get_mut(&room).expect("leased groups exist");
            group.lease += 1;
            out.push(group.clone());
        }
        Ok(out)
    }

    async fn commit(
        &self,
        room_id: &str,
        _format: Format,
        records: &[(String, MatchRecord)],
        now: Millis,
        grace_ms: Millis,
    ) -> Result<CommitOutcome> {
        let (outcome, notify) = {
            let mut s = self.lock_queue();
            if !s.groups.contains_key(room_id) {
                return Ok(CommitOutcome::Gone);
            }
            let all_pending = records.iter().all(|(id, _)| {
                s.tickets
                    .get(id)
                    .is_some_and(|t| t.state == TicketState::Pending)
            });
            let mut notify = Vec::new();
            for (id, record) in records {
                let pending = s
                    .tickets
                    .get(id)
                    .is_some_and(|t| t.state == TicketState::Pending);
                if all_pending {
                    s.tickets.get_mut(id).expect("exists").state =
                        TicketState::Matched(record.clone());
                    s.set_deadline(id, now + grace_ms);
                    notify.push(id.clone());
                } else if pending {
                    s.requeue(id, now, grace_ms);
                    notify.push(id.clone());
                }
            }
            s.drop_group(room_id);
            let outcome = if all_pending {
                CommitOutcome::Committed
            } else {
                CommitOutcome::Aborted
            };
            (outcome, notify)
        };
        for id in notify {
            self.notify(&id);
        }
        Ok(outcome)
    }

    async fn release(
        &self,
        room_id: &str,
        _format: Format,
        lease: u64,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<bool> {
        Ok(self.end_group(room_id, lease, now + grace_ms, |t| {
            t.state = TicketState::Queued;
            t.attached = false;
            t.unavailable = true;
        }))
    }

    async fn defer(
        &self,
        room_id: &str,
        _format: Format,
        lease: u64,
        retry_at: Millis,
    ) -> Result<bool> {
        let notify = {
            let mut s = self.lock_queue();
            let Some(group) = s.groups.get(room_id).filter(|g| g.lease == lease).cloned() else {
                return Ok(false);
            };
            let mut notify = Vec::new();
            for m in &group.members {
                if let Some(t) = s.tickets.get_mut(&m.ticket_id)
                    && t.state == TicketState::Pending
                {
                    t.attached = false;
                    t.unavailable = true;
                    notify.push(m.ticket_id.clone());
                }
            }
            s.set_lease(room_id, retry_at);
            notify
        };
        for id in notify {
            self.notify(&id);
        }
        Ok(true)
    }

    async fn abandon(
        &self,
        room_id: &str,
        _format: Format,
        lease: u64,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<bool> {
        Ok(self.end_group(room_id, lease, now + grace_ms, |t| {
            t.state = TicketState::Cancelled(CancelCause::RoomUnavailable);
            t.unavailable = false;
        }))
    }

    async fn expire(&self, now: Millis, max: usize) -> Result<u64> {
        let (dropped, notify) = {
            let mut s = self.lock_queue();
            let due: Vec<String> = s
                .alive
                .iter()
                .take_while(|(at, _)| *at <= now)
                .take(max)
                .map(|(_, id)| id.clone())
                .collect();
            let mut dropped = 0;
            let mut notify = Vec::new();
            for id in due {
                let Some(t) = s.tickets.get(&id) else {
                    s.drop_deadline(&id);
                    continue;
                };
                match t.state {
                    // The group's lease decides; look again later.
                    TicketState::Pending => s.set_deadline(&id, now + 60_000),
                    _ => {
                        let queued = t.state == TicketState::Queued;
                        let user = t.user_id.clone();
                        if queued {
                            s.pool_rem(&id);
                            dropped += 1;
                            notify.push(id.clone());
                        }
                        s.tickets.remove(&id);
                        s.drop_deadline(&id);
                        if s.users.get(&user) == Some(&id) {
                            s.users.remove(&user);
                        }
                    }
                }
            }
            (dropped, notify)
        };
        for id in notify {
            self.notify(&id);
        }
        Ok(dropped)
    }

    async fn queue_lengths(&self) -> Result<Vec<(Format, u64)>> {
        let s = self.lock_queue();
        Ok(s.pools
            .iter()
            .filter(|(_, p)| !p.by_wait.is_empty())
            .map(|(f, p)| (*f, p.by_wait.len() as u64))
            .collect())
    }

    fn subscribe(&self) -> broadcast::Receiver<String> {
        self.events.subscribe()
    }

    async fn queued_ticket(&self, user_id: &str) -> Result<Option<String>> {
        let s = self.lock_queue();
        let Some(id) = s.users.get(user_id) else {
            return Ok(None);
        };
        let waiting = s
            .tickets
            .get(id)
            .is_some_and(|t| matches!(t.state, TicketState::Queued | TicketState::Pending));
        Ok(waiting.then(|| id.clone()))
    }
}
