//! The Apple Push Notification service: `POST {endpoint}/3/device/{device token}` over
//! HTTP/2 (TLS, ALPN `h2`; every request multiplexed on one connection), authenticated by
//! a provider token ([`jwt`]):
//!
//! | header | value |
//! |---|---|
//! | `authorization` | `bearer <provider token>` |
//! | `apns-topic` | the app's bundle id |
//! | `apns-push-type` | `alert` |
//! | `apns-priority` | `10` (urgent kinds: now) or `5` (as the device's power allows) |
//! | `apns-collapse-id` | the push's collapse id, if any: the device shows only the newest |
//! | `apns-expiration` | the push's expiry in UNIX seconds, if any (absent: APNs's default storage) |
//!
//! and the body `{"aps": {"alert": {"title": …, "body": …}, "sound": "default",
//! "thread-id": kind}, "kind": …, <data>}`. A request answered `ExpiredProviderToken` is
//! sent once more with a new provider token; the answers are classified in [`answer`].

mod answer;
mod jwt;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::Full;
use serde_json::{Value, json};

use crate::clock::{Clock, unix_seconds};
use crate::error::PushError;
use crate::http::{Http, Versions};
use crate::outcome::Outcome;
use crate::settings::ApnsSettings;
use crate::texts::Text;
use answer::{Verdict, classify};
use jwt::ProviderTokens;

/// One APNs notification.
#[derive(Debug)]
pub(crate) struct ApnsMessage<'a> {
    /// The device token (hexadecimal).
    pub(crate) token: &'a str,
    /// The app's bundle id: `apns-topic`.
    pub(crate) topic: &'a str,
    /// What it says.
    pub(crate) text: &'a Text,
    /// The kind's name (`thread-id` and the `kind` key).
    pub(crate) kind: &'a str,
    /// The data the app reads, beside `aps`.
    pub(crate) data: &'a BTreeMap<String, String>,
    /// Priority 10 or 5.
    pub(crate) urgent: bool,
    /// `apns-collapse-id`.
    pub(crate) collapse_id: Option<&'a str>,
    /// `apns-expiration`.
    pub(crate) expires_at: Option<SystemTime>,
}

impl ApnsMessage<'_> {
    /// The request body.
    fn to_json(&self) -> Value {
        let mut body = json!({"aps": {
            "alert": {"title": self.text.title, "body": self.text.body},
            "sound": "default",
            "thread-id": self.kind,
        }});
        if let Value::Object(map) = &mut body {
            for (key, value) in self.data {
                map.insert(key.clone(), json!(value));
            }
        }
        body
    }

    /// The request, with the provider token `bearer`.
    fn request(
        &self,
        url: &str,
        bearer: &str,
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, String> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(format!("{url}/3/device/{}", self.token))
            .header(http::header::AUTHORIZATION, format!("bearer {bearer}"))
            .header("apns-topic", self.topic)
            .header("apns-push-type", "alert")
            .header("apns-priority", if self.urgent { "10" } else { "5" });
        if let Some(collapse) = self.collapse_id {
            request = request.header("apns-collapse-id", collapse);
        }
        if let Some(at) = self.expires_at {
            request = request.header("apns-expiration", unix_seconds(at).to_string());
        }
        request.body(Full::new(body)).map_err(|e| e.to_string())
    }
}

