//! ExportMyData: everything the service holds about the caller, as one JSON document
//! streamed in pieces. The account part (the account, friends, inbox, push devices,
//! reports filed, seasons) is read before the stream is answered (a store that is down
//! is a status); the matches follow a page at a time with the analyses kept of the
//! caller's plays, so a player with thousands of matches never sits whole in memory. The
//! JSON form of each part is `parts.rs`'s.

mod parts;

use std::pin::Pin;

use basra_platform::auth::{Caller, Role};
use basra_proto::basra::accounts::v1 as pb;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tonic::Status;
use uuid::Uuid;

use self::parts::{client, filed_report, friend, notice, played, push_device, seasons, time};
use super::AccountsApi;
use crate::error::{AccountsError, Result};
use crate::inbox::{self, NoticePage};
use crate::store::{HistoryCursor, Store};

/// The most bytes of the document in one message.
pub const EXPORT_CHUNK_BYTES: usize = 64 * 1024;
/// Matches read from the store at a time.
const MATCH_PAGE: u32 = 100;
/// The `format` of the document.
pub const EXPORT_FORMAT: &str = "basra-account-export/1";

/// The stream ExportMyData answers.
pub(super) type ExportStream =
    Pin<Box<dyn tokio_stream::Stream<Item = Result<pb::ExportMyDataResponse, Status>> + Send>>;

/// Cuts the document into messages of at most [`EXPORT_CHUNK_BYTES`].
struct Chunker {
    tx: mpsc::Sender<Result<pb::ExportMyDataResponse, Status>>,
    buffer: Vec<u8>,
}

impl Chunker {
    /// Adds `bytes`; sends full pieces. `false` when the client went away.
    async fn write(&mut self, bytes: &[u8]) -> bool {
        self.buffer.extend_from_slice(bytes);
        while self.buffer.len() >= EXPORT_CHUNK_BYTES {
            let rest = self.buffer.split_off(EXPORT_CHUNK_BYTES);
            let piece = std::mem::replace(&mut self.buffer, rest);
            if !self.send(piece).await {
                return false;
            }
        }
        true
    }

    async fn send(&self, data: Vec<u8>) -> bool {
        self.tx
            .send(Ok(pb::ExportMyDataResponse { data }))
            .await
            .is_ok()
    }

    async fn finish(mut self) {
        let last = std::mem::take(&mut self.buffer);
        if !last.is_empty() {
            self.send(last).await;
        }
    }
}

impl<S: Store> AccountsApi<S> {
    pub(super) async fn do_export_my_data(
        &self,
        caller: Caller,
        _req: pb::ExportMyDataRequest,
    ) -> Result<ExportStream> {
        if caller.role != Role::Player {
            return Err(AccountsError::PermissionDenied(
                "only a player may export their own data",
            ));
        }
        self.export_stream(caller.user_id).await
    }

