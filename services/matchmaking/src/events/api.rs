//! `EventService`: what players do with events. Translation and checks only; the rules
//! are in `model` (applied atomically by the store), the clock in `driver`, and what
//! WatchEvent streams show in `snapshot` (one per watched event, shared through `hub`).

use std::pin::Pin;

use basra_platform::{Caller, auth};
use basra_proto::basra::matchmaking::v1::{self as pb, event_service_server::EventService};
use basra_proto::convert::timestamp;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use super::model::{EntryRecord, EventRecord, Phase};
use super::notices::Notice;
use super::play::LiveEvent;
use super::{EventsApi, EventsShared, convert};
use crate::error::{MatchmakingError, Result};

/// The WatchEvent stream.
pub(crate) type WatchEventStream =
    Pin<Box<dyn Stream<Item = std::result::Result<pb::WatchEventResponse, Status>> + Send>>;

/// Events a page by default, and at most.
const PAGE: u32 = 20;
const MAX_PAGE: u32 = 100;

/// The page size and offset of a listing request.
pub(crate) fn paging(size: u32, token: &str) -> Result<(u32, u64)> {
    if size > MAX_PAGE {
        return Err(MatchmakingError::InvalidArgument(format!(
            "page_size must be at most {MAX_PAGE}"
        )));
    }
    let offset = if token.is_empty() {
        0
    } else {
        token
            .parse::<u64>()
            .map_err(|_| MatchmakingError::InvalidArgument("bad page_token".into()))?
    };
    Ok((if size == 0 { PAGE } else { size }, offset))
}

pub(crate) fn next_token(next: Option<u64>) -> String {
    next.map(|n| n.to_string()).unwrap_or_default()
}

fn player<T>(request: &Request<T>) -> std::result::Result<Caller, Status> {
    auth::player(request)
}

/// How a WatchEvent stream ends when the replica drains.
fn draining() -> Status {
    Status::unavailable("the server is draining: reopen with last_seen_version")
}

fn event_id(id: &str) -> Result<&str> {
    if id.is_empty() || id.len() > 64 {
        return Err(MatchmakingError::InvalidArgument(
            "event_id is required (at most 64 characters)".into(),
        ));
    }
    Ok(id)
}

impl EventsShared {
    /// The event, or NOT_FOUND.
    pub(crate) async fn event(&self, id: &str) -> Result<EventRecord> {
        self.store
            .get(event_id(id)?)
            .await?
            .ok_or_else(|| MatchmakingError::NotFound(format!("no event {id:?}")))
    }

    /// The event's live state, if it has started.
    pub(crate) async fn live_state(&self, id: &str) -> Result<Option<(u64, LiveEvent)>> {
        match self.live.load(id).await? {
            Some(stored) => Ok(Some((stored.version, serde_json::from_str(&stored.json)?))),
            None => Ok(None),
        }
    }

    fn with_entry(&self, event: &EventRecord, entry: Option<&EntryRecord>) -> pb::EventWithEntry {
        pb::EventWithEntry {
            event: Some(convert::event(event, self.now())),
            entry: entry.map(convert::entry),
        }
    }
}

#[tonic::async_trait]
impl EventService for EventsApi {
    type WatchEventStream = WatchEventStream;

    async fn list_events(
        &self,
        request: Request<pb::ListEventsRequest>,
    ) -> std::result::Result<Response<pb::ListEventsResponse>, Status> {
        let caller = player(&request)?;
        let r = request.into_inner();
        let (size, offset) = paging(r.page_size, &r.page_token)?;
        let inner = &self.inner;
        let (events, next) = inner
            .store
            .list(&[Phase::Upcoming, Phase::Running], true, offset, size)
            .await?;
        let user = caller.user_id.to_string();
        let mut out = Vec::with_capacity(events.len());
        for event in &events {
            let entry = inner.store.entry(&event.id, &user).await?;
            out.push(inner.with_entry(event, entry.as_ref()));
        }
        Ok(Response::new(pb::ListEventsResponse {
            events: out,
            next_page_token: next_token(next),
        }))
    }

