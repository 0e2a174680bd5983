//! A stand-in of the Apple Push Notification service: HTTP/2 over TLS with a server
//! certificate for 127.0.0.1 signed by a test CA (trusted through `ca_file`), and a fresh
//! P-256 signing key (`AuthKey.p8`, public half `AuthKey.pub.pem`). It answers scripted
//! replies first, then `200` with an `apns-id`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use basra_push::{ApnsSettings, Clock as _, ManualClock, PushSettings, Pusher};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

use super::keys::Keys;
use super::standin::{Recorded, Reply, StandIn};

/// The signing key's id (the provider token's `kid`).
pub const KEY_ID: &str = "ABC123DEFG";
/// The team id (the provider token's `iss`).
pub const TEAM_ID: &str = "DEF123GHIJ";
/// A bundle id.
pub const BUNDLE: &str = "online.basra.app";
/// A device token (64 hexadecimal digits).
pub const DEVICE: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    accepted: AtomicUsize,
    delay_ms: AtomicU64,
}

/// A running APNs stand-in, its certificates and the signing key.
pub struct ApnsStandIn {
    /// The server (every request, the answered ones).
    pub server: StandIn,
    script: Arc<Script>,
    /// The key and certificate files.
    pub keys: Keys,
    /// The clock [`ApnsStandIn::pusher`]'s provider tokens are dated by.
    pub clock: ManualClock,
}

impl ApnsStandIn {
    /// Starts one on a free port.
    pub async fn start() -> ApnsStandIn {
        let keys = Keys::new();
        keys.p256("AuthKey");
        keys.certificate("apns");
        let script = Arc::new(Script::default());
        let s = Arc::clone(&script);
        let server = StandIn::h2_tls(
            Arc::new(move |_: &Recorded| {
                let delay = Duration::from_millis(s.delay_ms.load(Ordering::SeqCst));
                if let Some(reply) = s.replies.lock().unwrap().pop_front() {
                    return reply.after(delay);
                }
                let n = s.accepted.fetch_add(1, Ordering::SeqCst) + 1;
                Reply::new(200, "")
                    .header("apns-id", format!("00000000-0000-0000-0000-{n:012}"))
                    .after(delay)
            }),
            &keys.read("apns.crt"),
            &keys.read("apns.key"),
        )
        .await;
        ApnsStandIn {
            server,
            script,
            keys,
            clock: ManualClock::new(SystemTime::now()),
        }
    }

    /// `[push.apns]` pointing at it (its CA trusted).
    pub fn settings(&self) -> ApnsSettings {
        let mut apns = ApnsSettings::new(self.keys.path("AuthKey.p8"), KEY_ID, TEAM_ID);
        apns.endpoint = self.server.url("https");
        apns.ca_file = Some(self.keys.path("apns-ca.crt"));
        apns
    }

    /// The `BASRA_PUSH__APNS__…` variables pointing a service at it.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "BASRA_PUSH__APNS__KEY_FILE".into(),
                self.keys.path("AuthKey.p8").display().to_string(),
            ),
            ("BASRA_PUSH__APNS__KEY_ID".into(), KEY_ID.into()),
            ("BASRA_PUSH__APNS__TEAM_ID".into(), TEAM_ID.into()),
            (
                "BASRA_PUSH__APNS__ENDPOINT".into(),
                self.server.url("https"),
            ),
            (
                "BASRA_PUSH__APNS__CA_FILE".into(),
                self.keys.path("apns-ca.crt").display().to_string(),
            ),
        ]
    }

    /// A pusher with `apns` alone, on [`ApnsStandIn::clock`].
    pub fn pusher_with(&self, apns: ApnsSettings) -> Pusher {
        let settings = PushSettings {
            apns: Some(apns),
            ..PushSettings::default()
        };
        Pusher::with_clock(&settings, Arc::new(self.clock.clone())).unwrap()
    }

    /// A pusher with [`ApnsStandIn::settings`].
    pub fn pusher(&self) -> Pusher {
        self.pusher_with(self.settings())
    }

    /// Answers the next requests with `replies`, in order.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.script.replies.lock().unwrap().extend(replies);
    }

    /// Every answer waits `delay`.
    pub fn set_delay(&self, delay: Duration) {
        self.script
            .delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.server.requests()
    }

    /// The requests answered 200 (accepted), in order.
    pub fn accepted(&self) -> Vec<Recorded> {
        self.server
            .answered()
            .into_iter()
            .filter(|(_, status)| *status == 200)
            .map(|(r, _)| r)
            .collect()
    }

    /// The provider tokens of the requests so far, in order.
    pub fn bearers(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| {
                r.header("authorization")
                    .unwrap()
                    .strip_prefix("bearer ")
                    .expect("authorization: bearer <JWT>")
                    .to_owned()
            })
            .collect()
    }

    /// `jwt`'s claims, after checking its header (ES256, the key id) and its signature
    /// with the key's public half, and that it has Apple's claims (`iss`, `iat`) and no
    /// others.
    pub fn verify(&self, jwt: &str) -> serde_json::Value {
        let header = jsonwebtoken::decode_header(jwt).unwrap();
        assert_eq!(header.alg, Algorithm::ES256);
        assert_eq!(header.kid.as_deref(), Some(KEY_ID));
        let public =
            DecodingKey::from_ec_pem(self.keys.read("AuthKey.pub.pem").as_bytes()).unwrap();
        let mut validation = Validation::new(Algorithm::ES256);
        validation.validate_exp = false;
        validation.set_required_spec_claims(&["iss"]);
        validation.set_issuer(&[TEAM_ID]);
        let claims = jsonwebtoken::decode::<serde_json::Value>(jwt, &public, &validation)
            .expect("the provider token verifies with the key's public half")
            .claims;
        let keys: Vec<_> = claims.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["iat", "iss"], "Apple's claims, no others");
        claims
    }

    /// [`ApnsStandIn::clock`]'s now in UNIX seconds.
    pub fn now_secs(&self) -> u64 {
        self.clock
            .now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }
}

/// An APNs error answer: `status` with `{"reason": reason}`.
pub fn reason(status: u16, reason: &str) -> Reply {
    Reply::new(status, format!(r#"{{"reason": "{reason}"}}"#))
}
