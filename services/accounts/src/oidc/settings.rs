//! `[providers]`: which identity providers accounts accepts, and how it keeps their keys.
//!
//! ```toml
//! [providers]
//! refetch_min_seconds = 60      # an unknown key id fetches the key set at most this often
//! keys_max_age_seconds = 3600   # a key set older than this is fetched again
//! fetch_timeout_ms = 5000
//!
//! [providers.apple]
//! jwks_url = "https://appleid.apple.com/auth/keys"
//! issuers = ["https://appleid.apple.com"]
//! client_ids = ["online.basra.app"]           # the app's bundle id (and Services ID)
//!
//! [providers.google]
//! jwks_url = "https://www.googleapis.com/oauth2/v3/certs"
//! issuers = ["https://accounts.google.com", "accounts.google.com"]
//! client_ids = ["1234-abc.apps.googleusercontent.com"]  # the apps' OAuth client ids
//! ```

use std::time::Duration;

use serde::Deserialize;

/// `[providers]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvidersSettings {
    /// `[providers.apple]`: Sign in with Apple; unset: off.
    #[serde(default)]
    pub apple: Option<ProviderSettings>,
    /// `[providers.google]`: Sign in with Google; unset: off.
    #[serde(default)]
    pub google: Option<ProviderSettings>,
    /// A token naming a key id the cached key set lacks fetches the set again, at most
    /// once per this many seconds per provider (a flood of forged key ids cannot make
    /// accounts hammer the provider).
    #[serde(default = "default_refetch_min_seconds")]
    pub refetch_min_seconds: u64,
    /// A cached key set older than this is fetched again before use.
    #[serde(default = "default_keys_max_age_seconds")]
    pub keys_max_age_seconds: u64,
    /// How long one fetch of a key set may take.
    #[serde(default = "default_fetch_timeout_ms")]
    pub fetch_timeout_ms: u64,
}

impl Default for ProvidersSettings {
    fn default() -> Self {
        ProvidersSettings {
            apple: None,
            google: None,
            refetch_min_seconds: default_refetch_min_seconds(),
            keys_max_age_seconds: default_keys_max_age_seconds(),
            fetch_timeout_ms: default_fetch_timeout_ms(),
        }
    }
}

fn default_refetch_min_seconds() -> u64 {
    60
}

fn default_keys_max_age_seconds() -> u64 {
    3600
}

fn default_fetch_timeout_ms() -> u64 {
    5000
}

/// `[providers.apple]`, `[providers.google]`: what a provider's ID tokens must say.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    /// Where the provider publishes its signing keys (a JWKS document): `https://`, or
    /// `http://` for a loopback host only (a test issuer).
    pub jwks_url: String,
    /// The accepted `iss` values (a TOML array, or commas in an environment variable).
    #[serde(deserialize_with = "list_or_commas")]
    pub issuers: Vec<String>,
    /// The accepted `aud` values: this game's client ids at the provider (a TOML array,
    /// or commas in an environment variable).
    #[serde(deserialize_with = "list_or_commas")]
    pub client_ids: Vec<String>,
}

