//! Telling accounts what players are doing: in a match, in the queue.
//!
//! The services that hold players' streams (game-session: Play and Watch; matchmaking:
//! FindMatch) know what each player is doing; accounts shows it to their friends
//! (`AccountsService/WatchFriends`). A [`PresenceReporter`] collects the starts and ends
//! of those activities and sends them to accounts' internal `ReportPresence`:
//!
//! - a change is sent within [`FLUSH_EVERY`], batched with the others of that moment;
//! - every activity still going is reported again every [`REFRESH_EVERY`], because
//!   accounts forgets a report after a minute: a replica that dies without a word stops
//!   refreshing, and its players go offline by themselves;
//! - a failed call is retried with the next flush (nothing is lost while accounts is
//!   away but the moment); reports are advisory and never hold a player's stream up.
//!
//! One player may hold the same activity twice on one replica (two devices, a stream
//! replaced by a newer one): it ends when the last of them ends.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use basra_proto::basra::accounts::v1::{
    Activity, PresenceReport, ReportPresenceRequest,
    accounts_internal_service_client::AccountsInternalServiceClient,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

use crate::telemetry::TracedChannel;

/// How soon a change reaches accounts.
pub const FLUSH_EVERY: Duration = Duration::from_millis(250);
/// How often every ongoing activity is reported again (accounts keeps a report 60 s).
pub const REFRESH_EVERY: Duration = Duration::from_secs(20);
/// The most reports in one call (accounts' limit).
pub const MAX_BATCH: usize = 1000;
/// How long one call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Gives the service token to send with each report, when one can be had.
pub type TokenSource = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// What a player is doing, as the reporting service sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Doing {
    /// Searching for a match.
    Queue,
    /// Seated in a room; `spectatable` when friends may watch it.
    Match {
        /// The room.
        room_id: String,
        /// Whether spectators are allowed there.
        spectatable: bool,
    },
}

impl Doing {
    fn activity(&self) -> Activity {
        match self {
            Doing::Queue => Activity::InQueue,
            Doing::Match { .. } => Activity::InMatch,
        }
    }

    fn report(&self, user_id: &str, ended: bool) -> PresenceReport {
        let (room_id, spectatable) = match self {
            Doing::Queue => (String::new(), false),
            Doing::Match {
                room_id,
                spectatable,
            } => (room_id.clone(), *spectatable),
        };
        PresenceReport {
            user_id: user_id.to_owned(),
            activity: self.activity() as i32,
            room_id,
            ended,
            spectatable,
        }
    }
}

enum Update {
    Started(String, Doing),
    Ended(String, Doing),
}

/// Sends players' activities to accounts. Cheap to clone; a disabled one (no accounts)
/// does nothing.
#[derive(Debug, Clone)]
pub struct PresenceReporter {
    tx: Option<mpsc::UnboundedSender<Update>>,
}

impl PresenceReporter {
    /// Reports to accounts over `channel` with tokens from `token`, until `shutdown`.
    /// Nothing is reported ended then: the players of a replica that stops move to
    /// another one, which reports them again, or their reports lapse.
    pub fn spawn(
        channel: Channel,
        token: TokenSource,
        shutdown: CancellationToken,
    ) -> PresenceReporter {
        let (tx, rx) = mpsc::unbounded_channel();
        let client = AccountsInternalServiceClient::new(crate::telemetry::traced(channel));
        tokio::spawn(run(client, token, rx, shutdown));
        PresenceReporter { tx: Some(tx) }
    }

    /// A reporter that reports nothing (no accounts to tell: tests, tools).
    pub fn disabled() -> PresenceReporter {
        PresenceReporter { tx: None }
    }

    /// `user_id` is doing `doing` until the returned guard is dropped.
    pub fn start(&self, user_id: &str, doing: Doing) -> PresenceGuard {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Update::Started(user_id.to_owned(), doing.clone()));
        }
        PresenceGuard {
            reporter: self.clone(),
            user_id: user_id.to_owned(),
            doing,
        }
    }
}

/// An activity in progress: it ends when this is dropped.
#[derive(Debug)]
pub struct PresenceGuard {
    reporter: PresenceReporter,
    user_id: String,
    doing: Doing,
}

impl Drop for PresenceGuard {
    fn drop(&mut self) {
        if let Some(tx) = &self.reporter.tx {
            let _ = tx.send(Update::Ended(
                std::mem::take(&mut self.user_id),
                self.doing.clone(),
            ));
        }
    }
}

/// The reporter's memory: what is going on, and what accounts has not heard yet.
#[derive(Default)]
struct Ledger {
    /// Ongoing activities, with how many holders each has.
    live: HashMap<(String, Doing), u32>,
    /// Changes not yet sent, latest per player and activity.
    pending: HashMap<(String, Doing), bool>,
}

