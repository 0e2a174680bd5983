//! The queue in Redis, one slot per format: each format's tickets, pools, deadlines,
//! groups and leases share the hash tag `{q:F}`, and every queue script below is one
//! atomic step on one format's slot. A search is routed to its format by its locator
//! (`{t:ID}`), an account's live search is kept in its own slot (`{pl:A}`), and the
//! pairing rounds, reclaim, expiry and lengths walk the registry of formats
//! (`{q}:fmts`). Key table and the order of a new search's steps: [`super`].

use redis::AsyncCommands as _;
use serde::Deserialize;
use tokio::sync::broadcast;

use basra_platform::redis::{PubSubEvent, Script};

use super::{RedisStore, b, corrupt};
use crate::{
    clock::Millis,
    domain::{Format, PairingParams},
    error::{MatchmakingError, Result},
    store::queue::{
        CancelCause, CancelOutcome, CommitOutcome, Enqueued, Group, GroupMember, MatchRecord,
        NewTicket, QueueStore, TicketState, TicketView, in_group_error,
    },
};

/// A script on one format's slot: the shared helpers, then its body.
fn script(body: &str) -> Script {
    Script::new(&format!("{}\n{body}", include_str!("queue/prelude.lua")))
}

/// The queue's scripts, loaded once.
#[derive(Debug)]
pub(super) struct Scripts {
    // On a format's slot.
    enter: Script,
    poll: Script,
    detach: Script,
    cancel: Script,
    form: Script,
    reclaim: Script,
    commit: Script,
    release: Script,
    abandon: Script,
    defer: Script,
    expire: Script,
    // On an account's slot.
    swap: Script,
    settle: Script,
    forget: Script,
}

impl Scripts {
    pub(super) fn new() -> Scripts {
        Scripts {
            enter: script(include_str!("queue/enter.lua")),
            poll: script(include_str!("queue/poll.lua")),
            detach: script(include_str!("queue/detach.lua")),
            cancel: script(include_str!("queue/cancel.lua")),
            form: script(include_str!("queue/form.lua")),
            reclaim: script(include_str!("queue/reclaim.lua")),
            commit: script(include_str!("queue/commit.lua")),
            release: script(include_str!("queue/release.lua")),
            abandon: script(include_str!("queue/abandon.lua")),
            defer: script(include_str!("queue/defer.lua")),
            expire: script(include_str!("queue/expire.lua")),
            swap: Script::new(include_str!("queue/swap.lua")),
            settle: Script::new(include_str!("queue/settle.lua")),
            forget: Script::new(include_str!("queue/forget.lua")),
        }
    }
}

/// The pairing script of one format's slot, as the store runs it (public for the
/// benchmark and the property test that pins it to the memory store's pairing).
pub fn pairing_script() -> Script {
    script(include_str!("queue/form.lua"))
}

impl RedisStore {
    /// `P:{q:F}`: format `F`'s slot, the key its scripts are called with.
    fn format_slot(&self, format: &str) -> String {
        self.keys.slot(&format!("q:{format}"))
    }

    /// `P:{t:ID}`: the ticket's locator (`"F owner"`).
    fn ticket_locator(&self, id: &str) -> String {
        self.keys.slot(&format!("t:{id}"))
    }

    /// `P:{pl:A}`: the account's slot (its live search and superseded tickets).
    fn account_slot(&self, user_id: &str) -> String {
        self.keys.slot(&format!("pl:{user_id}"))
    }

    /// `P:{q}:fmts`: the registry of formats ever used.
    fn formats_registry(&self) -> String {
        self.keys.key("q", "fmts")
    }

    /// The formats in the registry, in key order (the order of a pairing round).
    async fn registered(&self) -> Result<Vec<String>> {
        let mut formats: Vec<String> = self.conn().smembers(self.formats_registry()).await?;
        formats.sort();
        Ok(formats)
    }

    /// Registers `format` and listens on its event channel, once per process. Called
    /// before a ticket of this process enters the format, so none of its events is
    /// missed.
    async fn know(&self, format: &str) -> Result<()> {
        let mut known = self.known.lock().await;
        if known.contains(format) {
            return Ok(());
        }
        let _: i64 = self.conn().sadd(self.formats_registry(), format).await?;
        let sender = self.events.clone();
        self.redis
            .subscribe(
                vec![format!("{}:events", self.format_slot(format))],
                self.listening.child_token(),
                move |event| {
                    if let PubSubEvent::Message { payload, .. } = event
                        && let Ok(id) = String::from_utf8(payload)
                    {
                        let _ = sender.send(id);
                    }
                },
            )
            .await?;
        known.insert(format.to_owned());
        Ok(())
    }

