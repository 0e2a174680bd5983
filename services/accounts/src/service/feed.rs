//! The social feed (WatchFriends), presence reports from the other services
//! (ReportPresence) and invites (SendInvite); and the notes friend actions leave on the
//! other player's feed.
//!
//! A feed is one task per stream: it sends a snapshot (friends with their presence,
//! waiting requests), the kept notes the client missed, then whatever the [`Hub`] says
//! changed. A presence report that lapses is announced by nobody: the feed knows when
//! each friend's soonest report runs out and looks at that friend again then; and it
//! looks at every friend's presence and its notes again every [`LOOK_AGAIN_EVERY`]. The friend list is read from
//! PostgreSQL at the start and when a change of it is announced, never on a timer.
//!
//! [`Hub`]: crate::social::Hub

use std::collections::HashMap;
use std::pin::Pin;
use std::time::Duration;

use basra_platform::auth::{Caller, Role};
use basra_platform::revocation::Revocations;
use basra_platform::stream_limit::{AccountStream, StreamsPerAccount};
use basra_proto::basra::accounts::v1 as pb;
use basra_records::wire::timestamp_to_proto;
use prost::Message as _;
use tokio::sync::mpsc;
use tonic::Status;
use uuid::Uuid;

use super::AccountsApi;
use crate::error::{AccountsError, Result};
use crate::friends::{Action, FriendEntry, Outcome};
use crate::social::{Activity, Change, FeedTap, Hub, Presence, Reported, SocialStore};
use crate::store::Store;

/// How often a feed looks at its friends' presence and its notes again.
pub const LOOK_AGAIN_EVERY: Duration = Duration::from_secs(30);
/// How long after a friend's report runs out the feed looks (a little, so that the read
/// comes after the report's end on the store's clock too).
const LAPSE_MARGIN: Duration = Duration::from_millis(50);
/// How often an open feed repeats its player's "online" report.
const ONLINE_EVERY: Duration = Duration::from_secs(20);
/// The most feeds one player may have open on one replica unless set otherwise
/// (`friends.max_feeds_per_account`).
pub const MAX_FEEDS_PER_PLAYER: usize = 4;
/// The most reports in one ReportPresence call.
pub const MAX_REPORTS_PER_CALL: usize = 1000;
/// Events queued for a slow client before its feed waits.
const FEED_BUFFER: usize = 64;

/// The stream WatchFriends answers.
pub type FeedStream =
    Pin<Box<dyn tokio_stream::Stream<Item = Result<pb::WatchFriendsResponse, Status>> + Send>>;

/// Presence and notes, the hub handing out their changes, and the feeds open here.
#[derive(Debug, Clone)]
pub struct Social {
    store: SocialStore,
    hub: Hub,
    /// The banned and deleted accounts (refused by every service).
    revocations: Revocations,
    /// Open feeds per player on this replica (the "online" report ends with the last).
    feeds: StreamsPerAccount,
    /// How often a feed looks at its friends' presence again.
    look_again: Duration,
}

impl Social {
    /// `store`, its changes handed out until `shutdown`.
    pub fn new(store: SocialStore, shutdown: tokio_util::sync::CancellationToken) -> Social {
        let hub = Hub::start(&store, shutdown);
        Social {
            store,
            hub,
            revocations: Revocations::in_memory(),
            feeds: StreamsPerAccount::new("WatchFriends", MAX_FEEDS_PER_PLAYER),
            look_again: LOOK_AGAIN_EVERY,
        }
    }

    /// At most `max` feeds per player on this replica instead of [`MAX_FEEDS_PER_PLAYER`].
    pub fn with_max_feeds(mut self, max: usize) -> Social {
        self.feeds = StreamsPerAccount::new("WatchFriends", max);
        self
    }

    /// Feeds look again every `every` instead of [`LOOK_AGAIN_EVERY`] (tests).
    pub fn with_look_again(mut self, every: Duration) -> Social {
        self.look_again = every;
        self
    }

    /// Where presence and notes are kept (Redis or memory).
    pub fn store(&self) -> &SocialStore {
        &self.store
    }