impl Ledger {
    fn apply(&mut self, update: Update) {
        match update {
            Update::Started(user, doing) => {
                let key = (user, doing);
                let holders = self.live.entry(key.clone()).or_default();
                *holders += 1;
                if *holders == 1 {
                    self.pending.insert(key, false);
                }
            }
            Update::Ended(user, doing) => {
                let key = (user, doing);
                if let Some(holders) = self.live.get_mut(&key) {
                    *holders -= 1;
                    if *holders == 0 {
                        self.live.remove(&key);
                        self.pending.insert(key, true);
                    }
                }
            }
        }
    }

    fn take_pending(&mut self) -> Vec<Entry> {
        self.pending.drain().collect()
    }

    fn everything(&self) -> Vec<Entry> {
        self.live.keys().map(|key| (key.clone(), false)).collect()
    }

    /// Puts back a change whose call failed, unless a newer change of the same player
    /// and activity is already waiting.
    fn requeue(&mut self, (key, ended): Entry) {
        self.pending.entry(key).or_insert(ended);
    }
}

/// A player and activity, and whether it ended.
type Entry = ((String, Doing), bool);

async fn run(
    mut client: AccountsInternalServiceClient<TracedChannel>,
    token: TokenSource,
    mut rx: mpsc::UnboundedReceiver<Update>,
    shutdown: CancellationToken,
) {
    let mut ledger = Ledger::default();
    let mut flush = tokio::time::interval(FLUSH_EVERY);
    let mut refresh = tokio::time::interval(REFRESH_EVERY);
    flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            update = rx.recv() => match update {
                Some(update) => ledger.apply(update),
                None => break,
            },
            _ = flush.tick() => {
                if let Err(unsent) = send(&mut client, &token, ledger.take_pending()).await {
                    for entry in unsent {
                        ledger.requeue(entry);
                    }
                }
            }
            _ = refresh.tick() => {
                // A failed refresh is repeated by the next one, well within the minute.
                let _ = send(&mut client, &token, ledger.everything()).await;
            }
        }
    }
}

/// Sends `entries` in batches; gives back those not sent when a call fails.
async fn send(
    client: &mut AccountsInternalServiceClient<TracedChannel>,
    token: &TokenSource,
    entries: Vec<Entry>,
) -> Result<(), Vec<Entry>> {
    let mut left = entries;
    while !left.is_empty() {
        let rest = left.split_off(left.len().min(MAX_BATCH));
        let batch = std::mem::replace(&mut left, rest);
        let reports = batch
            .iter()
            .map(|((user, doing), ended)| doing.report(user, *ended))
            .collect();
        let mut request = tonic::Request::new(ReportPresenceRequest { reports });
        request.set_timeout(CALL_TIMEOUT);
        if let Some(token) = token()
            && let Ok(value) = format!("Bearer {token}").parse()
        {
            request.metadata_mut().insert("authorization", value);
        }
        if let Err(status) = client.report_presence(request).await {
            tracing::warn!(error = %status, reports = batch.len(), "cannot report presence to accounts; retrying shortly");
            let mut unsent = batch;
            unsent.extend(left);
            return Err(unsent);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn game(room: &str) -> Doing {
        Doing::Match {
            room_id: room.into(),
            spectatable: true,
        }
    }

    #[test]
    fn an_activity_ends_with_its_last_holder() {
        let mut ledger = Ledger::default();
        ledger.apply(Update::Started("a".into(), game("r1")));
        ledger.apply(Update::Started("a".into(), game("r1")));
        let started = ledger.take_pending();
        assert_eq!(started.len(), 1);
        assert!(!started[0].1);
        ledger.apply(Update::Ended("a".into(), game("r1")));
        assert!(ledger.take_pending().is_empty(), "one holder is left");
        assert_eq!(ledger.everything().len(), 1);
        ledger.apply(Update::Ended("a".into(), game("r1")));
        let ended = ledger.take_pending();
        assert_eq!(ended.len(), 1);
        assert!(ended[0].1);
        assert!(ledger.everything().is_empty());
    }

    #[test]
    fn a_match_report_names_its_room_and_whether_friends_may_watch() {
        let hidden = Doing::Match {
            room_id: "r9".into(),
            spectatable: false,
        };
        let report = hidden.report("a", true);
        assert_eq!(report.activity, Activity::InMatch as i32);
        assert_eq!(
            (report.room_id.as_str(), report.spectatable, report.ended),
            ("r9", false, true)
        );
        assert!(game("r9").report("a", false).spectatable);
        let queue = Doing::Queue.report("a", false);
        assert_eq!(
            (queue.activity, queue.room_id.as_str()),
            (Activity::InQueue as i32, "")
        );
    }

    #[test]
    fn a_failed_report_waits_for_the_next_flush_unless_newer_news_came() {
        let mut ledger = Ledger::default();
        ledger.apply(Update::Started("a".into(), Doing::Queue));
        let unsent = ledger.take_pending();
        // Meanwhile the search ended: the failed "started" must not overwrite it.
        ledger.apply(Update::Ended("a".into(), Doing::Queue));
        for report in unsent {
            ledger.requeue(report);
        }
        let pending = ledger.take_pending();
        assert_eq!(pending.len(), 1);
        assert!(pending[0].1, "the newer end stands");
    }
}
