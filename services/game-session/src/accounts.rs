//! What game-session asks of accounts: the link ([`AccountsLink`]: the channel, the
//! service credentials, the outbox's retry delays), and what a room keeps of its players
//! (`Accounts/GetPlayers` with the service token): the display name and whether the
//! account is a guest ([`known_players`]).
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

use basra_platform::auth::ServiceCredentials;
use tonic::transport::{Channel, Endpoint};

/// The default longest retry delay: how long after accounts answers again the records
/// held at most wait (`accounts.retry_max_ms` in the settings).
pub const RETRY_MAX: Duration = Duration::from_secs(2);

/// Where and how to call RecordMatch.
#[derive(Clone)]
pub struct AccountsLink {
    /// The accounts channel (connects lazily).
    pub channel: Channel,
    /// The service token for each call.
    pub credentials: ServiceCredentials,
    /// First retry delay.
    pub retry_min: Duration,
    /// Longest retry delay.
    pub retry_max: Duration,
    /// How often to look for new records when idle.
    pub poll: Duration,
}

impl std::fmt::Debug for AccountsLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountsLink")
            .field("retry_min", &self.retry_min)
            .field("retry_max", &self.retry_max)
            .finish_non_exhaustive()
    }
}

impl AccountsLink {
    /// A link to `url` (connected lazily, so accounts may be down at start).
    pub fn new(url: &str, credentials: ServiceCredentials) -> Result<AccountsLink, String> {
        let channel = Endpoint::from_shared(url.to_owned())
            .map_err(|err| format!("accounts.url {url:?}: {err}"))?
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(10))
            .connect_lazy();
        Ok(AccountsLink {
            channel,
            credentials,
            retry_min: Duration::from_millis(200),
            retry_max: RETRY_MAX,
            poll: Duration::from_millis(200),
        })
    }
}

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

/// The most user ids accounts' `GetPlayers` takes in one call.
const LOOKUP_BATCH: usize = 100;

/// The players of `user_ids` that accounts knows (user id → name and guest flag): one
/// `GetPlayers` per 100 ids, all at once (CreateRooms seats a round's
/// players in a few calls). A call that fails or is late leaves its players out.
pub async fn known_players(
    link: Option<&AccountsLink>,
    user_ids: &[String],
) -> HashMap<String, KnownPlayer> {
    let Some(link) = link else {
        return HashMap::new();
    };
    if user_ids.len() <= LOOKUP_BATCH {
        return lookup(link, user_ids.to_vec()).await;
    }
    let mut calls = tokio::task::JoinSet::new();
    for ids in user_ids.chunks(LOOKUP_BATCH) {
        let (link, ids) = (link.clone(), ids.to_vec());
        calls.spawn(async move { lookup(&link, ids).await });
    }
    let mut known = HashMap::with_capacity(user_ids.len());
    while let Some(done) = calls.join_next().await {
        if let Ok(part) = done {
            known.extend(part);
        }
    }
    known
}

/// One `GetPlayers` of at most [`LOOKUP_BATCH`] ids.
async fn lookup(link: &AccountsLink, user_ids: Vec<String>) -> HashMap<String, KnownPlayer> {
    if user_ids.is_empty() {
        return HashMap::new();
    }
    let mut request = tonic::Request::new(GetPlayersRequest {
        user_ids,
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
