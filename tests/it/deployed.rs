//! The three services as `deploy/` configures them: each loads its ConfigMap's
//! `config.toml` with the variables its Deployment sets ([`pod_env`]), through its own
//! settings loader, and is built by its own `App::build` and served by `App::run`, as its
//! binary does. Only what a pod gets from elsewhere is this test's: the URLs of the
//! Secrets and Services (the test's PostgreSQL and Redis, the other services' ports),
//! the key files (fresh keys under the kids the settings name), the listen addresses.
//! Every Redis key prefix keeps its value behind a tag of this test (`<tag>-basra`,
//! `<tag>-basra:mm`), so that keys are this test's alone and prefixes that differ in
//! `deploy/` still differ.

use std::collections::BTreeMap;
use std::time::Duration;

use basra::session::Endpoints;
use basra_platform::auth::{IdentitySettings, Role, SigningKey, TrustedKeySettings};
use basra_platform::config::load_with_env;
use basra_platform::redis::RedisSettings;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::deploy_config::pod_env;

/// The three services, running as deployed.
pub(crate) struct Deployed {
    /// Where each answers.
    pub endpoints: Endpoints,
    /// An operator's token (the kid the settings trust for `operator`).
    pub operator: String,
    /// Every signing key, by whose it is (`accounts`, `game-session`, `matchmaking`,
    /// `operator`): (kid, PKCS#8 PEM), under the kids the settings name.
    pub signing_keys: Vec<(&'static str, String, String)>,
    /// The `iss` and `aud` the settings name.
    pub issuer_audience: (String, String),
    shutdown: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    database: basra_e2e::TestDatabase,
    redis: (String, String),
    _keys: tempfile::TempDir,
}

/// Fresh keys for every kid the settings name, in files as the pods mount them.
struct Keys {
    dir: tempfile::TempDir,
    keys: BTreeMap<String, SigningKey>,
}

impl Keys {
    fn key(&mut self, kid: &str) -> &SigningKey {
        self.keys
            .entry(kid.to_owned())
            .or_insert_with(SigningKey::generate)
    }

    /// `[identity]` signing with a key of its kid, in a file of this test.
    fn identity(&mut self, identity: &mut IdentitySettings) {
        let pem = self.key(&identity.key_id).private_pem();
        let file = self.dir.path().join(format!("{}.key.pem", identity.key_id));
        std::fs::write(&file, pem).expect("the private key file");
        identity.signing_key_file = file;
    }

    /// Every trusted key's file, holding the public key of its kid.
    fn trusted(&mut self, trusted: &mut [TrustedKeySettings]) {
        for key in trusted {
            let pem = self.key(&key.kid).public_pem();
            let file = self.dir.path().join(format!("{}.pem", key.kid));
            std::fs::write(&file, pem).expect("the public key file");
            key.public_key_file = file;
        }
    }
}

/// Points `[redis]` at the test's Redis, every prefix behind `tag`.
fn redis(redis: &mut RedisSettings, url: &str, tag: &str) {
    redis.url = url.to_owned();
    redis.prefix = format!("{tag}-{}", redis.prefix);
    redis.shared_prefix = format!("{tag}-{}", redis.shared_prefix);
}

async fn bind() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let url = format!("http://{}", listener.local_addr().unwrap());
    (listener, url)
}

/// Starts accounts, game-session and matchmaking with the settings `deploy/` ships, on
/// the PostgreSQL at `DATABASE_URL` (a fresh database, migrated as the migration Job
/// does) and the Redis at `REDIS_URL`.
pub(crate) async fn spawn_deployed() -> Deployed {
    spawn_deployed_with(|_| {}).await
}