    /// Keeps the revoked accounts in `revocations` (shared with the other services)
    /// instead of this process alone.
    pub fn with_revocations(mut self, revocations: Revocations) -> Social {
        self.revocations = revocations;
        self
    }

    /// The banned and deleted accounts.
    pub fn revocations(&self) -> &Revocations {
        &self.revocations
    }

    /// Counts a new feed of `user`; refused past the most feeds per player.
    fn open_feed(
        &self,
        user: Uuid,
        gauge: prometheus_client::metrics::gauge::Gauge,
    ) -> Result<OpenFeed> {
        let slot = self.feeds.open(user)?;
        gauge.inc();
        Ok(OpenFeed {
            social: self.clone(),
            user,
            slot: Some(slot),
            gauge,
        })
    }
}

/// One open feed; the player's "online" report ends when their last feed here closes.
struct OpenFeed {
    social: Social,
    user: Uuid,
    slot: Option<AccountStream>,
    /// `basra_accounts_feeds_open`.
    gauge: prometheus_client::metrics::gauge::Gauge,
}

impl Drop for OpenFeed {
    fn drop(&mut self) {
        self.gauge.dec();
        let last = self.slot.take().is_some_and(|slot| slot.close() == 0);
        if last {
            let store = self.social.store.clone();
            let user = self.user;
            tokio::spawn(async move {
                if let Err(err) = store.end(user, &Activity::Online).await {
                    tracing::warn!(error = %err, %user, "cannot end an online report; it lapses by itself");
                }
            });
        }
    }
}

