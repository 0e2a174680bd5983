//! The queue in Redis: tickets, the pools of each format, formed groups and their
//! leases. Every key is in the slot of the hash tag `{q}`; each script below is one
//! atomic step on that slot (see the key table in [`super`]).

use redis::AsyncCommands as _;
use serde::Deserialize;

use basra_platform::redis::{Connection, Script};

use super::{b, corrupt};
use crate::{
    clock::Millis,
    domain::{Format, PairingParams},
    error::{MatchmakingError, Result},
    store::{
        CancelCause, CancelOutcome, CommitOutcome, Enqueued, Group, GroupMember, MatchRecord,
        NewTicket, TicketState, TicketView,
    },
};

/// A queue script: the shared helpers, then its body.
fn script(body: &str) -> Script {
    Script::new(&format!("{}\n{body}", include_str!("queue/prelude.lua")))
}

/// The queue's scripts, loaded once.
#[derive(Debug)]
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
}

impl Scripts {
    fn new() -> Scripts {
        Scripts {
            enqueue: script(include_str!("queue/enqueue.lua")),
            poll: script(include_str!("queue/poll.lua")),
            detach: script(include_str!("queue/detach.lua")),
            cancel: script(include_str!("queue/cancel.lua")),
            form: script(include_str!("queue/form.lua")),
            reclaim: script(include_str!("queue/reclaim.lua")),
            commit: script(include_str!("queue/commit.lua")),
            release: script(include_str!("queue/release.lua")),
            defer: script(include_str!("queue/defer.lua")),
            expire: script(include_str!("queue/expire.lua")),
            lengths: script(include_str!("queue/lengths.lua")),
        }
    }
}

/// The pairing script, as the store runs it (public for the benchmark and the property
/// test that pins it to the memory store's pairing).
pub fn pairing_script() -> Script {
    script(include_str!("queue/form.lua"))
}

/// The queue: tickets and groups under `P:{q}`.
#[derive(Debug)]
pub(super) struct Queue {
    conn: Connection,
    /// `P:{q}`: the key every script is called with (its slot) and the start of every
    /// queue key.
    slot: String,
    scripts: Scripts,
}

impl Queue {
    pub(super) fn new(conn: Connection, slot: String) -> Queue {
        Queue {
            conn,
            slot,
            scripts: Scripts::new(),
        }
    }

    /// The channel of ticket events (a shard channel of the queue's slot).
    pub(super) fn events_channel(&self) -> String {
        format!("{}:events", self.slot)
    }

    fn conn(&self) -> Connection {
        self.conn.clone()
    }

    pub(super) async fn enqueue(
        &self,
        t: NewTicket,
        now: Millis,
        ttl_ms: Millis,
        grace_ms: Millis,
    ) -> Result<Enqueued> {
        let out: Vec<String> = self
            .scripts
            .enqueue
            .key(&self.slot)
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
            return Err(crate::store::memory::in_group_error(
                out.get(1).map(String::as_str).unwrap_or_default(),
            ));
        }
        Ok(Enqueued {
            resumed: out.first().map(String::as_str) == Some("1"),
            view: parse_view(&t.id, out.get(1..).unwrap_or_default())?,
        })
    }

    pub(super) async fn poll(
        &self,
        id: &str,
        now: Millis,
        ttl_ms: Millis,
    ) -> Result<Option<TicketView>> {
        let out: Option<Vec<String>> = self
            .scripts
            .poll
            .key(&self.slot)
            .arg(id)
            .arg(now)
            .arg(ttl_ms)
            .invoke_async(&mut self.conn())
            .await?;
        out.map(|f| parse_view(id, &f)).transpose()
    }

    pub(super) async fn detach(&self, id: &str, now: Millis, grace_ms: Millis) -> Result<()> {
        let _: i64 = self
            .scripts
            .detach
            .key(&self.slot)
            .arg(id)
            .arg(now)
            .arg(grace_ms)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    pub(super) async fn cancel(
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
            .key(&self.slot)
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

    pub(super) async fn form_groups(
        &self,
        now: Millis,
        params: &PairingParams,
        room_ids: &[String],
    ) -> Result<Vec<Group>> {
        let mut call = self.scripts.form.key(&self.slot);
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

    pub(super) async fn reclaim(
        &self,
        now: Millis,
        lease_ms: Millis,
        max: usize,
    ) -> Result<Vec<Group>> {
        let out: Vec<String> = self
            .scripts
            .reclaim
            .key(&self.slot)
            .arg(now)
            .arg(lease_ms)
            .arg(max)
            .invoke_async(&mut self.conn())
            .await?;
        out.iter().map(|js| parse_group(js)).collect()
    }

    pub(super) async fn commit(
        &self,
        room_id: &str,
        records: &[(String, MatchRecord)],
        now: Millis,
        grace_ms: Millis,
    ) -> Result<CommitOutcome> {
        let mut call = self.scripts.commit.key(&self.slot);
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

    pub(super) async fn release(
        &self,
        room_id: &str,
        lease: u64,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<bool> {
        let done: i64 = self
            .scripts
            .release
            .key(&self.slot)
            .arg(room_id)
            .arg(lease)
            .arg(now)
            .arg(grace_ms)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(done == 1)
    }

    pub(super) async fn defer(&self, room_id: &str, lease: u64, retry_at: Millis) -> Result<bool> {
        let done: i64 = self
            .scripts
            .defer
            .key(&self.slot)
            .arg(room_id)
            .arg(lease)
            .arg(retry_at)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(done == 1)
    }

    pub(super) async fn expire(&self, now: Millis, max: usize) -> Result<u64> {
        let n: u64 = self
            .scripts
            .expire
            .key(&self.slot)
            .arg(now)
            .arg(max)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(n)
    }

    pub(super) async fn queue_lengths(&self) -> Result<Vec<(Format, u64)>> {
        let out: Vec<String> = self
            .scripts
            .lengths
            .key(&self.slot)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(out
            .chunks(2)
            .filter_map(|c| Some((Format::parse(&c[0])?, c.get(1)?.parse().ok()?)))
            .filter(|(_, n)| *n > 0)
            .collect())
    }

    pub(super) async fn queued_ticket(&self, user_id: &str) -> Result<Option<String>> {
        let mut conn = self.conn();
        let latest: Option<String> = conn.get(format!("{}:u:{user_id}", self.slot)).await?;
        let Some(id) = latest else {
            return Ok(None);
        };
        let state: Option<String> = conn.hget(format!("{}:t:{id}", self.slot), "state").await?;
        Ok(matches!(state.as_deref(), Some("queued" | "pending")).then_some(id))
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
