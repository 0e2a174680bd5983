//! A stand-in of Google's OAuth 2 token endpoint and FCM's HTTP v1 send endpoint (one
//! HTTP/1.1 server, two paths), with a service account of a fresh RSA key: it answers
//! scripted replies first, then a fresh access token `access-N` and `200 {"name": …}`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use basra_push::{Clock as _, FcmSettings, ManualClock, PushSettings, Pusher};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

use super::keys::Keys;
use super::standin::{Recorded, Reply, StandIn};

/// The project of the stand-in's service account.
pub const PROJECT: &str = "basra-test";
/// Where sends go.
pub const SEND_PATH: &str = "/v1/projects/basra-test/messages:send";
/// Where access tokens are asked for.
pub const TOKEN_PATH: &str = "/token";
/// The service account's `client_email` (the assertion's `iss`).
pub const EMAIL: &str = "push@basra-test.iam.gserviceaccount.com";
/// The service account's `private_key_id` (the assertion's `kid`).
pub const KEY_ID: &str = "0f1e2d3c4b5a";
/// The scope FCM needs.
pub const SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
/// The JWT bearer grant (RFC 7523).
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// What the stand-in answers besides its defaults.
#[derive(Default)]
struct Script {
    token: Mutex<VecDeque<Reply>>,
    send: Mutex<VecDeque<Reply>>,
    issued: AtomicUsize,
    sent: AtomicUsize,
    expires_in: AtomicU64,
    send_delay_ms: AtomicU64,
}

/// A running FCM stand-in and its service account (in `keys`: `service-account.json`,
/// `service.pem` and its public half `service.pub.pem`).
pub struct FcmStandIn {
    /// The server (every request, the answered ones).
    pub server: StandIn,
    script: Arc<Script>,
    /// The service account's key files.
    pub keys: Keys,
    /// The clock [`FcmStandIn::pusher`]'s tokens are dated by.
    pub clock: ManualClock,
}

