//! Two ways to stand the backend up for a test:
//!
//! - [`spawn_backend`]: accounts, game-session and matchmaking as separate gRPC servers, each
//!   on its own port (0: the OS picks), with a fresh PostgreSQL database and a unique Redis
//!   key prefix per test, sharing one development signing key as production shares a key
//!   pair. PostgreSQL and Redis must be reachable (`DATABASE_URL`, `REDIS_URL`); a test fails
//!   when they are not.
//! - [`spawn_dev`]: `basra dev`, the three services in one process on one port, with the
//!   in-memory stores.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use accounts::{AccountsApi, PgStore};
use anyhow::Context as _;
use basra::session::Endpoints;
use basra_platform::auth::ServiceCredentials;
use basra_platform::auth::{Role, ServiceIdentity, SigningKey, TokenVerifier, TrustedKey};
use game_session::AccountsLink;
use matchmaking::clock::SystemClock;
use matchmaking::metrics::Metrics;
use matchmaking::upstream::{GrpcGame, GrpcPlayers};
use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The three services, running.
pub struct Backend {
    /// Where each service answers.
    pub endpoints: Endpoints,
    /// The test's own database (accounts' tables), when accounts uses PostgreSQL.
    pub db: Option<PgPool>,
    /// The operator signing key the services trust for `operator` tokens: (kid, PKCS#8
    /// PEM) (`basra dev`'s one development key there).
    pub operator_key: Option<(String, String)>,
    /// Every signing key of the deployment, by whose it is (`accounts`, `game-session`,
    /// `matchmaking`, `operator`): (kid, PKCS#8 PEM) (`spawn_backend` only).
    pub signing_keys: Vec<(&'static str, String, String)>,
    /// Where each service serves its Prometheus metrics (`spawn_backend` only).
    pub metrics: Option<MetricsEndpoints>,
    database: Option<TestDatabase>,
    /// Redis URL and the test's key prefix, to clean up after.
    redis: Option<(String, String)>,
    shutdown: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

/// The `GET /metrics` addresses of the three services.
#[derive(Debug, Clone)]
pub struct MetricsEndpoints {
    /// accounts' metrics address.
    pub accounts: SocketAddr,
    /// game-session.
    pub game: SocketAddr,
    /// matchmaking's metrics address.
    pub matchmaking: SocketAddr,
}

/// Serves `registry` on a free local port until `shutdown`, as each service does on its
/// `metrics.listen`.
async fn serve_metrics(
    registry: Arc<basra_platform::metrics::prometheus_client::registry::Registry>,
    shutdown: CancellationToken,
) -> anyhow::Result<SocketAddr> {
    let settings = basra_platform::metrics::MetricsSettings {
        listen: "127.0.0.1:0".into(),
    };
    basra_platform::metrics::spawn(&settings, registry, shutdown)
        .await?
        .context("metrics bound")
}

/// Starts `basra dev` with in-memory stores and bots that do not wait.
pub async fn spawn_dev() -> anyhow::Result<Backend> {
    spawn_dev_with(None, Vec::new()).await
}

/// Starts `basra dev` with rooms and the queue in `redis_url` (memory when `None`) and the
/// services' settings from `env` (`BASRA_<SERVICE>_…` variables), bots that do not wait.
pub async fn spawn_dev_with(
    redis_url: Option<String>,
    env: Vec<(String, String)>,
) -> anyhow::Result<Backend> {
    let shutdown = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let options = basra::dev::DevOptions {
        listen: "127.0.0.1:0".parse()?,
        database_url: None,
        redis_url,
        bot_delay: Some(Duration::ZERO),
        settings: basra::dev_settings::DevSettings::from_env(env)?,
        web: None,

        tls: None,
        token_leeway: None,
    };
    let token = shutdown.clone();
    let task = tokio::spawn(async move {
        basra::dev::run(options, token, move |started| {
            let _ = tx.send(started);
        })
        .await
        .expect("basra dev runs");
    });
    let started = rx.await?;
    let addr = started.addr;
    // The development key signs operator tokens too (`basra admin token`).
    let operator_key = Some((started.kid, std::fs::read_to_string(&started.key_file)?));
    Ok(Backend {
        endpoints: Endpoints::single(&format!("http://{addr}")),
        db: None,
        metrics: None,
        operator_key,
        signing_keys: Vec::new(),
        database: None,
        redis: None,
        shutdown,
        tasks: vec![task],
    })
}

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

async fn bind() -> anyhow::Result<(TcpListener, String)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    Ok((listener, url))
}

/// Starts the backend for one test.
pub async fn spawn_backend() -> anyhow::Result<Backend> {
    spawn_backend_with(Duration::from_secs(300)).await
}

/// [`spawn_backend`] with service tokens living `service_token_ttl`: game-session and
/// matchmaking each hold their own signing key and mint their tokens themselves; accounts
/// trusts game-session's key and game-session trusts matchmaking's, for the `service`
/// role only, as in production (deploy/README.md, "Service identity").
pub async fn spawn_backend_with(service_token_ttl: Duration) -> anyhow::Result<Backend> {
    let redis_url = env("REDIS_URL", "redis://127.0.0.1:6379");
    let unique = uuid::Uuid::now_v7().simple().to_string();
    let database = TestDatabase::create(&unique).await?;
    let db_url = database.url.clone();
    let shutdown = CancellationToken::new();
    let drain = Duration::from_secs(1);
    let mut tasks = Vec::new();

    // accounts, with cheap password hashing and a leaderboard from the first ranked match.
    let mut settings = accounts::Settings::load()?;
    settings.passwords.memory_kib = 1024;
    settings.passwords.iterations = 1;
    settings.leaderboard.min_ranked_matches = 1;
    let (game_key, matchmaking_key, accounts_key, operator) = (
        SigningKey::generate(),
        SigningKey::generate(),
        SigningKey::generate(),
        SigningKey::generate(),
    );
    let signing_keys = [
        ("accounts", &accounts_key),
        ("game-session", &game_key),
        ("matchmaking", &matchmaking_key),
        ("operator", &operator),
    ]
    .map(|(whose, key)| (whose, key.kid().to_owned(), key.private_pem()))
    .to_vec();
    let game_identity = Arc::new(ServiceIdentity::new(
        game_key,
        &settings.auth.issuer,
        &settings.auth.audience,
        service_token_ttl,
    ));
    let matchmaking_identity = Arc::new(ServiceIdentity::new(
        matchmaking_key,
        &settings.auth.issuer,
        &settings.auth.audience,
        service_token_ttl,
    ));
    let mut config = accounts::service_config(&settings, accounts_key)?;
    // The operators' key: game-session's and accounts' admin services trust it.
    let operator_trusted = TrustedKey {
        kid: operator.kid().to_owned(),
        public_pem: operator.public_pem(),
        roles: vec![Role::Operator],
    };
    // RecordMatch and GetPlayers come from game-session, GetPlayers from matchmaking.
    config.trusted_keys = vec![
        game_identity.trusted_key(),
        matchmaking_identity.trusted_key(),
        operator_trusted.clone(),
    ];
    let issuer = config.issuer.clone();
    // The other services trust accounts' key for players only.
    let player_key = TrustedKey {
        kid: issuer.kid().to_owned(),
        public_pem: issuer.public_pem().to_owned(),
        roles: vec![Role::Player],
    };
    let store = PgStore::connect(&db_url, 4).await?;
    store.migrate().await?;
    let db = store.pool().clone();
    // Presence and the friends' feed in the same Redis as the rooms.
    let social = accounts::social::SocialStore::Redis(
        accounts::social::RedisSocial::connect(
            &redis_url,
            &format!("e2e-{unique}"),
            shutdown.clone(),
        )
        .await
        .with_context(|| format!("Redis is needed at REDIS_URL={redis_url}"))?,
    );
    // The banned and deleted accounts, shared by the three services (one process).
    let revocations = basra_platform::revocation::Revocations::in_memory();
    let service = AccountsApi::with_social(
        store,
        accounts::service::Social::new(social, shutdown.clone())
            .with_revocations(revocations.clone())
            .with_max_feeds(settings.friends.max_feeds_per_account),
        config,
    );
    let accounts_metrics = serve_metrics(service.metrics().registry(), shutdown.clone()).await?;
    let (listener, accounts_url) = bind().await?;
    let token = shutdown.clone();
    tasks.push(tokio::spawn(async move {
        accounts::serve(listener, service, token, drain)
            .await
            .expect("accounts serves");
    }));

    // game-session: rooms in Redis, bots without delay, records to accounts.
    let prefix = format!("e2e-{unique}");
    let rooms = game_session::RedisStore::connect(&redis_url, &prefix, 600, shutdown.clone())
        .await
        .with_context(|| format!("Redis is needed at REDIS_URL={redis_url}"))?;
    let mut game_settings = game_session::Settings::load()?;
    game_settings.game.bot_delay_ms = 0;
    let link = AccountsLink::new(&accounts_url, ServiceCredentials::Identity(game_identity))
        .map_err(anyhow::Error::msg)?;
    let (listener, game_url) = bind().await?;
    let token = shutdown.clone();
    // No clock-skew allowance: an expired service token is refused at once.
    let game_verifier = TokenVerifier::trusting(
        vec![
            player_key.clone(),
            matchmaking_identity.trusted_key(),
            operator_trusted.clone(),
        ],
        &settings.auth.issuer,
        &settings.auth.audience,
    )?
    .with_leeway(Duration::ZERO);
    let session = game_session::GameSession::start(
        Arc::new(rooms),
        game_session::ServiceConfig {
            revocations: revocations.clone(),
            ..game_settings.game.service_config()
        },
        Some(link),
        shutdown.clone(),
    );
    let game_metrics =
        serve_metrics(session.replica().metrics().registry(), shutdown.clone()).await?;
    tasks.push(tokio::spawn(async move {
        game_session::serve(listener, &session, game_verifier, token, drain)
            .await
            .expect("game-session serves");
    }));

    // matchmaking: the queue in Redis, rooms made in game-session, ratings from accounts.
    let queue_settings = matchmaking::settings::Settings::load()?;
    let queue = matchmaking::store::RedisStore::connect(&redis_url, &prefix).await?;
    let players = GrpcPlayers::new(
        &accounts_url,
        ServiceCredentials::Identity(Arc::clone(&matchmaking_identity)),
        Duration::from_secs(5),
    )?;
    let deps = matchmaking::Deps {
        store: Arc::new(queue),
        game: Arc::new(GrpcGame::new(
            &game_url,
            ServiceCredentials::Identity(Arc::clone(&matchmaking_identity)),
            Duration::from_secs(5),
        )?),
        ratings: Arc::new(players.clone()),
        names: Arc::new(players.clone()),
        invites: Arc::new(players.clone()),
        presence: players.presence_reporter(shutdown.clone()),
        clock: Arc::new(SystemClock),
        metrics: Arc::new(Metrics::new()),
        // Events on the test's database (their own tables) and its Redis prefix.
        events: {
            let store = matchmaking::events::store::PgEventStore::new(db.clone());
            store.migrate().await?;
            matchmaking::events::EventDeps {
                store: Arc::new(store),
                live: Arc::new(
                    matchmaking::events::live::RedisLiveStore::connect(&redis_url, &prefix).await?,
                ),
                notices: Arc::new(players.clone()),
            }
        },
    };
    let matchmaking_metrics = serve_metrics(deps.metrics.registry(), shutdown.clone()).await?;
    let config = matchmaking::Config {
        queue: queue_settings.queue.clone(),
        rooms: queue_settings.rooms.clone(),
        serving: drain.into(),
        revocations: revocations.clone(),
        events: queue_settings.events.clone(),
    };
    // Players, and operators for the event admin service.
    let matchmaking_verifier = TokenVerifier::trusting(
        vec![player_key, operator_trusted],
        &settings.auth.issuer,
        &settings.auth.audience,
    )?;
    let (listener, matchmaking_url) = bind().await?;
    let token = shutdown.clone();
    tasks.push(tokio::spawn(async move {
        matchmaking::serve(listener, config, matchmaking_verifier, deps, token)
            .await
            .expect("matchmaking serves");
    }));

    Ok(Backend {
        endpoints: Endpoints {
            accounts: accounts_url,
            game: game_url,
            matchmaking: matchmaking_url,
        },
        db: Some(db),
        operator_key: Some((operator.kid().to_owned(), operator.private_pem())),
        signing_keys,
        metrics: Some(MetricsEndpoints {
            accounts: accounts_metrics,
            game: game_metrics,
            matchmaking: matchmaking_metrics,
        }),
        database: Some(database),
        redis: Some((redis_url, prefix)),
        shutdown,
        tasks,
    })
}

impl Backend {
    /// Signs in as the guest of `device` (the same device is the same account).
    pub async fn guest(&self, device: &str) -> anyhow::Result<basra::session::Session> {
        let device = device.to_owned();
        basra::session::Session::sign_in(&self.endpoints, |mut accounts| async move {
            let response = accounts
                .guest_login(basra_proto::basra::accounts::v1::GuestLoginRequest {
                    device_id: device,
                    display_name: String::new(),
                })
                .await?;
            Ok(response.into_inner().tokens)
        })
        .await
    }

