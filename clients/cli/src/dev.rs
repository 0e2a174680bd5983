//! `basra dev`: accounts, matchmaking and game-session in one process, on one port (the one
//! endpoint for clients, as an ingress gives in production), with in-memory stores unless
//! PostgreSQL and Redis URLs are given. Nothing to install to play.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use basra_platform::auth::{AuthLayer, IdentitySettings, Role, SigningKey, TrustedKeySettings};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::service::Routes;

use crate::dev_settings::DevSettings;
use crate::web_page::WebOptions;

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
    /// Where to serve the web client's page, if anywhere.
    pub web: Option<WebOptions>,
    /// Serve the client endpoint over TLS with this certificate (`--tls-cert`, `--tls-key`).
    pub tls: Option<basra_platform::TlsIdentity>,
    /// How long past its expiry a token is still taken (clock skew); 30 s when `None`.
    /// Tests of token refresh set 0, so that an expired token is refused at once.
    pub token_leeway: Option<Duration>,
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
    /// Its private key's file (PKCS#8 PEM), for `basra admin token --key-file`.
    pub key_file: std::path::PathBuf,
    /// Where the web page is served, when it is.
    pub web_addr: Option<SocketAddr>,
    /// The web origins whose pages may call it (CORS; `"*"`: any).
    pub allowed_origins: Vec<String>,
}

/// Binds, builds the three services through their own `App::build` (as each binary does)
/// and serves them on one port until `shutdown` is cancelled. `ready` hears where it
/// listens once it is accepting connections.
///
/// One development signing key signs everything here: accounts' access tokens, the
/// service tokens game-session and matchmaking mint with it as their `[identity]`, and
/// operator tokens (`basra admin token`). accounts trusts it for players as its own key
/// and, listed again in its `trusted_keys`, for services and operators (in production
/// each role has its own key); accounts' verifier guards the one port; the other two
/// trust it for players, as they trust accounts' key in production.
pub async fn run(
    options: DevOptions,
    shutdown: CancellationToken,
    ready: impl FnOnce(Started),
) -> anyhow::Result<()> {
    let listener = TcpListener::bind(options.listen)
        .await
        .with_context(|| format!("cannot listen on {}", options.listen))?;
    let addr = listener.local_addr()?;
    // The services call one another here: the client endpoint itself, or, when it serves
    // TLS, a cleartext one on the loopback interface that only this process uses.
    let internal = match options.tls {
        Some(_) => Some(
            TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
                .await
                .context("cannot listen on the loopback interface")?,
        ),
        None => None,
    };
    let url = match &internal {
        Some(internal) => format!("http://{}", internal.local_addr()?),
        None => format!("http://{addr}"),
    };
    let DevSettings {
        accounts: mut accounts_settings,
        matchmaking: mut queue_settings,
        game_session: mut game_settings,
    } = options.settings;

    // The key the accounts settings name (then tools such as `basra simulate` can sign
    // service tokens with it too), or a fresh development key, in files as a pod has them.
    let keys = DevKeys::new(&accounts_settings.identity)?;
    let web = match &options.web {
        Some(web) => Some((
            TcpListener::bind(web.listen)
                .await
                .with_context(|| format!("cannot listen on {} for the web page", web.listen))?,
            web.dir.clone(),
        )),
        None => None,
    };
    // The page calls from its own origin: unless the settings name the origins, any page
    // may call this development backend (its tokens are bearer tokens, never cookies).
    if accounts_settings.server.allowed_origins.is_empty() {
        accounts_settings.server.allowed_origins = vec!["*".into()];
    }
    let started = Started {
        addr,
        kid: keys.kid.clone(),
        public_pem: keys.public_pem.clone(),
        key_file: keys.private_file.clone(),
        web_addr: match &web {
            Some((listener, _)) => Some(listener.local_addr()?),
            None => None,
        },
        allowed_origins: accounts_settings.server.allowed_origins.clone(),
    };
    if let Some((listener, dir)) = web {
        tokio::spawn(crate::web_page::serve(
            listener,
            dir,
            addr.port(),
            options.tls.is_some(),
            shutdown.clone(),
        ));
    }
    let redis = options.redis_url.clone().unwrap_or_else(|| "memory".into());

    accounts_settings.identity = keys.identity(&accounts_settings.identity);
    accounts_settings
        .auth
        .trusted_keys
        .extend([keys.trusted(Role::Service), keys.trusted(Role::Operator)]);
    // Presence and the friends' feed beside the rooms and the queue.
    accounts_settings.redis.url = redis.clone();
    if let Some(database) = &options.database_url {
        accounts_settings.database.url = secrecy::SecretString::from(database.clone());
    }
    let server = accounts_settings.server.clone();
    let accounts = accounts::App::build(accounts_settings)
        .await
        .context("accounts")?;

    game_settings.identity = keys.identity(&game_settings.identity);
    game_settings.auth.trusted_keys = vec![keys.trusted(Role::Player)];
    game_settings.redis.url = redis.clone();
    game_settings.accounts.url = url.clone();
    if let Some(delay) = options.bot_delay {
        game_settings.game.bot_delay_ms = delay.as_millis() as u64;
    }
    let game = game_session::App::build(game_settings)
        .await
        .context("game-session")?;

    queue_settings.identity = keys.identity(&queue_settings.identity);
    queue_settings.auth.trusted_keys = vec![keys.trusted(Role::Player)];
    queue_settings.redis.url = redis;
    queue_settings.game.url = url.clone();
    queue_settings.accounts.url = url;
    let matchmaker = matchmaking::App::build(queue_settings)
        .await
        .context("matchmaking")?;

    let verifier = match options.token_leeway {
        Some(leeway) => accounts.verifier().with_leeway(leeway),
        None => accounts.verifier(),
    };
    // The banned and deleted accounts, refused on the one port as each service refuses
    // them alone (accounts' own list: it writes it, so a ban holds from its answer on).
    let auth =
        AuthLayer::new(verifier, accounts::PUBLIC_METHODS).with_revocations(accounts.revocations());
    let routes = accounts.mount(Routes::default(), shutdown.clone()).await?;
    let (routes, game_readiness) = game.mount(routes, shutdown.clone()).await?;
    let routes = matchmaker.mount(routes, shutdown.clone()).await?;
    let names: Vec<&str> = [accounts::SERVICE_NAMES, game_session::SERVICE_NAMES]
        .concat()
        .into_iter()
        .chain(matchmaking::SERVICE_NAMES)
        .collect();
    if let Some(internal) = internal {
        tokio::spawn({
            let (routes, auth, shutdown) = (routes.clone(), auth.clone(), shutdown.clone());
            let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
            let mut options = basra_platform::ServeOptions::from(&server);
            options.readiness.push(game_readiness.clone());
            async move {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                basra_platform::serve(internal, routes, &names, auth, shutdown, options).await
            }
        });
    }
    ready(started);
    // One port for the three services: the accounts server's settings.
    let options = basra_platform::ServeOptions {
        tls: options.tls,
        readiness: vec![game_readiness],
        ..basra_platform::ServeOptions::from(&server)
    };
    basra_platform::serve(listener, routes, &names, auth, shutdown, options).await?;
    drop(keys);
    Ok(())
}

