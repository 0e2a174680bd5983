//! Sign-in with an identity provider (Sign in with Apple, Sign in with Google) through
//! OpenID Connect ID tokens.
//!
//! The app signs the player in with the provider and sends accounts the ID token (a JWT
//! signed by the provider) with the nonce it used. [`Providers::verify`] checks the token
//! against the provider's published keys and answers the provider's subject (`sub`), the
//! stable id of the player at the provider; the store keeps one account per (provider,
//! subject).
//!
//! - [`settings`]: `[providers.apple]`, `[providers.google]` (a provider without settings
//!   is off) and how keys are cached;
//! - [`verify`]: the checks of one token with a known key (pure: no I/O);
//! - [`keys`]: each provider's key set (JWKS), cached, fetched again when a token names an
//!   unknown key id (at most once per `refetch_min_seconds`) or when it is older than
//!   `keys_max_age_seconds`;
//! - [`fetch`]: the HTTPS (or, for a loopback test issuer, HTTP) GET of a key set.

use std::sync::Arc;

use basra_proto::basra::accounts::v1 as pb;

pub mod fetch;
pub mod keys;
pub mod settings;
pub mod verify;

pub use settings::{ProviderSettings, ProvidersSettings};
pub use verify::{MAX_ID_TOKEN_BYTES, MAX_NONCE_CHARS};

use crate::error::{AccountsError, Result};
use keys::KeyCache;

/// An identity provider accounts accepts ID tokens of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
    /// Sign in with Apple.
    Apple,
    /// Sign in with Google.
    Google,
}

impl Provider {
    /// Every provider.
    pub const ALL: [Provider; 2] = [Provider::Apple, Provider::Google];

    /// Its name in the database and in settings (`apple`, `google`).
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Apple => "apple",
            Provider::Google => "google",
        }
    }

    /// Its name in messages (`Apple`, `Google`).
    pub fn title(self) -> &'static str {
        match self {
            Provider::Apple => "Apple",
            Provider::Google => "Google",
        }
    }

    /// The provider named `name` (as [`Provider::as_str`] writes it).
    pub fn from_name(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// The provider of a request's `provider` field. Errors: INVALID_ARGUMENT when it is
    /// unset or unknown.
    pub fn from_proto(value: i32) -> Result<Provider> {
        match pb::IdentityProvider::try_from(value) {
            Ok(pb::IdentityProvider::Apple) => Ok(Provider::Apple),
            Ok(pb::IdentityProvider::Google) => Ok(Provider::Google),
            _ => Err(AccountsError::invalid(
                "provider",
                "must be IDENTITY_PROVIDER_APPLE or IDENTITY_PROVIDER_GOOGLE",
            )),
        }
    }

    /// The message of a sign-in with a provider this server has no settings for.
    fn disabled(self) -> &'static str {
        match self {
            Provider::Apple => "Sign in with Apple is not enabled on this server",
            Provider::Google => "Sign in with Google is not enabled on this server",
        }
    }
}

/// A player at a provider: who a verified ID token names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProviderIdentity {
    /// Which provider verified them (Apple, Google, …).
    pub provider: Provider,
    /// The token's `sub`: the player's stable id at the provider (1..255 characters).
    pub subject: String,
}

/// One enabled provider: what its tokens must say, and its keys.
#[derive(Debug)]
struct Issuer {
    settings: ProviderSettings,
    keys: KeyCache,
}

/// The providers this server accepts, each with its cached keys. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Providers {
    apple: Option<Arc<Issuer>>,
    google: Option<Arc<Issuer>>,
}

impl Providers {
    /// No provider: every provider sign-in is answered FAILED_PRECONDITION.
    pub fn none() -> Providers {
        Providers::default()
    }

    /// The providers `settings` configures (checked by [`ProvidersSettings::validate`]).
    pub fn new(settings: &ProvidersSettings) -> Result<Providers> {
        let fetcher = fetch::Fetcher::new(settings.fetch_timeout())?;
        let issuer = |s: &Option<ProviderSettings>| {
            s.as_ref().map(|s| {
                Arc::new(Issuer {
                    keys: KeyCache::new(
                        s.jwks_url.clone(),
                        fetcher.clone(),
                        settings.refetch_min(),
                        settings.keys_max_age(),
                    ),
                    settings: s.clone(),
                })
            })
        };
        Ok(Providers {
            apple: issuer(&settings.apple),
            google: issuer(&settings.google),
        })
    }

    fn issuer(&self, provider: Provider) -> Option<&Issuer> {
        match provider {
            Provider::Apple => self.apple.as_deref(),
            Provider::Google => self.google.as_deref(),
        }
    }

    /// The providers that are on (`apple`, `google`), for the start-up log.
    pub fn enabled(&self) -> Vec<&'static str> {
        Provider::ALL
            .into_iter()
            .filter(|p| self.issuer(*p).is_some())
            .map(Provider::as_str)
            .collect()
    }

    /// Checks `id_token` of `provider` for `nonce` and answers whom it names. Errors:
    /// INVALID_ARGUMENT (an empty or too long token or nonce), FAILED_PRECONDITION (the
    /// provider is off), UNAUTHENTICATED (the token is refused: the message says why),
    /// UNAVAILABLE (the provider's keys cannot be fetched).
    pub async fn verify(
        &self,
        provider: Provider,
        id_token: &str,
        nonce: &str,
    ) -> Result<ProviderIdentity> {
        verify::check_input(id_token, nonce)?;
        let issuer = self
            .issuer(provider)
            .ok_or(AccountsError::Precondition(provider.disabled()))?;
        let kid = verify::key_id(id_token).map_err(refused)?;
        let key = issuer.keys.key(&kid).await?;
        let subject = verify::check(
            id_token,
            &key,
            &verify::Expected {
                issuers: &issuer.settings.issuers,
                audiences: &issuer.settings.client_ids,
                nonce,
            },
        )
        .map_err(refused)?;
        Ok(ProviderIdentity { provider, subject })
    }
}

fn refused(rejection: verify::Rejection) -> AccountsError {
    tracing::info!(%rejection, "provider ID token refused");
    AccountsError::Unauthenticated(format!("the ID token is refused: {rejection}"))
}
