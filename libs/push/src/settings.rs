//! [`PushSettings`]: which providers are on, their endpoints, the files their
//! credentials are read from, and limits. A service embeds it as its `[push]` section.
//!
//! The credential files are Secrets (a Kubernetes Secret mounted as files, never in a
//! ConfigMap, never logged): FCM's service account JSON and APNs's `.p8` signing key
//! (both hold a private key). Their contents never appear in a `Debug` output, a log or an
//! [`Outcome`](crate::Outcome). APNs's key id and team id are not secret.

use std::path::PathBuf;

use http::Uri;
use serde::Deserialize;

/// FCM's HTTP v1 API.
pub const FCM_ENDPOINT: &str = "https://fcm.googleapis.com";
/// The OAuth 2 scope an FCM access token is asked for.
pub const FCM_SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
/// APNs's production endpoint.
pub const APNS_PRODUCTION: &str = "https://api.push.apple.com";
/// APNs's development endpoint (apps signed for development register sandbox tokens).
pub const APNS_SANDBOX: &str = "https://api.sandbox.push.apple.com";

/// The providers a [`Pusher`](crate::Pusher) sends through; a platform whose section is
/// absent answers [`Outcome::Misconfigured`](crate::Outcome::Misconfigured).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushSettings {
    /// Firebase Cloud Messaging (Android).
    #[serde(default)]
    pub fcm: Option<FcmSettings>,
    /// The Apple Push Notification service (iOS).
    #[serde(default)]
    pub apns: Option<ApnsSettings>,
}

impl PushSettings {
    /// `Err` naming the bad key (`push.fcm.max_in_flight must be at least 1`).
    pub fn validate(&self) -> Result<(), String> {
        if let Some(fcm) = &self.fcm {
            fcm.validate()?;
        }
        if let Some(apns) = &self.apns {
            apns.validate()?;
        }
        Ok(())
    }
}

/// Firebase Cloud Messaging, HTTP v1.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FcmSettings {
    /// The service account's JSON key file, as the Firebase console downloads it
    /// (`project_id`, `private_key_id`, `private_key`, `client_email`, `token_uri`).
    /// A Secret.
    pub service_account_file: PathBuf,
    /// The project messages are sent in; empty: the service account's `project_id`.
    #[serde(default)]
    pub project_id: String,
    /// Where the v1 API is (`{endpoint}/v1/projects/{project}/messages:send`); tests point
    /// it at a local stand-in (`http://` is allowed for a loopback host only).
    #[serde(default = "default_fcm_endpoint")]
    pub endpoint: String,
    /// Google's OAuth 2 token endpoint; empty: the service account's `token_uri`. It is
    /// also the JWT's audience.
    #[serde(default)]
    pub token_url: String,
    /// At most this many FCM requests in flight (the others wait their turn).
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// Each request (token or send) is abandoned after this long: retry later.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// A PEM file of extra CA certificates to trust beside the public roots (a test CA,
    /// an egress proxy's); empty: the public roots only.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

impl FcmSettings {
    /// Settings for the service account in `service_account_file`, everything else the
    /// defaults.
    pub fn new(service_account_file: impl Into<PathBuf>) -> FcmSettings {
        FcmSettings {
            service_account_file: service_account_file.into(),
            project_id: String::new(),
            endpoint: default_fcm_endpoint(),
            token_url: String::new(),
            max_in_flight: default_max_in_flight(),
            timeout_ms: default_timeout_ms(),
            ca_file: None,
        }
    }

    /// `Err` naming the bad key.
    pub fn validate(&self) -> Result<(), String> {
        check_url(&self.endpoint).map_err(|e| format!("push.fcm.endpoint: {e}"))?;
        if !self.token_url.is_empty() {
            check_url(&self.token_url).map_err(|e| format!("push.fcm.token_url: {e}"))?;
        }
        check_limits("push.fcm", self.max_in_flight, self.timeout_ms)
    }
}

/// Which APNs a deployment sends to. A device token belongs to one of them: a token of
/// a development build sent to production is answered `BadDeviceToken` (and removed), so
/// a deployment's apps and its environment must match.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApnsEnvironment {
    /// `api.push.apple.com`: App Store and TestFlight builds.
    #[default]
    Production,
    /// `api.sandbox.push.apple.com`: development builds.
    Sandbox,
}

/// The Apple Push Notification service, token-based provider authentication.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApnsSettings {
    /// The `.p8` signing key downloaded from the Apple Developer account (a P-256 private
    /// key in PKCS#8 PEM). A Secret.
    pub key_file: PathBuf,
    /// The key's id (10 characters, shown beside the key in the developer account): the
    /// JWT's `kid`.
    pub key_id: String,
    /// The developer team id (10 characters): the JWT's `iss`.
    pub team_id: String,
    /// Production or sandbox; ignored when `endpoint` is set.
    #[serde(default)]
    pub environment: ApnsEnvironment,
    /// Where APNs is (`{endpoint}/3/device/{token}`); empty: the environment's. Tests
    /// point it at a local stand-in (HTTPS: APNs is HTTP/2 over TLS only).
    #[serde(default)]
    pub endpoint: String,
    /// At most this many APNs requests in flight (multiplexed on one HTTP/2 connection;
    /// the others wait their turn).
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// Each request is abandoned after this long: retry later.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// A PEM file of extra CA certificates to trust beside the public roots; empty: the
    /// public roots only.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