    /// The ticket's locator: its format and owner.
    async fn locate(&self, id: &str) -> Result<Option<(Format, String)>> {
        let value: Option<String> = self.conn().get(self.ticket_locator(id)).await?;
        let Some(value) = value else {
            return Ok(None);
        };
        let (format, owner) = parse_locator(&value)?;
        self.formats.remember(id, format);
        Ok(Some((format, owner)))
    }

    /// The ticket's format: remembered, else from its locator.
    async fn format_of(&self, id: &str) -> Result<Option<Format>> {
        if let Some(format) = self.formats.get(id) {
            return Ok(Some(format));
        }
        Ok(self.locate(id).await?.map(|(format, _)| format))
    }

    /// Runs ENTER for `t` in `format`'s slot.
    async fn enter(
        &self,
        t: &NewTicket,
        format: Format,
        now: Millis,
        ttl_ms: Millis,
        create: bool,
    ) -> Result<Vec<String>> {
        Ok(self
            .queue_scripts
            .enter
            .key(self.format_slot(&format.key()))
            .arg(&t.id)
            .arg(&t.user_id)
            .arg(b(t.guest))
            .arg(t.rating.to_string())
            .arg(b(t.allow_bots))
            .arg(now)
            .arg(ttl_ms)
            .arg(b(create))
            .arg(t.blocks.join(" "))
            .invoke_async(&mut self.conn())
            .await?)
    }

    async fn poll_in(
        &self,
        format: Format,
        id: &str,
        now: Millis,
        ttl_ms: Millis,
    ) -> Result<Option<Vec<String>>> {
        Ok(self
            .queue_scripts
            .poll
            .key(self.format_slot(&format.key()))
            .arg(id)
            .arg(now)
            .arg(ttl_ms)
            .invoke_async(&mut self.conn())
            .await?)
    }

