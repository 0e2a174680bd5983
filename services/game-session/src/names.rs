//! What a room keeps of its players from accounts (`Accounts/GetPlayers` with the service
//! token): the display name and whether the account is a guest.
//!
//! A room learns them when its players are seated and keeps them in its state, so views,
//! events and the match record show them without asking again. Without accounts (tests,
//! or accounts unreachable at that moment) a seat keeps an empty name and is shown as
//! "Player N", and is not called a guest: the game goes on, only the facts are missing.

use std::collections::HashMap;
use std::time::Duration;

use basra_proto::basra::accounts::v1::{
    GetPlayersRequest, accounts_internal_service_client::AccountsInternalServiceClient,
};

use crate::outbox::AccountsLink;

/// How long seating a player waits for names before going on without them.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);

/// A player as accounts describes them when they are seated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownPlayer {
    /// The display name.
    pub name: String,
    /// Whether the account is a guest.
    pub guest: bool,
}

/// The players of `user_ids` that accounts knows (user id → name and guest flag).
pub async fn known_players(
    link: Option<&AccountsLink>,
    user_ids: &[String],
) -> HashMap<String, KnownPlayer> {
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
            .map(|p| {
                let player = KnownPlayer {
                    name: p.display_name,
                    guest: p.is_guest,
                };
                (p.user_id, player)
            })
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
