//! Firebase Cloud Messaging, HTTP v1: `POST {endpoint}/v1/projects/{project}/messages:send`
//! with `authorization: Bearer <access token>` ([`auth`]) and the message as JSON:
//!
//! ```json
//! {"message": {
//!   "token": "<device token>",
//!   "notification": {"title": "…", "body": "…"},
//!   "data": {"kind": "room_invite", "…": "…"},
//!   "android": {
//!     "priority": "HIGH",                 // or NORMAL
//!     "ttl": "3600s",                     // until the push's expiry (none: FCM's 4 weeks)
//!     "collapse_key": "<collapse id>",    // FCM keeps only the last undelivered one
//!     "restricted_package_name": "<app id>",
//!     "notification": {"tag": "<collapse id>"}  // the device shows only the last one
//!   }}}
//! ```
//!
//! A send refused with 401 gets one new access token and one more try; the answers are
//! classified in [`answer`].

mod answer;
mod auth;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Uri};
use http_body_util::Full;
use serde_json::{Map, Value, json};

use crate::clock::Clock;
use crate::error::PushError;
use crate::http::{Http, Versions};
use crate::outcome::Outcome;
use crate::settings::{FcmSettings, check_url};
use crate::texts::Text;
use answer::{Verdict, classify};
use auth::{AccessTokens, ServiceAccount};

/// FCM's longest time to live: 4 weeks.
const MAX_TTL: Duration = Duration::from_secs(28 * 24 * 3600);

/// One FCM message.
#[derive(Debug)]
pub(crate) struct FcmMessage<'a> {
    /// The device's registration token.
    pub(crate) token: &'a str,
    /// What it says.
    pub(crate) text: &'a Text,
    /// The data the app reads (all strings, as FCM wants).
    pub(crate) data: &'a BTreeMap<String, String>,
    /// HIGH (wake the device) or NORMAL priority.
    pub(crate) urgent: bool,
    /// Both FCM's `collapse_key` and the notification's `tag`.
    pub(crate) collapse_id: Option<&'a str>,
    /// How long FCM keeps it for an unreachable device; `None`: FCM's default.
    pub(crate) ttl: Option<Duration>,
    /// The Android package it is for (`restricted_package_name`); empty: any.
    pub(crate) package_name: &'a str,
}

impl FcmMessage<'_> {
    /// The request body.
    fn to_json(&self) -> Value {
        let mut android = Map::new();
        android.insert(
            "priority".into(),
            json!(if self.urgent { "HIGH" } else { "NORMAL" }),
        );
        if let Some(ttl) = self.ttl {
            android.insert(
                "ttl".into(),
                json!(format!("{}s", ttl.min(MAX_TTL).as_secs())),
            );
        }
        if let Some(collapse) = self.collapse_id {
            android.insert("collapse_key".into(), json!(collapse));
            android.insert("notification".into(), json!({ "tag": collapse }));
        }
        if !self.package_name.is_empty() {
            android.insert("restricted_package_name".into(), json!(self.package_name));
        }
        json!({"message": {
            "token": self.token,
            "notification": {"title": self.text.title, "body": self.text.body},
            "data": self.data,
            "android": android,
        }})
    }
}

