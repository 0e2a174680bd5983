//! One Play (or Watch) stream's session: it starts the stream from the seat's connect
//! commit or the stored log, then reads the client's messages and commits their moves
//! (`room::actions`), and sends the room's events as its watch announces them (from
//! this replica's commits, with their shared bytes, or from the stored log). It runs
//! inside the stream's response ([`response`]); `Session::open` (`open.rs`: the room
//! loaded, the seat leased and connected) makes it. Its departure (the disconnect, the
//! presence lease entry, the room's watch) is spawned when it is dropped. Events reach
//! the client only through [`convert`].

use std::sync::Arc;
use std::time::Duration;

use basra_platform::presence::PresenceGuard;
use basra_platform::ratelimit::RateLimiter;
use basra_proto::basra::game::v1::{
    self as game, PlayRequest, RejectCode, play_request::Kind, play_response::Event as E,
};
use rand::Rng as _;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tonic::{Status, Streaming};
use tracing::Instrument as _;

use crate::error::GameError;
use crate::replica::hub::Wake;
use crate::replica::shared_bytes::{Shared, SharedBytes};
use crate::replica::{Committed, Replica, StreamPermit};
use crate::room::actions::{self, Acted};
use crate::room::events::{LogEvent, StoredEvent};
use crate::room::timing::now_ms;
use crate::room::{Reject, Status as RoomStatus};
use crate::store::LeasedSeat;
use crate::stream::convert::{project, seen_in_common, server_event, snapshot};
use crate::stream::response::SendQueue;

pub mod convert;
mod open;
pub mod response;

/// The status answering a failed read of the client's stream. tonic's decoder refuses a
/// message above [`MAX_MESSAGE_BYTES`](crate::MAX_MESSAGE_BYTES) with RESOURCE_EXHAUSTED; the
/// API answers capacity limits with RESOURCE_EXHAUSTED (as other gRPC stacks do for an
/// oversized message).
pub(crate) fn inbound_status(status: Status) -> Status {
    if status.code() == tonic::Code::OutOfRange {
        return GameError::Exhausted(format!(
            "a client message is larger than {} bytes",
            crate::MAX_MESSAGE_BYTES
        ))
        .into();
    }
    status
}

/// How a stream starts: after `last_seen` (a resume) or with a snapshot, from its connect
/// commit when it made one (the room as that commit left it and the events it stored:
/// the stream's first events are sent from them, without reading the room again),
/// holding its join's turn until the first events are sent.
struct Start {
    last_seen: Option<u64>,
    connected: Option<Committed>,
    turn: tokio::sync::OwnedSemaphorePermit,
}

/// Why a stream ends.
enum End {
    /// The client went away (or left).
    Gone,
    /// End with this status (already decided: replaced, draining, closed room).
    Status(Status),
    /// The room closed: end OK.
    Closed,
}

/// One Play stream.
pub(crate) struct Session {
    replica: Arc<Replica>,
    /// Whose stream it is (a banned or deleted account's stream ends).
    user: Option<uuid::Uuid>,
    chat: Arc<RateLimiter>,
    room_id: String,
    viewer: Option<u8>,
    conn_id: String,
    /// The seq of this stream's own connect event.
    connect_seq: u64,
    /// The last seq sent on this stream.
    delivered: u64,
    /// The room watch's epoch when this stream last looked (see [`Wake`]).
    epoch: u64,
    /// The replica's signal count when this stream last looked at its rare signals
    /// ([`crate::replica::signals`]).
    signals: u64,
    seats: usize,
    settings: basra_engine::Settings,
    /// Whether the stream sends the shared bytes of this replica's commits' events it sees
    /// in common with the room's other viewers (see [`crate::replica::shared_bytes`]).
    shares: bool,
    /// Where the stream's messages go (its response hands them out).
    queue: SendQueue,
    /// The seat as recorded under the presence lease, and the instance holding it.
    leased: Option<(Arc<str>, LeasedSeat)>,
    /// The seat's "in a match" report to accounts, ended with the stream.
    _presence: Option<PresenceGuard>,
    _permit: StreamPermit,
}

