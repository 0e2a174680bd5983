//! Players' display names, from accounts (`Accounts/GetPlayers` with the service token).
//!
//! A room learns its players' names when they are seated and keeps them in its state, so
//! views, events and the match record show them without asking again. Without accounts
//! (tests, or accounts unreachable at that moment) a seat keeps an empty name and is shown
//! as "Player N": the game goes on, only the name is missing.

use std::collections::HashMap;
use std::time::Duration;

use basra_proto::basra::accounts::v1::{
    GetPlayersRequest, accounts_internal_service_client::AccountsInternalServiceClient,
};

use crate::outbox::AccountsLink;

/// How long seating a player waits for names before going on without them.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);

/// The display names of `user_ids` that accounts knows (user id → name).
pub async fn display_names(
    link: Option<&AccountsLink>,
    user_ids: &[String],
) -> HashMap<String, String> {
    let Some(link) = link else {
        return HashMap::new();
    };
    if user_ids.is_empty() {
        return HashMap::new();
    }
    let mut request = tonic::Request::new(GetPlayersRequest {
        user_ids: user_ids.to_vec(),
        include_blocks: false,
    });
    request.set_timeout(LOOKUP_TIMEOUT);
    if let Some(token) = link.credentials.token()
        && let Ok(value) = format!("Bearer {token}").parse()
    {
        request.metadata_mut().insert("authorization", value);
    }
    let mut client =
        AccountsInternalServiceClient::new(basra_platform::telemetry::traced(link.channel.clone()));
    match tokio::time::timeout(LOOKUP_TIMEOUT, client.get_players(request)).await {
        Ok(Ok(response)) => response
            .into_inner()
            .players
            .into_iter()
            .map(|p| (p.user_id, p.display_name))
            .collect(),
        Ok(Err(status)) => {
            tracing::warn!(error = %status, "cannot look players' names up; seats go unnamed");
            HashMap::new()
        }
        Err(_) => {
            tracing::warn!("accounts did not give players' names in time; seats go unnamed");
            HashMap::new()
        }
    }
}
