//! The `matchmaking` binary: settings, telemetry, store, upstreams, serve.

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;
use basra_platform::auth::{Role, TrustedKey};
use basra_platform::{TokenVerifier, shutdown, telemetry};
use matchmaking::{
    Config, Deps,
    clock::SystemClock,
    metrics::Metrics,
    settings::Settings,
    store::{MemoryStore, RedisStore, Store},
    upstream::{GrpcGame, GrpcNames, GrpcRatings},
};
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = Settings::load().context("loading settings")?;
    let _telemetry = telemetry::init("matchmaking", &settings.telemetry)?;

    let mut keys = Vec::new();
    for key in &settings.auth.keys {
        let pem = std::fs::read_to_string(&key.public_key_file).with_context(|| {
            format!(
                "reading auth key {:?} from {}",
                key.kid,
                key.public_key_file.display()
            )
        })?;
        let roles = match key.role {
            Some(role) => vec![role],
            None => vec![Role::Player, Role::Service, Role::Operator],
        };
        keys.push(TrustedKey {
            kid: key.kid.clone(),
            public_pem: pem,
            roles,
        });
    }
    anyhow::ensure!(
        !keys.is_empty(),
        "auth.keys is empty: configure at least one [[auth.keys]] (kid, public_key_file, role)"
    );
    let verifier = TokenVerifier::trusting(keys, &settings.auth.issuer, &settings.auth.audience)?;
    let identity = settings
        .identity
        .load(&settings.auth.issuer, &settings.auth.audience)?;
    anyhow::ensure!(
        identity.is_some() || !settings.game.service_token.is_empty(),
        "no credentials for game-session: set identity.signing_key_file (preferred) or \
         game.service_token"
    );

    let store: Arc<dyn Store> = if settings.redis.url == "memory" {
        Arc::new(MemoryStore::new())
    } else {
        Arc::new(
            RedisStore::connect(&settings.redis.url, &settings.redis.prefix)
                .await
                .context("connecting to Redis")?,
        )
    };
    let metrics = Arc::new(Metrics::new());
    let identity = identity.map(Arc::new);
    let deps = Deps {
        store,
        game: Arc::new(match &identity {
            Some(identity) => GrpcGame::with_identity(
                &settings.game.url,
                Arc::clone(identity),
                settings.game.timeout(),
            )?,
            None => GrpcGame::new(
                &settings.game.url,
                &settings.game.service_token,
                settings.game.timeout(),
            )?,
        }),
        ratings: Arc::new(GrpcRatings::new(
            &settings.accounts.url,
            settings.accounts.timeout(),
        )?),
        names: Arc::new(match &identity {
            Some(identity) => GrpcNames::with_identity(
                &settings.accounts.url,
                Arc::clone(identity),
                settings.accounts.timeout(),
            )?,
            None => GrpcNames::new(
                &settings.accounts.url,
                &settings.accounts.service_token,
                settings.accounts.timeout(),
            )?,
        }),
        clock: Arc::new(SystemClock),
        metrics: metrics.clone(),
    };
    let config = Config {
        queue: settings.queue.clone(),
        rooms: settings.rooms.clone(),
        serving: (&settings.server).into(),
    };

    let listener = TcpListener::bind(settings.server.listen)
        .await
        .with_context(|| format!("binding {}", settings.server.listen))?;
    let shutdown = shutdown::on_signal();
    basra_platform::metrics::spawn(&settings.metrics, metrics.registry(), shutdown.clone())
        .await
        .with_context(|| format!("binding metrics on {}", settings.metrics.listen))?;
    matchmaking::run(listener, config, verifier, deps, shutdown).await?;
    // Let the last log lines out.
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(())
}