impl<S: Store> AccountsApi<S> {
    pub(super) async fn do_watch_friends(
        &self,
        caller: Caller,
        req: pb::WatchFriendsRequest,
    ) -> Result<FeedStream> {
        let open = self
            .inner
            .social
            .open_feed(caller.user_id, self.inner.metrics.feeds_open.clone())?;
        let mut feed = Feed {
            api: self.clone(),
            me: caller.user_id,
            tap: self.inner.social.hub.tap(vec![caller.user_id]),
            friends: Vec::new(),
            shown: HashMap::new(),
            lapses: HashMap::new(),
            last_seq: req.last_seen_seq,
            _open: open,
        };
        let social = &self.inner.social.store;
        social.begin(feed.me, &Activity::Online).await?;
        // The first events are read before the stream is answered, so a store that is
        // down is a status, not a stream that ends at once.
        let first = feed.opening().await?;
        let first = self.shown(Some(feed.me), first).await?;
        let (tx, rx) = mpsc::channel(FEED_BUFFER);
        tokio::spawn(async move {
            for event in first {
                if tx.send(Ok(event)).await.is_err() {
                    return;
                }
            }
            if let Err(err) = feed.follow(&tx).await {
                let _ = tx.send(Err(Status::from(err))).await;
            }
        });
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    pub(super) async fn do_report_presence(
        &self,
        caller: Caller,
        req: pb::ReportPresenceRequest,
    ) -> Result<pb::ReportPresenceResponse> {
        if caller.role != Role::Service {
            return Err(AccountsError::PermissionDenied(
                "ReportPresence needs a service token",
            ));
        }
        if req.reports.len() > MAX_REPORTS_PER_CALL {
            return Err(AccountsError::invalid(
                "reports",
                format!("holds {} reports; at most 1000", req.reports.len()),
            ));
        }
        // Every report is checked before any is stored: a bad batch changes nothing.
        let reports = req
            .reports
            .into_iter()
            .map(parse_report)
            .collect::<Result<Vec<_>>>()?;
        self.inner
            .metrics
            .presence_reports
            .inc_by(reports.len() as u64);
        // All in flight at once (a refresh brings a replica's every player). Their order
        // does not matter: a reporter sends one report per player and activity (room) in
        // a call, and a match's end removes only that room's report.
        let mut writes = tokio::task::JoinSet::new();
        for (user, activity, ended) in reports {
            let social = self.inner.social.store.clone();
            writes.spawn(async move {
                if ended {
                    social.end(user, &activity).await
                } else {
                    social.begin(user, &activity).await
                }
            });
        }
        while let Some(written) = writes.join_next().await {
            written
                .map_err(|err| AccountsError::Internal(format!("a presence write: {err}")))??;
        }
        Ok(pb::ReportPresenceResponse {})
    }

    pub(super) async fn do_send_invite(
        &self,
        caller: Caller,
        req: pb::SendInviteRequest,
    ) -> Result<pb::SendInviteResponse> {
        if caller.role != Role::Service {
            return Err(AccountsError::PermissionDenied(
                "SendInvite needs a service token; players invite through matchmaking's InviteFriend",
            ));
        }
        let from = parse_id("from_user_id", &req.from_user_id)?;
        let to = parse_id("to_user_id", &req.to_user_id)?;
        if from == to {
            return Err(AccountsError::invalid(
                "to_user_id",
                "is the inviter: a player cannot invite themselves",
            ));
        }
        if req.room_id.is_empty() || req.join_code.is_empty() {
            return Err(AccountsError::invalid(
                "room_id",
                "an invite needs the room id and its join code",
            ));
        }
        let expires_at = req
            .expires_at
            .as_ref()
            .and_then(|t| chrono::DateTime::from_timestamp(t.seconds, t.nanos.max(0) as u32))
            .ok_or_else(|| AccountsError::invalid("expires_at", "is missing or out of range"))?;
        if expires_at <= crate::domain::now() {
            return Err(AccountsError::invalid(
                "expires_at",
                "is in the past: the room has lapsed",
            ));
        }
        let store = &self.inner.store;
        let invited = store.friend_list(to).await?;
        if invited.blocked.iter().any(|entry| entry.user_id == from) {
            return Err(crate::friends::Refusal::NoSuchPlayer.into());
        }
        let Some(inviter) = invited
            .friends
            .into_iter()
            .find(|entry| entry.user_id == from)
        else {
            // Unknown players have no friends: tell "no such player" from "not friends".
            return Err(match store.user(to).await? {
                None => crate::friends::Refusal::NoSuchPlayer.into(),
                Some(_) => AccountsError::Precondition(
                    "the two players are not friends: only friends can be invited",
                ),
            });
        };
        let invite = pb::Invite {
            from: Some(friend_to_proto(inviter)),
            room_id: req.room_id,
            join_code: req.join_code,
            settings: req.settings,
            expires_at: req.expires_at,
        };
        let sent = self
            .keep_notice(to, pb::notice::Body::Invite(invite), None, Some(from))
            .await?;
        Ok(pb::SendInviteResponse {
            seq: sent.seq.unwrap_or_default(),
        })
    }

    /// Keeps `event` (inbox notice `notice_id`, 0 for none) on `user`'s feed; returns
    /// its seq.
    pub(super) async fn push_note(
        &self,
        user: Uuid,
        event: pb::watch_friends_response::Event,
        notice_id: u64,
    ) -> Result<u64> {
        let payload = pb::WatchFriendsResponse {
            seq: 0,
            at: Some(timestamp_to_proto(crate::domain::now())),
            event: Some(event),
            notice_id,
        }
        .encode_to_vec();
        self.inner.social.store.push_note(user, &payload).await
    }

    /// After a friend action of `caller` towards `other` succeeded: the note it leaves on
    /// the other player's feed and the friend lists it changed. The action stands
    /// whatever happens here (the store may be down): a missed note is seen in the next
    /// snapshot or ListFriends.
    pub(super) async fn after_friend_action(
        &self,
        caller: Uuid,
        other: Uuid,
        action: Action,
        outcome: Outcome,
    ) {
        let social = &self.inner.social.store;
        let result = async {
            let me = || async {
                let user = self.inner.store.user(caller).await?;
                Ok::<_, AccountsError>(user.map(|user| FriendEntry {
                    user_id: user.id,
                    display_name: user.display_name,
                    is_guest: user.is_guest,
                    since: crate::domain::now(),
                }))
            };
            match outcome {
                Outcome::Requested => {
                    if let Some(entry) = me().await? {
                        let body = pb::notice::Body::FriendRequest(friend_to_proto(entry));
                        self.keep_notice(other, body, None, Some(caller)).await?;
                    }
                }
                Outcome::BecameFriends => {
                    // The note first (the feed shows "friends now", then their presence);
                    // the friend lists change whatever became of it.
                    if let Some(entry) = me().await? {
                        let body = pb::notice::Body::FriendAdded(friend_to_proto(entry));
                        if let Err(err) = self.keep_notice(other, body, None, Some(caller)).await {
                            tracing::warn!(error = %err, "an acceptance's notice was not kept");
                        }
                    }
                    friends_changed(social, caller, other).await?;
                }
                Outcome::Done if matches!(action, Action::Remove | Action::Block) => {
                    friends_changed(social, caller, other).await?;
                }
                Outcome::Done => {}
            }
            Ok::<_, AccountsError>(())
        }
        .await;
        if let Err(err) = result {
            tracing::warn!(error = %err, "a friend action's notification was not delivered");
        }
    }
}

fn parse_id(field: &'static str, raw: &str) -> Result<Uuid> {
    Uuid::parse_str(raw).map_err(|_| AccountsError::invalid(field, "is not a user id"))
}

fn parse_report(report: pb::PresenceReport) -> Result<(Uuid, Activity, bool)> {
    let user = parse_id("reports.user_id", &report.user_id)?;
    let activity = match pb::Activity::try_from(report.activity) {
        Ok(pb::Activity::InQueue) if report.room_id.is_empty() => Activity::Queue,
        Ok(pb::Activity::InQueue) => {
            return Err(AccountsError::invalid(
                "reports.room_id",
                "is set on an IN_QUEUE report: only IN_MATCH names a room",
            ));
        }
        Ok(pb::Activity::InMatch) if report.room_id.is_empty() || report.room_id.len() > 128 => {
            return Err(AccountsError::invalid(
                "reports.room_id",
                "an IN_MATCH report names its room (1..128 characters)",
            ));
        }
        Ok(pb::Activity::InMatch) => Activity::Match {
            room_id: report.room_id,
            spectatable: report.spectatable,
        },
        _ => {
            return Err(AccountsError::invalid(
                "reports.activity",
                "must be ACTIVITY_IN_QUEUE or ACTIVITY_IN_MATCH",
            ));
        }
    };
    Ok((user, activity, report.ended))
}

pub(super) fn friend_to_proto(entry: FriendEntry) -> pb::Friend {
    pb::Friend {
        user_id: entry.user_id.to_string(),
        display_name: entry.display_name,
        is_guest: entry.is_guest,
        since: Some(timestamp_to_proto(entry.since)),
    }
}

fn presence_to_proto(presence: &Presence) -> pb::Presence {
    let (activity, room_id) = match presence {
        Presence::Offline => (pb::Activity::Offline, String::new()),
        Presence::Online => (pb::Activity::Online, String::new()),
        Presence::InQueue => (pb::Activity::InQueue, String::new()),
        Presence::InMatch(room) => (pb::Activity::InMatch, room.clone().unwrap_or_default()),
    };
    pb::Presence {
        activity: activity as i32,
        room_id,
    }
}

/// One open WatchFriends stream.
struct Feed<S> {
    api: AccountsApi<S>,
    me: Uuid,
    tap: FeedTap,
    /// The friends as last read.
    friends: Vec<FriendEntry>,
    /// The presence last sent per friend.
    shown: HashMap<Uuid, Presence>,
    /// When each friend's presence may lapse (a report not repeated): the feed looks
    /// again then, as nobody announces a lapse.
    lapses: HashMap<Uuid, tokio::time::Instant>,
    /// The last note sent.
    last_seq: u64,
    _open: OpenFeed,
}

type Sink = mpsc::Sender<Result<pb::WatchFriendsResponse, Status>>;

impl<S: Store> Feed<S> {
    fn event(seq: u64, event: pb::watch_friends_response::Event) -> pb::WatchFriendsResponse {
        pb::WatchFriendsResponse {
            seq,
            at: Some(timestamp_to_proto(crate::domain::now())),
            event: Some(event),
            notice_id: 0,
        }
    }

