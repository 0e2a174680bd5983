//! The pod-deletion-cost patch against a fake Kubernetes API server in this process,
//! over TLS with a cluster CA made by `openssl` for the test: the request's shape (a
//! merge patch of the pod's annotation at the pod's path), its service-account token,
//! and the rate limit (a patch only when the open-stream count changed).

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use game_session::metrics::GameMetrics;
use game_session::pod_cost::{ANNOTATION, KubernetesSettings, PodPatcher, run};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

/// One request as the fake API server read it.
#[derive(Debug, Clone)]
struct Seen {
    head: String,
    body: String,
}

fn openssl(dir: &Path, args: &[&str]) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl is needed for this test (Debian package openssl)");
    assert!(status.success(), "openssl {args:?}");
}

/// A cluster CA and the API server's certificate for `localhost`, signed by it.
fn certificates(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "1",
        "-subj",
        "/CN=test-cluster-ca",
    ]);
    openssl(dir, &ca);
    let mut csr = vec!["req"];
    csr.extend(ec);
    csr.extend([
        "-keyout",
        "api.key",
        "-out",
        "api.csr",
        "-subj",
        "/CN=localhost",
    ]);
    openssl(dir, &csr);
    std::fs::write(
        dir.join("api.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "api.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "api.crt",
            "-days",
            "1",
            "-extfile",
            "api.ext",
        ],
    );
}

/// Serves TLS on a free port: answers every request 200 and keeps what it read.
async fn fake_api_server(dir: &Path, seen: Arc<Mutex<Vec<Seen>>>) -> u16 {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("api.crt"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("api.key")).unwrap();
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
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                let mut stream = acceptor.accept(tcp).await.expect("tls handshake");
                let mut data = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let n = stream.read(&mut buf).await.unwrap();
                    assert!(n > 0, "request ended early");
                    data.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&data).into_owned();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length: usize = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap())
                            })
                            .unwrap_or(0);
                        if body.len() >= length {
                            seen.lock().unwrap().push(Seen {
                                head: head.to_owned(),
                                body: body.to_owned(),
                            });
                            break;
                        }
                    }
                }
                stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
                    .await
                    .unwrap();
                let _ = stream.shutdown().await;
            });
        }
    });
    port
}

#[tokio::test]
async fn the_replica_patches_its_pods_deletion_cost_through_the_api_server() {
    let dir = std::env::temp_dir().join(format!("basra-pod-cost-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    certificates(&dir);
    std::fs::write(dir.join("token"), "service-account-token-1\n").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let port = fake_api_server(&dir, Arc::clone(&seen)).await;
    let settings = KubernetesSettings {
        pod_deletion_cost: true,
        api_url: format!("https://localhost:{port}"),
        token_file: dir.join("token"),
        ca_file: dir.join("ca.crt"),
        namespace: "basra".into(),
        pod_name: String::new(),
        min_interval_ms: 1000,
    };
    settings.validate().unwrap();
    let patcher = PodPatcher::new(&settings, "game-session-7d9f-abcde").unwrap();

    patcher.patch(3).await.expect("patched");
    let first = seen.lock().unwrap()[0].clone();
    let request_line = first.head.lines().next().unwrap();
    assert_eq!(
        request_line,
        "PATCH /api/v1/namespaces/basra/pods/game-session-7d9f-abcde HTTP/1.1"
    );
    let head = first.head.to_ascii_lowercase();
    assert!(
        head.contains("authorization: bearer service-account-token-1\r\n"),
        "{head}"
    );
    assert!(
        head.contains("content-type: application/merge-patch+json"),
        "{head}"
    );
    let body: serde_json::Value = serde_json::from_str(&first.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"metadata": {"annotations": {ANNOTATION: "3"}}}),
        "only the annotation, as a string"
    );

    // The token is read again before each call (the kubelet rotates it).
    std::fs::write(dir.join("token"), "service-account-token-2\n").unwrap();
    // The loop patches when the count changed, and not again while it stays.
    let metrics = Arc::new(GameMetrics::default());
    metrics.open_streams.set(5);
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(run(
        patcher,
        Arc::clone(&metrics),
        Duration::from_millis(100),
        shutdown.clone(),
    ));
    tokio::time::sleep(Duration::from_millis(450)).await;
    let after_steady = seen.lock().unwrap().len();
    assert_eq!(
        after_steady, 2,
        "one patch for 5 streams, none while it stays 5"
    );
    metrics.open_streams.set(0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    shutdown.cancel();
    task.await.unwrap();
    let all = seen.lock().unwrap().clone();
    assert_eq!(all.len(), 3, "one more for 0 streams");
    assert!(all[1].body.contains("\"5\"") && all[2].body.contains("\"0\""));
    assert!(
        all[2]
            .head
            .to_ascii_lowercase()
            .contains("bearer service-account-token-2"),
        "the rotated token"
    );

    // A wrong CA fails the handshake: the token never leaves over an unchecked TLS.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    certificates(&other);
    let wrong = PodPatcher::new(
        &KubernetesSettings {
            ca_file: other.join("ca.crt"),
            ..settings
        },
        "game-session-7d9f-abcde",
    )
    .unwrap();
    let err = wrong.patch(1).await.unwrap_err();
    assert!(err.starts_with("tls"), "{err}");
    assert_eq!(seen.lock().unwrap().len(), 3, "nothing reached the server");
    std::fs::remove_dir_all(dir).unwrap();
}