    async fn get_event(
        &self,
        request: Request<pb::GetEventRequest>,
    ) -> std::result::Result<Response<pb::GetEventResponse>, Status> {
        let caller = player(&request)?;
        let inner = &self.inner;
        let event = inner.event(&request.get_ref().event_id).await?;
        let entry = inner
            .store
            .entry(&event.id, &caller.user_id.to_string())
            .await?;
        let state = if request.get_ref().with_state {
            Some(
                inner
                    .state(&event.id)
                    .await?
                    .message(None, None, inner.now()),
            )
        } else {
            None
        };
        Ok(Response::new(pb::GetEventResponse {
            event: Some(inner.with_entry(&event, entry.as_ref())),
            state,
        }))
    }

    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> std::result::Result<Response<pb::RegisterResponse>, Status> {
        let caller = player(&request)?;
        let inner = &self.inner;
        let event = inner.event(&request.get_ref().event_id).await?;
        if caller.guest && event.spec.rated {
            return Err(MatchmakingError::PermissionDenied(
                "guest accounts may not enter rated events: register first".into(),
            )
            .into());
        }
        let user = caller.user_id.to_string();
        let rating = inner.ratings.rating(&user).await?.round() as i32;
        let entry = inner
            .store
            .register(&event.id, &user, rating, inner.now())
            .await?
            .map_err(MatchmakingError::from)?;
        let event = inner.event(&event.id).await?;
        if event.starting_soon(inner.now(), inner.settings.starting_notice_seconds) {
            // Its players were told (or are being told) already: this one too, at once
            // (the same key: told once however the two meet).
            inner
                .notices
                .notify(
                    &user,
                    &event.id,
                    &event.spec.name,
                    Notice::Starting {
                        starts_at_ms: event.starts_at_ms,
                    },
                )
                .await;
        }
        Ok(Response::new(pb::RegisterResponse {
            entry: Some(convert::entry(&entry)),
            event: Some(convert::event(&event, inner.now())),
        }))
    }

    async fn withdraw(
        &self,
        request: Request<pb::WithdrawRequest>,
    ) -> std::result::Result<Response<pb::WithdrawResponse>, Status> {
        let caller = player(&request)?;
        let inner = &self.inner;
        let event = inner.event(&request.get_ref().event_id).await?;
        let entry = inner
            .store
            .withdraw(&event.id, &caller.user_id.to_string())
            .await?
            .map_err(MatchmakingError::from)?;
        Ok(Response::new(pb::WithdrawResponse {
            entry: entry.as_ref().map(convert::entry),
        }))
    }

    async fn check_in(
        &self,
        request: Request<pb::CheckInRequest>,
    ) -> std::result::Result<Response<pb::CheckInResponse>, Status> {
        let caller = player(&request)?;
        let inner = &self.inner;
        let event = inner.event(&request.get_ref().event_id).await?;
        let entry = inner
            .store
            .check_in(&event.id, &caller.user_id.to_string(), inner.now())
            .await?
            .map_err(MatchmakingError::from)?;
        Ok(Response::new(pb::CheckInResponse {
            entry: Some(convert::entry(&entry)),
        }))
    }