impl ApnsSettings {
    /// Settings for the key in `key_file`, with its id and the team's, everything else
    /// the defaults (production).
    pub fn new(
        key_file: impl Into<PathBuf>,
        key_id: impl Into<String>,
        team_id: impl Into<String>,
    ) -> ApnsSettings {
        ApnsSettings {
            key_file: key_file.into(),
            key_id: key_id.into(),
            team_id: team_id.into(),
            environment: ApnsEnvironment::default(),
            endpoint: String::new(),
            max_in_flight: default_max_in_flight(),
            timeout_ms: default_timeout_ms(),
            ca_file: None,
        }
    }

    /// The endpoint requests go to: `endpoint`, or the environment's.
    pub fn base_url(&self) -> &str {
        match (self.endpoint.is_empty(), self.environment) {
            (false, _) => &self.endpoint,
            (true, ApnsEnvironment::Production) => APNS_PRODUCTION,
            (true, ApnsEnvironment::Sandbox) => APNS_SANDBOX,
        }
    }

    /// `Err` naming the bad key.
    pub fn validate(&self) -> Result<(), String> {
        for (key, value) in [("key_id", &self.key_id), ("team_id", &self.team_id)] {
            if value.is_empty() || !value.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(format!(
                    "push.apns.{key} must be the 10 letters and digits Apple shows, not {value:?}"
                ));
            }
        }
        let url = self.base_url();
        if !url.starts_with("https://") {
            return Err(format!("push.apns.endpoint: {url:?}: APNs is HTTPS only"));
        }
        check_url(url).map_err(|e| format!("push.apns.endpoint: {e}"))?;
        check_limits("push.apns", self.max_in_flight, self.timeout_ms)
    }
}

fn default_fcm_endpoint() -> String {
    FCM_ENDPOINT.to_owned()
}

fn default_max_in_flight() -> usize {
    64
}

fn default_timeout_ms() -> u64 {
    10_000
}

pub(crate) fn check_limits(
    section: &str,
    max_in_flight: usize,
    timeout_ms: u64,
) -> Result<(), String> {
    if max_in_flight == 0 {
        return Err(format!("{section}.max_in_flight must be at least 1"));
    }
    if timeout_ms == 0 {
        return Err(format!("{section}.timeout_ms must be at least 1"));
    }
    Ok(())
}

/// Whether `url` may name a provider: `https://host…`, or `http://` to a loopback host
/// (a test stand-in).
pub(crate) fn check_url(url: &str) -> Result<Uri, String> {
    let uri: Uri = url.parse().map_err(|e| format!("not a URL ({e})"))?;
    let host = uri.host().ok_or("the URL has no host")?;
    match uri.scheme_str() {
        Some("https") => Ok(uri),
        Some("http") if is_loopback(host) => Ok(uri),
        Some("http") => Err("http:// is allowed for a loopback host only: use https://".into()),
        _ => Err("the URL must start with https://".into()),
    }
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_https_or_loopback_http() {
        assert!(check_url("https://fcm.googleapis.com").is_ok());
        assert!(check_url("http://127.0.0.1:4000").is_ok());
        assert!(check_url("http://[::1]:4000").is_ok());
        assert!(check_url("http://fcm.googleapis.com").is_err());
        assert!(check_url("fcm.googleapis.com").is_err());
    }

    #[test]
    fn limits_are_checked_and_named() {
        let mut fcm = FcmSettings::new("/run/secrets/fcm.json");
        assert!(fcm.validate().is_ok());
        fcm.max_in_flight = 0;
        let err = fcm.validate().unwrap_err();
        assert!(err.contains("push.fcm.max_in_flight"), "{err}");
        fcm.max_in_flight = 1;
        fcm.token_url = "http://oauth2.example.com/token".into();
        assert!(fcm.validate().unwrap_err().contains("push.fcm.token_url"));
    }

    #[test]
    fn deserializes_with_defaults() {
        let settings: PushSettings =
            serde_json::from_str(r#"{"fcm": {"service_account_file": "/s/fcm.json"}}"#).unwrap();
        let fcm = settings.fcm.unwrap();
        assert_eq!(fcm.endpoint, FCM_ENDPOINT);
        assert_eq!(fcm.max_in_flight, 64);
        assert!(fcm.token_url.is_empty() && fcm.ca_file.is_none());
        assert!(
            serde_json::from_str::<PushSettings>(
                r#"{"fcm": {"service_account_file": "x", "typo": 1}}"#
            )
            .is_err()
        );
    }
}