/// A stream's departure, recorded when its session is dropped (at its end, or with its
/// response when the client went away): the seat disconnected, its presence lease
/// entry removed, the room's watch released.
impl Drop for Session {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let replica = Arc::clone(&self.replica);
        let room_id = std::mem::take(&mut self.room_id);
        let viewer = self.viewer;
        let conn_id = std::mem::take(&mut self.conn_id);
        let leased = self.leased.take();
        let delivered = self.delivered;
        let departure = async move {
            if let Some(seat) = viewer {
                let result = replica
                    .mutate(&room_id, None, |room, now| {
                        if room.disconnect(seat, &conn_id, now) {
                            Ok(())
                        } else {
                            Err(Reject::new(RejectCode::Unspecified, "not connected"))
                        }
                    })
                    .await;
                if let Err(err) = result {
                    tracing::warn!(error = %err, "cannot record the disconnect");
                }
            }
            if let Some((instance, seat)) = &leased
                && let Err(err) = replica.store.lease_remove(instance, seat).await
            {
                tracing::warn!(error = %err, "cannot forget the leased seat");
            }
            // The stream's watch is gone by now: a session is dropped after the other
            // arguments of `run`, its watch among them.
            replica.hub.release(&room_id);
            tracing::debug!(delivered, "stream ended");
        };
        runtime.spawn(departure.instrument(tracing::Span::current()));
    }
}

impl Session {
    async fn run(
        mut self,
        mut inbound: Option<Streaming<PlayRequest>>,
        mut watch: watch::Receiver<Wake>,
        mut lease_lost: watch::Receiver<u64>,
        start: Start,
    ) {
        // The session's future lives as long as its stream and is as large as its largest
        // state: what runs briefly (the start, a client's message with its commit, a
        // wake-up's deliveries) runs in a box of its own, freed when done, so an idle
        // stream keeps only the loop's waiting state (in a debug build 6.9 KiB a stream
        // before, 2.4 after).
        let started = Box::pin(self.start(start.last_seen, start.connected)).await;
        drop(start.turn);
        let end = match started {
            Ok(None) => self.serve(&mut inbound, &mut watch, &mut lease_lost).await,
            Ok(Some(end)) => end,
            Err(err) => End::Status(err.into()),
        };
        match end {
            End::Gone => tracing::debug!("client went away"),
            End::Status(status) => {
                tracing::debug!(code = ?status.code(), message = status.message(), "ending the stream");
                self.queue.send(Err(status)).await;
            }
            End::Closed => {}
        }
        // Dropping the session (here, or with its response) records its departure.
    }

    /// The first events: the missed ones after `last_seen`, or a snapshot. A seat's
    /// stream starts from the room as its connect commit left it (`connected`: the
    /// stream's watch was taken before that commit, so anything later wakes it), and
    /// reads the log only for events older than that commit's; a spectator's reads the
    /// room now.
    async fn start(
        &mut self,
        last_seen: Option<u64>,
        connected: Option<Committed>,
    ) -> Result<Option<End>, GameError> {
        let room = match connected {
            Some(Committed { room, batch, .. }) => {
                let first = room.seq + 1 - batch.events.len() as u64;
                match last_seen {
                    // Everything after `seen` is in the connect commit's events.
                    Some(seen) if seen + 1 >= first && seen <= room.seq => {
                        self.delivered = seen;
                        let skip = (seen + 1 - first) as usize;
                        let closed = room.status == RoomStatus::Closed;
                        return self
                            .deliver(&batch.events[skip..], Some((&batch.shared, skip)), closed)
                            .await;
                    }
                    _ => room,
                }
            }
            None => self
                .replica
                .store
                .load(&self.room_id)
                .await?
                .ok_or_else(|| GameError::RoomNotFound(self.room_id.clone()))?
                .room
                .into(),
        };
        match last_seen {
            Some(seen) if seen <= room.seq => self.delivered = seen,
            _ => {
                let event = snapshot(&room, self.viewer, room.seq, now_ms());
                self.delivered = room.seq;
                self.queue.send(Ok(event)).await;
                if room.status == RoomStatus::Closed {
                    return Ok(Some(End::Closed));
                }
                return Ok(None);
            }
        }
        self.catch_up().await
    }

    /// Sends every event after `delivered`. `Some` when the stream must end.
    async fn catch_up(&mut self) -> Result<Option<End>, GameError> {
        let after = self
            .replica
            .store
            .events_after(&self.room_id, self.delivered)
            .await?;
        if !after.exists {
            return Ok(Some(End::Status(
                GameError::RoomNotFound(self.room_id.clone()).into(),
            )));
        }
        // Another replica's plays: the room's state held here follows them, so that this
        // replica's next change to the room (likely this stream's player's answer) does
        // not read it whole.
        if self
            .replica
            .hub
            .refresh(&self.room_id, self.delivered, &after)
        {
            self.replica.metrics.room_refreshes.inc();
        }
        self.deliver(&after.events, None, after.closed).await
    }

