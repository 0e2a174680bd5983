//! accounts' `spawn_app()`: the service on a store, served on a free port ([`TestApp`]).

use std::time::Duration;

use accounts::service::Social;
use accounts::store::{Counts, Store};
use accounts::{AccountsApi, Settings};
use basra_platform::auth::{Caller, Role, SigningKey, TokenIssuer, TrustedKey};
use tonic::transport::Channel;
use uuid::Uuid;

use super::AccountsClient;
use crate::{Served, private_pem};

/// The key id of the app's signing key (and of [`TestApp::foreign_issuer`]'s).
pub const KID: &str = "test-key";

/// Settings for tests: cheap argon2 (debug builds are slow), a leaderboard listing anyone
/// with one ranked match, then `env` (`BASRA_<SECTION>__<KEY>` pairs) over them.
pub fn test_settings(env: &[(&str, &str)]) -> Settings {
    let mut vars = vec![
        ("BASRA_PASSWORDS__MEMORY_KIB", "1024"),
        ("BASRA_PASSWORDS__ITERATIONS", "1"),
        ("BASRA_LEADERBOARD__MIN_RANKED_MATCHES", "1"),
    ];
    vars.extend_from_slice(env);
    Settings::from_env(vars.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())))
        .expect("test settings")
}

/// Starts accounts on `store` with [`test_settings`]: [`TestApp::builder`] for others.
pub async fn spawn_app<S: Store>(store: S) -> TestApp<S> {
    TestApp::builder(store).spawn().await
}

/// accounts under test on 127.0.0.1 and a free port, with what a test reaches it by:
/// clients, its store, tokens of every role. Dropped, the server stops (a PostgreSQL
/// store's database is `#[sqlx::test]`'s, dropped after the test).
pub struct TestApp<S> {
    server: Served,
    /// The service (its store, its metrics, its issuer).
    pub service: AccountsApi<S>,
    /// The signing key (PKCS#8 PEM, kid [`KID`]), for forging tokens.
    pub key_pem: String,
    /// The settings it runs with (issuer, audience, limits).
    pub settings: Settings,
    /// Signs `service` tokens with a key of their own, trusted for that role only (as
    /// game-session's and matchmaking's keys are in production).
    pub service_issuer: TokenIssuer,
    /// Signs `operator` tokens with a key trusted for that role only.
    pub operator_issuer: TokenIssuer,
}

/// How a [`TestApp`] starts: [`test_settings`] unless told otherwise, presence and notes
/// in this process's memory unless given a [`Social`].
#[must_use = "nothing starts until `spawn`"]
pub struct Builder<S> {
    store: S,
    settings: Option<Settings>,
    env: Vec<(String, String)>,
    social: Option<Social>,
    notice_hook: accounts::inbox::SharedNoticeHook,
}

impl<S: Store> Builder<S> {
    /// [`test_settings`]`(env)` (ignored when [`Builder::settings`] is given).
    pub fn env(mut self, env: &[(&str, &str)]) -> Builder<S> {
        self.env = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self
    }

    /// These settings, whole (their server limits apply; the drain is 1 s).
    pub fn settings(mut self, settings: Settings) -> Builder<S> {
        self.settings = Some(settings);
        self
    }

    /// Presence and notes in `social` (Redis, for a feed shared by two apps).
    pub fn social(mut self, social: Social) -> Builder<S> {
        self.social = Some(social);
        self
    }

    /// `hook` told of every inbox notice kept (as push delivery is).
    pub fn notice_hook(
        mut self,
        hook: std::sync::Arc<dyn accounts::inbox::NoticeHook>,
    ) -> Builder<S> {
        self.notice_hook = Some(hook);
        self
    }

    /// Starts it: a fresh signing key, a service key and an operator key each trusted
    /// for its role alone, and the server on a free port.
    pub async fn spawn(self) -> TestApp<S> {
        let settings = self.settings.unwrap_or_else(|| {
            let env: Vec<(&str, &str)> = self
                .env
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            test_settings(&env)
        });
        let key_pem = private_pem();
        let key = SigningKey::from_pem(KID, &key_pem).expect("a fresh PEM key");
        let mut config = accounts::service_config(&settings, key).expect("the service config");
        config.notice_hook = self.notice_hook;
        let mut role_issuer = |role: Role| {
            let issuer = TokenIssuer::new(
                SigningKey::generate(),
                &settings.auth.issuer,
                &settings.auth.audience,
            );
            config.trusted_keys.push(TrustedKey {
                kid: issuer.kid().to_owned(),
                public_pem: issuer.public_pem().to_owned(),
                roles: vec![role],
            });
            issuer
        };
        let service_issuer = role_issuer(Role::Service);
        let operator_issuer = role_issuer(Role::Operator);
        let service = match self.social {
            Some(social) => AccountsApi::with_social(self.store, social, config),
            None => AccountsApi::new(self.store, config),
        };
        let options = basra_platform::ServeOptions {
            limits: settings.server.limits.clone(),
            ..basra_platform::ServeOptions::with_drain(Duration::from_secs(1))
        };
        let served = service.clone();
        let server = Served::spawn(|listener, shutdown| {
            accounts::serve(listener, served, shutdown, options)
        })
        .await;
        TestApp {
            server,
            service,
            key_pem,
            settings,
            service_issuer,
            operator_issuer,
        }
    }
}

impl<S: Store> TestApp<S> {
    /// How to start one on `store` other than [`spawn_app`]'s way.
    pub fn builder(store: S) -> Builder<S> {
        Builder {
            store,
            settings: None,
            env: Vec::new(),
            social: None,
            notice_hook: None,
        }
    }

    /// The server (its address).
    pub fn server(&self) -> &Served {
        &self.server
    }

    /// A new connection to it.
    pub async fn channel(&self) -> Channel {
        self.server.channel().await
    }

    /// A client: `AccountsService`'s calls, and the internal ones
    /// (`AccountsInternalService`) on the same connection.
    pub async fn client(&self) -> AccountsClient {
        AccountsClient::new(self.channel().await)
    }

    /// Its store.
    pub fn store(&self) -> &S {
        self.service.store()
    }

    /// Row counts of its store.
    pub async fn counts(&self) -> Counts {
        self.store().counts().await.expect("the store's row counts")
    }

    /// A service token (role service), as game-session would hold.
    pub fn service_token(&self) -> String {
        accounts::issue_service_token(
            &self.service_issuer,
            Uuid::now_v7(),
            Duration::from_secs(300),
        )
        .expect("a service token")
        .token
    }

    /// A token of `role` for `user_id`, signed with the key trusted for that role:
    /// accounts' own for players, the service or the operator key otherwise.
    pub fn token(&self, user_id: Uuid, role: Role, guest: bool) -> String {
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
            .expect("a token")
            .token
    }

    /// An operator's token naming the operator `name`, as `basra admin token
    /// --operator` mints one.
    pub fn named_operator_token(&self, user_id: Uuid, name: &str) -> String {
        let caller = Caller {
            user_id,
            role: Role::Operator,
            guest: false,
        };
        self.operator_issuer
            .issue_named(&caller, Some(name), Duration::from_secs(300))
            .expect("a token")
            .token
    }

    /// An issuer with another key but the same kid, issuer and audience.
    pub fn foreign_issuer(&self) -> TokenIssuer {
        TokenIssuer::new(
            SigningKey::from_pem(KID, &private_pem()).expect("a fresh PEM key"),
            &self.settings.auth.issuer,
            &self.settings.auth.audience,
        )
    }
}
