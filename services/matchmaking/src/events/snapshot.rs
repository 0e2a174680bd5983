//! An event's whole state for its watchers ([`Snapshot`]): built once per change and
//! shared by every WatchEvent stream of the event on this replica (the [`hub`]), each
//! stream making its own message of it ([`Snapshot::message`]); GetEvent's `with_state`
//! answers a fresh one.
//!
//! [`hub`]: super::hub

use std::sync::Arc;

use basra_proto::basra::matchmaking::v1 as pb;
use basra_proto::event_changes;

use super::hub::{Source, Version};
use super::model::{EntryRecord, EventRecord, Phase};
use super::play::LiveEvent;
use super::{EventsShared, bracket, convert};
use crate::clock::Millis;
use crate::error::Result;

/// An arena's `pairings`: at most this many, the latest (the .proto says so).
const MAX_ARENA_PAIRINGS: usize = 200;

/// Where an event's earlier rounds come from.
enum Rounds {
    /// Its live state.
    Live,
    /// A finished event's stored results, as pairings.
    Stored(Vec<pb::Pairing>),
    /// Not started (or an arena: no rounds).
    None,
}

/// An event's state at one version: the update without its event (made at each
/// message's time: its status depends on the time) and without its earlier rounds, the
/// current round, and where the earlier rounds are.
pub(crate) struct Snapshot {
    event: EventRecord,
    /// The live state and its version, while it is kept.
    live: Option<(u64, Arc<LiveEvent>)>,
    /// The update, `event` unset and `earlier_pairings` empty.
    update: pb::WatchEventResponse,
    /// What changed since the snapshot before it, when that one was of the same round
    /// (for the streams that asked for changes only and sent that one last).
    changes: Option<pb::EventChanges>,
    /// The current round (0: none).
    round: u32,
    rounds: Rounds,
}

impl Snapshot {
    /// The version clients see: the event row's and the live state's together.
    pub(crate) fn version(&self) -> u64 {
        self.update.version
    }

    /// Whether the event is over (finished or cancelled): its last snapshot.
    pub(crate) fn is_over(&self) -> bool {
        matches!(self.event.phase, Phase::Finished | Phase::Cancelled)
    }

