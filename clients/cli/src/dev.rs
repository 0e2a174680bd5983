//! `basra dev`: accounts, matchmaking and game-session in one process, on one port (the one
//! endpoint for clients, as an ingress gives in production), with in-memory stores unless
//! PostgreSQL and Redis URLs are given. Nothing to install to play.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use accounts::{AccountsService, MemoryStore as AccountsMemory, PgStore, Store};
use anyhow::Context as _;
use basra_platform::auth::{AuthLayer, Caller, Role, TokenVerifier};
use basra_proto::basra::matchmaking::v1::matchmaking_server::MatchmakingServer;
use game_session::{AccountsLink, Credentials, GameSession, RoomStore};
use matchmaking::clock::SystemClock;
use matchmaking::metrics::Metrics;
use matchmaking::upstream::{GrpcGame, GrpcNames, GrpcRatings};
use secrecy::SecretString;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::service::Routes;

use crate::dev_settings::DevSettings;

/// Where `basra dev` listens and keeps its data.
#[derive(Debug, Clone)]
pub struct DevOptions {
    /// The one client endpoint.
    pub listen: SocketAddr,
    /// PostgreSQL for accounts; in memory when `None`.
    pub database_url: Option<String>,
    /// Redis for rooms and the queue; in memory when `None`.
    pub redis_url: Option<String>,
    /// How long the computer thinks before each play; the service's setting when `None`.
    pub bot_delay: Option<Duration>,
    /// The three services' settings (see [`DevSettings`]).
    pub settings: DevSettings,
}

/// What a running backend tells the person who started it.
#[derive(Debug, Clone)]
pub struct Started {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// The development signing key's id.
    pub kid: String,
    /// Its public key (PEM), for anyone verifying tokens.
    pub public_pem: String,
}

/// How long a service token minted for the in-process services lives.
const SERVICE_TOKEN_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// Binds, starts the three services and serves until `shutdown` is cancelled. `ready` hears
/// where it listens once it is accepting connections.
pub async fn run(
    options: DevOptions,
    shutdown: CancellationToken,
    ready: impl FnOnce(Started),
) -> anyhow::Result<()> {
    let listener = TcpListener::bind(options.listen)
        .await
        .with_context(|| format!("cannot listen on {}", options.listen))?;
    let addr = listener.local_addr()?;
    let url = format!("http://{addr}");
    let DevSettings {
        accounts: mut accounts_settings,
        matchmaking: queue_settings,
        game_session: mut game_settings,
    } = options.settings;
    // A fresh development key, unless the accounts settings name a key file (then tools
    // such as `basra simulate` can sign service tokens with it too).
    let key = accounts::signing_key(&accounts_settings)?;
    let started = Started {
        addr,
        kid: key.kid().to_owned(),
        public_pem: key.public_pem(),
    };
    if let Some(database) = &options.database_url {
        accounts_settings.database.url = SecretString::from(database.clone());
    }
    let config = accounts::service_config(&accounts_settings, key)?;
    let issuer = config.issuer.clone();
    let (accounts_routes, verifier) = match &options.database_url {
        None => accounts_routes(AccountsService::new(AccountsMemory::new(), config)),
        Some(database) => {
            let store = PgStore::connect(database, accounts_settings.database.max_connections)
                .await
                .context("cannot connect to PostgreSQL")?;
            store.migrate().await?;
            accounts_routes(AccountsService::new(store, config))
        }
    };

    // The services call each other through this same port, as a service.
    let service = Caller {
        user_id: uuid::Uuid::now_v7(),
        role: Role::Service,
        guest: false,
    };
    let service_token = issuer.issue(&service, SERVICE_TOKEN_TTL)?.token;

    if let Some(delay) = options.bot_delay {
        game_settings.game.bot_delay_ms = delay.as_millis() as u64;
    }
    let rooms: Arc<dyn RoomStore> = match &options.redis_url {
        None => Arc::new(game_session::MemoryStore::new()),
        Some(redis) => Arc::new(
            game_session::RedisStore::connect(
                redis,
                &game_settings.redis.prefix,
                game_settings.game.closed_room_ttl_seconds,
                shutdown.clone(),
            )
            .await
            .context("cannot connect to Redis")?,
        ),
    };
    let link = AccountsLink::new(&url, Credentials::Issuer(Arc::new(issuer), service))
        .map_err(anyhow::Error::msg)?;
    let game = GameSession::start(
        rooms,
        game_settings.game.service_config(),
        Some(link),
        shutdown.clone(),
    );

    let queue: Arc<dyn matchmaking::store::Store> = match &options.redis_url {
        None => Arc::new(matchmaking::store::MemoryStore::new()),
        Some(redis) => Arc::new(
            matchmaking::store::RedisStore::connect(redis, &queue_settings.redis.prefix)
                .await
                .context("cannot connect to Redis")?,
        ),
    };
    let deps = matchmaking::Deps {
        store: queue,
        game: Arc::new(GrpcGame::new(
            &url,
            &service_token,
            queue_settings.game.timeout(),
        )?),
        ratings: Arc::new(GrpcRatings::new(&url, queue_settings.accounts.timeout())?),
        names: Arc::new(GrpcNames::new(
            &url,
            &service_token,
            queue_settings.accounts.timeout(),
        )?),
        clock: Arc::new(SystemClock),
        metrics: Arc::new(Metrics::new()),
    };
    let config = matchmaking::Config {
        queue: queue_settings.queue.clone(),
        rooms: queue_settings.rooms.clone(),
        serving: (&queue_settings.server).into(),
    };
    let (matchmaker, _background) = matchmaking::start(config, deps, shutdown.clone());

    let routes = game.add_to(accounts_routes).add_service(
        MatchmakingServer::new(matchmaker)
            .max_decoding_message_size(matchmaking::MAX_MESSAGE_BYTES),
    );
    let names = [
        accounts::SERVICE_NAME,
        matchmaking::SERVICE_NAME,
        game_session::SERVICE_NAMES[0],
        game_session::SERVICE_NAMES[1],
    ];
    let auth = AuthLayer::new(verifier, accounts::PUBLIC_METHODS);
    ready(started);
    // One port for the three services: the accounts server's limits, a short drain.
    let serving = basra_platform::ServeOptions {
        drain: Duration::from_secs(5),
        limits: accounts_settings.server.limits.clone(),
    };
    basra_platform::serve(listener, routes, &names, auth, shutdown, serving).await?;
    Ok(())
}

fn accounts_routes<S: Store>(service: AccountsService<S>) -> (Routes, TokenVerifier) {
    let verifier = service.verifier();
    (Routes::new(service.into_server()), verifier)
}