    /// The export of `user_id`'s data (the player's own, or an operator's on their
    /// behalf): the account part read now, the matches streamed.
    pub(super) async fn export_stream(&self, user_id: Uuid) -> Result<ExportStream> {
        let head = self.export_head(user_id).await?;
        let (tx, rx) = mpsc::channel(4);
        let api = self.clone();
        tokio::spawn(async move {
            let mut out = Chunker {
                tx: tx.clone(),
                buffer: Vec::new(),
            };
            if let Err(err) = api.export_body(user_id, head, &mut out).await {
                let _ = tx.send(Err(Status::from(err))).await;
                return;
            }
            out.finish().await;
        });
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    /// The document up to the matches: `{"format": …, "account": …, "friends": …,
    /// "inbox": …, "push_devices": …, "reports_filed": …, "seasons": …`.
    pub(super) async fn export_head(&self, user_id: Uuid) -> Result<String> {
        let store = &self.inner.store;
        let profile = store
            .profile(user_id, self.inner.config.leaderboard)
            .await?
            .ok_or(AccountsError::UserNotFound)?;
        let code = store.friend_code(user_id).await?;
        let records = store.account_records(user_id).await?;
        let list = store.friend_list(user_id).await?;
        let providers = store.linked_providers(user_id).await?;
        let clients = store.sign_in_clients(user_id).await?;
        let user = &profile.user;
        let account = json!({
            "user_id": user.id,
            "username": user.username,
            "display_name": user.display_name,
            "is_guest": user.is_guest,
            "created_at": time(user.created_at),
            "friend_code": code.map(|c| c.to_string()),
            "rating": {
                "rating": profile.rating.rating,
                "deviation": profile.rating.deviation,
                "volatility": profile.rating.volatility,
                "ranked_matches": profile.ranked_matches,
            },
            "statistics": {
                "matches_played": profile.matches_played,
                "wins": profile.wins,
                "losses": profile.losses,
                "basras": profile.basras,
            },
            "password_set_at": records.password_updated_at.map(time),
            "devices": records.devices.iter().map(|(device, at)| json!({
                "device_id": device,
                "bound_at": time(*at),
            })).collect::<Vec<_>>(),
            "sessions": records.sessions.iter().map(|t| json!({
                "sign_in": t.family_id,
                "issued_at": time(t.issued_at),
                "expires_at": time(t.expires_at),
                "used_at": t.used_at.map(time),
                "revoked_at": t.revoked_at.map(time),
            })).collect::<Vec<_>>(),
            "display_name_changes": records.name_changes.iter().map(|t| time(*t)).collect::<Vec<_>>(),
            "sign_in_providers": providers.iter().map(|p| json!({
                "provider": p.identity.provider.as_str(),
                "subject": p.identity.subject,
                "linked_at": time(p.linked_at),
            })).collect::<Vec<_>>(),
            "sign_in_clients": clients.iter().map(|(c, at)| {
                let mut entry = client(c);
                entry["signed_in_at"] = json!(time(*at));
                entry
            }).collect::<Vec<_>>(),
        });
        let friends = json!({
            "friends": list.friends.iter().map(friend).collect::<Vec<_>>(),
            "incoming_requests": list.incoming.iter().map(friend).collect::<Vec<_>>(),
            "outgoing_requests": list.outgoing.iter().map(friend).collect::<Vec<_>>(),
            "blocked": list.blocked.iter().map(friend).collect::<Vec<_>>(),
        });
        let inbox = self.export_inbox(user_id).await?;
        let devices = store.push_devices(user_id).await?;
        let reports = store.reports_by(user_id).await?;
        let seasons = self
            .export_seasons(user_id, &self.inner.config.calendar, profile.season_matches)
            .await?;
        Ok(format!(
            "{{\"format\":{},\"exported_at\":{},\"account\":{account},\"friends\":{friends},\
             \"inbox\":{inbox},\"push_devices\":{},\"reports_filed\":{},\"seasons\":{seasons}",
            json!(EXPORT_FORMAT),
            json!(time(crate::domain::now())),
            Value::Array(devices.iter().map(push_device).collect()),
            Value::Array(reports.iter().map(filed_report).collect()),
        ))
    }

    /// Every notice of the caller's inbox not expired, newest first, names shown as
    /// ListNotices shows them; and how many are unread.
    async fn export_inbox(&self, user_id: Uuid) -> Result<Value> {
        let store = &self.inner.store;
        let now = crate::domain::now();
        let mut kept = Vec::new();
        let mut before = None;
        loop {
            let page = NoticePage {
                before,
                unread_only: false,
                limit: inbox::MAX_IDS as u32,
            };
            let notices = store.notices(user_id, page, now).await?;
            let full = notices.len() == inbox::MAX_IDS;
            before = notices.last().map(|n| n.id);
            kept.extend(notices.iter().map(|n| n.to_proto()));
            if !full {
                break;
            }
        }
        let kept = self.shown(Some(user_id), kept).await?;
        Ok(json!({
            "unread": store.unread_notices(user_id, now).await?.count,
            "notices": kept.iter().map(notice).collect::<Vec<_>>(),
        }))
    }

    /// The caller's seasons: every finished season closed first (as GetProfile does), so
    /// that each one's rating is in the archive.
    async fn export_seasons(
        &self,
        user_id: Uuid,
        calendar: &crate::seasons::Calendar,
        current_matches: u32,
    ) -> Result<Value> {
        self.close_finished_seasons().await?;
        let store = &self.inner.store;
        let archived = store.season_ratings(user_id).await?;
        let finishes = store
            .season_finishes(user_id, self.inner.config.leaderboard)
            .await?;
        let current = calendar.id_at(crate::domain::now());
        Ok(seasons(
            calendar,
            current,
            current_matches,
            &archived,
            &finishes,
        ))
    }

    /// Writes `head`, the matches a page at a time (each with the analysis kept of the
    /// caller's plays) and the rating history.
    async fn export_body(&self, user_id: Uuid, head: String, out: &mut Chunker) -> Result<()> {
        if !out.write(head.as_bytes()).await || !out.write(b",\"matches\":[").await {
            return Ok(());
        }
        let mut after: Option<HistoryCursor> = None;
        let mut first = true;
        // Newest first in `matches`; the rating history is written oldest first.
        let mut ratings: Vec<Value> = Vec::new();
        loop {
            let store = &self.inner.store;
            let page = store
                .played_matches(user_id, after.clone(), MATCH_PAGE)
                .await?;
            let seats: Vec<(String, u8)> = page
                .iter()
                .map(|m| (m.record.match_id.clone(), m.your_seat))
                .collect();
            let analyses = store.kept_analyses(&seats).await?;
            let marks = &self.inner.config.analyst.thresholds;
            for m in &page {
                let mut bytes = if first { Vec::new() } else { vec![b','] };
                first = false;
                let analysis = analyses
                    .iter()
                    .find(|a| a.match_id == m.record.match_id && a.seat == m.your_seat);
                serde_json::to_writer(&mut bytes, &played(m, analysis, marks))
                    .map_err(|e| AccountsError::Internal(format!("export: {e}")))?;
                if !out.write(&bytes).await {
                    return Ok(());
                }
                if let Some(change) = m.rating_change {
                    ratings.push(json!({
                        "match_id": m.record.match_id,
                        "ended_at": time(m.record.ended_at),
                        "rating_before": change.rating_before,
                        "rating_after": change.rating_after,
                        "deviation_after": change.deviation_after,
                    }));
                }
            }
            match page.last() {
                Some(last) if page.len() == MATCH_PAGE as usize => after = Some(last.cursor()),
                _ => break,
            }
        }
        ratings.reverse();
        let tail = format!("],\"rating_history\":{}}}", Value::Array(ratings));
        out.write(tail.as_bytes()).await;
        Ok(())
    }
}
