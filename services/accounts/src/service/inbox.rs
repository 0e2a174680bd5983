//! The inbox's RPCs (ListNotices, MarkNoticesRead, CountUnreadNotices; the services'
//! SendNotice, SendNotices) and [`AccountsApi::keep_notice`] (with its batch form,
//! [`AccountsApi::keep_notices`]), the one way a notice is kept: stored
//! (deduplicated, bounded, with its expiry; [`crate::inbox`]), handed to the
//! [`NoticeHook`](crate::inbox::NoticeHook), then sent on the player's feed, once, as a
//! numbered note: a resumed feed (`last_seen_seq`) never sends it twice, and its event
//! carries the notice's id (`notice_id`) so a client can tell it from what ListNotices
//! already gave.
//!
//! Who keeps notices: friend requests and acceptances (`feed.rs`, after a friend
//! action), invites (SendInvite), a match's result for each player without an open feed
//! (RecordMatch: [`AccountsApi::keep_match_results`]), the reports' "handled" notice and
//! the events' notices (SendNotice, and SendNotices for many players at once: one store
//! step for the batch).

use std::collections::HashMap;

use basra_platform::auth::{Caller, Role};
use basra_proto::basra::accounts::v1 as pb;
use basra_records::MatchRecord;
use uuid::Uuid;

use super::AccountsApi;
use super::page_token::{decode_notice_token, encode_notice_token};
use crate::domain;
use crate::error::{AccountsError, Result};
use crate::inbox::{self, Kept, KeptNotice, Marking, NewNotice, NoticeKind, NoticePage};
use crate::store::{HistoryEntry, RatingChange, Store};

/// What [`AccountsApi::keep_notice`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Delivered {
    /// The notice kept now, or before under the same dedupe key.
    pub kept: Kept,
    /// Its seq on the player's feed; `None` for a duplicate (not sent again).
    pub seq: Option<u64>,
}

/// The feed event of a notice: the released events for the kinds that have one.
fn feed_event(notice: pb::Notice) -> pb::watch_friends_response::Event {
    use pb::notice::Body;
    use pb::watch_friends_response::Event;
    match notice.body {
        Some(Body::FriendRequest(friend)) => Event::FriendRequest(friend),
        Some(Body::FriendAdded(friend)) => Event::FriendAdded(friend),
        Some(Body::Invite(invite)) => Event::Invite(invite),
        _ => Event::Notice(notice),
    }
}

/// Notices per ListNotices page when the request says 0.
pub(super) const NOTICES_DEFAULT_PAGE: u32 = 20;

/// The most notices one SendNotices call takes (its .proto).
pub(crate) const MAX_NOTICES_PER_CALL: usize = 500;

