//! What players are told about their events, through accounts' inbox (issue 48,
//! `SendNotices`: many players in one call): "your match is ready", "the event is
//! starting", "the event was cancelled". Behind a trait so that tests and `basra dev` can
//! watch them; the clock tells a step's notices in one batch ([`Notices::notify_all`]);
//! a notice that cannot be delivered is logged; the clock tells "your match is ready"
//! again next tick when accounts could not be reached (a transient status), and drops the
//! rest (the player still sees their match with GetMyMatch and WatchEvent).

use std::sync::Mutex;

use crate::clock::Millis;

/// One notice about an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The player's match is ready: join the room by the deadline.
    MatchReady {
        /// The round (arena: 0).
        round: u32,
        /// The room.
        room_id: String,
        /// The opponent (a user id).
        opponent: String,
        /// Join by then or forfeit.
        deadline_ms: Millis,
    },
    /// The event starts at `starts_at_ms` with the player (accounts keeps only a notice
    /// about a start still to come).
    Starting {
        /// The start.
        starts_at_ms: Millis,
    },
    /// The event was cancelled.
    Cancelled {
        /// Why.
        reason: String,
    },
}

/// Delivers notices to players.
#[tonic::async_trait]
pub trait Notices: Send + Sync + 'static {
    /// Tells each of `told` (a user and their notice) about `event_id` (named
    /// `event_name`), all at once; never fails the caller. Whether each is done, in the
    /// order of `told`: delivered, or refused for good (`false`: try again later,
    /// accounts could not be reached).
    async fn notify_all(
        &self,
        event_id: &str,
        event_name: &str,
        told: Vec<(String, Notice)>,
    ) -> Vec<bool>;

    /// Tells `user` about `event_id` (named `event_name`): [`notify_all`](Self::notify_all)
    /// of one.
    async fn notify(&self, user: &str, event_id: &str, event_name: &str, notice: Notice) -> bool {
        self.notify_all(event_id, event_name, vec![(user.to_owned(), notice)])
            .await
            .pop()
            .unwrap_or(false)
    }
}

/// Notices logged only (no inbox to deliver them to).
#[derive(Debug, Default, Clone, Copy)]
pub struct LoggedNotices;

#[tonic::async_trait]
impl Notices for LoggedNotices {
    async fn notify_all(
        &self,
        event_id: &str,
        _event_name: &str,
        told: Vec<(String, Notice)>,
    ) -> Vec<bool> {
        for (user, notice) in &told {
            tracing::debug!(
                user = user.as_str(),
                event = event_id,
                ?notice,
                "event notice (no inbox configured)"
            );
        }
        vec![true; told.len()]
    }
}

/// Notices kept in memory, for tests to look at.
#[derive(Debug, Default)]
pub struct RecordedNotices {
    /// Every notice: user, event, notice.
    pub sent: Mutex<Vec<(String, String, Notice)>>,
    /// How many notices each call told, in the order of the calls.
    pub calls: Mutex<Vec<usize>>,
}

#[tonic::async_trait]
impl Notices for RecordedNotices {
    async fn notify_all(
        &self,
        event_id: &str,
        _event_name: &str,
        told: Vec<(String, Notice)>,
    ) -> Vec<bool> {
        let count = told.len();
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(count);
        self.sent.lock().unwrap_or_else(|p| p.into_inner()).extend(
            told.into_iter()
                .map(|(user, notice)| (user, event_id.to_owned(), notice)),
        );
        vec![true; count]
    }
}

/// The most notices accounts' `SendNotices` takes in one call (its .proto: 1 to 500).
pub const SEND_NOTICES_MAX: usize = 500;

/// How many `SendNotices` calls of one batch are in flight at once.
pub const SEND_NOTICES_IN_FLIGHT: usize = 4;

/// The fewest notices a call carries when a batch is split to keep
/// [`SEND_NOTICES_IN_FLIGHT`] calls busy (smaller batches go in one call).
pub const SEND_NOTICES_MIN_SPLIT: usize = 64;

/// The sizes of the `SendNotices` calls `n` notices go in: as few calls as the maximum
/// allows, but spread over up to [`SEND_NOTICES_IN_FLIGHT`] calls of at least
/// [`SEND_NOTICES_MIN_SPLIT`] each (accounts works on them at once), sizes within one
/// of each other.
pub fn call_sizes(n: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let calls = n
        .div_ceil(SEND_NOTICES_MAX)
        .max((n / SEND_NOTICES_MIN_SPLIT).clamp(1, SEND_NOTICES_IN_FLIGHT));
    (0..calls)
        .map(|i| n / calls + usize::from(i < n % calls))
        .collect()
}

