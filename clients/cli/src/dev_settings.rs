//! The settings of the three services `basra dev` runs in one process.
//!
//! Each service reads `BASRA_<SECTION>__<KEY>` variables when it runs alone. In one process
//! those would be read by all three, and each refuses the others' sections, so `basra dev`
//! gives every service a prefix of its own: `BASRA_ACCOUNTS_…`, `BASRA_MATCHMAKING_…` and
//! `BASRA_GAME_SESSION_…` (e.g. `BASRA_GAME_SESSION_REDIS__PREFIX=mine`), and
//! `BASRA_<SERVICE>_CONFIG_FILE` names a settings file for one service. A plain
//! `BASRA_<SECTION>__<KEY>` is refused with a message saying which prefix to use.

use std::collections::BTreeMap;

/// The per-service variable prefixes, with the service each one is for.
pub const PREFIXES: [(&str, &str); 3] = [
    ("BASRA_ACCOUNTS_", "accounts"),
    ("BASRA_MATCHMAKING_", "matchmaking"),
    ("BASRA_GAME_SESSION_", "game-session"),
];

/// The settings of the three services.
#[derive(Debug, Clone)]
pub struct DevSettings {
    /// accounts' settings, before `basra dev` gives it the development keys and stores.
    pub accounts: accounts::Settings,
    /// matchmaking's settings, before `basra dev` points it at the one port.
    pub matchmaking: matchmaking::settings::Settings,
    /// game-session's settings, before `basra dev` points it at the one port.
    pub game_session: game_session::Settings,
}

/// Why the settings could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum DevSettingsError {
    /// A variable without a service prefix.
    #[error(
        "{0} would be read by all three services: in `basra dev` prefix it with the service it \
         is for, e.g. BASRA_GAME_SESSION_{1} (or BASRA_ACCOUNTS_…, BASRA_MATCHMAKING_…)"
    )]
    Unprefixed(String, String),
    /// The services name different keys for what they share (`redis.shared_prefix`).
    #[error(
        "redis.shared_prefix must be one value for the three services (accounts {accounts:?}, \
         matchmaking {matchmaking:?}, game-session {game_session:?}): set \
         BASRA_ACCOUNTS_REDIS__SHARED_PREFIX, BASRA_MATCHMAKING_REDIS__SHARED_PREFIX and \
         BASRA_GAME_SESSION_REDIS__SHARED_PREFIX alike, or none of them"
    )]
    SharedPrefix {
        /// accounts' value.
        accounts: String,
        /// matchmaking's value.
        matchmaking: String,
        /// game-session's value.
        game_session: String,
    },
    /// One service refused its settings.
    #[error("{service}: {source}")]
    Service {
        /// Which service (its settings' section name).
        service: &'static str,
        /// Why.
        source: basra_platform::config::ConfigError,
    },
}

