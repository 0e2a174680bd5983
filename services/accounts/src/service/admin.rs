//! AccountsAdminService: moderation for operators (operator role only, as
//! `GameAdminService`). Each action is written to the audit table after it took effect:
//! a ban goes to the revoked list every service reads (`basra_platform::revocation`),
//! so the player's calls are refused and their streams end within a second or so.
//!
//! A ban lives in that list (Redis, kept with its AOF); the audit table says who banned
//! whom, when and why.

use basra_platform::auth::{self, Role};
use basra_platform::revocation::{RevokeKind, Revoked};
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::accounts::v1::accounts_admin_service_server::{
    AccountsAdminService, AccountsAdminServiceServer,
};
use basra_records::wire::timestamp_to_proto;
use chrono::{DateTime, Utc};
use tonic::{Request, Response, Status};
use uuid::Uuid;

use super::AccountsApi;
use crate::domain::{self, DisplayName};
use crate::error::{AccountsError, Result};
use crate::names::{NameChange, NameChangeLimit};
use crate::store::{AuditEntry, Store};

/// The longest reason accepted.
pub const MAX_REASON_CHARS: usize = 500;

/// The end of a ban for good.
fn forever() -> DateTime<Utc> {
    DateTime::from_timestamp(253_402_300_799, 0).expect("9999-12-31T23:59:59Z")
}

/// Who acts: an operator's token's subject and the name it gives (empty for tokens
/// minted before names).
#[derive(Debug, Clone)]
pub(super) struct Operator {
    id: Uuid,
    name: String,
}

/// The operator service over the same state as [`AccountsApi`].
#[derive(Debug, Clone)]
pub struct AccountsAdmin<S> {
    api: AccountsApi<S>,
}

impl<S: Store> AccountsAdmin<S> {
    /// Moderation of `api`'s players.
    pub fn new(api: AccountsApi<S>) -> AccountsAdmin<S> {
        AccountsAdmin { api }
    }

    /// The tonic server wrapping it.
    pub fn into_server(self) -> AccountsAdminServiceServer<AccountsAdmin<S>> {
        AccountsAdminServiceServer::new(self)
    }

    /// The accounts service it moderates.
    pub(super) fn api(&self) -> &AccountsApi<S> {
        &self.api
    }

    pub(super) fn operator<T>(request: &Request<T>) -> Result<Operator, Status> {
        let caller = auth::caller(request)?;
        auth::require_role(&caller, Role::Operator)?;
        Ok(Operator {
            id: caller.user_id,
            name: auth::operator_name(request).unwrap_or_default(),
        })
    }

    /// The player named by `raw`, who must exist.
    pub(super) async fn target(&self, raw: &str) -> Result<Uuid> {
        let id = Uuid::parse_str(raw)
            .map_err(|_| AccountsError::invalid("user_id", "is not a user id"))?;
        self.api
            .inner
            .store
            .user(id)
            .await?
            .ok_or(AccountsError::UserNotFound)?;
        Ok(id)
    }

    pub(super) async fn record(
        &self,
        operator: &Operator,
        action: &str,
        target: Uuid,
        reason: &str,
        detail: String,
    ) -> Result<()> {
        tracing::info!(operator = %operator.id, operator_name = operator.name, action, %target, reason, "admin action");
        self.api
            .inner
            .store
            .audit(AuditEntry {
                at: domain::now(),
                operator_id: operator.id,
                operator_name: operator.name.clone(),
                action: action.to_owned(),
                target_id: target,
                reason: reason.to_owned(),
                detail,
            })
            .await
    }

    pub(super) async fn ban(
        &self,
        operator: Operator,
        req: pb::BanPlayerRequest,
    ) -> Result<pb::BanPlayerResponse> {
        let reason = check_reason(&req.reason)?;
        let until = match req.expires_at {
            None => forever(),
            Some(at) => DateTime::from_timestamp(at.seconds, u32::try_from(at.nanos).unwrap_or(0))
                .filter(|at| *at > Utc::now())
                .ok_or_else(|| AccountsError::invalid("expires_at", "must be in the future"))?,
        };
        let target = self.target(&req.user_id).await?;
        let revoked = Revoked {
            kind: RevokeKind::Banned {
                reason: reason.to_owned(),
            },
            until,
        };
        self.api
            .inner
            .social
            .revocations()
            .revoke(target, revoked)
            .await
            .map_err(|e| AccountsError::SocialUnavailable(e.to_string()))?;
        self.record(&operator, "ban", target, reason, until.to_rfc3339())
            .await?;
        Ok(pb::BanPlayerResponse {
            until: Some(timestamp_to_proto(until)),
        })
    }

    async fn unban(
        &self,
        operator: Operator,
        req: pb::UnbanPlayerRequest,
    ) -> Result<pb::UnbanPlayerResponse> {
        let reason = check_reason(&req.reason)?;
        let target = self.target(&req.user_id).await?;
        self.api
            .inner
            .social
            .revocations()
            .restore(target)
            .await
            .map_err(|e| AccountsError::SocialUnavailable(e.to_string()))?;
        self.record(&operator, "unban", target, reason, String::new())
            .await?;
        Ok(pb::UnbanPlayerResponse {})
    }

