//! The Kubernetes settings files are the services' typed settings: each ConfigMap's
//! `config.toml` (deploy/k8s/base/<service>/config.toml), with the `BASRA_…` variables its
//! Deployment sets, loads and validates through the service's own loader — so a key the
//! service does not know, a bad value or a misspelt variable fails here, not in a pod.

use std::path::{Path, PathBuf};

use basra_platform::config::{CONFIG_FILE_VAR, load_with_env};

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/k8s/base")
        .join(path)
}

/// A value of the `basra-environment` ConfigMap an overlay generates (`- key=value`).
fn overlay_environment(overlay: &str, key: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/k8s/overlays")
        .join(overlay)
        .join("kustomization.yaml");
    let text = std::fs::read_to_string(&path).expect("the overlay");
    text.lines()
        .find_map(|line| line.trim().strip_prefix(&format!("- {key}=")))
        .unwrap_or_else(|| panic!("{key} in {}", path.display()))
        .to_owned()
}

/// The environment a service's pod gets: the settings file, and every `BASRA_…` variable
/// its Deployment names (values from Secrets and the pod stood in for here; those of the
/// `basra-environment` ConfigMap as the dev overlay generates them).
pub(crate) fn pod_env(service: &str) -> Vec<(String, String)> {
    let deployment = std::fs::read_to_string(deploy(&format!("{service}/deployment.yaml")))
        .expect("deployment.yaml");
    let mut env = vec![(
        CONFIG_FILE_VAR.to_owned(),
        deploy(&format!("{service}/config.toml"))
            .display()
            .to_string(),
    )];
    for line in deployment.lines() {
        let Some(name) = line.trim().strip_prefix("- name: BASRA_") else {
            continue;
        };
        let name = format!("BASRA_{name}");
        if name == CONFIG_FILE_VAR {
            continue;
        }
        let value = if name.ends_with("DATABASE__URL") || name.ends_with("__DATABASE_URL") {
            "postgres://basra@postgres:5432/basra".to_owned()
        } else if name.ends_with("__URL") {
            "redis://redis:6379".to_owned()
        } else if name.ends_with("__ALLOWED_ORIGINS") {
            overlay_environment("dev", "allowed_origins")
        } else if name.ends_with("__OTLP_ENDPOINT") {
            overlay_environment("dev", "otlp_endpoint")
        } else {
            "stand-in".to_owned()
        };
        env.push((name, value));
    }
    assert!(env.len() > 1, "{service}: no BASRA_ variables found");
    env
}

#[test]
fn the_accounts_configmap_loads_as_its_settings() {
    let settings: accounts::Settings =
        load_with_env(accounts::settings::DEFAULTS, pod_env("accounts")).expect("valid");
    assert_eq!(settings.server.listen.port(), 50051);
    assert!(!settings.database.migrate, "the migration Job migrates");
    assert_eq!(settings.metrics.listen, "0.0.0.0:9100");
}

#[test]
fn the_matchmaking_configmap_loads_as_its_settings() {
    let settings: matchmaking::settings::Settings =
        load_with_env(matchmaking::settings::DEFAULTS, pod_env("matchmaking")).expect("valid");
    assert_eq!(settings.server.listen.port(), 50052);
    assert_eq!(settings.game.url, "http://game-session:50053");
    assert_eq!(settings.accounts.url, "http://accounts:50051");
    assert_eq!(settings.metrics.listen, "0.0.0.0:9100");
}

#[test]
fn the_game_session_configmap_loads_as_its_settings() {
    let settings: game_session::Settings =
        load_with_env(game_session::settings::DEFAULTS, pod_env("game-session")).expect("valid");
    assert_eq!(settings.server.listen.port(), 50053);
    assert_eq!(settings.game.replica, "stand-in", "the pod name");
    assert_eq!(settings.accounts.url, "http://accounts:50051");
    assert_eq!(settings.metrics.listen, "0.0.0.0:9100");
}

/// Each caller's own key is trusted by its receiver, for the `service` role: matchmaking's
/// by game-session (CreateRoom, SeatPlayer, GetSeat) and accounts (GetPlayers),
/// game-session's by accounts (RecordMatch, GetPlayers).
#[test]
fn each_callers_identity_is_trusted_by_its_receiver() {
    use basra_platform::auth::Role;
    let accounts: accounts::Settings =
        load_with_env(accounts::settings::DEFAULTS, pod_env("accounts")).unwrap();
    let matchmaking: matchmaking::settings::Settings =
        load_with_env(matchmaking::settings::DEFAULTS, pod_env("matchmaking")).unwrap();
    let game: game_session::Settings =
        load_with_env(game_session::settings::DEFAULTS, pod_env("game-session")).unwrap();
    assert!(game.auth.trusts(&accounts.identity.key_id, Role::Player));
    assert!(
        matchmaking
            .auth
            .trusts(&accounts.identity.key_id, Role::Player)
    );
}

/// `[auth]`, `[identity]` and `[redis]` are one shape in every service: the platform's
/// structs (this stops compiling when a service grows its own), loaded here from each
/// ConfigMap.
#[test]
fn auth_identity_and_redis_are_one_shape_in_every_service() {
    fn same<T>(_: &T, _: &T) {}
    let accounts: accounts::Settings =
        load_with_env(accounts::settings::DEFAULTS, pod_env("accounts")).unwrap();
    let matchmaking: matchmaking::settings::Settings =
        load_with_env(matchmaking::settings::DEFAULTS, pod_env("matchmaking")).unwrap();
    let game: game_session::Settings =
        load_with_env(game_session::settings::DEFAULTS, pod_env("game-session")).unwrap();
    same(&accounts.auth, &game.auth);
    same(&game.auth, &matchmaking.auth);
    same(&accounts.identity, &game.identity);
    same(&game.identity, &matchmaking.identity);
    same(&game.redis, &matchmaking.redis);
    assert_eq!(accounts.auth.issuer, game.auth.issuer);
    assert_eq!(game.auth.issuer, matchmaking.auth.issuer);
    assert_eq!(game.redis.url, matchmaking.redis.url, "one Redis Secret");
    // What the services share (the banned and deleted accounts) lives under one prefix,
    // whatever each one's own; accounts kept it under its own prefix before the setting,
    // so a running deployment's list keeps counting.
    assert_eq!(accounts.redis.shared_prefix, game.redis.shared_prefix);
    assert_eq!(
        accounts.redis.shared_prefix,
        matchmaking.redis.shared_prefix
    );
    assert_eq!(accounts.redis.shared_prefix, accounts.redis.prefix);
}
