//! FCM's authentication: an OAuth 2 access token, obtained from Google's token endpoint
//! with a JWT the service account signs (RFC 7523, the "JWT bearer" grant), and cached
//! until shortly before it expires.
//!
//! The JWT: header `{"alg": "RS256", "typ": "JWT", "kid": private_key_id}`; claims `iss`
//! (the service account's `client_email`), `scope` ([`FCM_SCOPE`]), `aud` (the token
//! endpoint), `iat` (now) and `exp` (`iat` + 1 hour, Google's maximum). It is sent as
//! `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>`
//! (`application/x-www-form-urlencoded`); the answer is
//! `{"access_token": …, "expires_in": seconds, "token_type": "Bearer"}`.
//!
//! One token serves every send: the first send to find no valid token fetches one while
//! holding the cache's lock, so N concurrent sends make one token request.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{Method, Request, StatusCode, Uri};
use http_body_util::Full;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use crate::clock::{Clock, unix_seconds};
use crate::error::PushError;
use crate::http::Http;
use crate::outcome::{Outcome, retry_after};
use crate::settings::{FCM_SCOPE, check_url};

/// The grant type of a JWT bearer assertion (RFC 7523 §2.1).
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// How long the signed JWT is valid (Google accepts at most an hour).
const ASSERTION_LIFETIME: Duration = Duration::from_secs(3600);
/// A token is replaced this long before it expires, or after 90% of its life if that is
/// sooner, so that no send carries a token about to lapse in flight.
const REFRESH_MARGIN: Duration = Duration::from_secs(300);

/// The fields used from a service account's JSON key file.
#[derive(Deserialize)]
struct ServiceAccountFile {
    #[serde(rename = "type")]
    kind: String,
    project_id: String,
    private_key_id: String,
    private_key: String,
    client_email: String,
    token_uri: String,
}

/// A service account: who signs, with which key, for which project.
pub(crate) struct ServiceAccount {
    pub(crate) project_id: String,
    pub(crate) client_email: String,
    pub(crate) token_uri: String,
    key_id: String,
    key: EncodingKey,
}

impl fmt::Debug for ServiceAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceAccount")
            .field("project_id", &self.project_id)
            .field("client_email", &self.client_email)
            .field("key", &"(secret)")
            .finish_non_exhaustive()
    }
}

impl ServiceAccount {
    /// Reads and checks the key file at `path`. Errors never quote the file's contents.
    pub(crate) fn from_file(path: &Path) -> Result<ServiceAccount, PushError> {
        let text = std::fs::read(path).map_err(|source| PushError::Read {
            what: "FCM service account file",
            path: path.to_owned(),
            source,
        })?;
        let invalid = |what: String| {
            PushError::Invalid(format!(
                "push.fcm.service_account_file {}: {what}",
                path.display()
            ))
        };
        // serde_json's message names the missing field or the position, never the value.
        let file: ServiceAccountFile = serde_json::from_slice(&text)
            .map_err(|e| invalid(format!("not a service account key ({e})")))?;
        if file.kind != "service_account" {
            return Err(invalid(format!(
                "type is {:?}, not \"service_account\"",
                file.kind
            )));
        }
        let key = EncodingKey::from_rsa_pem(file.private_key.as_bytes())
            .map_err(|_| invalid("private_key is not an RSA private key in PEM".into()))?;
        Ok(ServiceAccount {
            project_id: file.project_id,
            client_email: file.client_email,
            token_uri: file.token_uri,
            key_id: file.private_key_id,
            key,
        })
    }
}

/// The claims of the assertion.
#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    scope: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
}

/// The token endpoint's answer.
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: u64,
    #[serde(default)]
    token_type: String,
}

/// An access token and when to stop using it.
struct Cached {
    value: Arc<str>,
    refresh_at: SystemTime,
    generation: u64,
}

/// The cache of FCM access tokens.
pub(crate) struct AccessTokens {
    http: Http,
    account: ServiceAccount,
    token_url: Uri,
    /// The token endpoint as configured: the JWT's `aud`, character for character.
    audience: String,
    clock: Arc<dyn Clock>,
    cache: Mutex<Cache>,
}

/// The cached token, and how many were fetched (the next one's generation).
#[derive(Default)]
struct Cache {
    token: Option<Cached>,
    fetched: u64,
}

impl fmt::Debug for AccessTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessTokens")
            .field("account", &self.account)
            .field("token_url", &self.token_url)
            .finish_non_exhaustive()
    }
}

/// A token in use: its value, and its generation, to invalidate exactly it.
pub(crate) struct AccessToken {
    pub(crate) value: Arc<str>,
    pub(crate) generation: u64,
}

impl AccessTokens {
    /// Tokens for `account` from `token_url` (the JWT's audience).
    pub(crate) fn new(
        http: Http,
        account: ServiceAccount,
        token_url_text: &str,
        clock: Arc<dyn Clock>,
    ) -> Result<AccessTokens, PushError> {
        let token_url = check_url(token_url_text)
            .map_err(|e| PushError::Invalid(format!("FCM token endpoint {token_url_text}: {e}")))?;
        Ok(AccessTokens {
            http,
            account,
            token_url,
            audience: token_url_text.to_owned(),
            clock,
            cache: Mutex::new(Cache::default()),
        })
    }

