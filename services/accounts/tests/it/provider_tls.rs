//! The key set of a provider over HTTPS: accounts speaks TLS to a `https://` JWKS URL and
//! trusts only the public CAs (`webpki-roots`). A local HTTPS issuer whose certificate is
//! self-signed (made with openssl) is refused: the handshake fails on accounts' side, no
//! request is sent, and the sign-in is UNAVAILABLE (the keys cannot be fetched), never
//! accepted.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use basra_proto::basra::accounts::v1 as pb;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tonic::Code;

use crate::grpc::failure;
use crate::helpers::{TestApp, test_settings};
use crate::oidc_issuer::good;

fn self_signed(dir: &Path) {
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args([
            "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .current_dir(dir)
        .output()
        .expect("openssl runs (apt-get install openssl)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn an_https_issuer_with_an_untrusted_certificate_is_refused() {
    let dir = std::env::temp_dir().join(format!("basra-oidc-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    self_signed(&dir);
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("cert.pem"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("key.pem")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (attempts, completed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (a, c) = (Arc::clone(&attempts), Arc::clone(&completed));
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            a.fetch_add(1, Ordering::SeqCst);
            if acceptor.accept(tcp).await.is_ok() {
                c.fetch_add(1, Ordering::SeqCst);
            }
        }
    });

    let mut settings = test_settings(&[]);
    settings.providers.google = Some(accounts::oidc::ProviderSettings {
        jwks_url: format!("https://127.0.0.1:{port}/jwks"),
        issuers: vec![crate::oidc_issuer::ISSUER.into()],
        client_ids: vec![crate::oidc_issuer::CLIENT_IDS[0].into()],
    });
    let app = TestApp::builder(accounts::MemoryStore::new())
        .settings(settings)
        .spawn()
        .await;
    let (code, message) = failure(
        app.client()
            .await
            .sign_in_with_provider(pb::SignInWithProviderRequest {
                provider: pb::IdentityProvider::Google.into(),
                id_token: good("sub", "n"),
                nonce: "n".into(),
                display_name: String::new(),
            })
            .await,
    );
    assert_eq!(code, Code::Unavailable, "{message}");
    assert!(
        attempts.load(Ordering::SeqCst) >= 1,
        "accounts connected to the issuer"
    );
    assert_eq!(
        completed.load(Ordering::SeqCst),
        0,
        "no TLS session was established"
    );
    // The fetch itself says why: the certificate, in the TLS handshake.
    let fetcher = accounts::oidc::fetch::Fetcher::new(std::time::Duration::from_secs(5)).unwrap();
    let error = fetcher
        .get(&format!("https://127.0.0.1:{port}/jwks"))
        .await
        .unwrap_err();
    assert!(error.starts_with("TLS with 127.0.0.1"), "{error}");
    assert!(error.to_lowercase().contains("certificate"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}
