//! Helpers shared by the test crates: match records to store, and a running
//! service on 127.0.0.1:0 with real tonic clients.
#![allow(dead_code)] // Not every helper is used by every build of the suites.

use std::net::SocketAddr;
use std::time::Duration;

use accounts::store::{Counts, Store};
use accounts::{AccountsApi, Settings};
use basra_platform::auth::{Caller, Role, SigningKey, TokenIssuer};
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::accounts::v1::accounts_internal_service_client::AccountsInternalServiceClient;
use basra_proto::basra::accounts::v1::accounts_service_client::AccountsServiceClient;
use basra_records::{BasraCounts, EndReason, MatchRecord, SeatRecord, side_of};
use chrono::{DateTime, TimeZone, Utc};
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use uuid::Uuid;

pub(crate) use basra_testkit::{authed, private_pem};

/// A fixed time, so records compare equal across stores.
pub(crate) fn at(minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, 12, 0, 0).unwrap() + chrono::Duration::minutes(minute.into())
}

/// A finished 2-seat match between `a` (seat 0) and `b` (seat 1).
pub(crate) fn duel(
    match_id: &str,
    a: Uuid,
    b: Uuid,
    winner: u8,
    ranked: bool,
    ended: u32,
) -> MatchRecord {
    record(match_id, &[Some(a), Some(b)], Some(winner), ranked, ended)
}

/// A finished match with these seats (`None` = a bot).
pub(crate) fn record(
    match_id: &str,
    seats: &[Option<Uuid>],
    winner: Option<u8>,
    ranked: bool,
    ended: u32,
) -> MatchRecord {
    let settings = basra_engine::Settings {
        seats: if seats.len() == 4 {
            basra_engine::settings::Seats::Four
        } else {
            basra_engine::settings::Seats::Two
        },
        ..Default::default()
    };
    MatchRecord {
        match_id: match_id.to_owned(),
        room_id: format!("room-{match_id}"),
        ranked,
        settings,
        seats: seats
            .iter()
            .enumerate()
            .map(|(i, user)| SeatRecord {
                seat: i as u8,
                side: side_of(i as u8),
                user_id: *user,
                is_bot: user.is_none(),
                display_name: match user {
                    Some(_) => format!("player {i}"),
                    None => format!("bot {i}"),
                },
                fill: None,
                queue_wait_ms: None,
            })
            .collect(),
        seed: [7; 32],
        actions: Vec::new(),
        rounds: Vec::new(),
        final_totals: vec![
            if winner == Some(0) { 101 } else { 40 },
            if winner == Some(1) { 101 } else { 40 },
        ],
        basra_counts: vec![
            BasraCounts {
                basra: 2,
                jack: 1,
                komi: 0,
            },
            BasraCounts {
                basra: 1,
                jack: 0,
                komi: 1,
            },
        ],
        winner_side: winner,
        end_reason: if winner.is_some() {
            EndReason::TargetReached
        } else {
            EndReason::Closed
        },
        started_at: at(ended.saturating_sub(20)),
        ended_at: at(ended),
    }
}

/// The key id of test keys.
pub(crate) const KID: &str = "test-key";

/// The service under test, served on 127.0.0.1:0 until dropped.
pub(crate) struct TestApp<S> {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The service (for its store).
    pub service: AccountsApi<S>,
    /// The signing key (PKCS#8 PEM, kid [`KID`]), for forging tokens.
    pub key_pem: String,
    /// Issuer and audience.
    pub settings: Settings,
    /// Signs `service` tokens with a key of their own, trusted for that role only (as
    /// game-session's and matchmaking's keys are in production).
    pub service_issuer: TokenIssuer,
    /// Signs `operator` tokens with a key trusted for that role only.
    pub operator_issuer: TokenIssuer,
    shutdown: CancellationToken,
}

impl<S> Drop for TestApp<S> {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Settings for tests: cheap argon2 (debug builds are slow), a leaderboard
/// listing anyone with one ranked match, plus `env` overrides.
pub(crate) fn test_settings(env: &[(&str, &str)]) -> Settings {
    let mut vars = vec![
        ("BASRA_PASSWORDS__MEMORY_KIB", "1024"),
        ("BASRA_PASSWORDS__ITERATIONS", "1"),
        ("BASRA_LEADERBOARD__MIN_RANKED_MATCHES", "1"),
    ];
    vars.extend_from_slice(env);
    Settings::from_env(vars.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())))
        .expect("test settings")
}

/// Starts the service on `store` with [`test_settings`]`(env)`.
pub(crate) async fn spawn_app_with<S: Store>(store: S, env: &[(&str, &str)]) -> TestApp<S> {
    spawn_app_on(store, test_settings(env)).await
}

/// Starts the service on `store` with `settings` (its server limits, a 1 s drain).
pub(crate) async fn spawn_app_on<S: Store>(store: S, settings: Settings) -> TestApp<S> {
    spawn_app_social(store, settings, None).await
}

