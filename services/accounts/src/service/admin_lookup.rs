//! AccountsAdminService's lookups: FindPlayers (by id, username, friend code or part of a
//! display name), GetPlayer (what moderation needs to see of one player) and
//! ExportPlayerData (the player's ExportMyData document, on their behalf). Reading a
//! player and exporting are audited (`show`, `export`); a search names no one player and
//! is not.

use std::collections::HashMap;
use std::pin::Pin;

use basra_platform::auth::{Caller, Role};
use basra_platform::revocation::RevokeKind;
use basra_proto::basra::accounts::v1 as pb;
use basra_records::wire::timestamp_to_proto;
use tokio_stream::StreamExt as _;
use tonic::Status;
use uuid::Uuid;

use super::admin::{AccountsAdmin, MAX_REASON_CHARS, Operator};
use crate::error::{AccountsError, Result};
use crate::friends::FriendCode;
use crate::store::{Store, User};

/// The longest FindPlayers query.
pub const MAX_QUERY_CHARS: usize = 100;
/// FindPlayers' default and largest answers.
const FIND_DEFAULT: u32 = 20;
const FIND_MAX: u32 = 100;
/// GetPlayer's recent matches.
const RECENT_MATCHES: u32 = 10;

/// The stream ExportPlayerData answers.
pub(super) type AdminExportStream =
    Pin<Box<dyn tokio_stream::Stream<Item = Result<pb::ExportPlayerDataResponse, Status>> + Send>>;

fn found(user: User, matched_by: &str) -> pb::FoundPlayer {
    pb::FoundPlayer {
        user_id: user.id.to_string(),
        display_name: user.display_name,
        username: user.username.unwrap_or_default(),
        is_guest: user.is_guest,
        matched_by: matched_by.to_owned(),
    }
}

/// A reason that may be empty (GetPlayer), bounded.
pub(super) fn optional_reason(raw: &str) -> Result<&str> {
    let reason = raw.trim();
    if reason.chars().count() > MAX_REASON_CHARS {
        return Err(AccountsError::invalid(
            "reason",
            format!("at most {MAX_REASON_CHARS} characters"),
        ));
    }
    Ok(reason)
}

impl<S: Store> AccountsAdmin<S> {
    pub(super) async fn find(
        &self,
        req: pb::FindPlayersRequest,
    ) -> Result<pb::FindPlayersResponse> {
        let query = req.query.trim();
        if query.is_empty() || query.chars().count() > MAX_QUERY_CHARS {
            return Err(AccountsError::invalid(
                "query",
                format!("must be 1..{MAX_QUERY_CHARS} characters"),
            ));
        }
        let limit = match req.limit {
            0 => FIND_DEFAULT,
            n if n <= FIND_MAX => n,
            _ => {
                return Err(AccountsError::invalid(
                    "limit",
                    format!("at most {FIND_MAX}"),
                ));
            }
        };
        let store = &self.api().inner.store;
        let mut players: Vec<pb::FoundPlayer> = Vec::new();
        if let Ok(id) = Uuid::parse_str(query)
            && let Some(user) = store.user(id).await?
        {
            players.push(found(user, "user_id"));
        }
        if query.is_ascii()
            && let Some(user) = store.user_by_username(&query.to_ascii_lowercase()).await?
        {
            players.push(found(user, "username"));
        }
        if let Ok(code) = FriendCode::parse(query)
            && let Some(user) = store.user_by_friend_code(&code).await?
        {
            players.push(found(user, "friend_code"));
        }
        for user in store.find_by_display_name(query, limit).await? {
            if !players.iter().any(|p| p.user_id == user.id.to_string()) {
                players.push(found(user, "display_name"));
            }
        }
        players.truncate(limit as usize);
        Ok(pb::FindPlayersResponse { players })
    }