    pub(super) async fn rename(
        &self,
        operator: Operator,
        req: pb::RenamePlayerRequest,
    ) -> Result<pb::RenamePlayerResponse> {
        let reason = check_reason(&req.reason)?;
        let name = DisplayName::parse(&req.display_name)?;
        let target = self.target(&req.user_id).await?;
        // An operator's rename is not limited: no rolling window to count in.
        let unlimited = NameChangeLimit {
            max_changes: u32::MAX,
            window: std::time::Duration::from_secs(1),
        };
        match self
            .api
            .inner
            .store
            .set_display_name(target, &name, unlimited, domain::now())
            .await?
        {
            NameChange::Done { .. } => {}
            NameChange::Limited { .. } => {
                return Err(AccountsError::Internal(
                    "an unlimited rename was limited".into(),
                ));
            }
        }
        self.record(
            &operator,
            "rename",
            target,
            reason,
            name.as_str().to_owned(),
        )
        .await?;
        Ok(pb::RenamePlayerResponse {
            display_name: name.as_str().to_owned(),
        })
    }

    async fn delete(
        &self,
        operator: Operator,
        req: pb::DeletePlayerRequest,
    ) -> Result<pb::DeletePlayerResponse> {
        let reason = check_reason(&req.reason)?;
        let target = self.target(&req.user_id).await?;
        let deleted = self.api.delete(target).await?;
        self.record(&operator, "delete", target, reason, String::new())
            .await?;
        Ok(pb::DeletePlayerResponse {
            matches_kept: u32::try_from(deleted.matches).unwrap_or(u32::MAX),
        })
    }
}

pub(super) fn check_reason(raw: &str) -> Result<&str> {
    let reason = raw.trim();
    if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
        return Err(AccountsError::invalid(
            "reason",
            format!("say why in 1..{MAX_REASON_CHARS} characters (the audit keeps it)"),
        ));
    }
    Ok(reason)
}

#[tonic::async_trait]
impl<S: Store> AccountsAdminService for AccountsAdmin<S> {
    #[tracing::instrument(skip_all)]
    async fn ban_player(
        &self,
        request: Request<pb::BanPlayerRequest>,
    ) -> Result<Response<pb::BanPlayerResponse>, Status> {
        let operator = Self::operator(&request)?;
        Ok(Response::new(
            self.ban(operator, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all)]
    async fn unban_player(
        &self,
        request: Request<pb::UnbanPlayerRequest>,
    ) -> Result<Response<pb::UnbanPlayerResponse>, Status> {
        let operator = Self::operator(&request)?;
        Ok(Response::new(
            self.unban(operator, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all)]
    async fn rename_player(
        &self,
        request: Request<pb::RenamePlayerRequest>,
    ) -> Result<Response<pb::RenamePlayerResponse>, Status> {
        let operator = Self::operator(&request)?;
        Ok(Response::new(
            self.rename(operator, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all)]
    async fn delete_player(
        &self,
        request: Request<pb::DeletePlayerRequest>,
    ) -> Result<Response<pb::DeletePlayerResponse>, Status> {
        let operator = Self::operator(&request)?;
        Ok(Response::new(
            self.delete(operator, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all)]
    async fn find_players(
        &self,
        request: Request<pb::FindPlayersRequest>,
    ) -> Result<Response<pb::FindPlayersResponse>, Status> {
        Self::operator(&request)?;
        Ok(Response::new(self.find(request.into_inner()).await?))
    }

    #[tracing::instrument(skip_all)]
    async fn get_player(
        &self,
        request: Request<pb::GetPlayerRequest>,
    ) -> Result<Response<pb::GetPlayerResponse>, Status> {
        let operator = Self::operator(&request)?;
        Ok(Response::new(
            self.show(operator, request.into_inner()).await?,
        ))
    }

    type ExportPlayerDataStream = super::admin_lookup::AdminExportStream;

    #[tracing::instrument(skip_all)]
    async fn export_player_data(
        &self,
        request: Request<pb::ExportPlayerDataRequest>,
    ) -> Result<Response<Self::ExportPlayerDataStream>, Status> {
        let operator = Self::operator(&request)?;
        Ok(Response::new(
            self.export(operator, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all)]
    async fn list_reports(
        &self,
        request: Request<pb::ListReportsRequest>,
    ) -> Result<Response<pb::ListReportsResponse>, Status> {
        Self::operator(&request)?;
        Ok(Response::new(
            self.open_reports(request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all)]
    async fn get_reports(
        &self,
        request: Request<pb::GetReportsRequest>,
    ) -> Result<Response<pb::GetReportsResponse>, Status> {
        let operator = Self::operator(&request)?;
        Ok(Response::new(
            self.show_reports(operator, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all)]
    async fn resolve_reports(
        &self,
        request: Request<pb::ResolveReportsRequest>,
    ) -> Result<Response<pb::ResolveReportsResponse>, Status> {
        let operator = Self::operator(&request)?;
        Ok(Response::new(
            self.resolve(operator, request.into_inner()).await?,
        ))
    }
}