    fn social(&self) -> &SocialStore {
        &self.api.inner.social.store
    }

    /// The snapshot and the missed notes.
    async fn opening(&mut self) -> Result<Vec<pb::WatchFriendsResponse>> {
        let list = self.api.inner.store.friend_list(self.me).await?;
        self.set_friends(list.friends);
        let ids: Vec<Uuid> = self.friends.iter().map(|f| f.user_id).collect();
        let presence = self.social().presence(&ids).await?;
        self.shown.clear();
        for (player, reported) in ids.iter().copied().zip(presence) {
            self.note_lapse(player, &reported);
            self.shown.insert(player, reported.presence);
        }
        let unread = self
            .api
            .inner
            .store
            .unread_notices(self.me, crate::domain::now())
            .await?;
        let snapshot = pb::FriendsSnapshot {
            friends: self
                .friends
                .iter()
                .map(|friend| self.friend_presence(friend))
                .collect(),
            incoming: list.incoming.into_iter().map(friend_to_proto).collect(),
            unread_notices: unread.count,
            newest_notice_id: unread.newest_id,
        };
        let mut events = vec![Self::event(
            0,
            pb::watch_friends_response::Event::Snapshot(snapshot),
        )];
        events.extend(self.new_notes().await?);
        Ok(events)
    }