    /// Sends `events`, the first with seq `delivered + 1`. `Some` when the stream must
    /// end (`closed`: the room is closed after them). Events of a commit made here come
    /// with its shared encodings and the index of the first of them in the commit.
    async fn deliver(
        &mut self,
        events: &[StoredEvent],
        shared: Option<(&SharedBytes, usize)>,
        closed: bool,
    ) -> Result<Option<End>, GameError> {
        let now = now_ms();
        for (i, stored) in events.iter().enumerate() {
            let seq = self.delivered + 1;
            if let (
                Some(me),
                LogEvent::ConnectionChanged {
                    seat,
                    connected: true,
                    conn_id,
                    ..
                },
            ) = (self.viewer, &stored.event)
                && *seat == me
                && *conn_id != self.conn_id
                && seq > self.connect_seq
            {
                // Another stream took this seat after ours: it gets the seat.
                return Ok(Some(End::Status(Status::failed_precondition(
                    "a newer stream for this seat replaced this one",
                ))));
            }
            let event = || project(stored, seq, self.viewer, self.seats, &self.settings, now);
            match shared {
                Some((shared, first))
                    if self.shares && seen_in_common(&stored.event, self.viewer) =>
                {
                    let bytes = match shared.get_or_encode(first + i, now, || {
                        prost::Message::encode_to_vec(&event()).into()
                    }) {
                        Shared::Reused(bytes) => {
                            self.replica.metrics.events_shared.inc();
                            bytes
                        }
                        Shared::Made(bytes) => bytes,
                    };
                    self.queue.send_shared(bytes).await;
                }
                _ => self.queue.send(Ok(event())).await,
            }
            self.delivered = seq;
        }
        if closed {
            return Ok(Some(End::Closed));
        }
        Ok(None)
    }

    async fn serve(
        &mut self,
        inbound: &mut Option<Streaming<PlayRequest>>,
        watch: &mut watch::Receiver<Wake>,
        lease_lost: &mut watch::Receiver<u64>,
    ) -> End {
        // Taken once: stopping cancels the drain's token too.
        let leave = self.replica.drain.token();
        // The rare signals are looked at now, and again whenever their count has moved
        // when the stream wakes (`replica::signals`): the count is read before looking, so
        // a signal after the look wakes the stream through its room's watch.
        self.signals = self.replica.hub.signals();
        if let Some(end) = self.signalled(&leave, lease_lost).await {
            return end;
        }
        loop {
            let step = tokio::select! {
                biased;
                message = next_message(inbound) => match message {
                    Ok(Some(message)) => Box::pin(self.handle(message)).await,
                    Ok(None) => return End::Gone,
                    Err(status) => {
                        tracing::debug!(code = ?status.code(), message = status.message(), "inbound stream failed");
                        if status.code() == tonic::Code::OutOfRange {
                            return End::Status(inbound_status(status));
                        }
                        return End::Gone;
                    }
                },
                changed = watch.changed() => match changed {
                    Ok(()) => Ok(None),
                    Err(_) => return End::Status(Status::unavailable("the replica is stopping")),
                },
            };
            match step {
                Ok(None) => {}
                Ok(Some(end)) => return end,
                Err(err) => return End::Status(err.into()),
            }
            let signals = self.replica.hub.signals();
            if signals != self.signals {
                self.signals = signals;
                if let Some(end) = self.signalled(&leave, lease_lost).await {
                    return end;
                }
            }
            // The room's watch moved, or a commit of ours did: look at it now rather than
            // on another turn of the loop (after our own commit usually nothing is new).
            match Box::pin(self.on_wake(watch)).await {
                Ok(None) => {}
                Ok(Some(end)) => return end,
                Err(err) => return End::Status(err.into()),
            }
        }
    }

    /// How the stream ends, if a rare signal concerns it: its account was banned or
    /// deleted, the replica drains or stops, or the presence lease it was connected under
    /// was lost.
    async fn signalled(
        &self,
        leave: &CancellationToken,
        lease_lost: &watch::Receiver<u64>,
    ) -> Option<End> {
        let revocations = &self.replica.config.revocations;
        if let Some(revoked) = self.user.and_then(|user| revocations.check(user)) {
            return Some(End::Status(revoked.status()));
        }
        if leave.is_cancelled() {
            if self.replica.shutdown.is_cancelled() {
                return Some(End::Status(Status::unavailable(
                    "the replica is stopping; resume elsewhere with last_seen_seq",
                )));
            }
            self.drain_delay().await;
            return Some(End::Status(Status::unavailable(
                "the replica is draining; resume elsewhere with last_seen_seq",
            )));
        }
        if self.leased.is_some() && lease_lost.has_changed().unwrap_or(true) {
            return Some(End::Status(Status::unavailable(
                "this replica lost its presence lease; resume with last_seen_seq",
            )));
        }
        None
    }