/// The key and body of `notice` for accounts (`opponent_name` the opponent's display
/// name, for a match ready). Each has a key (`event:ID:…`) that accounts keeps it once
/// by, so a step repeated after a takeover tells nobody twice.
fn request_of(
    user: String,
    event_id: &str,
    event_name: &str,
    notice: Notice,
    opponent_name: String,
) -> basra_proto::basra::accounts::v1::SendNoticeRequest {
    use basra_proto::basra::accounts::v1 as acc;
    use basra_proto::basra::accounts::v1::send_notice_request::Body;
    use basra_proto::convert::timestamp;
    let (key, body) = match notice {
        Notice::MatchReady {
            round,
            room_id,
            deadline_ms,
            ..
        } => (
            format!("event:{event_id}:{room_id}:ready"),
            Body::EventMatchReady(acc::EventMatchReadyNotice {
                event_id: event_id.to_owned(),
                event_name: event_name.to_owned(),
                round,
                room_id,
                opponent_name,
                join_deadline: Some(timestamp(deadline_ms)),
            }),
        ),
        Notice::Starting { starts_at_ms } => (
            format!("event:{event_id}:starting"),
            Body::EventStarting(acc::EventStartingNotice {
                event_id: event_id.to_owned(),
                event_name: event_name.to_owned(),
                starts_at: Some(timestamp(starts_at_ms)),
            }),
        ),
        Notice::Cancelled { .. } => (
            format!("event:{event_id}:cancelled"),
            Body::EventCancelled(acc::EventCancelledNotice {
                event_id: event_id.to_owned(),
                event_name: event_name.to_owned(),
            }),
        ),
    };
    acc::SendNoticeRequest {
        to_user_id: user,
        dedupe_key: key,
        body: Some(body),
    }
}

/// Whether accounts' answer for one notice makes it done (delivered, or refused for
/// good: logged).
fn done(user: &str, event_id: &str, answer: Result<(), tonic::Status>) -> bool {
    match answer {
        Ok(()) => true,
        Err(status) => {
            tracing::warn!(user, event = event_id, error = %status, "event notice not delivered");
            !crate::upstream::is_transient(&status)
        }
    }
}

/// Notices kept in the players' inboxes by accounts (`AccountsInternalService/
/// SendNotices`, with matchmaking's service credentials): the opponents' names asked
/// once for the whole batch (`GetPlayers`, 100 a call), then the notices sent in calls of
/// [`call_sizes`], a few at once. An accounts without SendNotices (UNIMPLEMENTED: an
/// older release during a rollout) is sent them one `SendNotice` each.
#[tonic::async_trait]
impl Notices for crate::upstream::GrpcPlayers {
    async fn notify_all(
        &self,
        event_id: &str,
        event_name: &str,
        told: Vec<(String, Notice)>,
    ) -> Vec<bool> {
        let opponents: Vec<String> = told
            .iter()
            .filter_map(|(_, notice)| match notice {
                Notice::MatchReady { opponent, .. } => Some(opponent.clone()),
                _ => None,
            })
            .collect();
        let names = if opponents.is_empty() {
            Default::default()
        } else {
            crate::upstream::NameSource::names(self, &opponents)
                .await
                .unwrap_or_else(|err| {
                    // The notices go without the names rather than not at all.
                    tracing::warn!(event = event_id, error = %err, "opponents' names unknown");
                    Default::default()
                })
        };
        let users: Vec<String> = told.iter().map(|(user, _)| user.clone()).collect();
        let requests: Vec<_> = told
            .into_iter()
            .map(|(user, notice)| {
                let opponent_name = match &notice {
                    Notice::MatchReady { opponent, .. } => {
                        names.get(opponent).cloned().unwrap_or_default()
                    }
                    _ => String::new(),
                };
                request_of(user, event_id, event_name, notice, opponent_name)
            })
            .collect();
        let answers = self.send_notices_in_calls(requests).await;
        users
            .iter()
            .zip(answers)
            .map(|(user, answer)| done(user, event_id, answer))
            .collect()
    }
}

