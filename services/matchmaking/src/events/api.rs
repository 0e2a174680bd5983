//! `EventService`: what players do with events. Translation and checks only; the rules
//! are in `model` (applied atomically by the store) and the clock in `driver`.

use std::collections::HashMap;
use std::pin::Pin;
use std::time::Duration;

use basra_platform::{Caller, auth};
use basra_proto::basra::matchmaking::v1::{self as pb, event_service_server::EventService};
use basra_proto::convert::timestamp;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use super::model::{EntryRecord, EventRecord, Phase};
use super::notices::Notice;
use super::play::LiveEvent;
use super::{EventsApi, EventsShared, bracket, convert};
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

    /// The standings: the live state's while it is kept, else the final ranks stored.
    async fn standings(
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
                .names_of(entries.iter().map(|e| e.user_id.clone()))
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
            .names_of(rows.iter().map(|s| super::play::user_of(s.player)))
            .await;
        Ok(rows.iter().map(|s| convert::standing(s, &names)).collect())
    }

    async fn names_of(&self, users: impl Iterator<Item = String>) -> HashMap<String, String> {
        let users: Vec<String> = users.collect();
        if users.is_empty() {
            return HashMap::new();
        }
        self.names.names(&users).await.unwrap_or_default()
    }

    /// The whole state of an event for a watcher, its earlier rounds apart
    /// ([`State::earlier`]): a stream sends them on its first message only.
    pub(crate) async fn state(&self, id: &str) -> Result<State> {
        let event = self.event(id).await?;
        let live = self.live_state(id).await?;
        let standings = self
            .standings(&event, live.as_ref().map(|(_, l)| l))
            .await?;
        let version = event.version + live.as_ref().map_or(0, |(v, _)| *v);
        let (pairings, round, rounds) = match live {
            Some((_, l)) => {
                let current = l.rounds().0;
                let mut rows: Vec<pb::Pairing> = l
                    .matches
                    .iter()
                    .filter(|m| event.is_arena() || m.round == current)
                    .map(convert::pairing)
                    .collect();
                if rows.len() > 200 {
                    rows.drain(..rows.len() - 200);
                }
                (rows, current, Rounds::Live(l))
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
        Ok(State {
            update: pb::WatchEventResponse {
                version,
                event: Some(convert::event(&event, self.now())),
                standings,
                pairings,
                earlier_pairings: Vec::new(),
            },
            round,
            rounds,
        })
    }
}

/// Where an event's earlier rounds come from.
pub(crate) enum Rounds {
    /// Its live state.
    Live(LiveEvent),
    /// A finished event's stored results, as pairings.
    Stored(Vec<pb::Pairing>),
    /// Not started (or an arena: no rounds).
    None,
}

/// An event's state at one version: the update without its earlier rounds, the current
/// round, and where the earlier rounds are.
pub(crate) struct State {
    /// The update, `earlier_pairings` empty.
    pub(crate) update: pb::WatchEventResponse,
    /// The current round (0: none).
    pub(crate) round: u32,
    rounds: Rounds,
}

impl State {
    /// The pairings of rounds `from` up to the current one (excluded).
    pub(crate) fn earlier(&self, from: u32) -> Vec<pb::Pairing> {
        match &self.rounds {
            Rounds::Live(live) => bracket::earlier(live, from, self.round),
            Rounds::Stored(rows) => rows.iter().filter(|p| p.round >= from).cloned().collect(),
            Rounds::None => Vec::new(),
        }
    }

    /// The update a stream sends after one of round `sent` (`None`: its first), with
    /// the rounds the client has not had whole: every earlier one on a first message,
    /// those from `sent` on when the round has moved past it, none otherwise.
    pub(crate) fn message(self, sent: Option<u32>) -> pb::WatchEventResponse {
        let earlier = match sent {
            None => self.earlier(0),
            Some(r) if self.round > r => self.earlier(r),
            Some(_) => Vec::new(),
        };
        pb::WatchEventResponse {
            earlier_pairings: earlier,
            ..self.update
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
            Some(inner.state(&event.id).await?.message(None))
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
        let inner = self.inner.clone();
        // Refuse an unknown event before the stream opens.
        let first = inner.state(&r.event_id).await?;
        let slot = inner
            .watchers
            .open(caller.user_id)
            .map_err(MatchmakingError::from)?;
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let poll = Duration::from_millis(inner.settings.watch_poll_millis);
        tokio::spawn(async move {
            let _slot = slot;
            let mut seen = r.last_seen_version;
            // The current round of the last message sent (none yet: the first carries
            // every earlier round).
            let mut sent: Option<u32> = None;
            let mut next = Some(first);
            loop {
                if let Some(state) = next.take() {
                    let over = state.update.event.as_ref().is_some_and(|e| {
                        e.status == pb::EventStatus::Finished as i32
                            || e.status == pb::EventStatus::Cancelled as i32
                    });
                    if state.update.version > seen {
                        seen = state.update.version;
                        let round = state.round;
                        if tx.send(Ok(state.message(sent))).await.is_err() {
                            return;
                        }
                        sent = Some(sent.map_or(round, |r| r.max(round)));
                    }
                    if over {
                        return;
                    }
                }
                tokio::select! {
                    () = inner.shutdown.cancelled() => {
                        let _ = tx.send(Err(Status::unavailable("the server is draining: reopen with last_seen_version"))).await;
                        return;
                    }
                    () = tx.closed() => return,
                    () = tokio::time::sleep(poll) => {}
                }
                match inner.state(&r.event_id).await {
                    Ok(update) => next = Some(update),
                    Err(err) => {
                        let _ = tx.send(Err(err.into())).await;
                        return;
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
