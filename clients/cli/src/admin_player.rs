//! `basra admin player …`: moderation over accounts' `AccountsAdminService` (find, show,
//! export, ban, unban, rename, delete), calling with an operator token (`basra admin
//! token`). Every action but a search is written to accounts' audit table with the
//! operator and the reason.

use std::time::Duration;

use anyhow::Context as _;
use basra_proto::basra::accounts::v1::accounts_admin_service_client::AccountsAdminServiceClient;
use basra_proto::basra::accounts::v1::{
    BanPlayerRequest, BanPlayerResponse, DeletePlayerRequest, DeletePlayerResponse,
    ExportPlayerDataRequest, FindPlayersRequest, FoundPlayer, GetPlayerRequest, GetPlayerResponse,
    RenamePlayerRequest, RenamePlayerResponse, UnbanPlayerRequest,
};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use crate::admin::OperatorToken;

/// An AccountsAdmin client of accounts at `server`, calling with an operator token.
pub struct PlayerAdmin {
    client: AccountsAdminServiceClient<InterceptedService<Channel, OperatorToken>>,
}

impl PlayerAdmin {
    /// Connects to accounts at `server`.
    pub async fn connect(server: &str, token: &str) -> anyhow::Result<PlayerAdmin> {
        let channel = crate::tls::endpoint(server)?
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .await
            .with_context(|| format!("cannot reach {server}"))?;
        let token = format!("Bearer {token}")
            .parse()
            .context("the token is not valid ASCII")?;
        Ok(PlayerAdmin {
            client: AccountsAdminServiceClient::with_interceptor(
                channel,
                OperatorToken::new(token),
            ),
        })
    }

    /// The client, for the other moderation commands (`admin_report`).
    pub(crate) fn client(
        &self,
    ) -> AccountsAdminServiceClient<InterceptedService<Channel, OperatorToken>> {
        self.client.clone()
    }

    /// Bans `user_id` for `reason`, for `hours` (for good when `None`).
    pub async fn ban(
        &self,
        user_id: &str,
        reason: &str,
        hours: Option<u64>,
    ) -> anyhow::Result<BanPlayerResponse> {
        let expires_at = hours.map(|h| prost_types::Timestamp {
            seconds: chrono::Utc::now()
                .timestamp()
                .saturating_add(i64::try_from(h.saturating_mul(3600)).unwrap_or(i64::MAX)),
            nanos: 0,
        });
        Ok(self
            .client
            .clone()
            .ban_player(BanPlayerRequest {
                user_id: user_id.to_owned(),
                reason: reason.to_owned(),
                expires_at,
            })
            .await?
            .into_inner())
    }

    /// Lifts the ban of `user_id`.
    pub async fn unban(&self, user_id: &str, reason: &str) -> anyhow::Result<()> {
        self.client
            .clone()
            .unban_player(UnbanPlayerRequest {
                user_id: user_id.to_owned(),
                reason: reason.to_owned(),
            })
            .await?;
        Ok(())
    }

    /// Renames `user_id`.
    pub async fn rename(
        &self,
        user_id: &str,
        display_name: &str,
        reason: &str,
    ) -> anyhow::Result<RenamePlayerResponse> {
        Ok(self
            .client
            .clone()
            .rename_player(RenamePlayerRequest {
                user_id: user_id.to_owned(),
                display_name: display_name.to_owned(),
                reason: reason.to_owned(),
            })
            .await?
            .into_inner())
    }

    /// Deletes the account of `user_id`.
    pub async fn delete(
        &self,
        user_id: &str,
        reason: &str,
    ) -> anyhow::Result<DeletePlayerResponse> {
        Ok(self
            .client
            .clone()
            .delete_player(DeletePlayerRequest {
                user_id: user_id.to_owned(),
                reason: reason.to_owned(),
            })
            .await?
            .into_inner())
    }

    /// The players `query` finds (a user id, username, friend code or part of a display
    /// name), at most `limit` (0: the server's default).
    pub async fn find(&self, query: &str, limit: u32) -> anyhow::Result<Vec<FoundPlayer>> {
        Ok(self
            .client
            .clone()
            .find_players(FindPlayersRequest {
                query: query.to_owned(),
                limit,
            })
            .await?
            .into_inner()
            .players)
    }

    /// What moderation sees of `user_id` (audited as `show`).
    pub async fn show(&self, user_id: &str, reason: &str) -> anyhow::Result<GetPlayerResponse> {
        Ok(self
            .client
            .clone()
            .get_player(GetPlayerRequest {
                user_id: user_id.to_owned(),
                reason: reason.to_owned(),
            })
            .await?
            .into_inner())
    }

    /// Writes the export of `user_id`'s data (the JSON document ExportMyData gives the
    /// player) to `out`, on their behalf (audited as `export`); answers the bytes written.
    pub async fn export(
        &self,
        user_id: &str,
        reason: &str,
        out: &mut dyn std::io::Write,
    ) -> anyhow::Result<u64> {
        let mut stream = self
            .client
            .clone()
            .export_player_data(ExportPlayerDataRequest {
                user_id: user_id.to_owned(),
                reason: reason.to_owned(),
            })
            .await?
            .into_inner();
        let mut written = 0u64;
        while let Some(piece) = stream.message().await? {
            out.write_all(&piece.data)
                .context("cannot write the export")?;
            written += piece.data.len() as u64;
        }
        out.flush().context("cannot write the export")?;
        Ok(written)
    }
}

/// `show`'s answer as lines of text for an operator's terminal.
pub fn describe(player: &GetPlayerResponse) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let at = |t: &Option<prost_types::Timestamp>| {
        t.as_ref()
            .and_then(|t| chrono::DateTime::from_timestamp(t.seconds, 0))
            .map_or_else(|| "-".to_owned(), |t| t.to_rfc3339())
    };
    if let Some(p) = &player.profile {
        let _ = writeln!(
            text,
            "{} {:?} username {:?} guest {} friend code {}",
            p.user_id, p.display_name, p.username, p.is_guest, p.friend_code
        );
        let _ = writeln!(
            text,
            "rating {:.0} ± {:.0}, {} matches ({} ranked, {} won, {} lost), joined {}",
            p.rating,
            p.rating_deviation,
            p.matches_played,
            p.ranked_matches,
            p.wins,
            p.losses,
            at(&p.created_at)
        );
    }
    match &player.ban {
        Some(ban) => {
            let _ = writeln!(text, "BANNED until {}: {}", at(&ban.until), ban.reason);
        }
        None => {
            let _ = writeln!(text, "not banned");
        }
    }
    let _ = writeln!(
        text,
        "friends {}, requests in {} out {}, blocking {}, devices {}, providers [{}]",
        player.friends,
        player.incoming_requests,
        player.outgoing_requests,
        player.blocked,
        player.devices,
        player.providers.join(", ")
    );
    let active = player.sessions.iter().filter(|s| s.active).count();
    let _ = writeln!(
        text,
        "sign-ins {} ({} active)",
        player.sessions.len(),
        active
    );
    for m in &player.recent_matches {
        let _ = writeln!(
            text,
            "  match {} ended {} ranked {} totals {:?}",
            m.match_id,
            at(&m.ended_at),
            m.ranked,
            m.final_totals
        );
    }
    for a in &player.audit {
        let _ = writeln!(
            text,
            "  audit {} {} by {}: {} {}",
            at(&a.at),
            a.action,
            if a.operator_name.is_empty() {
                a.operator_id.as_str()
            } else {
                a.operator_name.as_str()
            },
            a.reason,
            a.detail
        );
    }
    text
}