/// The name the banner's `basra admin token` command gives the operator: the local user
/// (`$USER`, as a plain word), else `dev`.
pub fn operator_name() -> String {
    std::env::var("USER")
        .ok()
        .filter(|user| {
            !user.is_empty()
                && user.len() <= 32
                && user
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        })
        .unwrap_or_else(|| "dev".into())
}

/// The banner's line saying which web pages may call the backend (CORS).
pub fn cors_line(allowed_origins: &[String]) -> String {
    if allowed_origins.iter().any(|origin| origin == "*") {
        "cors:   ANY web origin may call this backend from a browser (development only; \
         name yours with BASRA_ACCOUNTS_SERVER__ALLOWED_ORIGINS=https://…)"
            .into()
    } else {
        format!(
            "cors:   web pages from {} may call this backend",
            allowed_origins.join(", ")
        )
    }
}

/// The address a client on this machine reaches `addr` by: a wildcard address
/// (`0.0.0.0`, `::`) becomes the loopback address of its family.
pub fn client_addr(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        ip if !ip.is_unspecified() => ip,
        std::net::IpAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
    };
    SocketAddr::new(ip, addr.port())
}

/// How to play against a backend listening on `addr`: `make play` (whose client goes to
/// 127.0.0.1:50051) only when that reaches it, else the client with the real address.
pub fn play_command(addr: SocketAddr) -> String {
    let addr = client_addr(addr);
    if addr == SocketAddr::from(([127, 0, 0, 1], 50051)) {
        "make play   (or: basra play)".into()
    } else {
        format!(
            "basra play --server http://{addr}   (in this tree: cargo run -p basra -- play --server http://{addr})"
        )
    }
}

/// The development key in files, in a private temporary directory removed at exit.
struct DevKeys {
    _dir: tempfile::TempDir,
    private_file: PathBuf,
    public_file: PathBuf,
    kid: String,
    public_pem: String,
}

impl DevKeys {
    /// The key `identity` names, or a generated one.
    fn new(identity: &IdentitySettings) -> anyhow::Result<DevKeys> {
        let dir = tempfile::Builder::new().prefix("basra-dev-").tempdir()?;
        let (key, private_file) = match identity.signing_key()? {
            Some(key) => (key, identity.signing_key_file.clone()),
            None => {
                let key = SigningKey::generate();
                let file = dir.path().join("signing-key.pem");
                std::fs::write(&file, key.private_pem())?;
                (key, file)
            }
        };
        let public_file = dir.path().join("public-key.pem");
        std::fs::write(&public_file, key.public_pem())?;
        Ok(DevKeys {
            private_file,
            public_file,
            kid: key.kid().to_owned(),
            public_pem: key.public_pem(),
            _dir: dir,
        })
    }

    /// `[identity]` signing with this key (other values as `base` has them).
    fn identity(&self, base: &IdentitySettings) -> IdentitySettings {
        IdentitySettings {
            signing_key_file: self.private_file.clone(),
            key_id: self.kid.clone(),
            ..base.clone()
        }
    }

    /// This key trusted for `role`.
    fn trusted(&self, role: Role) -> TrustedKeySettings {
        TrustedKeySettings {
            kid: self.kid.clone(),
            public_key_file: self.public_file.clone(),
            role,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{client_addr, play_command};

    #[test]
    fn make_play_is_offered_only_where_it_connects() {
        let play = |addr: &str| play_command(addr.parse().unwrap());
        assert!(play("127.0.0.1:50051").starts_with("make play"));
        assert!(play("0.0.0.0:50051").starts_with("make play"));
        assert_eq!(
            play("127.0.0.1:40123"),
            "basra play --server http://127.0.0.1:40123   \
             (in this tree: cargo run -p basra -- play --server http://127.0.0.1:40123)"
        );
        assert!(play("[::]:50051").starts_with("basra play --server http://[::1]:50051"));
        assert_eq!(
            client_addr("0.0.0.0:7".parse().unwrap()).to_string(),
            "127.0.0.1:7"
        );
    }
}
