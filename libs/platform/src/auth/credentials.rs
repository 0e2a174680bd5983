//! The token a service presents when it calls another service (role `service`), chosen
//! once from its settings the same way in every service: tokens minted by its own key
//! (`[identity]`, preferred: they never go stale) or else a fixed token from a setting.

use std::sync::Arc;
use std::time::Duration;

use super::{Caller, ServiceIdentity, TokenIssuer};
use crate::config::ConfigError;

/// How a service gets the token it presents to another service.
#[derive(Clone)]
pub enum ServiceCredentials {
    /// A fixed token (from the settings; it expires with the token).
    Static(String),
    /// Fresh tokens from an issuer (the one-process dev mode, tests).
    Issuer(Arc<TokenIssuer>, Caller),
    /// Tokens minted by the service's own key, fresh before they expire.
    Identity(Arc<ServiceIdentity>),
}

impl std::fmt::Debug for ServiceCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token itself.
        f.write_str(match self {
            ServiceCredentials::Static(_) => "ServiceCredentials::Static",
            ServiceCredentials::Issuer(..) => "ServiceCredentials::Issuer",
            ServiceCredentials::Identity(_) => "ServiceCredentials::Identity",
        })
    }
}

impl ServiceCredentials {
    /// The credentials for calling `callee`: the service's own key when it has one
    /// (`identity`, from `[identity]`), else the fixed token of the setting `static_key`
    /// (`static_token`); a bad setting naming both when neither is set.
    pub fn choose(
        identity: Option<&Arc<ServiceIdentity>>,
        static_token: &str,
        static_key: &str,
        callee: &str,
    ) -> Result<ServiceCredentials, ConfigError> {
        match identity {
            Some(identity) => Ok(ServiceCredentials::Identity(Arc::clone(identity))),
            None if !static_token.is_empty() => {
                Ok(ServiceCredentials::Static(static_token.to_owned()))
            }
            None => Err(ConfigError::invalid(format!(
                "no credentials for {callee}: set identity.signing_key_file (preferred) or \
                 {static_key}"
            ))),
        }
    }

    /// A token to present now; `None` (logged) when one cannot be minted.
    pub fn token(&self) -> Option<String> {
        match self {
            ServiceCredentials::Static(token) => Some(token.clone()),
            ServiceCredentials::Issuer(issuer, caller) => issuer
                .issue(caller, Duration::from_secs(300))
                .map(|issued| issued.token)
                .map_err(|err| tracing::error!(error = %err, "cannot issue a service token"))
                .ok(),
            ServiceCredentials::Identity(identity) => identity
                .token()
                .map_err(|err| tracing::error!(error = %err, "cannot mint a service token"))
                .ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_token_serves_only_without_a_key_and_neither_is_a_bad_setting() {
        let fixed = ServiceCredentials::choose(None, "t0ken", "game.service_token", "game-session")
            .unwrap();
        assert_eq!(fixed.token().as_deref(), Some("t0ken"));
        assert_eq!(format!("{fixed:?}"), "ServiceCredentials::Static");
        let ConfigError::Invalid(message) =
            ServiceCredentials::choose(None, "", "game.service_token", "game-session").unwrap_err()
        else {
            panic!("not a bad setting");
        };
        assert_eq!(
            message,
            "no credentials for game-session: set identity.signing_key_file (preferred) or \
             game.service_token"
        );
    }
}
