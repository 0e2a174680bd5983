//! The GET of a provider's key set: HTTPS with rustls and the Mozilla CA roots
//! (`webpki-roots`), or plain HTTP to a loopback address (a test or development issuer).
//! HTTP/1.1, one connection per fetch, no redirects, a bounded body and a deadline.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Uri;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::error::{AccountsError, Result};

/// The largest key set accepted, in bytes (Google's and Apple's are about 1–2 KiB).
pub const MAX_JWKS_BYTES: usize = 256 * 1024;

/// Whether `url` may name a key set: `https://host/...`, or `http://` to a loopback host.
pub fn check_url(url: &str) -> Result<Uri, String> {
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

/// Fetches key sets. Cheap to clone.
#[derive(Clone)]
pub struct Fetcher {
    tls: tokio_rustls::TlsConnector,
    timeout: Duration,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A fetcher whose every fetch ends within `timeout`.
    pub fn new(timeout: Duration) -> Result<Fetcher> {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| AccountsError::Internal(format!("TLS client: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(Fetcher {
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            timeout,
        })
    }

    /// The body of a `200 OK` answer to `GET url`. Errors are described for the logs.
    pub async fn get(&self, url: &str) -> Result<Bytes, String> {
        let uri = check_url(url)?;
        tokio::time::timeout(self.timeout, self.get_uri(&uri))
            .await
            .map_err(|_| format!("no answer within {} ms", self.timeout.as_millis()))?
    }

    async fn get_uri(&self, uri: &Uri) -> Result<Bytes, String> {
        let host = uri.host().ok_or("no host")?.to_owned();
        let https = uri.scheme_str() == Some("https");
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let bare_host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let tcp = TcpStream::connect((bare_host.as_str(), port))
            .await
            .map_err(|e| format!("connect to {host}:{port}: {e}"))?;
        let authority = uri
            .authority()
            .map_or_else(|| host.clone(), |a| a.as_str().to_owned());
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        if https {
            let name = rustls::pki_types::ServerName::try_from(bare_host)
                .map_err(|e| format!("server name {host}: {e}"))?;
            let tls = self
                .tls
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS with {host}: {e}"))?;
            request(TokioIo::new(tls), &authority, &path).await
        } else {
            request(TokioIo::new(tcp), &authority, &path).await
        }
    }
}

async fn request<T>(io: T, authority: &str, path: &str) -> Result<Bytes, String>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| format!("HTTP handshake: {e}"))?;
    let connection = tokio::spawn(connection);
    let request = http::Request::get(path)
        .header(http::header::HOST, authority)
        .header(http::header::USER_AGENT, "basra-accounts")
        .header(http::header::ACCEPT, "application/json")
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("request: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("GET {path}: {e}"))?;
    let status = response.status();
    if status != http::StatusCode::OK {
        connection.abort();
        return Err(format!("GET {path} answered {status}"));
    }
    let body = Limited::new(response.into_body(), MAX_JWKS_BYTES)
        .collect()
        .await
        .map_err(|e| format!("reading the key set: {e}"))?
        .to_bytes();
    connection.abort();
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http() {
        assert!(check_url("https://appleid.apple.com/auth/keys").is_ok());
        assert!(check_url("http://127.0.0.1:1234/jwks").is_ok());
        assert!(check_url("http://[::1]:1234/jwks").is_ok());
        assert!(check_url("http://localhost/jwks").is_ok());
        assert!(check_url("http://10.0.0.1/jwks").is_err());
        assert!(check_url("ftp://example.com/jwks").is_err());
        assert!(check_url("/jwks").is_err());
    }
}