    fn set_friends(&mut self, friends: Vec<FriendEntry>) {
        let mut players: Vec<Uuid> = friends.iter().map(|f| f.user_id).collect();
        players.push(self.me);
        self.tap.watch(players);
        self.friends = friends;
    }

    fn friend_presence(&self, friend: &FriendEntry) -> pb::FriendPresence {
        pb::FriendPresence {
            friend: Some(friend_to_proto(friend.clone())),
            presence: Some(presence_to_proto(
                self.shown
                    .get(&friend.user_id)
                    .unwrap_or(&Presence::Offline),
            )),
        }
    }

    /// The kept notes after the last one sent.
    async fn new_notes(&mut self) -> Result<Vec<pb::WatchFriendsResponse>> {
        let notes = self.social().notes_after(self.me, self.last_seq).await?;
        let mut events = Vec::with_capacity(notes.len());
        for note in notes {
            self.last_seq = self.last_seq.max(note.seq);
            match pb::WatchFriendsResponse::decode(note.payload.as_slice()) {
                Ok(mut event) => {
                    event.seq = note.seq;
                    events.push(event);
                }
                Err(err) => {
                    tracing::error!(error = %err, seq = note.seq, "a kept note does not decode; skipped")
                }
            }
        }
        // A note naming a player whose account was deleted since is not shown: it would
        // show their name. (Its seq is still passed: the client sees a gap, not a hold.)
        let named: Vec<Uuid> = events.iter().filter_map(note_sender).collect();
        if !named.is_empty() {
            let existing: Vec<Uuid> = self
                .api
                .inner
                .store
                .players(&named)
                .await?
                .into_iter()
                .map(|(user, _)| user.id)
                .collect();
            events.retain(|event| note_sender(event).is_none_or(|id| existing.contains(&id)));
        }
        Ok(events)
    }

    /// The presence changes of `players` (friends only) since last sent.
    async fn presence_changes(
        &mut self,
        players: &[Uuid],
    ) -> Result<Vec<pb::WatchFriendsResponse>> {
        let players: Vec<Uuid> = players
            .iter()
            .copied()
            .filter(|p| self.friends.iter().any(|f| f.user_id == *p))
            .collect();
        let presence = self.social().presence(&players).await?;
        let mut events = Vec::new();
        for (player, reported) in players.into_iter().zip(presence) {
            self.note_lapse(player, &reported);
            let now = reported.presence;
            if self.shown.get(&player) != Some(&now) {
                self.shown.insert(player, now);
                if let Some(friend) = self.friends.iter().find(|f| f.user_id == player) {
                    events.push(Self::event(
                        0,
                        pb::watch_friends_response::Event::PresenceChanged(
                            self.friend_presence(friend),
                        ),
                    ));
                }
            }
        }
        Ok(events)
    }

    /// Reads the friend list again: new friends' presence is sent, former friends are
    /// forgotten.
    async fn reload_friends(&mut self) -> Result<Vec<pb::WatchFriendsResponse>> {
        let list = self.api.inner.store.friend_list(self.me).await?;
        self.set_friends(list.friends);
        let ids: Vec<Uuid> = self.friends.iter().map(|f| f.user_id).collect();
        self.shown.retain(|player, _| ids.contains(player));
        self.lapses.retain(|player, _| ids.contains(player));
        self.presence_changes(&ids).await
    }

