//! Service identity that does not expire: a calling service holds its own signing key
//! and mints its own short-lived `service` tokens ([`ServiceIdentity`]); receivers trust
//! its public key by `kid` for the `service` role only ([`TrustedKey`]). The settings
//! shapes every service shares: [`IdentitySettings`] (`[identity]`) and
//! [`TrustedKeySettings`] (`[[auth.trusted_keys]]`).

use std::{
    path::PathBuf,
    sync::Mutex,
    time::{Duration, Instant},
};

use serde::Deserialize;
use uuid::Uuid;

use super::{AuthError, Caller, Role, SigningKey, TokenIssuer, TrustedKey};

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

/// `[identity]`: the calling service's own signing key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
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

impl IdentitySettings {
    /// The identity these settings describe, if a key file is set.
    pub fn load(&self, issuer: &str, audience: &str) -> Result<Option<ServiceIdentity>, AuthError> {
        if self.signing_key_file.as_os_str().is_empty() {
            return Ok(None);
        }
        let pem = std::fs::read_to_string(&self.signing_key_file).map_err(|err| {
            AuthError::Key(format!(
                "identity.signing_key_file {}: {err}",
                self.signing_key_file.display()
            ))
        })?;
        if self.token_ttl_seconds < 2 {
            return Err(AuthError::Key(
                "identity.token_ttl_seconds must be at least 2".into(),
            ));
        }
        let key = SigningKey::from_pem(&self.key_id, &pem)?;
        Ok(Some(ServiceIdentity::new(
            key,
            issuer,
            audience,
            Duration::from_secs(self.token_ttl_seconds),
        )))
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