impl crate::upstream::GrpcPlayers {
    /// `requests` in calls of [`call_sizes`], [`SEND_NOTICES_IN_FLIGHT`] at once; each
    /// notice's answer in order (a call that failed as a whole: its status for each).
    async fn send_notices_in_calls(
        &self,
        requests: Vec<basra_proto::basra::accounts::v1::SendNoticeRequest>,
    ) -> Vec<Result<(), tonic::Status>> {
        use basra_proto::basra::accounts::v1 as acc;
        let total = requests.len();
        let mut rest = requests.into_iter();
        let mut chunks = Vec::new();
        let mut first = 0;
        for size in call_sizes(total) {
            chunks.push((first, rest.by_ref().take(size).collect::<Vec<_>>()));
            first += size;
        }
        let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(SEND_NOTICES_IN_FLIGHT));
        let mut calls = tokio::task::JoinSet::new();
        for (first, notices) in chunks {
            let (this, limit) = (self.clone(), limit.clone());
            calls.spawn(async move {
                let _permit = limit.acquire_owned().await;
                let count = notices.len();
                let answers = match this
                    .send_notices(acc::SendNoticesRequest {
                        notices: notices.clone(),
                    })
                    .await
                {
                    Ok(answer) if answer.results.len() == count => answer
                        .results
                        .into_iter()
                        .map(|result| match result.outcome {
                            Some(acc::send_notice_result::Outcome::Sent(_)) => Ok(()),
                            Some(acc::send_notice_result::Outcome::Error(error)) => {
                                Err(tonic::Status::new(
                                    tonic::Code::from_i32(error.code),
                                    error.message,
                                ))
                            }
                            None => Err(tonic::Status::unknown("SendNotices answered no outcome")),
                        })
                        .collect(),
                    Ok(_) => vec![
                        Err(tonic::Status::unknown(
                            "SendNotices answered another number of results"
                        ));
                        count
                    ],
                    Err(status) if status.code() == tonic::Code::Unimplemented => {
                        this.send_each(notices).await
                    }
                    Err(status) => vec![Err(status); count],
                };
                (first, answers)
            });
        }
        let mut answers: Vec<Result<(), tonic::Status>> =
            vec![Err(tonic::Status::unknown("a SendNotices call was lost")); total];
        while let Some(done) = calls.join_next().await {
            let Ok((first, chunk)) = done else { continue };
            for (i, answer) in chunk.into_iter().enumerate() {
                answers[first + i] = answer;
            }
        }
        answers
    }

    /// `notices` one `SendNotice` each, [`SEND_NOTICES_IN_FLIGHT`] × 16 at once.
    async fn send_each(
        &self,
        notices: Vec<basra_proto::basra::accounts::v1::SendNoticeRequest>,
    ) -> Vec<Result<(), tonic::Status>> {
        let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(SEND_NOTICES_IN_FLIGHT * 16));
        let mut calls = tokio::task::JoinSet::new();
        let count = notices.len();
        for (at, notice) in notices.into_iter().enumerate() {
            let (this, limit) = (self.clone(), limit.clone());
            calls.spawn(async move {
                let _permit = limit.acquire_owned().await;
                (at, this.send_notice(notice).await.map(|_| ()))
            });
        }
        let mut answers = vec![Err(tonic::Status::unknown("a SendNotice call was lost")); count];
        while let Some(done) = calls.join_next().await {
            if let Ok((at, answer)) = done {
                answers[at] = answer;
            }
        }
        answers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_go_in_few_calls_of_at_most_the_maximum_spread_over_a_few() {
        assert!(call_sizes(0).is_empty());
        assert_eq!(call_sizes(1), [1]);
        assert_eq!(call_sizes(127), [127], "a small batch is one call");
        assert_eq!(call_sizes(128), [64, 64]);
        assert_eq!(call_sizes(1024), [256; 4]);
        assert_eq!(call_sizes(2048), [410, 410, 410, 409, 409]);
        for n in [1, 63, 64, 500, 501, 999, 1000, 4096, 10_000] {
            let sizes = call_sizes(n);
            assert_eq!(sizes.iter().sum::<usize>(), n, "{n}");
            assert!(
                sizes.iter().all(|&s| (1..=SEND_NOTICES_MAX).contains(&s)),
                "{n}: {sizes:?}"
            );
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(max - min <= 1, "{n}: {sizes:?}");
            assert!(sizes.len() <= n.div_ceil(SEND_NOTICES_MAX).max(SEND_NOTICES_IN_FLIGHT));
        }
    }
}