/// Starts the service on `store` with `settings`, and presence and notes in `social`
/// (this process's memory when `None`).
pub(crate) async fn spawn_app_social<S: Store>(
    store: S,
    settings: Settings,
    social: Option<accounts::service::Social>,
) -> TestApp<S> {
    let key_pem = private_pem();
    let key = SigningKey::from_pem(KID, &key_pem).unwrap();
    let mut config = accounts::service_config(&settings, key).unwrap();
    // A service key and an operator key, each trusted for its role alone.
    let mut role_issuer = |role: Role| {
        let issuer = TokenIssuer::new(
            SigningKey::generate(),
            &settings.auth.issuer,
            &settings.auth.audience,
        );
        config.trusted_keys.push(basra_platform::auth::TrustedKey {
            kid: issuer.kid().to_owned(),
            public_pem: issuer.public_pem().to_owned(),
            roles: vec![role],
        });
        issuer
    };
    let service_issuer = role_issuer(Role::Service);
    let operator_issuer = role_issuer(Role::Operator);
    let service = match social {
        Some(social) => AccountsApi::with_social(store, social, config),
        None => AccountsApi::new(store, config),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    tokio::spawn(accounts::serve(
        listener,
        service.clone(),
        shutdown.clone(),
        basra_platform::ServeOptions {
            limits: settings.server.limits.clone(),
            ..basra_platform::ServeOptions::with_drain(Duration::from_secs(1))
        },
    ));
    TestApp {
        addr,
        service,
        key_pem,
        settings,
        service_issuer,
        operator_issuer,
        shutdown,
    }
}

/// Starts the service on `store` with the test settings.
pub(crate) async fn spawn_app<S: Store>(store: S) -> TestApp<S> {
    spawn_app_with(store, &[]).await
}

impl<S: Store> TestApp<S> {
    /// A channel to the service.
    pub(crate) async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.addr))
            .unwrap()
            .connect()
            .await
            .expect("connect to the service")
    }

    /// A client of the service: `AccountsService`'s calls, and the internal ones
    /// (`AccountsInternalService`) on the same connection.
    pub(crate) async fn client(&self) -> TestClient {
        let channel = self.channel().await;
        TestClient {
            public: AccountsServiceClient::new(channel.clone()),
            internal: AccountsInternalServiceClient::new(channel),
        }
    }

    /// A service token (role service), as game-session would hold.
    pub(crate) fn service_token(&self) -> String {
        accounts::issue_service_token(
            &self.service_issuer,
            Uuid::now_v7(),
            Duration::from_secs(300),
        )
        .unwrap()
        .token
    }

    /// A token of `role` for `user_id`, signed with the key trusted for that role:
    /// accounts' own for players, the service or the operator key otherwise.
    pub(crate) fn token(&self, user_id: Uuid, role: Role, guest: bool) -> String {
        let issuer = match role {
            Role::Player => self.service.issuer(),
            Role::Service => &self.service_issuer,
            Role::Operator => &self.operator_issuer,
        };
        let caller = Caller {
            user_id,
            role,
            guest,
        };
        issuer
            .issue(&caller, Duration::from_secs(300))
            .unwrap()
            .token
    }

    /// An issuer with another key but the same kid, issuer and audience.
    pub(crate) fn foreign_issuer(&self) -> TokenIssuer {
        TokenIssuer::new(
            SigningKey::from_pem(KID, &private_pem()).unwrap(),
            &self.settings.auth.issuer,
            &self.settings.auth.audience,
        )
    }

    /// Row counts of the store.
    pub(crate) async fn counts(&self) -> Counts {
        self.service.store().counts().await.unwrap()
    }
}

/// The tokens of a sign-in response.
pub(crate) fn tokens(t: Option<pb::AuthTokens>) -> pb::AuthTokens {
    t.expect("the response carries tokens")
}

/// Both of accounts' gRPC clients on one connection, so a test calls a player's RPC and a
/// service's RPC on the same value: `AccountsService`'s methods through `Deref`, the
/// internal ones below.
#[derive(Clone)]
pub(crate) struct TestClient {
    public: AccountsServiceClient<Channel>,
    internal: AccountsInternalServiceClient<Channel>,
}

impl std::ops::Deref for TestClient {
    type Target = AccountsServiceClient<Channel>;

    fn deref(&self) -> &Self::Target {
        &self.public
    }
}

impl std::ops::DerefMut for TestClient {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.public
    }
}

/// One `AccountsInternalService` call on [`TestClient`].
macro_rules! internal_call {
    ($name:ident, $request:ty, $response:ty) => {
        pub(crate) async fn $name(
            &mut self,
            request: impl tonic::IntoRequest<$request>,
        ) -> Result<tonic::Response<$response>, tonic::Status> {
            self.internal.$name(request).await
        }
    };
}

impl TestClient {
    internal_call!(
        record_match,
        pb::RecordMatchRequest,
        pb::RecordMatchResponse
    );
    internal_call!(
        record_matches,
        pb::RecordMatchesRequest,
        pb::RecordMatchesResponse
    );
    internal_call!(get_players, pb::GetPlayersRequest, pb::GetPlayersResponse);
    internal_call!(
        report_presence,
        pb::ReportPresenceRequest,
        pb::ReportPresenceResponse
    );
    internal_call!(send_invite, pb::SendInviteRequest, pb::SendInviteResponse);
}