/// A SendNotice request checked as SendNotice checks it (at `now`): the addressee, the
/// notice's body and its dedupe key.
fn sent_notice(
    req: pb::SendNoticeRequest,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(Uuid, pb::notice::Body, String)> {
    let to = Uuid::parse_str(&req.to_user_id)
        .map_err(|_| AccountsError::invalid("to_user_id", "is not a user id"))?;
    inbox::check_dedupe_key(&req.dedupe_key)?;
    use pb::send_notice_request::Body as Sent;
    let body = match req.body {
        Some(Sent::EventMatchReady(ready)) => pb::notice::Body::EventMatchReady(ready),
        Some(Sent::EventStarting(starting)) => pb::notice::Body::EventStarting(starting),
        Some(Sent::EventCancelled(cancelled)) => pb::notice::Body::EventCancelled(cancelled),
        None => return Err(AccountsError::invalid("body", "is missing")),
    };
    inbox::check_sent_body(&body, now)?;
    Ok((to, body, req.dedupe_key))
}

/// SendNotice's answer for a notice kept (now or before).
fn sent_answer(sent: &Delivered) -> pb::SendNoticeResponse {
    pb::SendNoticeResponse {
        notice: Some(sent.kept.notice.to_proto()),
        duplicate: sent.kept.duplicate,
    }
}

impl<S: Store> AccountsApi<S> {
    pub(super) async fn do_list_notices(
        &self,
        caller: Caller,
        req: pb::ListNoticesRequest,
    ) -> Result<pb::ListNoticesResponse> {
        let limit = match req.page_size {
            0 => NOTICES_DEFAULT_PAGE,
            n if n as usize > inbox::MAX_IDS => {
                return Err(AccountsError::invalid("page_size", "is above 100"));
            }
            n => n,
        };
        let before = if req.page_token.is_empty() {
            None
        } else {
            Some(decode_notice_token(&req.page_token)?)
        };
        let now = domain::now();
        let store = &self.inner.store;
        let page = NoticePage {
            before,
            unread_only: req.unread_only,
            limit: limit + 1,
        };
        let mut notices = store.notices(caller.user_id, page, now).await?;
        let more = notices.len() > limit as usize;
        notices.truncate(limit as usize);
        let next_page_token = match notices.last() {
            Some(last) if more => encode_notice_token(last.id),
            _ => String::new(),
        };
        Ok(pb::ListNoticesResponse {
            notices: notices.iter().map(|n| n.to_proto()).collect(),
            next_page_token,
            unread_count: store.unread_notices(caller.user_id, now).await?.count,
        })
    }

    pub(super) async fn do_mark_notices_read(
        &self,
        caller: Caller,
        req: pb::MarkNoticesReadRequest,
    ) -> Result<pb::MarkNoticesReadResponse> {
        let marking = match (req.ids.is_empty(), req.up_to_id) {
            (true, 0) | (false, 1..) => {
                return Err(AccountsError::invalid(
                    "ids",
                    "give exactly one of ids and up_to_id",
                ));
            }
            (true, last) => Marking::UpTo(last),
            (false, 0) if req.ids.len() > inbox::MAX_IDS => {
                return Err(AccountsError::invalid("ids", "holds more than 100 ids"));
            }
            (false, 0) if req.ids.contains(&0) => {
                return Err(AccountsError::invalid("ids", "holds 0, which is no id"));
            }
            (false, 0) => Marking::Ids(req.ids),
        };
        let now = domain::now();
        let store = &self.inner.store;
        let marked = store
            .mark_notices_read(caller.user_id, marking, now)
            .await?;
        Ok(pb::MarkNoticesReadResponse {
            marked,
            unread_count: store.unread_notices(caller.user_id, now).await?.count,
        })
    }

    pub(super) async fn do_count_unread_notices(
        &self,
        caller: Caller,
    ) -> Result<pb::CountUnreadNoticesResponse> {
        Ok(pb::CountUnreadNoticesResponse {
            unread_count: self
                .inner
                .store
                .unread_notices(caller.user_id, domain::now())
                .await?
                .count,
        })
    }

    pub(super) async fn do_send_notice(
        &self,
        caller: Caller,
        req: pb::SendNoticeRequest,
    ) -> Result<pb::SendNoticeResponse> {
        if caller.role != Role::Service {
            return Err(AccountsError::PermissionDenied(
                "SendNotice needs a service token",
            ));
        }
        let (to, body, key) = sent_notice(req, domain::now())?;
        let sent = self.keep_notice(to, body, Some(key), None).await?;
        Ok(sent_answer(&sent))
    }

    pub(super) async fn do_send_notices(
        &self,
        caller: Caller,
        req: pb::SendNoticesRequest,
    ) -> Result<pb::SendNoticesResponse> {
        if caller.role != Role::Service {
            return Err(AccountsError::PermissionDenied(
                "SendNotices needs a service token",
            ));
        }
        if req.notices.is_empty() || req.notices.len() > MAX_NOTICES_PER_CALL {
            return Err(AccountsError::invalid(
                "notices",
                format!("must hold 1 to {MAX_NOTICES_PER_CALL} notices"),
            ));
        }
        let now = domain::now();
        let checked: Vec<Result<(Uuid, pb::notice::Body, String)>> = req
            .notices
            .into_iter()
            .map(|notice| sent_notice(notice, now))
            .collect();
        let valid: Vec<(Uuid, pb::notice::Body, Option<String>)> = checked
            .iter()
            .filter_map(|c| c.as_ref().ok())
            .map(|(to, body, key)| (*to, body.clone(), Some(key.clone())))
            .collect();
        let mut delivered = self.keep_notices(valid).await?.into_iter();
        let results = checked
            .into_iter()
            .map(|c| {
                let outcome = match c {
                    Err(err) => Err(err),
                    Ok(_) => delivered.next().unwrap_or(Err(AccountsError::Internal(
                        "a notice of the batch was not answered".into(),
                    ))),
                };
                use pb::send_notice_result::Outcome;
                pb::SendNoticeResult {
                    outcome: Some(match outcome {
                        Ok(sent) => Outcome::Sent(Box::new(sent_answer(&sent))),
                        Err(err) => {
                            let status = tonic::Status::from(err);
                            Outcome::Error(pb::NoticeError {
                                code: status.code() as i32,
                                message: status.message().to_owned(),
                            })
                        }
                    }),
                }
            })
            .collect();
        Ok(pb::SendNoticesResponse { results })
    }

    /// [`keep_notice`](Self::keep_notice) for many notices at once (each `(user, body,
    /// dedupe_key)`): kept in one step of the store, each new one handed to the hook, then
    /// put on its player's feed (the players' feeds at once, one player's notices in the
    /// order they were kept). The answers in the same order, each as `keep_notice` would
    /// answer it; the error of the whole call is the store's (nothing kept).
    pub(crate) async fn keep_notices(
        &self,
        notices: Vec<(Uuid, pb::notice::Body, Option<String>)>,
    ) -> Result<Vec<Result<Delivered>>> {
        let limits = self.inner.config.inbox;
        let now = domain::now();
        let new: Vec<NewNotice> = notices
            .into_iter()
            .map(|(user, body, dedupe_key)| NewNotice {
                user_id: user,
                kind: NoticeKind::of(&body),
                expires_at: inbox::expires_at(&body, now, limits.keep_for),
                payload: inbox::encode_body(body),
                dedupe_key,
                about: None,
                created_at: now,
            })
            .collect();
        let kept = self.inner.store.keep_notices(new, limits.keep).await?;
        let mut answers: Vec<Option<Result<Delivered>>> = Vec::with_capacity(kept.len());
        // The new notices, by player: (answer's index, notice).
        let mut fresh: HashMap<Uuid, Vec<(usize, Kept)>> = HashMap::new();
        for (at, kept) in kept.into_iter().enumerate() {
            match kept {
                Ok(kept) if !kept.duplicate => {
                    if let Some(hook) = &self.inner.config.notice_hook {
                        hook.notice_kept(&KeptNotice {
                            user_id: kept.notice.user_id,
                            kind: kept.notice.kind,
                            notice: kept.notice.to_proto(),
                        });
                    }
                    fresh
                        .entry(kept.notice.user_id)
                        .or_default()
                        .push((at, kept));
                    answers.push(None);
                }
                Ok(kept) => answers.push(Some(Ok(Delivered { kept, seq: None }))),
                Err(err) => answers.push(Some(Err(err))),
            }
        }
        // The feeds' notes: every player's at once (concurrent calls share the Redis
        // connection, so they go out pipelined), each player's in id order.
        let mut notes = tokio::task::JoinSet::new();
        for (user, kept) in fresh {
            let api = self.clone();
            notes.spawn(async move {
                let mut done = Vec::with_capacity(kept.len());
                for (at, kept) in kept {
                    let shown = kept.notice.to_proto();
                    let note = api.push_note(user, feed_event(shown), kept.notice.id).await;
                    done.push((
                        at,
                        note.map(|seq| Delivered {
                            kept,
                            seq: Some(seq),
                        }),
                    ));
                }
                done
            });
        }
        while let Some(done) = notes.join_next().await {
            match done {
                Ok(done) => {
                    for (at, answer) in done {
                        answers[at] = Some(answer);
                    }
                }
                // Its notices are kept (and listed): answered INTERNAL below.
                Err(err) => tracing::error!(error = %err, "a feed note's task failed"),
            }
        }
        Ok(answers
            .into_iter()
            .map(|answer| {
                answer.unwrap_or(Err(AccountsError::Internal(
                    "a kept notice was not put on its feed".into(),
                )))
            })
            .collect())
    }

    /// Keeps a notice of `body` for `user` (once per `dedupe_key`; naming the player
    /// `about`, whose deletion takes it away). A new one is handed to the hook, then put
    /// on the player's feed: as its own event for a friend request, an acceptance or an
    /// invite, as a `notice` event otherwise, with its id. Errors: `UserNotFound`, the
    /// stores' (a notice kept but not put on the feed is listed all the same; a retry
    /// with its dedupe key keeps nothing new).
    pub(crate) async fn keep_notice(
        &self,
        user: Uuid,
        body: pb::notice::Body,
        dedupe_key: Option<String>,
        about: Option<Uuid>,
    ) -> Result<Delivered> {
        let limits = self.inner.config.inbox;
        let now = domain::now();
        let notice = NewNotice {
            user_id: user,
            kind: NoticeKind::of(&body),
            expires_at: inbox::expires_at(&body, now, limits.keep_for),
            payload: inbox::encode_body(body),
            dedupe_key,
            about,
            created_at: now,
        };
        let kept = self.inner.store.keep_notice(notice, limits.keep).await?;
        if kept.duplicate {
            return Ok(Delivered { kept, seq: None });
        }
        let shown = kept.notice.to_proto();
        if let Some(hook) = &self.inner.config.notice_hook {
            hook.notice_kept(&KeptNotice {
                user_id: user,
                kind: kept.notice.kind,
                notice: shown.clone(),
            });
        }
        let seq = self
            .push_note(user, feed_event(shown), kept.notice.id)
            .await?;
        Ok(Delivered {
            kept,
            seq: Some(seq),
        })
    }

    /// After `record` was recorded for the first time: a "match result" notice for each
    /// of its players who has no feed open now (one per player and match). Whatever fails
    /// here is logged: the match stands.
    pub(super) async fn keep_match_results(&self, record: &MatchRecord, changes: &[RatingChange]) {
        let players: Vec<(u8, Uuid)> = record
            .seats
            .iter()
            .filter(|seat| !seat.is_bot)
            .filter_map(|seat| Some((seat.seat, seat.user_id?)))
            .collect();
        if players.is_empty() {
            return;
        }
        let ids: Vec<Uuid> = players.iter().map(|(_, user)| *user).collect();
        let online = match self.inner.social.store().presence(&ids).await {
            Ok(reported) => reported.into_iter().map(|r| r.online),
            Err(err) => {
                tracing::warn!(error = %err, match_id = %record.match_id, "no match result notices: presence unreadable");
                return;
            }
        };
        for ((seat, user), online) in players.into_iter().zip(online) {
            if online {
                continue;
            }
            let entry = HistoryEntry {
                match_id: record.match_id.clone(),
                room_id: record.room_id.clone(),
                ranked: record.ranked,
                settings: record.settings,
                seats: record.seats.clone(),
                your_seat: seat,
                winner_side: record.winner_side,
                end_reason: record.end_reason,
                final_totals: record.final_totals.clone(),
                rounds: record.rounds.len() as u32,
                your_rating_change: changes.iter().find(|c| c.user_id == user).cloned(),
                started_at: record.started_at,
                ended_at: record.ended_at,
            };
            let body = pb::notice::Body::MatchResult(super::profile::match_summary(entry));
            let key = format!("match:{}", record.match_id);
            match self.keep_notice(user, body, Some(key), None).await {
                // A seat of a deleted account: nobody to tell.
                Ok(_) | Err(AccountsError::UserNotFound) => {}
                Err(err) => {
                    tracing::warn!(error = %err, %user, match_id = %record.match_id, "a match result notice was not kept");
                }
            }
        }
    }
}