    async fn watch_event(
        &self,
        request: Request<pb::WatchEventRequest>,
    ) -> std::result::Result<Response<Self::WatchEventStream>, Status> {
        let caller = player(&request)?;
        let r = request.into_inner();
        event_id(&r.event_id)?;
        let inner = self.inner.clone();
        // The event's snapshots, shared with its other watchers on this replica (the
        // first of them starts its poller). An unknown event is refused before the
        // stream opens.
        let mut snapshots = inner.hub.subscribe(&inner, &r.event_id).await?;
        let slot = inner
            .watchers
            .open(caller.user_id)
            .map_err(MatchmakingError::from)?;
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tokio::spawn(async move {
            let _slot = slot;
            // The version the client has (none on a first stream: even a new event's
            // version 0 is sent, as its first whole state).
            let mut seen = (r.last_seen_version > 0).then_some(r.last_seen_version);
            // The current round of the last message sent (none yet: the first carries
            // every earlier round).
            let mut sent: Option<u32> = None;
            // The version of the last message sent, for a stream that asked for
            // changes only (the next may carry what changed since it).
            let mut changes_since: Option<u64> = None;
            loop {
                let published = snapshots.borrow_and_update().clone();
                match published {
                    Some(Ok(state)) => {
                        if seen.is_none_or(|v| state.version() > v) {
                            seen = Some(state.version());
                            let message = state.message(sent, changes_since, inner.now());
                            if tx.send(Ok(message)).await.is_err() {
                                return;
                            }
                            changes_since = r.changes_only.then_some(state.version());
                            sent = Some(sent.map_or(state.round(), |r| r.max(state.round())));
                        }
                        if state.is_over() {
                            return;
                        }
                    }
                    Some(Err(status)) => {
                        let _ = tx.send(Err(status)).await;
                        return;
                    }
                    None => {}
                }
                tokio::select! {
                    () = inner.shutdown.cancelled() => {
                        let _ = tx.send(Err(draining())).await;
                        return;
                    }
                    () = tx.closed() => return,
                    changed = snapshots.changed() => {
                        if changed.is_err() {
                            // The poller stopped without a last snapshot or an error:
                            // the replica is stopping.
                            let _ = tx.send(Err(draining())).await;
                            return;
                        }
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn get_my_match(
        &self,
        request: Request<pb::GetMyMatchRequest>,
    ) -> std::result::Result<Response<pb::GetMyMatchResponse>, Status> {
        let caller = player(&request)?;
        let inner = &self.inner;
        let event = inner.event(&request.get_ref().event_id).await?;
        let user = caller.user_id.to_string();
        let none =
            || MatchmakingError::NotFound("you have no match waiting in this event now".into());
        if event.phase != Phase::Running {
            return Err(none().into());
        }
        let live = inner.live_state(&event.id).await?.ok_or_else(none)?.1;
        let m = live
            .match_of(&user)
            .filter(|m| m.created)
            .ok_or_else(none)?;
        let seat = m.players.iter().position(|p| *p == user).unwrap_or(0);
        Ok(Response::new(pb::GetMyMatchResponse {
            pairing: Some(convert::pairing(m)),
            room_id: m.room_id.clone(),
            seat: seat as u32,
            opponent: m.players[1 - seat].clone(),
            join_deadline: Some(timestamp(m.deadline_ms)),
        }))
    }

    async fn get_standings(
        &self,
        request: Request<pb::GetStandingsRequest>,
    ) -> std::result::Result<Response<pb::GetStandingsResponse>, Status> {
        player(&request)?;
        let inner = &self.inner;
        let event = inner.event(&request.get_ref().event_id).await?;
        let live = inner.live_state(&event.id).await?;
        let standings = inner
            .standings(&event, live.as_ref().map(|(_, l)| l))
            .await?;
        Ok(Response::new(pb::GetStandingsResponse {
            event: Some(convert::event(&event, inner.now())),
            standings,
            r#final: event.phase == Phase::Finished,
        }))
    }

    async fn list_my_events(
        &self,
        request: Request<pb::ListMyEventsRequest>,
    ) -> std::result::Result<Response<pb::ListMyEventsResponse>, Status> {
        let caller = player(&request)?;
        let r = request.into_inner();
        let (size, offset) = paging(r.page_size, &r.page_token)?;
        let inner = &self.inner;
        let (entries, next) = inner
            .store
            .entries_of(&caller.user_id.to_string(), offset, size)
            .await?;
        let mut out = Vec::with_capacity(entries.len());
        for entry in &entries {
            if let Some(event) = inner.store.get(&entry.event_id).await? {
                out.push(pb::MyEvent {
                    event: Some(inner.with_entry(&event, Some(entry))),
                    rank: entry.rank,
                    points: entry.points,
                });
            }
        }
        Ok(Response::new(pb::ListMyEventsResponse {
            events: out,
            next_page_token: next_token(next),
        }))
    }
}
