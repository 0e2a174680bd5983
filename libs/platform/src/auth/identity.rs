//! Service identity that does not expire: a calling service holds its own signing key
//! and mints its own short-lived `service` tokens ([`ServiceIdentity`]); receivers trust
//! its public key by `kid` for the `service` role only ([`TrustedKey`]). The settings
//! shapes every service shares: [`IdentitySettings`] (`[identity]`, the service's own
//! key) and [`AuthSettings`] (`[auth]`, the tokens it accepts: issuer, audience and
//! [`TrustedKeySettings`], `[[auth.trusted_keys]]`).

use std::{
    path::PathBuf,
    sync::Mutex,
    time::{Duration, Instant},
};

use serde::Deserialize;
use uuid::Uuid;

use super::{AuthError, Caller, Role, SigningKey, TokenIssuer, TokenVerifier, TrustedKey};
use crate::config::Validate;

/// A service's own signer of service tokens. Each token lives `ttl`; [`token`]
/// hands out the current one until half of its life is gone, then mints the next, so a
/// caller never sends a token close to expiry and never needs a restart.
///
/// [`token`]: ServiceIdentity::token
pub struct ServiceIdentity {
    issuer: TokenIssuer,
    caller: Caller,
    ttl: Duration,
    current: Mutex<Option<(String, Instant)>>,
}

impl ServiceIdentity {
    /// An identity signing with `key` (its `kid` goes into each token), tokens with
    /// `iss` = `issuer`, `aud` = `audience`, role `service`, living `ttl`.
    pub fn new(key: SigningKey, issuer: &str, audience: &str, ttl: Duration) -> ServiceIdentity {
        ServiceIdentity {
            issuer: TokenIssuer::new(key, issuer, audience),
            caller: Caller {
                user_id: Uuid::now_v7(),
                role: Role::Service,
                guest: false,
            },
            ttl,
            current: Mutex::new(None),
        }
    }

    /// A token to send now.
    pub fn token(&self) -> Result<String, AuthError> {
        let mut current = self
            .current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((token, minted)) = current.as_ref()
            && minted.elapsed() < self.ttl / 2
        {
            return Ok(token.clone());
        }
        let token = self.issuer.issue(&self.caller, self.ttl)?.token;
        *current = Some((token.clone(), Instant::now()));
        Ok(token)
    }

    /// The key id of the signing key.
    pub fn kid(&self) -> &str {
        self.issuer.kid()
    }

    /// The public key receivers trust (SPKI PEM).
    pub fn public_pem(&self) -> &str {
        self.issuer.public_pem()
    }

    /// What a receiver trusts for this identity: its kid, for the `service` role.
    pub fn trusted_key(&self) -> TrustedKey {
        TrustedKey {
            kid: self.kid().to_owned(),
            public_pem: self.public_pem().to_owned(),
            roles: vec![Role::Service],
        }
    }
}

impl std::fmt::Debug for ServiceIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceIdentity")
            .field("kid", &self.kid())
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// `[identity]`: the service's own signing key. game-session and matchmaking sign their
/// service tokens with it; accounts signs the players' access tokens with it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentitySettings {
    /// PKCS#8 PEM Ed25519 private key (`openssl genpkey -algorithm ed25519`); empty: no
    /// identity (the service then needs a static service token, the older way).
    #[serde(default)]
    pub signing_key_file: PathBuf,
    /// Its key id, as receivers list it in their trusted keys.
    #[serde(default)]
    pub key_id: String,
    /// Lifetime of each service token it mints.
    #[serde(default = "default_token_ttl")]
    pub token_ttl_seconds: u64,
}

fn default_token_ttl() -> u64 {
    300
}

impl Default for IdentitySettings {
    /// No key (the older static-token way, or accounts' development key).
    fn default() -> IdentitySettings {
        IdentitySettings {
            signing_key_file: PathBuf::new(),
            key_id: String::new(),
            token_ttl_seconds: default_token_ttl(),
        }
    }
}

impl IdentitySettings {
    /// The key file, if one is set.
    pub fn signing_key_file(&self) -> Option<&std::path::Path> {
        (!self.signing_key_file.as_os_str().is_empty()).then_some(self.signing_key_file.as_path())
    }