    pub(super) async fn show(
        &self,
        operator: Operator,
        req: pb::GetPlayerRequest,
    ) -> Result<pb::GetPlayerResponse> {
        let reason = optional_reason(&req.reason)?;
        let target = self.target(&req.user_id).await?;
        let api = self.api();
        let store = &api.inner.store;
        // The profile as the player sees their own (username and friend code).
        let own = Caller {
            user_id: target,
            role: Role::Player,
            guest: false,
        };
        let profile = api
            .do_get_profile(own, pb::GetProfileRequest::default())
            .await?
            .profile;
        let list = store.friend_list(target).await?;
        let recent = store
            .match_history(target, None, RECENT_MATCHES)
            .await?
            .into_iter()
            .map(super::profile::match_summary)
            .collect();
        let records = store.account_records(target).await?;
        let providers = store
            .linked_providers(target)
            .await?
            .into_iter()
            .map(|p| p.identity.provider.as_str().to_owned())
            .collect();
        let ban = api
            .inner
            .social
            .revocations()
            .check(target)
            .and_then(|r| match r.kind {
                RevokeKind::Banned { reason } => Some(pb::BanState {
                    reason,
                    until: Some(timestamp_to_proto(r.until)),
                }),
                RevokeKind::Deleted => None,
            });
        self.record(&operator, "show", target, reason, String::new())
            .await?;
        let audit = store
            .audit_of(target)
            .await?
            .into_iter()
            .map(audit_record)
            .collect();
        Ok(pb::GetPlayerResponse {
            profile,
            ban,
            friends: count(list.friends.len()),
            incoming_requests: count(list.incoming.len()),
            outgoing_requests: count(list.outgoing.len()),
            blocked: count(list.blocked.len()),
            recent_matches: recent,
            sessions: sessions(&records.sessions),
            devices: count(records.devices.len()),
            providers,
            audit,
        })
    }

    pub(super) async fn export(
        &self,
        operator: Operator,
        req: pb::ExportPlayerDataRequest,
    ) -> Result<AdminExportStream> {
        let reason = super::admin::check_reason(&req.reason)?;
        let target = self.target(&req.user_id).await?;
        // Audited before any byte leaves.
        self.record(&operator, "export", target, reason, String::new())
            .await?;
        let stream = self.api().export_stream(target).await?;
        Ok(Box::pin(stream.map(|piece| {
            piece.map(|p| pb::ExportPlayerDataResponse { data: p.data })
        })))
    }
}

/// An audit entry as the API shows it.
pub(super) fn audit_record(a: crate::store::AuditEntry) -> pb::AuditRecord {
    pb::AuditRecord {
        at: Some(timestamp_to_proto(a.at)),
        operator_id: a.operator_id.to_string(),
        operator_name: a.operator_name,
        action: a.action,
        reason: a.reason,
        detail: a.detail,
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The sign-ins (refresh token families) of a player's tokens, newest first.
fn sessions(tokens: &[crate::refresh::RefreshTokenRecord]) -> Vec<pb::SessionInfo> {
    let now = crate::domain::now();
    let mut families: HashMap<Uuid, Vec<&crate::refresh::RefreshTokenRecord>> = HashMap::new();
    for t in tokens {
        families.entry(t.family_id).or_default().push(t);
    }
    let mut out: Vec<(chrono::DateTime<chrono::Utc>, pb::SessionInfo)> = families
        .into_iter()
        .filter_map(|(family, tokens)| {
            let first = tokens.iter().map(|t| t.issued_at).min()?;
            let newest = tokens.iter().max_by_key(|t| t.issued_at)?;
            let active =
                newest.revoked_at.is_none() && newest.used_at.is_none() && newest.expires_at > now;
            Some((
                first,
                pb::SessionInfo {
                    sign_in_id: family.to_string(),
                    signed_in_at: Some(timestamp_to_proto(first)),
                    last_refreshed_at: Some(timestamp_to_proto(newest.issued_at)),
                    expires_at: Some(timestamp_to_proto(newest.expires_at)),
                    active,
                },
            ))
        })
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.0));
    out.into_iter().map(|(_, s)| s).collect()
}