    /// Remembers when `player`'s presence may lapse (a moment after their soonest report
    /// runs out, so that Redis has let it go).
    fn note_lapse(&mut self, player: Uuid, reported: &Reported) {
        match reported.lapses_in {
            Some(left) => {
                let at = tokio::time::Instant::now() + left + LAPSE_MARGIN;
                self.lapses.insert(player, at);
            }
            None => {
                self.lapses.remove(&player);
            }
        }
    }

    /// The friends whose presence may have lapsed by now.
    fn lapsed(&self) -> Vec<Uuid> {
        let now = tokio::time::Instant::now();
        self.lapses
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(player, _)| *player)
            .collect()
    }

    /// Sends what changes until the client goes away or the store fails.
    async fn follow(&mut self, tx: &Sink) -> Result<()> {
        let mut look_again = tokio::time::interval(self.api.inner.social.look_again);
        let mut online = tokio::time::interval(ONLINE_EVERY);
        let revocations = self.api.inner.social.revocations.clone();
        let mut revoked = revocations.subscribe();
        look_again.reset();
        online.reset();
        loop {
            let next_lapse = self.lapses.values().min().copied();
            let events = tokio::select! {
                () = tx.closed() => return Ok(()),
                Ok(()) = revoked.changed() => match revocations.check(self.me) {
                    // A banned or deleted player's feed ends with the reason.
                    Some(revoked) => {
                        let _ = tx.send(Err(revoked.status())).await;
                        return Ok(());
                    }
                    None => Vec::new(),
                },
                () = sleep_until(next_lapse) => {
                    let lapsed = self.lapsed();
                    self.presence_changes(&lapsed).await?
                }
                change = self.tap.recv() => match change {
                    Some(Change::Presence(player)) if player != self.me => {
                        self.presence_changes(&[player]).await?
                    }
                    Some(Change::Presence(_)) => Vec::new(),
                    Some(Change::Note(_)) => self.new_notes().await?,
                    Some(Change::Friends(_)) => self.reload_friends().await?,
                    Some(Change::Resync) => self.everything().await?,
                    None => return Ok(()),
                },
                _ = look_again.tick() => self.look_again().await?,
                _ = online.tick() => {
                    self.social().begin(self.me, &Activity::Online).await?;
                    Vec::new()
                }
            };
            let events = self.api.shown(Some(self.me), events).await?;
            for event in events {
                if tx.send(Ok(event)).await.is_err() {
                    return Ok(());
                }
            }
        }
    }

    /// After a lost subscription: the friend list, their presence and the notes again.
    async fn everything(&mut self) -> Result<Vec<pb::WatchFriendsResponse>> {
        let mut events = self.reload_friends().await?;
        events.extend(self.new_notes().await?);
        Ok(events)
    }

    /// From time to time: the friends' presence (a lapsed report is announced by nobody)
    /// and the notes, from Redis alone (friend list changes are always announced).
    async fn look_again(&mut self) -> Result<Vec<pb::WatchFriendsResponse>> {
        let ids: Vec<Uuid> = self.friends.iter().map(|f| f.user_id).collect();
        let mut events = self.presence_changes(&ids).await?;
        events.extend(self.new_notes().await?);
        Ok(events)
    }
}

/// The player a kept note names (who asked, accepted or invited).
fn note_sender(event: &pb::WatchFriendsResponse) -> Option<Uuid> {
    use pb::watch_friends_response::Event;
    let friend = match event.event.as_ref()? {
        Event::FriendRequest(friend) | Event::FriendAdded(friend) => friend,
        Event::Invite(invite) => invite.from.as_ref()?,
        // Notices naming a player (those kinds come as the events above) go with them.
        Event::Snapshot(_) | Event::PresenceChanged(_) | Event::Notice(_) => return None,
    };
    Uuid::parse_str(&friend.user_id).ok()
}

/// Waits until `at`, or for ever.
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Both players' friend lists changed: the two announcements sent at once.
async fn friends_changed(social: &SocialStore, one: Uuid, other: Uuid) -> Result<()> {
    let (one, other) = tokio::join!(social.friends_changed(one), social.friends_changed(other));
    one.and(other)
}
