//! FindMatch and CancelFind: a ticket enters the shared queue (the pairing loop,
//! [`crate::matcher`], forms the groups), and its stream tells the client where it stands
//! (position, a widened rating window) until the ticket is matched, cancelled or gone.
//! A client that reconnects with the same ticket id keeps its place.

use std::sync::Arc;
use std::time::Duration;

use basra_platform::Caller;
use basra_platform::presence::{Doing, PresenceGuard};
use basra_platform::stream_limit::AccountStream;
use basra_proto::basra::matchmaking::v1::{
    self as mm, CancelFindRequest, CancelFindResponse, FindMatchRequest, FindMatchResponse,
    find_match_response::Update,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;
use uuid::Uuid;

use super::{FindMatchStream, MatchmakingApi, check_client_id, names_of};
use crate::convert::{matched_proto, proto_duration};
use crate::domain::Format;
use crate::error::{MatchmakingError, Result};
use crate::state::{Registration, Shared, Wake};
use crate::store::{CancelCause, CancelOutcome, NewTicket, TicketState, TicketView};

pub(super) fn update(ticket_id: &str, update: Update) -> FindMatchResponse {
    FindMatchResponse {
        ticket_id: ticket_id.to_owned(),
        update: Some(update),
    }
}

fn cancelled(reason: mm::CancelReason) -> Update {
    Update::Cancelled(mm::Cancelled {
        reason: reason as i32,
    })
}

impl MatchmakingApi {
    pub(super) fn format_of(&self, request: &FindMatchRequest) -> Result<Format> {
        let preset = request.preset.unwrap_or_default();
        let seats = preset.seats.unwrap_or(2);
        if seats != 2 && seats != 4 {
            return Err(MatchmakingError::InvalidArgument(format!(
                "preset.seats must be 2 or 4, not {seats}"
            )));
        }
        let target = preset.target_score.unwrap_or(101);
        let offered = &self.inner.config.queue.target_scores;
        if !offered.contains(&target) {
            return Err(MatchmakingError::InvalidArgument(format!(
                "preset.target_score {target} is not offered; the queue offers {offered:?}"
            )));
        }
        Ok(Format {
            ranked: request.ranked,
            seats: seats as u8,
            target_score: target,
        })
    }

    pub(super) async fn find_match_inner(
        &self,
        caller: Caller,
        request: FindMatchRequest,
    ) -> Result<FindMatchStream> {
        let inner = &self.inner;
        let format = self.format_of(&request)?;
        if format.ranked {
            self.check_ranked_allowed(&caller)?;
        }
        let account_slot = inner.searches.open(caller.user_id)?;
        let ticket_id = if request.ticket_id.is_empty() {
            Uuid::now_v7().to_string()
        } else {
            check_client_id("ticket_id", &request.ticket_id)?;
            request.ticket_id.clone()
        };
        // Resuming one's own live search is always allowed (it may have
        // matched meanwhile, and then the player sits in that match).
        let resuming = !request.ticket_id.is_empty()
            && inner
                .deps
                .store
                .poll(&ticket_id, inner.now(), inner.config.queue.ttl_ms())
                .await?
                .is_some_and(|t| {
                    t.user_id == caller.user_id.to_string()
                        && !matches!(t.state, TicketState::Cancelled(_))
                });
        if !resuming {
            self.ensure_not_seated(&caller.user_id.to_string(), None)
                .await?;
        }
        // The rating (ranked) and whom the player blocks (every queue: players who
        // block each other are never grouped).
        let searcher = inner
            .deps
            .ratings
            .searcher(&caller.user_id.to_string(), format.ranked)
            .await?;
        let allow_bots = request.allow_bots.unwrap_or(!format.ranked);
        let wake = inner.hub.register(&ticket_id);
        let q = &inner.config.queue;
        let enqueued = inner
            .deps
            .store
            .enqueue(
                NewTicket {
                    id: ticket_id.clone(),
                    user_id: caller.user_id.to_string(),
                    guest: caller.guest,
                    format,
                    rating: searcher.rating,
                    allow_bots,
                    blocks: searcher.blocks,
                },
                inner.now(),
                q.ttl_ms(),
                q.grace_ms(),
            )
            .await
            .inspect_err(|_| inner.hub.remove(&ticket_id, &wake))?;
        if !enqueued.resumed {
            inner.deps.metrics.ticket();
        }
        tracing::debug!(ticket = %ticket_id, resumed = enqueued.resumed, format = %format.key(), "queued");
        let (tx, rx) = mpsc::channel(8);
        // Friends see the player searching while the stream lasts.
        let presence = inner
            .deps
            .presence
            .start(&caller.user_id.to_string(), Doing::Queue);
        tokio::spawn(run_stream(
            self.inner.clone(),
            ticket_id,
            enqueued.view,
            wake,
            tx,
            (presence, account_slot),
        ));
        Ok(Box::pin(ReceiverStream::new(rx)))
    }

    /// CancelFind: ends the caller's search unless its group is already final.
    pub(super) async fn cancel_find_inner(
        &self,
        caller: Caller,
        request: CancelFindRequest,
    ) -> Result<CancelFindResponse> {
        let id = request.ticket_id;
        if id.is_empty() {
            return Err(MatchmakingError::InvalidArgument(
                "ticket_id is empty".into(),
            ));
        }
        let q = &self.inner.config.queue;
        let outcome = self
            .inner
            .deps
            .store
            .cancel(
                &caller.user_id.to_string(),
                &id,
                CancelCause::ByClient,
                self.inner.now(),
                q.grace_ms(),
            )
            .await?;
        match outcome {
            CancelOutcome::Cancelled => Ok(CancelFindResponse {
                cancelled: true,
                matched: None,
            }),
            // Its group is final (its room may exist already): the search
            // goes on to that room; the stream (or a resume) gets `matched`.
            CancelOutcome::InGroup => Ok(CancelFindResponse {
                cancelled: false,
                matched: None,
            }),
            CancelOutcome::AlreadyMatched(record) => {
                let names = names_of(&self.inner, &record.seats).await;
                Ok(CancelFindResponse {
                    cancelled: false,
                    matched: Some(matched_proto(&record, &names)),
                })
            }
            CancelOutcome::NotFound => Err(MatchmakingError::NotFound(
                "no such search of yours (it may have expired)".into(),
            )),
        }
    }
}

/// One FindMatch stream: sends updates until matched, cancelled, gone or
/// shut down; detaches the ticket when the client goes away.
async fn run_stream(
    inner: Arc<Shared>,
    id: String,
    first: TicketView,
    mut wake: Registration,
    tx: mpsc::Sender<Result<FindMatchResponse, Status>>,
    // Friends see the player searching, and the account's stream slot is held, until
    // the stream ends.
    _held: (PresenceGuard, AccountStream),
) {
    let q = &inner.config.queue;
    let window = q.window();
    let heartbeat = Duration::from_millis(q.heartbeat_millis);
    let mut last_position = None;
    let mut last_width: Option<f64> = None;
    let user = uuid::Uuid::parse_str(&first.user_id).ok();
    let revocations = inner.config.revocations.clone();
    let mut revoked = revocations.subscribe();
    let mut view = Some(first);
    loop {
        let now = inner.now();
        // What to send, and whether the stream ends with it.
        let (message, done): (Option<Result<FindMatchResponse, Status>>, bool) = match &view {
            None => (
                Some(Ok(update(&id, cancelled(mm::CancelReason::Timeout)))),
                true,
            ),
            Some(v) => match &v.state {
                TicketState::Matched(record) => {
                    inner
                        .deps
                        .metrics
                        .observe_wait(&v.format.key(), now, now - v.enqueued_ms);
                    let names = names_of(&inner, &record.seats).await;
                    (
                        Some(Ok(update(
                            &id,
                            Update::Matched(matched_proto(record, &names)),
                        ))),
                        true,
                    )
                }
                TicketState::Cancelled(cause) => {
                    let reason = match cause {
                        CancelCause::ByClient => mm::CancelReason::ByClient,
                        CancelCause::Timeout => mm::CancelReason::Timeout,
                        CancelCause::Superseded => mm::CancelReason::Superseded,
                        CancelCause::RoomUnavailable => mm::CancelReason::RoomUnavailable,
                    };
                    (Some(Ok(update(&id, cancelled(reason)))), true)
                }
                TicketState::Queued if v.unavailable => (
                    Some(Err(Status::unavailable(
                        "game-session is unavailable: call FindMatch again with the same \
                         ticket_id to keep your place",
                    ))),
                    true,
                ),
                TicketState::Queued => {
                    if !v.attached {
                        // Another stream of this ticket (an older connection
                        // the server only now saw die) detached it: this
                        // stream is the live one, so take it back.
                        let resume = NewTicket {
                            id: id.clone(),
                            user_id: v.user_id.clone(),
                            guest: false,
                            format: v.format,
                            rating: v.rating,
                            allow_bots: v.allow_bots,
                            // A resume keeps the blocks the ticket was queued with.
                            blocks: Vec::new(),
                        };
                        let _ = inner
                            .deps
                            .store
                            .enqueue(resume, now, q.ttl_ms(), q.grace_ms())
                            .await;
                    }
                    if now - v.enqueued_ms > (q.max_wait_seconds * 1000) as i64 {
                        let _ = inner
                            .deps
                            .store
                            .cancel(&v.user_id, &id, CancelCause::Timeout, now, q.grace_ms())
                            .await;
                    }
                    let position = (v.position, v.waiting);
                    if last_position != Some(position) {
                        last_position = Some(position);
                        (
                            Some(Ok(update(
                                &id,
                                Update::Queued(mm::Queued {
                                    position: v.position,
                                    players_waiting: v.waiting,
                                    estimated_wait: inner
                                        .deps
                                        .metrics
                                        .estimated_wait(&v.format.key(), now, now - v.enqueued_ms)
                                        .map(proto_duration),
                                }),
                            ))),
                            false,
                        )
                    } else if v.format.ranked {
                        let waited = now - v.enqueued_ms;
                        let width = window.width(waited);
                        let grew = last_width.is_some_and(|w| width > w + 0.5);
                        if last_width.is_none() {
                            last_width = Some(width);
                        }
                        if grew {
                            last_width = Some(width);
                            let bots_next = v.allow_bots
                                && waited + heartbeat.as_millis() as i64
                                    >= q.bot_fill_after_seconds as i64 * 1000;
                            (
                                Some(Ok(update(
                                    &id,
                                    Update::WindowWidened(mm::WindowWidened {
                                        rating_min: v.rating - width,
                                        rating_max: v.rating + width,
                                        bots_next,
                                    }),
                                ))),
                                false,
                            )
                        } else {
                            (None, false)
                        }
                    } else {
                        (None, false)
                    }
                }
                // Its room could not be confirmed: the group keeps it and
                // tries again; a resumed stream waits for it.
                TicketState::Pending if v.unavailable => (
                    Some(Err(Status::unavailable(
                        "game-session is unavailable: call FindMatch again with the same \
                         ticket_id to get the room being made for you",
                    ))),
                    true,
                ),
                TicketState::Pending => (None, false),
            },
        };
        if let Some(message) = message
            && tx.send(message).await.is_err()
        {
            // The client left while we were sending.
            let _ = inner
                .deps
                .store
                .detach(&id, inner.now(), q.grace_ms())
                .await;
            break;
        }
        if done {
            break;
        }
        tokio::select! {
            () = tx.closed() => {
                if let Err(err) = inner.deps.store.detach(&id, inner.now(), q.grace_ms()).await {
                    tracing::warn!(ticket = %id, error = %err, "cannot detach ticket");
                }
                tracing::debug!(ticket = %id, "stream closed: ticket detached");
                break;
            }
            () = inner.shutdown.cancelled() => {
                let _ = inner.deps.store.detach(&id, inner.now(), q.grace_ms()).await;
                let _ = tx.send(Err(Status::unavailable(
                    "server shutting down: call FindMatch again with the same ticket_id",
                ))).await;
                break;
            }
            Ok(()) = revoked.changed() => {
                // A banned or deleted player's search ends, and its ticket with it.
                if let Some(revoked) = user.and_then(|user| revocations.check(user)) {
                    if let Some(v) = &view {
                        let now = inner.now();
                        let _ = inner.deps.store.cancel(&v.user_id, &id, CancelCause::ByClient, now, q.grace_ms()).await;
                    }
                    let _ = tx.send(Err(revoked.status())).await;
                    break;
                }
            }
            woke = wake.wait() => if woke == Wake::Taken {
                // A resume of this ticket opened a newer stream here: that one
                // follows the ticket now (it stays attached), and this one ends.
                let _ = tx.send(Err(Status::aborted(
                    "this search was resumed by a newer FindMatch stream with the same \
                     ticket_id, which follows it now",
                ))).await;
                break;
            },
            () = tokio::time::sleep(heartbeat) => {}
        }
        view = match inner.deps.store.poll(&id, inner.now(), q.ttl_ms()).await {
            Ok(v) => v,
            Err(err) => {
                tracing::warn!(ticket = %id, error = %err, "cannot read ticket");
                let _ = tx.send(Err(Status::from(err))).await;
                break;
            }
        };
    }
    inner.hub.remove(&id, &wake);
}