    /// The room's watch changed: delivers what this replica committed from the watch,
    /// and reads the stored log for the rest (other replicas' commits, gaps, an epoch
    /// bump). `Some` when the stream must end.
    async fn on_wake(
        &mut self,
        watch: &mut watch::Receiver<Wake>,
    ) -> Result<Option<End>, GameError> {
        let (announced, local) = {
            let wake = watch.borrow_and_update();
            if !wake.news_for(self.delivered, self.epoch) {
                return Ok(None);
            }
            if wake.epoch == self.epoch {
                (wake.seq, Some(wake.local_after(self.delivered)))
            } else {
                // Something changed without new events, or notices were lost: look.
                self.epoch = wake.epoch;
                (wake.seq, None)
            }
        };
        let Some(local) = local else {
            return self.catch_up().await;
        };
        for (batch, skip) in local {
            // `deliver` numbers from `delivered + 1`: the batch from there on.
            debug_assert_eq!(batch.first_seq + skip as u64, self.delivered + 1);
            let events = &batch.events[skip..];
            if let Some(end) = self
                .deliver(events, Some((&batch.shared, skip)), batch.closed)
                .await?
            {
                return Ok(Some(end));
            }
        }
        if self.delivered < announced {
            return self.catch_up().await;
        }
        Ok(None)
    }

    /// A random share of the drain deadline, so streams leave spread out.
    async fn drain_delay(&self) {
        let deadline = self.replica.drain.deadline_ms();
        let left = (deadline - now_ms()).max(0) as u64;
        if left > 0 {
            let wait = rand::rng().random_range(0..=left);
            tokio::time::sleep(Duration::from_millis(wait)).await;
        }
    }

    async fn send_local(&self, event: E) -> Result<Option<End>, GameError> {
        let event = server_event(self.delivered, now_ms(), event);
        self.queue.send(Ok(event)).await;
        Ok(None)
    }

    async fn reject(
        &self,
        code: RejectCode,
        message: impl Into<String>,
        client_move_id: &str,
        applied_seq: Option<u64>,
    ) -> Result<Option<End>, GameError> {
        self.send_local(E::Rejected(game::Rejected {
            code: code as i32,
            message: message.into(),
            client_move_id: client_move_id.to_owned(),
            applied_seq,
        }))
        .await
    }

    async fn handle(&mut self, message: PlayRequest) -> Result<Option<End>, GameError> {
        let Some(kind) = message.kind else {
            return self
                .reject(RejectCode::Malformed, "empty message", "", None)
                .await;
        };
        if let Kind::Ping(ping) = kind {
            return self
                .send_local(E::Pong(game::Pong { nonce: ping.nonce }))
                .await;
        }
        if let Kind::Join(_) = kind {
            return self
                .reject(RejectCode::Malformed, "join is sent once, first", "", None)
                .await;
        }
        let Some(seat) = self.viewer else {
            return self
                .reject(RejectCode::NotSeated, "spectators cannot act", "", None)
                .await;
        };
        let leaving = matches!(kind, Kind::Leave(_));
        match actions::act(&self.replica, &self.chat, &self.room_id, seat, kind).await? {
            Acted::Done(Committed { room, batch, .. }) => {
                // Our own change reaches us at once, without waiting for the notice, and
                // without reading it back when nothing came before it unseen.
                let before = room.seq - batch.events.len() as u64;
                let end = if before == self.delivered {
                    let closed = room.status == RoomStatus::Closed;
                    self.deliver(&batch.events, Some((&batch.shared, 0)), closed)
                        .await?
                } else {
                    self.catch_up().await?
                };
                if let Some(end) = end {
                    return Ok(Some(end));
                }
                if leaving {
                    if room.status == RoomStatus::Waiting {
                        // The seat is free now: this stream has nothing more to watch.
                        self.viewer = None;
                    }
                    return Ok(Some(End::Closed));
                }
                Ok(None)
            }
            Acted::Refused(refusal) => self.send_local(E::Rejected(refusal.to_pb())).await,
        }
    }
}

/// The client's next message on a Play stream. A Watch stream has no client messages: it
/// ends when the client drops the response, which drops its session (so a vanished
/// browser is disconnected at once rather than at the next event).
async fn next_message(
    inbound: &mut Option<Streaming<PlayRequest>>,
) -> Result<Option<PlayRequest>, Status> {
    match inbound {
        Some(inbound) => inbound.message().await,
        None => std::future::pending().await,
    }
}
