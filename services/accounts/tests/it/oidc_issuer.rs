//! A local OpenID Connect issuer for the provider sign-in tests: an HTTP server on
//! 127.0.0.1:0 serving a JWKS, and RS256 ID tokens signed with its test-only keys
//! (`oidc_keys/`). It counts the fetches of its key set; its keys can be rotated.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use accounts::oidc::ProviderSettings;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The issuer's first key (kid `test-a`).
pub(crate) const KEY_A: (&str, &str) = ("test-a", include_str!("oidc_keys/test-only-issuer-a.pem"));
/// The key it rotates to (kid `test-b`).
pub(crate) const KEY_B: (&str, &str) = ("test-b", include_str!("oidc_keys/test-only-issuer-b.pem"));
/// A key it never publishes.
pub(crate) const FOREIGN: &str = include_str!("oidc_keys/test-only-foreign.pem");

/// The issuer's `iss`.
pub(crate) const ISSUER: &str = "https://issuer.test";
/// Our client ids at the issuer (both accepted).
pub(crate) const CLIENT_IDS: [&str; 2] = ["online.basra.test", "online.basra.test.web"];

/// A running issuer; stops with the test's runtime.
pub(crate) struct TestIssuer {
    port: u16,
    jwks: Arc<Mutex<String>>,
    fetches: Arc<AtomicU64>,
}

fn jwk(kid: &str, pem: &str) -> Jwk {
    let key = EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap();
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::RS256).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    jwk
}

/// A JWKS of these keys.
fn jwks(keys: &[(&str, &str)]) -> String {
    serde_json::to_string(&JwkSet {
        keys: keys.iter().map(|(kid, pem)| jwk(kid, pem)).collect(),
    })
    .unwrap()
}

impl TestIssuer {
    /// Starts an issuer publishing [`KEY_A`].
    pub(crate) async fn start() -> TestIssuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let jwks = Arc::new(Mutex::new(jwks(&[KEY_A])));
        let fetches = Arc::new(AtomicU64::new(0));
        let (served, count) = (Arc::clone(&jwks), Arc::clone(&fetches));
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let body = served.lock().unwrap().clone();
                let count = Arc::clone(&count);
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&request);
                    let response = if head.starts_with("GET /jwks ") {
                        count.fetch_add(1, Ordering::SeqCst);
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    } else {
                        "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_owned()
                    };
                    let _ = socket.write_all(response.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        TestIssuer {
            port,
            jwks,
            fetches,
        }
    }

    /// The provider settings that trust this issuer.
    pub(crate) fn settings(&self) -> ProviderSettings {
        ProviderSettings {
            jwks_url: format!("http://127.0.0.1:{}/jwks", self.port),
            issuers: vec![ISSUER.to_owned()],
            client_ids: CLIENT_IDS.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    /// How many times its key set was fetched.
    pub(crate) fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::SeqCst)
    }

    /// Publishes `keys` from now on (a rotation).
    pub(crate) fn publish(&self, keys: &[(&str, &str)]) {
        *self.jwks.lock().unwrap() = jwks(keys);
    }
}

/// The claims of a good token for `sub` and `nonce`, valid for 10 minutes.
pub(crate) fn claims(sub: &str, nonce: &str) -> Value {
    let now = jsonwebtoken::get_current_timestamp();
    json!({
        "iss": ISSUER,
        "aud": CLIENT_IDS[0],
        "sub": sub,
        "iat": now,
        "exp": now + 600,
        "nonce": nonce,
        "email": "someone@example.com",
    })
}

/// `claims` signed RS256 with `pem`, under key id `kid`.
pub(crate) fn sign(claims: &Value, kid: &str, pem: &str) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(
        &header,
        claims,
        &EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
    )
    .unwrap()
}

/// A good token for `sub` and `nonce`, signed with the issuer's first key.
pub(crate) fn good(sub: &str, nonce: &str) -> String {
    sign(&claims(sub, nonce), KEY_A.0, KEY_A.1)
}