    /// Stops the servers, drops the test's database and deletes its Redis keys.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        for task in self.tasks {
            task.await?;
        }
        if let Some(db) = self.db {
            db.close().await;
        }
        if let Some(database) = self.database {
            database.drop().await?;
        }
        if let Some((url, prefix)) = self.redis {
            let mut redis = redis::Client::open(url)?
                .get_multiplexed_async_connection()
                .await?;
            delete_keys(&mut redis, &format!("{prefix}*")).await?;
        }
        Ok(())
    }
}

/// A fresh PostgreSQL database for one test, on the server at `DATABASE_URL`.
pub struct TestDatabase {
    /// Its URL.
    pub url: String,
    admin_url: String,
    name: String,
}

impl TestDatabase {
    /// Creates `e2e_<unique>`; fails when PostgreSQL is not reachable.
    pub async fn create(unique: &str) -> anyhow::Result<TestDatabase> {
        let admin_url = env(
            "DATABASE_URL",
            "postgres://postgres@127.0.0.1:5432/postgres",
        );
        let name = format!("e2e_{unique}");
        let admin = PgPool::connect(&admin_url)
            .await
            .with_context(|| format!("PostgreSQL is needed at DATABASE_URL={admin_url}"))?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&admin)
            .await?;
        admin.close().await;
        let (base, _) = admin_url
            .rsplit_once('/')
            .context("DATABASE_URL ends with /<database>")?;
        Ok(TestDatabase {
            url: format!("{base}/{name}"),
            admin_url,
            name,
        })
    }

    /// Drops it (closing whatever still holds it).
    pub async fn drop(self) -> anyhow::Result<()> {
        let admin = PgPool::connect(&self.admin_url).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        )))
        .execute(&admin)
        .await?;
        Ok(())
    }
}

/// Deletes the keys matching `pattern` and answers how many there were. SCAN, not KEYS:
/// KEYS blocks a big shared Redis for as long as it walks every key, and times out there.
pub async fn delete_keys(
    redis: &mut redis::aio::MultiplexedConnection,
    pattern: &str,
) -> anyhow::Result<usize> {
    let mut cursor = 0u64;
    let mut deleted = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(redis)
            .await?;
        if !keys.is_empty() {
            deleted += keys.len();
            let _: () = redis::cmd("DEL").arg(keys).query_async(redis).await?;
        }
        if next == 0 {
            return Ok(deleted);
        }
        cursor = next;
    }
}