    /// The signing key the settings name, if a key file is set.
    pub fn signing_key(&self) -> Result<Option<SigningKey>, AuthError> {
        let Some(path) = self.signing_key_file() else {
            return Ok(None);
        };
        let pem = std::fs::read_to_string(path).map_err(|err| {
            AuthError::Key(format!(
                "identity.signing_key_file {}: {err}",
                path.display()
            ))
        })?;
        SigningKey::from_pem(&self.key_id, &pem).map(Some)
    }

    /// The identity these settings describe, if a key file is set.
    pub fn load(&self, issuer: &str, audience: &str) -> Result<Option<ServiceIdentity>, AuthError> {
        self.validate().map_err(AuthError::Key)?;
        let Some(key) = self.signing_key()? else {
            return Ok(None);
        };
        Ok(Some(ServiceIdentity::new(
            key,
            issuer,
            audience,
            Duration::from_secs(self.token_ttl_seconds),
        )))
    }
}

impl Validate for IdentitySettings {
    fn validate(&self) -> Result<(), String> {
        if self.signing_key_file().is_some() && self.key_id.trim().is_empty() {
            return Err("identity.key_id must be set when identity.signing_key_file is".into());
        }
        if self.token_ttl_seconds < 2 {
            return Err("identity.token_ttl_seconds must be at least 2".into());
        }
        Ok(())
    }
}

/// `[auth]`, the same in every service: the tokens it accepts — their `iss` and `aud`,
/// and the public keys it trusts, each by `kid` for one role. Rotation: add the new kid,
/// then remove the old one (no restart of the signer's peers needed in between).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    /// The `iss` tokens carry (and accounts writes into the tokens it issues).
    pub issuer: String,
    /// The `aud` tokens carry.
    pub audience: String,
    /// Public keys trusted by kid, each for one role.
    #[serde(default)]
    pub trusted_keys: Vec<TrustedKeySettings>,
}

impl AuthSettings {
    /// The verifier these settings describe (every trusted key file read).
    pub fn verifier(&self) -> Result<TokenVerifier, AuthError> {
        TokenVerifier::trusting(
            load_trusted(&self.trusted_keys)?,
            &self.issuer,
            &self.audience,
        )
    }

    /// Whether `kid` is trusted for `role`.
    pub fn trusts(&self, kid: &str, role: Role) -> bool {
        self.trusted_keys
            .iter()
            .any(|key| key.kid == kid && key.role == role)
    }
}

impl Validate for AuthSettings {
    fn validate(&self) -> Result<(), String> {
        if self.issuer.trim().is_empty() || self.audience.trim().is_empty() {
            return Err("auth.issuer and auth.audience must not be empty".into());
        }
        let mut kids = std::collections::BTreeSet::new();
        for key in &self.trusted_keys {
            if key.kid.trim().is_empty() {
                return Err("every auth.trusted_keys entry needs a kid".into());
            }
            if !kids.insert(key.kid.as_str()) {
                return Err(format!(
                    "auth.trusted_keys lists kid {:?} twice (one key, one role)",
                    key.kid
                ));
            }
        }
        Ok(())
    }
}

/// One `[[auth.trusted_keys]]`: a public key trusted by `kid` for one role.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedKeySettings {
    /// The key id tokens name.
    pub kid: String,
    /// SPKI PEM public key file.
    pub public_key_file: PathBuf,
    /// The role its tokens may carry: `player`, `service` or `operator`.
    pub role: Role,
}

/// Reads every trusted key's file.
pub fn load_trusted(keys: &[TrustedKeySettings]) -> Result<Vec<TrustedKey>, AuthError> {
    keys.iter()
        .map(|key| {
            let public_pem = std::fs::read_to_string(&key.public_key_file).map_err(|err| {
                AuthError::Key(format!(
                    "trusted key {:?}: {}: {err}",
                    key.kid,
                    key.public_key_file.display()
                ))
            })?;
            Ok(TrustedKey {
                kid: key.kid.clone(),
                public_pem,
                roles: vec![key.role],
            })
        })
        .collect()
}