/// Sends APNs notifications with one signing key.
pub(crate) struct ApnsSender {
    http: Http,
    tokens: ProviderTokens,
    base_url: String,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for ApnsSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApnsSender")
            .field("base_url", &self.base_url)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl ApnsSender {
    /// A sender for `settings`, reading the key file now.
    pub(crate) fn new(
        settings: &ApnsSettings,
        clock: Arc<dyn Clock>,
    ) -> Result<ApnsSender, PushError> {
        settings.validate().map_err(PushError::Invalid)?;
        let tokens = ProviderTokens::from_file(
            &settings.key_file,
            &settings.key_id,
            &settings.team_id,
            Arc::clone(&clock),
        )?;
        let http = Http::new(
            settings.ca_file.as_deref(),
            Versions::Http2Only,
            Duration::from_millis(settings.timeout_ms),
        )?;
        Ok(ApnsSender {
            http,
            tokens,
            base_url: settings.base_url().trim_end_matches('/').to_owned(),
            clock,
        })
    }

    /// Sends `message` and says what became of it.
    pub(crate) async fn send(&self, message: &ApnsMessage<'_>) -> Outcome {
        // Apple's tokens are hexadecimal; anything else would also change the path.
        if !message.token.chars().all(|c| c.is_ascii_hexdigit()) {
            return Outcome::DeadToken {
                reason: "an APNs device token is hexadecimal".into(),
            };
        }
        if message.topic.is_empty() {
            return Outcome::Rejected {
                reason: "an APNs push needs the app's bundle id (apns-topic)".into(),
            };
        }
        let body = Bytes::from(message.to_json().to_string());
        let mut token = match self.tokens.get() {
            Ok(token) => token,
            Err(e) => {
                return Outcome::Misconfigured {
                    reason: e.to_string(),
                };
            }
        };
        let mut replaced = false;
        loop {
            let request = match message.request(&self.base_url, &token.value, body.clone()) {
                Ok(request) => request,
                Err(e) => {
                    return Outcome::Rejected {
                        reason: format!("APNs request: {e}"),
                    };
                }
            };
            let answer = match self.http.send(request).await {
                Ok(answer) => answer,
                Err(e) => return Outcome::retry(format!("APNs: {e}")),
            };
            match classify(&answer, self.clock.now()) {
                Verdict::Done(outcome) => return outcome,
                Verdict::ExpiredProviderToken(reason) if replaced => {
                    return Outcome::Misconfigured {
                        reason: format!("{reason} (a new provider token too: check the clock)"),
                    };
                }
                Verdict::ExpiredProviderToken(reason) => {
                    match self.tokens.replace_expired(&token) {
                        Ok(new) => {
                            tracing::info!(%reason, "apns called the provider token expired: signing another");
                            token = new;
                            replaced = true;
                        }
                        Err(why) => {
                            return Outcome::Misconfigured {
                                reason: format!("{reason}; {why}"),
                            };
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::texts::{Locale, Notice};

    #[test]
    fn the_request_carries_every_header_and_the_payload() {
        let text = Notice::MatchReady {
            event: "Cup".into(),
        }
        .text(Locale::En);
        let data = BTreeMap::from([
            ("event".to_owned(), "e-1".to_owned()),
            ("kind".to_owned(), "match_ready".to_owned()),
        ]);
        let message = ApnsMessage {
            token: "ab01",
            topic: "online.basra.app",
            text: &text,
            kind: "match_ready",
            data: &data,
            urgent: true,
            collapse_id: Some("match-9"),
            expires_at: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)),
        };
        let request = message
            .request("https://apns.example", "JWT", Bytes::new())
            .unwrap();
        assert_eq!(request.uri(), "https://apns.example/3/device/ab01");
        let h = |name: &str| request.headers()[name].to_str().unwrap().to_owned();
        assert_eq!(h("authorization"), "bearer JWT");
        assert_eq!(h("apns-topic"), "online.basra.app");
        assert_eq!(h("apns-push-type"), "alert");
        assert_eq!(h("apns-priority"), "10");
        assert_eq!(h("apns-collapse-id"), "match-9");
        assert_eq!(h("apns-expiration"), "1800000000");
        let json = message.to_json();
        assert_eq!(json["aps"]["alert"]["title"], "Your match is ready");
        assert_eq!(json["aps"]["thread-id"], "match_ready");
        assert_eq!(
            (&json["event"], &json["kind"]),
            (&json!("e-1"), &json!("match_ready"))
        );

        let quiet = ApnsMessage {
            urgent: false,
            collapse_id: None,
            expires_at: None,
            ..message
        };
        let request = quiet
            .request("https://apns.example", "JWT", Bytes::new())
            .unwrap();
        assert_eq!(request.headers()["apns-priority"], "5");
        assert!(!request.headers().contains_key("apns-collapse-id"));
        assert!(!request.headers().contains_key("apns-expiration"));
    }
}
