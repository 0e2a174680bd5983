//! `basra admin player …`: moderation over accounts' `AccountsAdminService` (ban, unban,
//! rename, delete), calling with an operator token (`basra admin token`). Every action
//! is written to accounts' audit table with the operator and the reason.

use std::time::Duration;

use anyhow::Context as _;
use basra_proto::basra::accounts::v1::accounts_admin_service_client::AccountsAdminServiceClient;
use basra_proto::basra::accounts::v1::{
    BanPlayerRequest, BanPlayerResponse, DeletePlayerRequest, DeletePlayerResponse,
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
}
