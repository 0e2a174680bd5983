//! The HTTP client both providers share: hyper-util's pooled client over rustls (ring, as
//! the rest of the tree) with the Mozilla roots plus an optional extra CA file, a deadline
//! per request and a bounded answer body.
//!
//! FCM negotiates HTTP/2 or HTTP/1.1 by ALPN (and speaks HTTP/1.1 to a plain `http://`
//! stand-in); APNs is HTTP/2 only, many requests multiplexed on one connection per
//! endpoint, as Apple asks.

use std::error::Error as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

use crate::error::PushError;

/// The largest answer body read, in bytes (the providers' errors are well under 1 KiB).
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// An idle pooled connection is closed after this long.
const IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Which HTTP versions a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Versions {
    /// HTTP/2 or HTTP/1.1, as ALPN decides (FCM, Google's token endpoint).
    Any,
    /// HTTP/2 only (APNs).
    Http2Only,
}

/// An answer: status, headers and the (bounded) body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// A pooled HTTPS client. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Http {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
}

impl Http {
    /// A client trusting the public roots and the certificates in `ca_file`, abandoning
    /// each request after `timeout`.
    pub(crate) fn new(
        ca_file: Option<&Path>,
        versions: Versions,
        timeout: Duration,
    ) -> Result<Http, PushError> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(path) = ca_file {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| PushError::Invalid(format!("CA file {}: {e}", path.display())))?;
            for cert in certs {
                let cert = cert
                    .map_err(|e| PushError::Invalid(format!("CA file {}: {e}", path.display())))?;
                roots
                    .add(cert)
                    .map_err(|e| PushError::Invalid(format!("CA file {}: {e}", path.display())))?;
            }
        }
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| PushError::Invalid(format!("TLS client: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            // Plain http:// only reaches loopback hosts: the settings refuse any other.
            .https_or_http();
        let connector = match versions {
            Versions::Any => connector.enable_http1().enable_http2().build(),
            Versions::Http2Only => connector.enable_http2().build(),
        };
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(IDLE_TIMEOUT)
            .http2_only(versions == Versions::Http2Only);
        Ok(Http {
            client: builder.build(connector),
            timeout,
        })
    }

    /// Sends `request` and reads its answer, or describes (for the logs) why there is none.
    pub(crate) async fn send(&self, request: Request<Full<Bytes>>) -> Result<Answer, String> {
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| describe(&e))?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|e| format!("reading the answer: {e}"))?
                .to_bytes();
            Ok(Answer {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| format!("no answer within {} ms", self.timeout.as_millis()))?
    }
}

/// An error and its causes on one line (hyper-util's own message is only "client error").
fn describe(error: &hyper_util::client::legacy::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