/// A list of strings from a TOML array, or from one comma-separated string (as an
/// environment variable such as `BASRA_PROVIDERS__GOOGLE__CLIENT_IDS=a,b` gives it).
fn list_or_commas<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrText {
        List(Vec<String>),
        Text(String),
    }
    Ok(match ListOrText::deserialize(deserializer)? {
        ListOrText::List(list) => list,
        ListOrText::Text(text) => text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

impl ProvidersSettings {
    /// [`refetch_min_seconds`](Self::refetch_min_seconds) as a duration.
    pub fn refetch_min(&self) -> Duration {
        Duration::from_secs(self.refetch_min_seconds)
    }

    /// [`keys_max_age_seconds`](Self::keys_max_age_seconds) as a duration.
    pub fn keys_max_age(&self) -> Duration {
        Duration::from_secs(self.keys_max_age_seconds)
    }

    /// [`fetch_timeout_ms`](Self::fetch_timeout_ms) as a duration.
    pub fn fetch_timeout(&self) -> Duration {
        Duration::from_millis(self.fetch_timeout_ms)
    }

    /// Checks every provider's settings; the message names the offending key.
    pub fn validate(&self) -> Result<(), String> {
        if self.keys_max_age_seconds == 0 {
            return Err("providers.keys_max_age_seconds must be at least 1".into());
        }
        if !(1..=60_000).contains(&self.fetch_timeout_ms) {
            return Err(format!(
                "providers.fetch_timeout_ms must be between 1 and 60000, not {}",
                self.fetch_timeout_ms
            ));
        }
        for (name, provider) in [("apple", &self.apple), ("google", &self.google)] {
            if let Some(p) = provider {
                p.validate()
                    .map_err(|reason| format!("providers.{name}.{reason}"))?;
            }
        }
        Ok(())
    }
}

impl ProviderSettings {
    fn validate(&self) -> Result<(), String> {
        crate::oidc::fetch::check_url(&self.jwks_url).map_err(|e| format!("jwks_url: {e}"))?;
        if self.issuers.is_empty() || self.issuers.iter().any(String::is_empty) {
            return Err("issuers: list at least one issuer, none empty".into());
        }
        if self.client_ids.is_empty() || self.client_ids.iter().any(String::is_empty) {
            return Err("client_ids: list at least one client id, none empty".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn google(url: &str) -> ProviderSettings {
        ProviderSettings {
            jwks_url: url.into(),
            issuers: vec!["https://accounts.google.com".into()],
            client_ids: vec!["app".into()],
        }
    }

    #[test]
    fn a_provider_is_configured_by_environment_variables() {
        let env = [
            (
                "BASRA_PROVIDERS__GOOGLE__JWKS_URL",
                "https://www.googleapis.com/oauth2/v3/certs",
            ),
            (
                "BASRA_PROVIDERS__GOOGLE__ISSUERS",
                "https://accounts.google.com,accounts.google.com",
            ),
            (
                "BASRA_PROVIDERS__GOOGLE__CLIENT_IDS",
                "a.apps.googleusercontent.com",
            ),
            ("BASRA_PROVIDERS__REFETCH_MIN_SECONDS", "30"),
        ];
        let settings =
            crate::Settings::from_env(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
                .unwrap();
        let google = settings.providers.google.unwrap();
        assert_eq!(
            google.issuers,
            ["https://accounts.google.com", "accounts.google.com"]
        );
        assert_eq!(google.client_ids, ["a.apps.googleusercontent.com"]);
        assert!(settings.providers.apple.is_none());
        assert_eq!(settings.providers.refetch_min_seconds, 30);
        // The embedded defaults: every provider off.
        let defaults = crate::Settings::from_env(Vec::new()).unwrap();
        assert!(defaults.providers.google.is_none() && defaults.providers.apple.is_none());
    }

    #[test]
    fn urls_must_be_https_or_loopback_http() {
        let mut s = ProvidersSettings::default();
        assert!(s.validate().is_ok());
        s.google = Some(google("https://www.googleapis.com/oauth2/v3/certs"));
        assert!(s.validate().is_ok());
        s.google = Some(google("http://127.0.0.1:8080/jwks"));
        assert!(s.validate().is_ok());
        s.google = Some(google("http://keys.example.com/jwks"));
        let err = s.validate().unwrap_err();
        assert!(err.starts_with("providers.google.jwks_url"), "{err}");
        s.google = Some(ProviderSettings {
            client_ids: Vec::new(),
            ..google("https://www.googleapis.com/oauth2/v3/certs")
        });
        let err = s.validate().unwrap_err();
        assert!(err.starts_with("providers.google.client_ids"), "{err}");
    }
}