    /// The pairings of rounds `from` up to the current one (excluded).
    fn earlier(&self, from: u32) -> Vec<pb::Pairing> {
        match (&self.rounds, &self.live) {
            (Rounds::Live, Some((_, live))) => bracket::earlier(live, from, self.round),
            (Rounds::Stored(rows), _) => rows.iter().filter(|p| p.round >= from).cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// The update a stream sends at `now` after one of round `sent` (`None`: its
    /// first). To a stream that asked for changes only and whose last message was of
    /// version `changes_since`: only what changed, when this snapshot has the changes
    /// since that version. Else the whole state, with the rounds the client has not had
    /// whole: every earlier one on a first message, those from `sent` on when the round
    /// has moved past it, none otherwise.
    pub(crate) fn message(
        &self,
        sent: Option<u32>,
        changes_since: Option<u64>,
        now: Millis,
    ) -> pb::WatchEventResponse {
        if let Some(changes) = self
            .changes
            .as_ref()
            .filter(|c| sent.is_some() && changes_since == Some(c.since_version))
        {
            return pb::WatchEventResponse {
                version: self.update.version,
                event: Some(convert::event(&self.event, now)),
                changes: Some(changes.clone()),
                ..Default::default()
            };
        }
        let earlier = match sent {
            None => self.earlier(0),
            Some(r) if self.round > r => self.earlier(r),
            Some(_) => Vec::new(),
        };
        pb::WatchEventResponse {
            event: Some(convert::event(&self.event, now)),
            earlier_pairings: earlier,
            ..self.update.clone()
        }
    }

    /// The current round (0: none).
    pub(crate) fn round(&self) -> u32 {
        self.round
    }
}

impl EventsShared {
    /// The whole state of an event for a watcher, built afresh.
    pub(crate) async fn state(&self, id: &str) -> Result<Snapshot> {
        self.snapshot(id, None).await
    }

    /// The whole state of an event, keeping from `last` the event row and the live
    /// state (the costly part: megabytes of JSON for a big arena) when their versions
    /// have not changed since (`now`, just read).
    async fn snapshot(&self, id: &str, last: Option<(&Snapshot, Version)>) -> Result<Snapshot> {
        let event = match last {
            Some((l, now)) if l.event.version == now.0 => l.event.clone(),
            _ => self.event(id).await?,
        };
        let live = match last.and_then(|(l, now)| l.live.as_ref().map(|live| (live, now))) {
            Some(((v, live), now)) if *v == now.1 => Some((*v, live.clone())),
            _ => self
                .live_state(id)
                .await?
                .map(|(v, live)| (v, Arc::new(live))),
        };
        let standings = self
            .standings(&event, live.as_ref().map(|(_, l)| &**l))
            .await?;
        let version = event.version + live.as_ref().map_or(0, |(v, _)| *v);
        let (mut pairings, round, rounds) = match &live {
            Some((_, l)) => {
                let current = l.rounds().0;
                let rows: Vec<pb::Pairing> = if event.is_arena() {
                    // The matches in progress and the last results.
                    let start = l.matches.len().saturating_sub(MAX_ARENA_PAIRINGS);
                    l.matches[start..].iter().map(convert::pairing).collect()
                } else {
                    // The whole current round (512 pairings in a knockout of 1,024).
                    l.matches
                        .iter()
                        .filter(|m| m.round == current)
                        .map(convert::pairing)
                        .collect()
                };
                (rows, current, Rounds::Live)
            }
            // Its live state expired: a finished knockout's or Swiss' rounds are in
            // its stored results.
            None if event.phase == Phase::Finished && !event.is_arena() => {
                let results = self.store.results(&event.id).await?;
                let (now, before) = bracket::from_results(&results, event.current_round);
                (now, event.current_round, Rounds::Stored(before))
            }
            None => (Vec::new(), 0, Rounds::None),
        };
        // In table order, as the changes keep them.
        pairings.sort_by_key(|p| p.table);
        let changes = last
            .map(|(l, _)| l)
            .filter(|l| l.round == round && l.update.version < version)
            .map(|l| {
                event_changes::diff(
                    l.update.version,
                    (&l.update.standings, &l.update.pairings),
                    (&standings, &pairings),
                )
            });
        Ok(Snapshot {
            update: pb::WatchEventResponse {
                version,
                event: None,
                standings,
                pairings,
                earlier_pairings: Vec::new(),
                changes: None,
            },
            changes,
            event,
            live,
            round,
            rounds,
        })
    }

    /// The versions of an event's row and of its live state (0: none), read cheaply.
    async fn versions(&self, id: &str) -> Result<Version> {
        let event = self.store.version(id).await?.unwrap_or(0);
        let live = self.live.version(id).await?.unwrap_or(0);
        Ok((event, live))
    }

    /// The standings: the live state's while it is kept, else the final ranks stored.
    pub(crate) async fn standings(
        &self,
        event: &EventRecord,
        live: Option<&LiveEvent>,
    ) -> Result<Vec<pb::Standing>> {
        let rows: Vec<basra_events::Standing> = match live {
            Some(live) => live.standings(),
            None => Vec::new(),
        };
        if rows.is_empty() && event.phase == Phase::Finished {
            let mut entries: Vec<EntryRecord> = self
                .store
                .entries(&event.id)
                .await?
                .into_iter()
                .filter(|e| e.rank > 0)
                .collect();
            entries.sort_by_key(|e| e.rank);
            let names = self
                .name_cache
                .names(&*self.names, entries.iter().map(|e| e.user_id.clone()))
                .await;
            return Ok(entries
                .iter()
                .map(|e| pb::Standing {
                    rank: e.rank,
                    display_name: names.get(&e.user_id).cloned().unwrap_or_default(),
                    user_id: e.user_id.clone(),
                    points: e.points,
                    ..Default::default()
                })
                .collect());
        }
        let names = self
            .name_cache
            .names(
                &*self.names,
                rows.iter().map(|s| super::play::user_of(s.player)),
            )
            .await;
        Ok(rows.iter().map(|s| convert::standing(s, &names)).collect())
    }
}

/// The watchers' hub takes its snapshots from the event's stores.
#[tonic::async_trait]
impl Source for EventsShared {
    type Snapshot = Snapshot;

    async fn version(&self, id: &str) -> Result<Version> {
        self.versions(id).await
    }

    async fn build(&self, id: &str, last: Option<(&Snapshot, Version)>) -> Result<Snapshot> {
        self.snapshot(id, last).await
    }

    fn version_of(snapshot: &Snapshot) -> Version {
        (
            snapshot.event.version,
            snapshot.live.as_ref().map_or(0, |(v, _)| *v),
        )
    }

    fn is_last(snapshot: &Snapshot) -> bool {
        snapshot.is_over()
    }
}