    /// The project messages are sent in, by default.
    pub(crate) fn project_id(&self) -> &str {
        &self.account.project_id
    }

    /// A valid access token, from the cache or fetched now; the outcome of the failed
    /// fetch otherwise (retry later, or misconfigured).
    pub(crate) async fn get(&self) -> Result<AccessToken, Outcome> {
        let mut cache = self.cache.lock().await;
        let now = self.clock.now();
        if let Some(token) = &cache.token
            && now < token.refresh_at
        {
            return Ok(AccessToken {
                value: Arc::clone(&token.value),
                generation: token.generation,
            });
        }
        let (value, expires_in) = self.fetch(now).await?;
        let margin = REFRESH_MARGIN.min(expires_in / 10);
        cache.fetched += 1;
        let token = Cached {
            value: Arc::from(value),
            refresh_at: now + expires_in - margin,
            generation: cache.fetched,
        };
        let got = AccessToken {
            value: Arc::clone(&token.value),
            generation: token.generation,
        };
        cache.token = Some(token);
        tracing::debug!(
            expires_in_s = expires_in.as_secs(),
            "fcm access token obtained"
        );
        Ok(got)
    }

    /// Forgets the token of `generation` if it is still the cached one (FCM refused it),
    /// so the next [`get`](Self::get) fetches another; a newer token is kept.
    pub(crate) async fn invalidate(&self, generation: u64) {
        let mut cache = self.cache.lock().await;
        if cache
            .token
            .as_ref()
            .is_some_and(|t| t.generation == generation)
        {
            cache.token = None;
        }
    }

    /// The signed assertion for `now`.
    fn assertion(&self, now: SystemTime) -> Result<String, Outcome> {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(self.account.key_id.clone());
        let iat = unix_seconds(now);
        let claims = Claims {
            iss: &self.account.client_email,
            scope: FCM_SCOPE,
            aud: &self.audience,
            iat,
            exp: iat + ASSERTION_LIFETIME.as_secs(),
        };
        jsonwebtoken::encode(&header, &claims, &self.account.key).map_err(|e| {
            Outcome::Misconfigured {
                reason: format!("signing the FCM assertion: {e}"),
            }
        })
    }

    /// Asks the token endpoint for a token: its value and lifetime.
    async fn fetch(&self, now: SystemTime) -> Result<(String, Duration), Outcome> {
        let assertion = self.assertion(now)?;
        let form = format!(
            "grant_type={}&assertion={assertion}",
            form_encode(JWT_BEARER)
        );
        let request = Request::builder()
            .method(Method::POST)
            .uri(self.token_url.clone())
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(form)))
            .map_err(|e| Outcome::Misconfigured {
                reason: format!("FCM token request: {e}"),
            })?;
        let answer = self
            .http
            .send(request)
            .await
            .map_err(|e| Outcome::retry(format!("FCM token endpoint: {e}")))?;
        let status = answer.status;
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Err(Outcome::RetryLater {
                after: retry_after(&answer.headers, now),
                reason: format!("FCM token endpoint answered {status}"),
            });
        }
        if !status.is_success() {
            // `{"error": "invalid_grant", "error_description": "Invalid JWT Signature."}`:
            // a revoked key, a wrong account, a clock far off. No request will do better.
            return Err(Outcome::Misconfigured {
                reason: format!(
                    "FCM token endpoint answered {status}: {}",
                    oauth_error(&answer.body)
                ),
            });
        }
        let token: TokenAnswer = serde_json::from_slice(&answer.body)
            .map_err(|e| Outcome::retry(format!("FCM token endpoint: unreadable answer ({e})")))?;
        if !token.token_type.eq_ignore_ascii_case("bearer")
            || token.access_token.is_empty()
            || token.expires_in == 0
        {
            return Err(Outcome::Misconfigured {
                reason: format!(
                    "FCM token endpoint: not a bearer token (type {:?}, lifetime {} s)",
                    token.token_type, token.expires_in
                ),
            });
        }
        Ok((token.access_token, Duration::from_secs(token.expires_in)))
    }
}

/// `error: error_description` of an OAuth 2 error answer, or its start.
fn oauth_error(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct OAuthError {
        error: String,
        #[serde(default)]
        error_description: String,
    }
    match serde_json::from_slice::<OAuthError>(body) {
        Ok(e) => format!("{}: {}", e.error, e.error_description),
        Err(_) => String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
    }
}

/// `value` escaped for an `application/x-www-form-urlencoded` body.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(byte as char);
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grant_type_is_form_encoded() {
        assert_eq!(
            form_encode(JWT_BEARER),
            "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
        );
        assert_eq!(form_encode("a b/c"), "a+b%2Fc");
    }

    #[test]
    fn an_oauth_error_is_described() {
        assert_eq!(
            oauth_error(
                br#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#
            ),
            "invalid_grant: Invalid JWT Signature."
        );
        assert_eq!(oauth_error(b"<html>"), "<html>");
    }
}