impl FcmStandIn {
    /// Starts one on a free port.
    pub async fn start() -> FcmStandIn {
        let script = Arc::new(Script::default());
        script.expires_in.store(3599, Ordering::SeqCst);
        let s = Arc::clone(&script);
        let server = StandIn::http1(Arc::new(move |request: &Recorded| {
            if request.path == TOKEN_PATH {
                if let Some(reply) = s.token.lock().unwrap().pop_front() {
                    return reply;
                }
                let n = s.issued.fetch_add(1, Ordering::SeqCst) + 1;
                let body = serde_json::json!({
                    "access_token": format!("access-{n}"),
                    "expires_in": s.expires_in.load(Ordering::SeqCst),
                    "token_type": "Bearer",
                });
                return Reply::new(200, body.to_string());
            }
            let delay = Duration::from_millis(s.send_delay_ms.load(Ordering::SeqCst));
            if let Some(reply) = s.send.lock().unwrap().pop_front() {
                // A scripted reply keeps its own delay.
                return if reply.delay.is_zero() {
                    reply.after(delay)
                } else {
                    reply
                };
            }
            let n = s.sent.fetch_add(1, Ordering::SeqCst) + 1;
            Reply::new(
                200,
                format!(r#"{{"name": "projects/{PROJECT}/messages/{n}"}}"#),
            )
            .after(delay)
        }))
        .await;
        let keys = Keys::new();
        keys.rsa("service");
        let account = serde_json::json!({
            "type": "service_account",
            "project_id": PROJECT,
            "private_key_id": KEY_ID,
            "private_key": keys.read("service.pem"),
            "client_email": EMAIL,
            "client_id": "1234567890",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": format!("{}{TOKEN_PATH}", server.url("http")),
        });
        std::fs::write(keys.path("service-account.json"), account.to_string()).unwrap();
        FcmStandIn {
            server,
            script,
            keys,
            clock: ManualClock::new(SystemTime::now()),
        }
    }

    /// `[push.fcm]` pointing at it.
    pub fn settings(&self) -> FcmSettings {
        let mut fcm = FcmSettings::new(self.keys.path("service-account.json"));
        fcm.endpoint = self.server.url("http");
        fcm
    }

    /// The `BASRA_PUSH__FCM__…` variables pointing a service at it.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "BASRA_PUSH__FCM__SERVICE_ACCOUNT_FILE".into(),
                self.keys.path("service-account.json").display().to_string(),
            ),
            ("BASRA_PUSH__FCM__ENDPOINT".into(), self.server.url("http")),
        ]
    }

    /// A pusher with `fcm` alone, on [`FcmStandIn::clock`].
    pub fn pusher_with(&self, fcm: FcmSettings) -> Pusher {
        let settings = PushSettings {
            fcm: Some(fcm),
            ..PushSettings::default()
        };
        Pusher::with_clock(&settings, Arc::new(self.clock.clone())).unwrap()
    }

    /// A pusher with [`FcmStandIn::settings`].
    pub fn pusher(&self) -> Pusher {
        self.pusher_with(self.settings())
    }

    /// The token endpoint's URL (the assertion's audience).
    pub fn token_url(&self) -> String {
        format!("{}{TOKEN_PATH}", self.server.url("http"))
    }

    /// How many access tokens were asked for.
    pub fn tokens_requested(&self) -> usize {
        self.server.requests_to(TOKEN_PATH).len()
    }

    /// The sends received, in order.
    pub fn sends(&self) -> Vec<Recorded> {
        self.server.requests_to(SEND_PATH)
    }

    /// The sends answered 200 (accepted), in order.
    pub fn accepted(&self) -> Vec<Recorded> {
        self.server
            .answered()
            .into_iter()
            .filter(|(r, status)| r.path == SEND_PATH && *status == 200)
            .map(|(r, _)| r)
            .collect()
    }

    /// Answers the next sends with `replies`, in order.
    pub fn script_send(&self, replies: impl IntoIterator<Item = Reply>) {
        self.script.send.lock().unwrap().extend(replies);
    }

    /// Answers the next token requests with `replies`, in order.
    pub fn script_token(&self, replies: impl IntoIterator<Item = Reply>) {
        self.script.token.lock().unwrap().extend(replies);
    }

    /// Every send waits `delay` before its answer.
    pub fn set_send_delay(&self, delay: Duration) {
        self.script
            .send_delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// The claims of the assertion a token request carried, after checking the form,
    /// the header (RS256, the key id) and the signature with the service account's
    /// public key, the issuer and the audience.
    pub fn verify_assertion(&self, request: &Recorded) -> serde_json::Value {
        let fields = form(&request.body);
        assert_eq!(fields["grant_type"], JWT_BEARER);
        let assertion = &fields["assertion"];
        let header = jsonwebtoken::decode_header(assertion).unwrap();
        assert_eq!(header.alg, Algorithm::RS256);
        assert_eq!(header.kid.as_deref(), Some(KEY_ID));
        let public =
            DecodingKey::from_rsa_pem(self.keys.read("service.pub.pem").as_bytes()).unwrap();
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_audience(&[self.token_url()]);
        validation.set_issuer(&[EMAIL]);
        validation.set_required_spec_claims(&["iss", "aud", "iat", "exp"]);
        let claims = jsonwebtoken::decode::<serde_json::Value>(assertion, &public, &validation)
            .expect("the assertion verifies with the service account's public key")
            .claims;
        assert_eq!(claims["scope"], SCOPE);
        claims
    }

    /// [`FcmStandIn::clock`]'s now in UNIX seconds.
    pub fn now_secs(&self) -> u64 {
        self.clock
            .now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }
}

/// An FCM error answer: `status` with the API's `code` (`UNAVAILABLE`), the FCM error
/// code (`UNREGISTERED`) and a message.
pub fn error(status: u16, code: &str, fcm_code: &str, message: &str) -> Reply {
    let body = serde_json::json!({"error": {"code": status, "message": message, "status": code,
        "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": fcm_code}]}});
    Reply::new(status, body.to_string())
}

/// The fields of an `application/x-www-form-urlencoded` body, decoded.
pub fn form(body: &[u8]) -> BTreeMap<String, String> {
    fn decode(text: &str) -> String {
        let bytes = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'%' => {
                    out.push(u8::from_str_radix(&text[i + 1..i + 3], 16).unwrap());
                    i += 3;
                }
                b'+' => {
                    out.push(b' ');
                    i += 1;
                }
                b => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        String::from_utf8(out).unwrap()
    }
    std::str::from_utf8(body)
        .unwrap()
        .split('&')
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap();
            (decode(k), decode(v))
        })
        .collect()
}