impl DevSettings {
    /// The settings from `vars` (the process environment, in `basra dev`).
    pub fn from_env(
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<DevSettings, DevSettingsError> {
        let vars: BTreeMap<String, String> = vars.into_iter().collect();
        if let Some(plain) = vars.keys().find(|key| is_unprefixed(key)) {
            let rest = plain.trim_start_matches("BASRA_").to_owned();
            return Err(DevSettingsError::Unprefixed(plain.clone(), rest));
        }
        let failed =
            |service: &'static str| move |source| DevSettingsError::Service { service, source };
        // On a local backend a player is on the leaderboard from the first ranked match
        // (a default: the variables may say otherwise).
        let mut accounts_env = vec![(
            "BASRA_LEADERBOARD__MIN_RANKED_MATCHES".to_owned(),
            "1".to_owned(),
        )];
        accounts_env.extend(service_env(&vars, PREFIXES[0].0));
        let settings = DevSettings {
            accounts: accounts::Settings::from_env(accounts_env).map_err(failed("accounts"))?,
            matchmaking: matchmaking::settings::Settings::from_env(service_env(
                &vars,
                PREFIXES[1].0,
            ))
            .map_err(failed("matchmaking"))?,
            game_session: game_session::Settings::from_env(service_env(&vars, PREFIXES[2].0))
                .map_err(failed("game-session"))?,
        };
        // What accounts writes for all (the banned and deleted accounts) every service
        // must read under the same key.
        let shared = [
            &settings.accounts.redis.shared_prefix,
            &settings.matchmaking.redis.shared_prefix,
            &settings.game_session.redis.shared_prefix,
        ];
        if shared.iter().any(|prefix| *prefix != shared[0]) {
            return Err(DevSettingsError::SharedPrefix {
                accounts: shared[0].clone(),
                matchmaking: shared[1].clone(),
                game_session: shared[2].clone(),
            });
        }
        Ok(settings)
    }
}

/// A `BASRA_…` variable that would be a service setting but names no service.
fn is_unprefixed(key: &str) -> bool {
    key.starts_with("BASRA_")
        && !key.starts_with("BASRA_DEV_")
        && !PREFIXES.iter().any(|(prefix, _)| key.starts_with(prefix))
        && (key.contains("__") || key == basra_platform::config::CONFIG_FILE_VAR)
}

/// One service's variables, named as that service reads them alone:
/// `BASRA_GAME_SESSION_REDIS__PREFIX` → `BASRA_REDIS__PREFIX`.
fn service_env(vars: &BTreeMap<String, String>, prefix: &str) -> Vec<(String, String)> {
    vars.iter()
        .filter_map(|(key, value)| {
            let rest = key.strip_prefix(prefix)?;
            Some((format!("BASRA_{rest}"), value.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn each_service_reads_its_own_prefix() {
        let settings = DevSettings::from_env(env(&[
            ("BASRA_GAME_SESSION_REDIS__PREFIX", "gs-mine"),
            ("BASRA_MATCHMAKING_REDIS__PREFIX", "mm-mine"),
            ("BASRA_ACCOUNTS_LEADERBOARD__MIN_RANKED_MATCHES", "3"),
            ("BASRA_DEV_REDIS_URL", "redis://127.0.0.1:6379"),
            ("PATH", "/usr/bin"),
        ]))
        .unwrap();
        assert_eq!(settings.game_session.redis.prefix, "gs-mine");
        assert_eq!(settings.matchmaking.redis.prefix, "mm-mine");
        assert_eq!(settings.accounts.leaderboard.min_ranked_matches, 3);
    }

    #[test]
    fn the_dev_leaderboard_default_applies_when_nothing_says_otherwise() {
        let settings = DevSettings::from_env(env(&[])).unwrap();
        assert_eq!(settings.accounts.leaderboard.min_ranked_matches, 1);
    }

    #[test]
    fn a_plain_variable_is_refused_with_the_prefix_to_use() {
        let err = DevSettings::from_env(env(&[("BASRA_REDIS__PREFIX", "x")])).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("BASRA_REDIS__PREFIX"), "{message}");
        assert!(
            message.contains("BASRA_GAME_SESSION_REDIS__PREFIX"),
            "{message}"
        );
    }

    #[test]
    fn the_shared_prefix_is_one_value_for_the_three_services() {
        let settings = DevSettings::from_env(env(&[])).unwrap();
        assert_eq!(settings.matchmaking.redis.shared_prefix, "basra");
        assert_eq!(settings.game_session.redis.shared_prefix, "basra");
        let err = DevSettings::from_env(env(&[("BASRA_ACCOUNTS_REDIS__SHARED_PREFIX", "mine")]))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("BASRA_MATCHMAKING_REDIS__SHARED_PREFIX"),
            "{err}"
        );
        let settings = DevSettings::from_env(env(&[
            ("BASRA_ACCOUNTS_REDIS__SHARED_PREFIX", "mine"),
            ("BASRA_MATCHMAKING_REDIS__SHARED_PREFIX", "mine"),
            ("BASRA_GAME_SESSION_REDIS__SHARED_PREFIX", "mine"),
        ]))
        .unwrap();
        assert_eq!(settings.accounts.redis.shared_prefix, "mine");
    }

    #[test]
    fn a_bad_value_names_the_service() {
        let err = DevSettings::from_env(env(&[("BASRA_MATCHMAKING_SERVER__DRAIN_SECONDS", "x")]))
            .unwrap_err();
        assert!(err.to_string().starts_with("matchmaking:"), "{err}");
    }
}
