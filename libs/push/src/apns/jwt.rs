//! APNs's token-based provider authentication: a JWT signed ES256 with the team's `.p8`
//! key, header `{"alg": "ES256", "kid": key id}`, claims `{"iss": team id, "iat": now}`,
//! sent as `authorization: bearer <JWT>`.
//!
//! Apple rejects a token older than an hour (`ExpiredProviderToken`) and one replaced more
//! often than every 20 minutes (`TooManyProviderTokenUpdates`). So one token serves every
//! request for [`REUSE_FOR`] (50 minutes), then the next request signs a new one. A request
//! answered `ExpiredProviderToken` replaces the token it carried at once — unless it was
//! already replaced (a concurrent request did it) or the last such forced replacement is
//! less than [`MIN_FORCED_INTERVAL`] old: then the clock or the key is wrong, and signing
//! again would only add `TooManyProviderTokenUpdates`.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use crate::clock::{Clock, unix_seconds};
use crate::error::PushError;

/// How long one provider token is used.
pub(crate) const REUSE_FOR: Duration = Duration::from_secs(50 * 60);
/// The least time between two replacements forced by `ExpiredProviderToken`.
pub(crate) const MIN_FORCED_INTERVAL: Duration = Duration::from_secs(20 * 60);

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    iat: u64,
}

/// A token in use, and its generation (to replace exactly it).
#[derive(Debug, Clone)]
pub(crate) struct ProviderToken {
    pub(crate) value: Arc<str>,
    pub(crate) generation: u64,
}

#[derive(Default)]
struct State {
    current: Option<(ProviderToken, SystemTime)>,
    signed: u64,
    last_forced: Option<SystemTime>,
}

/// The provider tokens of one key.
pub(crate) struct ProviderTokens {
    key: EncodingKey,
    key_id: String,
    team_id: String,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

impl fmt::Debug for ProviderTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderTokens")
            .field("key_id", &self.key_id)
            .field("team_id", &self.team_id)
            .field("key", &"(secret)")
            .finish_non_exhaustive()
    }
}

impl ProviderTokens {
    /// Reads the `.p8` key at `path`. Errors never quote the file.
    pub(crate) fn from_file(
        path: &Path,
        key_id: &str,
        team_id: &str,
        clock: Arc<dyn Clock>,
    ) -> Result<ProviderTokens, PushError> {
        let pem = std::fs::read(path).map_err(|source| PushError::Read {
            what: "APNs key file",
            path: path.to_owned(),
            source,
        })?;
        let key = EncodingKey::from_ec_pem(&pem).map_err(|_| {
            PushError::Invalid(format!(
                "push.apns.key_file {}: not a P-256 private key in PKCS#8 PEM (an AuthKey_….p8 file)",
                path.display()
            ))
        })?;
        let tokens = ProviderTokens {
            key,
            key_id: key_id.to_owned(),
            team_id: team_id.to_owned(),
            clock,
            state: Mutex::new(State::default()),
        };
        // Sign once now: a key that parses but cannot sign fails here, not at the first push.
        let mut state = tokens.lock();
        tokens.sign(&mut state)?;
        drop(state);
        Ok(tokens)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The token to send with: the current one while younger than [`REUSE_FOR`], else a
    /// new one.
    pub(crate) fn get(&self) -> Result<ProviderToken, PushError> {
        let mut state = self.lock();
        let now = self.clock.now();
        if let Some((token, issued)) = &state.current
            // A clock that went back leaves the token in use.
            && now.duration_since(*issued).unwrap_or_default() < REUSE_FOR
        {
            return Ok(token.clone());
        }
        self.sign(&mut state)
    }

    /// APNs answered `ExpiredProviderToken` to a request carrying `used`: the token to try
    /// once more with, or why there is none.
    pub(crate) fn replace_expired(&self, used: &ProviderToken) -> Result<ProviderToken, String> {
        let mut state = self.lock();
        if let Some((current, _)) = &state.current
            && current.generation != used.generation
        {
            return Ok(current.clone());
        }
        let now = self.clock.now();
        if let Some(last) = state.last_forced
            && now.duration_since(last).unwrap_or_default() < MIN_FORCED_INTERVAL
        {
            return Err(format!(
                "the provider token was replaced after ExpiredProviderToken less than {} minutes ago: check the clock and push.apns.key_id",
                MIN_FORCED_INTERVAL.as_secs() / 60
            ));
        }
        state.last_forced = Some(now);
        self.sign(&mut state).map_err(|e| e.to_string())
    }

    fn sign(&self, state: &mut State) -> Result<ProviderToken, PushError> {
        let now = self.clock.now();
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        let claims = Claims {
            iss: &self.team_id,
            iat: unix_seconds(now),
        };
        let value = jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| PushError::Invalid(format!("signing the APNs provider token: {e}")))?;
        state.signed += 1;
        let token = ProviderToken {
            value: Arc::from(value),
            generation: state.signed,
        };
        state.current = Some((token.clone(), now));
        tracing::debug!(generation = state.signed, "apns provider token signed");
        Ok(token)
    }
}