/// [`spawn_deployed`] with accounts' settings changed by `adjust` first (a test's own
/// `[push]` providers).
pub(crate) async fn spawn_deployed_with(adjust: impl FnOnce(&mut accounts::Settings)) -> Deployed {
    let redis_url = basra_testkit::redis_url();
    let tag = format!("dep-{}", uuid::Uuid::now_v7().simple());
    let database = basra_e2e::TestDatabase::create(&tag.replace('-', "_"))
        .await
        .expect("a database");
    let mut keys = Keys {
        dir: tempfile::tempdir().unwrap(),
        keys: BTreeMap::new(),
    };
    let (accounts_listener, accounts_url) = bind().await;
    let (game_listener, game_url) = bind().await;
    let (queue_listener, queue_url) = bind().await;

    let mut accounts: accounts::Settings =
        load_with_env(accounts::settings::DEFAULTS, pod_env("accounts")).expect("accounts");
    accounts.database.url = database.url.clone().into();
    redis(&mut accounts.redis, &redis_url, &tag);
    accounts.metrics.listen.clear();
    keys.identity(&mut accounts.identity);
    keys.trusted(&mut accounts.auth.trusted_keys);
    adjust(&mut accounts);
    accounts::migrate(&accounts).await.expect("migrated");

    let mut game: game_session::Settings =
        load_with_env(game_session::settings::DEFAULTS, pod_env("game-session"))
            .expect("game-session");
    redis(&mut game.redis, &redis_url, &tag);
    game.accounts.url = accounts_url.clone();
    game.metrics.listen.clear();
    // No Kubernetes API here to patch a pod's deletion cost on.
    game.kubernetes.pod_deletion_cost = false;
    keys.identity(&mut game.identity);
    keys.trusted(&mut game.auth.trusted_keys);

    let mut queue: matchmaking::settings::Settings =
        load_with_env(matchmaking::settings::DEFAULTS, pod_env("matchmaking"))
            .expect("matchmaking");
    redis(&mut queue.redis, &redis_url, &tag);
    queue.events.database_url = database.url.clone().into();
    queue.accounts.url = accounts_url.clone();
    queue.game.url = game_url.clone();
    queue.metrics.listen.clear();
    keys.identity(&mut queue.identity);
    keys.trusted(&mut queue.auth.trusted_keys);

    let operator_kid = accounts
        .auth
        .trusted_keys
        .iter()
        .find(|key| key.role == Role::Operator)
        .expect("deploy/ trusts an operator key")
        .kid
        .clone();
    let operator = basra::admin::operator_token(
        &keys.key(&operator_kid).private_pem(),
        &operator_kid,
        &accounts.auth.issuer,
        &accounts.auth.audience,
        "ops-test",
        Duration::from_secs(300),
    )
    .unwrap();

    let mut signing_keys = Vec::new();
    for (whose, kid) in [
        ("accounts", accounts.identity.key_id.clone()),
        ("game-session", game.identity.key_id.clone()),
        ("matchmaking", queue.identity.key_id.clone()),
        ("operator", operator_kid),
    ] {
        let pem = keys.key(&kid).private_pem();
        signing_keys.push((whose, kid, pem));
    }
    let issuer_audience = (accounts.auth.issuer.clone(), accounts.auth.audience.clone());

    let shutdown = CancellationToken::new();
    let accounts = accounts::App::build(accounts).await.expect("accounts");
    let game = game_session::App::build(game).await.expect("game-session");
    let queue = matchmaking::App::build(queue).await.expect("matchmaking");
    let tasks = vec![
        tokio::spawn({
            let stop = shutdown.clone();
            async move { accounts.run(accounts_listener, stop).await.unwrap() }
        }),
        tokio::spawn({
            let stop = shutdown.clone();
            async move { game.run(game_listener, stop).await.unwrap() }
        }),
        tokio::spawn({
            let stop = shutdown.clone();
            async move { queue.run(queue_listener, stop).await.unwrap() }
        }),
    ];
    Deployed {
        endpoints: Endpoints {
            accounts: accounts_url,
            game: game_url,
            matchmaking: queue_url,
        },
        operator,
        signing_keys,
        issuer_audience,
        shutdown,
        tasks,
        database,
        redis: (redis_url, tag),
        _keys: keys.dir,
    }
}

impl Deployed {
    /// The deployment's PostgreSQL (accounts' tables and matchmaking's events).
    pub(crate) fn database_url(&self) -> String {
        self.database.url.clone()
    }

    /// Stops the services, drops the database and deletes the test's Redis keys.
    pub(crate) async fn stop(self) {
        self.shutdown.cancel();
        for task in self.tasks {
            task.await.expect("a service stops");
        }
        self.database.drop().await.expect("the database dropped");
        let (url, tag) = self.redis;
        let mut redis = redis::Client::open(url)
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        basra_e2e::delete_keys(&mut redis, &format!("{tag}-*"))
            .await
            .unwrap();
    }
}
