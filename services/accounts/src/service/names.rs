//! SetDisplayName: the name checked by [`DisplayName::parse`] (as everywhere a name is
//! set), then one store step that applies the rolling limit ([`crate::names`]).

use basra_platform::auth::{Caller, Role};
use basra_proto::basra::accounts::v1 as pb;
use basra_records::wire::timestamp_to_proto;

use super::AccountsApi;
use crate::domain::{self, DisplayName};
use crate::error::{AccountsError, Result};
use crate::names::NameChange;
use crate::store::Store;

impl<S: Store> AccountsApi<S> {
    pub(super) async fn do_set_display_name(
        &self,
        caller: Caller,
        req: pb::SetDisplayNameRequest,
    ) -> Result<pb::SetDisplayNameResponse> {
        if caller.role != Role::Player {
            return Err(AccountsError::PermissionDenied(
                "a display name belongs to a player: sign in as one, not with a service token",
            ));
        }
        let name = DisplayName::parse(&req.display_name)?;
        let outcome = self
            .inner
            .store
            .set_display_name(
                caller.user_id,
                &name,
                self.inner.config.name_changes,
                domain::now(),
            )
            .await?;
        match outcome {
            NameChange::Done {
                display_name,
                changed,
                changes_left,
                next_change_at,
            } => {
                if changed {
                    tracing::info!(user_id = %caller.user_id, "display name changed");
                }
                Ok(pb::SetDisplayNameResponse {
                    display_name,
                    changed,
                    changes_left,
                    next_change_at: next_change_at.map(timestamp_to_proto),
                })
            }
            NameChange::Limited { next_change_at } => {
                Err(AccountsError::NameChangesLimited { next_change_at })
            }
        }
    }
}
