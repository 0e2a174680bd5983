//! ExportMyData: everything the service holds about the caller, as one JSON document
//! streamed in pieces. The account part is read before the stream is answered (a store
//! that is down is a status); the matches follow a page at a time, so a player with
//! thousands of matches never sits whole in memory.

use std::pin::Pin;

use basra_platform::auth::{Caller, Role};
use basra_platform::client_info::ClientInfo;
use basra_proto::basra::accounts::v1 as pb;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tonic::Status;
use uuid::Uuid;

use super::AccountsApi;
use crate::error::{AccountsError, Result};
use crate::friends::FriendEntry;
use crate::store::{HistoryCursor, PlayedMatch, Store};

/// The most bytes of the document in one message.
pub const EXPORT_CHUNK_BYTES: usize = 64 * 1024;
/// Matches read from the store at a time.
const MATCH_PAGE: u32 = 100;
/// The `format` of the document.
pub const EXPORT_FORMAT: &str = "basra-account-export/1";

/// The stream ExportMyData answers.
pub(super) type ExportStream =
    Pin<Box<dyn tokio_stream::Stream<Item = Result<pb::ExportMyDataResponse, Status>> + Send>>;

fn time(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

fn friend(entry: &FriendEntry) -> Value {
    json!({
        "user_id": entry.user_id,
        "display_name": entry.display_name,
        "is_guest": entry.is_guest,
        "since": time(entry.since),
    })
}

fn played(m: &PlayedMatch) -> Value {
    let r = &m.record;
    json!({
        "match_id": r.match_id,
        "room_id": r.room_id,
        "ranked": r.ranked,
        "settings": r.settings,
        "seats": r.seats,
        "your_seat": m.your_seat,
        "seed": r.seed.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        "actions": r.actions,
        "rounds": r.rounds,
        "final_totals": r.final_totals,
        "basra_counts": r.basra_counts,
        "winner_side": r.winner_side,
        "end_reason": r.end_reason.as_str(),
        "started_at": time(r.started_at),
        "ended_at": time(r.ended_at),
        "your_rating_change": m.rating_change.map(|c| json!({
            "rating_before": c.rating_before,
            "rating_after": c.rating_after,
            "deviation_after": c.deviation_after,
        })),
        "your_client": m.your_client.as_ref().map(client),
    })
}

fn client(c: &ClientInfo) -> Value {
    json!({ "platform": c.platform, "version": c.version })
}

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

    /// The document up to the matches: `{"format": …, "account": …, "friends": …`.
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
        Ok(format!(
            "{{\"format\":{},\"exported_at\":{},\"account\":{account},\"friends\":{friends}",
            json!(EXPORT_FORMAT),
            json!(time(crate::domain::now())),
        ))
    }

    /// Writes `head`, the matches a page at a time and the rating history.
    async fn export_body(&self, user_id: Uuid, head: String, out: &mut Chunker) -> Result<()> {
        if !out.write(head.as_bytes()).await || !out.write(b",\"matches\":[").await {
            return Ok(());
        }
        let mut after: Option<HistoryCursor> = None;
        let mut first = true;
        // Newest first in `matches`; the rating history is written oldest first.
        let mut ratings: Vec<Value> = Vec::new();
        loop {
            let page = self
                .inner
                .store
                .played_matches(user_id, after.clone(), MATCH_PAGE)
                .await?;
            for m in &page {
                let mut bytes = if first { Vec::new() } else { vec![b','] };
                first = false;
                serde_json::to_writer(&mut bytes, &played(m))
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