    /// CANCEL in `format`'s slot.
    async fn cancel_in(
        &self,
        format: Format,
        user_id: &str,
        id: &str,
        cause: CancelCause,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<CancelOutcome> {
        let out: Vec<String> = self
            .queue_scripts
            .cancel
            .key(self.format_slot(&format.key()))
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

    /// The ticket is no longer the account's live search (if it was) nor a superseded
    /// one waiting for its cancel.
    async fn forget_search(&self, user_id: &str, id: &str) -> Result<()> {
        let _: i64 = self
            .queue_scripts
            .forget
            .key(self.account_slot(user_id))
            .arg(id)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    /// Runs `script` (release or abandon: both end a group held under `lease`, each its
    /// own way, with the same arguments); whether the lease still held.
    async fn end_group(
        &self,
        script: &Script,
        room_id: &str,
        format: Format,
        lease: u64,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<bool> {
        let done: i64 = script
            .key(self.format_slot(&format.key()))
            .arg(room_id)
            .arg(lease)
            .arg(now)
            .arg(grace_ms)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(done == 1)
    }
}

#[tonic::async_trait]
impl QueueStore for RedisStore {
    /// A new search or a resume, in the steps of the key table's design: claim the
    /// ticket's locator, swap it in as the account's live search, cancel (or tombstone)
    /// every ticket it superseded, each in its own format's slot, then insert it.
    async fn enqueue(
        &self,
        t: NewTicket,
        now: Millis,
        ttl_ms: Millis,
        grace_ms: Millis,
    ) -> Result<Enqueued> {
        // 1. Claim: the locator names the ticket's owner and format, once. It expires
        // after a day, far beyond any search and its result's retention, so a crash
        // between a step and the next (claimed, never inserted; expired, locator not yet
        // deleted) leaves nothing for ever.
        let claimed: Option<String> = redis::cmd("SET")
            .arg(self.ticket_locator(&t.id))
            .arg(format!("{} {}", t.format.key(), t.user_id))
            .arg("NX")
            .arg("GET")
            .arg("PX")
            .arg(LOCATOR_TTL_MS)
            .query_async(&mut self.conn())
            .await?;
        let format = match &claimed {
            None => t.format,
            Some(value) => {
                let (format, owner) = parse_locator(value)?;
                if owner != t.user_id {
                    return Err(in_use());
                }
                format
            }
        };
        self.formats.remember(&t.id, format);
        self.know(&format.key()).await?;
        if claimed.is_some() {
            // A resume, in the ticket's own format whatever the request says; a ticket
            // claimed but never inserted (a crash, or an expiry that left its locator)
            // goes on as a new search.
            let out = self.enter(&t, format, now, ttl_ms, false).await?;
            if out.first().map(String::as_str) != Some("absent") {
                return entered(&t.id, &out);
            }
        }
        // 2. Swap: this ticket is the account's live search; the ones it replaces wait
        // in `old` until their cancel is confirmed.
        let account = self.account_slot(&t.user_id);
        let swapped: Vec<String> = self
            .queue_scripts
            .swap
            .key(&account)
            .arg(&t.id)
            .invoke_async(&mut self.conn())
            .await?;
        // 3. Cancel every superseded ticket in its own slot, all of them even when one
        // is in a formed group (a refused search must still end what it displaced).
        let superseded = swapped.get(1..).unwrap_or_default();
        if !superseded.is_empty() {
            let mut confirmed = Vec::with_capacity(superseded.len());
            let mut held = None;
            for old in superseded {
                let outcome = match self.locate(old).await? {
                    Some((old_format, _)) => {
                        self.cancel_in(
                            old_format,
                            &t.user_id,
                            old,
                            CancelCause::Superseded,
                            now,
                            grace_ms,
                        )
                        .await?
                    }
                    // Expired: nothing left to cancel.
                    None => CancelOutcome::Cancelled,
                };
                if outcome == CancelOutcome::InGroup {
                    held.get_or_insert_with(|| old.clone());
                } else {
                    confirmed.push(old.clone());
                }
            }
            let mut call = self.queue_scripts.settle.key(&account);
            call.arg(&t.id).arg(held.as_deref().unwrap_or(""));
            for id in &confirmed {
                call.arg(id);
            }
            let _: i64 = call.invoke_async(&mut self.conn()).await?;
            if let Some(held) = held {
                // Its group is final (the room may exist already): refuse the new one,
                // which was never inserted.
                return Err(in_group_error(&held));
            }
        }
        // 4. Insert, unless a newer search or a cancel tombstoned it meanwhile.
        let out = self.enter(&t, format, now, ttl_ms, true).await?;
        entered(&t.id, &out)
    }

    async fn poll(&self, id: &str, now: Millis, ttl_ms: Millis) -> Result<Option<TicketView>> {
        let remembered = self.formats.get(id);
        let Some(format) = remembered.or(self.locate(id).await?.map(|(f, _)| f)) else {
            return Ok(None);
        };
        let mut out = self.poll_in(format, id, now, ttl_ms).await?;
        if out.is_none() && remembered.is_some() {
            // Gone, or expired and its id taken again in another format: ask its
            // locator rather than this process's memory.
            self.formats.forget(id);
            if let Some((located, _)) = self.locate(id).await?
                && located != format
            {
                out = self.poll_in(located, id, now, ttl_ms).await?;
            }
        }
        out.map(|f| parse_view(id, &f)).transpose()
    }

    async fn detach(&self, id: &str, now: Millis, grace_ms: Millis) -> Result<()> {
        let Some(format) = self.format_of(id).await? else {
            return Ok(());
        };
        let _: i64 = self
            .queue_scripts
            .detach
            .key(self.format_slot(&format.key()))
            .arg(id)
            .arg(now)
            .arg(grace_ms)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    /// CancelFind: the locator says which slot (and whose ticket), the ticket is
    /// cancelled (or tombstoned, if not inserted yet) there, then it stops being the
    /// account's live search.
    async fn cancel(
        &self,
        user_id: &str,
        id: &str,
        cause: CancelCause,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<CancelOutcome> {
        let Some((format, owner)) = self.locate(id).await? else {
            return Ok(CancelOutcome::NotFound);
        };
        if owner != user_id {
            return Ok(CancelOutcome::NotFound);
        }
        let outcome = self
            .cancel_in(format, user_id, id, cause, now, grace_ms)
            .await?;
        if outcome == CancelOutcome::Cancelled {
            self.forget_search(user_id, id).await?;
        }
        Ok(outcome)
    }

    /// One pairing round: one FORM per registered format, in key order, each with the
    /// room ids and group budget the formats before it left.
    async fn form_groups(
        &self,
        now: Millis,
        params: &PairingParams,
        room_ids: &[String],
    ) -> Result<Vec<Group>> {
        let limit = params.max_groups.min(room_ids.len());
        let mut groups = Vec::new();
        for format in self.registered().await? {
            if groups.len() >= limit {
                break;
            }
            let mut call = self.queue_scripts.form.key(self.format_slot(&format));
            call.arg(now)
                .arg(params.window.start)
                .arg(params.window.growth_per_second)
                .arg(params.window.max)
                .arg(params.bot_after_ms)
                .arg(params.lease_ms)
                .arg(limit - groups.len())
                .arg(params.scan_limit)
                .arg(params.candidates)
                .arg(params.min_round_interval_ms);
            for id in &room_ids[groups.len()..limit] {
                call.arg(id);
            }
            let out: Vec<String> = call.invoke_async(&mut self.conn()).await?;
            for js in &out {
                groups.push(parse_group(js)?);
            }
        }
        Ok(groups)
    }

    async fn reclaim(&self, now: Millis, lease_ms: Millis, max: usize) -> Result<Vec<Group>> {
        let mut groups = Vec::new();
        for format in self.registered().await? {
            if groups.len() >= max {
                break;
            }
            let out: Vec<String> = self
                .queue_scripts
                .reclaim
                .key(self.format_slot(&format))
                .arg(now)
                .arg(lease_ms)
                .arg(max - groups.len())
                .invoke_async(&mut self.conn())
                .await?;
            for js in &out {
                groups.push(parse_group(js)?);
            }
        }
        Ok(groups)
    }

    async fn commit(
        &self,
        room_id: &str,
        format: Format,
        records: &[(String, MatchRecord)],
        now: Millis,
        grace_ms: Millis,
    ) -> Result<CommitOutcome> {
        let mut call = self
            .queue_scripts
            .commit
            .key(self.format_slot(&format.key()));
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
        format: Format,
        lease: u64,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<bool> {
        let script = &self.queue_scripts.release;
        self.end_group(script, room_id, format, lease, now, grace_ms)
            .await
    }

    async fn abandon(
        &self,
        room_id: &str,
        format: Format,
        lease: u64,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<bool> {
        let script = &self.queue_scripts.abandon;
        self.end_group(script, room_id, format, lease, now, grace_ms)
            .await
    }

    async fn defer(
        &self,
        room_id: &str,
        format: Format,
        lease: u64,
        retry_at: Millis,
    ) -> Result<bool> {
        let done: i64 = self
            .queue_scripts
            .defer
            .key(self.format_slot(&format.key()))
            .arg(room_id)
            .arg(lease)
            .arg(retry_at)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(done == 1)
    }

    /// Expiry, format by format; then the locators of the deleted tickets, and the
    /// accounts' pointers to them, are deleted in their own slots (a crash in between
    /// leaves a locator of the same owner: a reuse of that id is a new search).
    async fn expire(&self, now: Millis, max: usize) -> Result<u64> {
        let mut dropped = 0;
        let mut budget = max;
        for format in self.registered().await? {
            if budget == 0 {
                break;
            }
            let out: Vec<String> = self
                .queue_scripts
                .expire
                .key(self.format_slot(&format))
                .arg(now)
                .arg(budget)
                .invoke_async(&mut self.conn())
                .await?;
            let (count, gone) = out.split_first().ok_or_else(|| corrupt("expiry"))?;
            dropped += count.parse::<u64>().map_err(|_| corrupt("expiry count"))?;
            for pair in gone.chunks(2) {
                let [id, user_id] = pair else {
                    return Err(corrupt("expiry list"));
                };
                budget = budget.saturating_sub(1);
                let _: i64 = self.conn().del(self.ticket_locator(id)).await?;
                self.formats.forget(id);
                self.forget_search(user_id, id).await?;
            }
        }
        Ok(dropped)
    }

    async fn queue_lengths(&self) -> Result<Vec<(Format, u64)>> {
        let mut lengths = Vec::new();
        for key in self.registered().await? {
            let Some(format) = Format::parse(&key) else {
                continue;
            };
            let n: u64 = self
                .conn()
                .zcard(format!("{}:w", self.format_slot(&key)))
                .await?;
            if n > 0 {
                lengths.push((format, n));
            }
        }
        Ok(lengths)
    }

    /// The account's live search, read through to its ticket: only while it waits or
    /// is in a forming group.
    async fn queued_ticket(&self, user_id: &str) -> Result<Option<String>> {
        let cur: Option<String> = self
            .conn()
            .hget(format!("{}:search", self.account_slot(user_id)), "cur")
            .await?;
        let Some(id) = cur else {
            return Ok(None);
        };
        let Some(format) = self.format_of(&id).await? else {
            return Ok(None);
        };
        let state: Option<String> = self
            .conn()
            .hget(
                format!("{}:t:{id}", self.format_slot(&format.key())),
                "state",
            )
            .await?;
        Ok(matches!(state.as_deref(), Some("queued" | "pending")).then_some(id))
    }

    fn subscribe(&self) -> broadcast::Receiver<String> {
        self.events.subscribe()
    }
}

fn in_use() -> MatchmakingError {
    MatchmakingError::InvalidArgument(
        "ticket_id is in use by another account: pick a fresh one".into(),
    )
}

/// How long a ticket's locator is kept: a day.
const LOCATOR_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// A locator's value: `"F owner"`.
fn parse_locator(value: &str) -> Result<(Format, String)> {
    let (format, owner) = value.split_once(' ').ok_or_else(|| corrupt("locator"))?;
    Ok((
        Format::parse(format).ok_or_else(|| corrupt("locator format"))?,
        owner.to_owned(),
    ))
}

/// What ENTER answered.
fn entered(id: &str, out: &[String]) -> Result<Enqueued> {
    match out.first().map(String::as_str) {
        Some("owner") => Err(in_use()),
        Some(resumed @ ("0" | "1")) => Ok(Enqueued {
            resumed: resumed == "1",
            view: parse_view(id, &out[1..])?,
        }),
        _ => Err(corrupt("enter")),
    }
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