/// Sends FCM messages for one service account.
pub(crate) struct FcmSender {
    http: Http,
    tokens: AccessTokens,
    send_url: Uri,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for FcmSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FcmSender")
            .field("send_url", &self.send_url)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl FcmSender {
    /// A sender for `settings`, reading the service account file now.
    pub(crate) fn new(
        settings: &FcmSettings,
        clock: Arc<dyn Clock>,
    ) -> Result<FcmSender, PushError> {
        settings.validate().map_err(PushError::Invalid)?;
        let account = ServiceAccount::from_file(&settings.service_account_file)?;
        let project = if settings.project_id.is_empty() {
            account.project_id.clone()
        } else {
            settings.project_id.clone()
        };
        if project.is_empty()
            || !project
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(PushError::Invalid(format!(
                "push.fcm.project_id: {project:?} is not a Firebase project id"
            )));
        }
        let send_url = format!(
            "{}/v1/projects/{project}/messages:send",
            settings.endpoint.trim_end_matches('/')
        );
        let send_url = check_url(&send_url)
            .map_err(|e| PushError::Invalid(format!("push.fcm.endpoint: {e}")))?;
        let token_url = if settings.token_url.is_empty() {
            account.token_uri.clone()
        } else {
            settings.token_url.clone()
        };
        let http = Http::new(
            settings.ca_file.as_deref(),
            Versions::Any,
            Duration::from_millis(settings.timeout_ms),
        )?;
        let tokens = AccessTokens::new(http.clone(), account, &token_url, Arc::clone(&clock))?;
        tracing::debug!(project = %tokens.project_id(), "fcm sender ready");
        Ok(FcmSender {
            http,
            tokens,
            send_url,
            clock,
        })
    }

    /// Sends `message` and says what became of it.
    pub(crate) async fn send(&self, message: &FcmMessage<'_>) -> Outcome {
        let body = Bytes::from(message.to_json().to_string());
        let mut refused_once = false;
        loop {
            let token = match self.tokens.get().await {
                Ok(token) => token,
                Err(outcome) => return outcome,
            };
            let request = Request::builder()
                .method(Method::POST)
                .uri(self.send_url.clone())
                .header(
                    http::header::AUTHORIZATION,
                    format!("Bearer {}", token.value),
                )
                .header(
                    http::header::CONTENT_TYPE,
                    "application/json; charset=utf-8",
                )
                .body(Full::new(body.clone()));
            let request = match request {
                Ok(request) => request,
                Err(e) => {
                    // Only an access token with bytes a header cannot carry gets here.
                    return Outcome::Misconfigured {
                        reason: format!("FCM request: {e}"),
                    };
                }
            };
            let answer = match self.http.send(request).await {
                Ok(answer) => answer,
                Err(e) => return Outcome::retry(format!("FCM: {e}")),
            };
            match classify(&answer, self.clock.now()) {
                Verdict::Done(outcome) => return outcome,
                Verdict::Unauthenticated(reason) if refused_once => {
                    return Outcome::Misconfigured {
                        reason: format!("{reason} (a new access token was refused too)"),
                    };
                }
                Verdict::Unauthenticated(reason) => {
                    tracing::info!(%reason, "fcm refused the access token: getting another");
                    self.tokens.invalidate(token.generation).await;
                    refused_once = true;
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
    fn the_message_carries_every_field() {
        let text = Notice::RoomInvite {
            from: "Layla".into(),
        }
        .text(Locale::En);
        let data = BTreeMap::from([("kind".to_owned(), "room_invite".to_owned())]);
        let message = FcmMessage {
            token: "device-1",
            text: &text,
            data: &data,
            urgent: true,
            collapse_id: Some("invite-7"),
            ttl: Some(Duration::from_secs(90 * 24 * 3600)),
            package_name: "online.basra.app",
        };
        let json = message.to_json();
        let m = &json["message"];
        assert_eq!(m["token"], "device-1");
        assert_eq!(m["notification"]["title"], text.title);
        assert_eq!(m["data"]["kind"], "room_invite");
        assert_eq!(m["android"]["priority"], "HIGH");
        // Capped at FCM's 4 weeks.
        assert_eq!(m["android"]["ttl"], "2419200s");
        assert_eq!(m["android"]["collapse_key"], "invite-7");
        assert_eq!(m["android"]["notification"]["tag"], "invite-7");
        assert_eq!(m["android"]["restricted_package_name"], "online.basra.app");

        let quiet = FcmMessage {
            urgent: false,
            collapse_id: None,
            ttl: None,
            package_name: "",
            ..message
        };
        let android = &quiet.to_json()["message"]["android"];
        assert_eq!(android, &json!({"priority": "NORMAL"}));
    }
}
