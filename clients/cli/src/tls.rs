//! How the clients reach a server: `http://` in cleartext, `https://` over TLS (rustls),
//! trusting the webpki roots and the private CA of `--ca-file`. The CA is trusted for the
//! whole process, as the system's roots are, so every command's connections honour it.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::Context as _;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint};

static PRIVATE_CA: OnceLock<Certificate> = OnceLock::new();

/// Trusts the CA certificate (PEM) in `path` for every `https://` server from now on.
pub fn trust_ca_file(path: &Path) -> anyhow::Result<()> {
    let pem = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    anyhow::ensure!(
        pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----"),
        "{} holds no PEM certificate",
        path.display()
    );
    PRIVATE_CA
        .set(Certificate::from_pem(pem))
        .map_err(|_| anyhow::anyhow!("a CA file is already trusted"))
}

/// The endpoint of `url`: TLS for `https://` (the server's name or address as the URL
/// gives it, checked against its certificate), cleartext for `http://`.
pub fn endpoint(url: &str) -> anyhow::Result<Endpoint> {
    let endpoint = Endpoint::from_shared(url.to_owned())
        .with_context(|| format!("bad server address {url:?}"))?;
    Ok(match endpoint.uri().scheme_str() {
        Some("https") => {
            let mut tls = ClientTlsConfig::new().with_webpki_roots();
            if let Some(ca) = PRIVATE_CA.get() {
                tls = tls.ca_certificate(ca.clone());
            }
            endpoint
                .tls_config(tls)
                .context("the TLS settings for an https server")?
        }
        Some("http") => endpoint,
        _ => anyhow::bail!("the server address {url:?} must start with http:// or https://"),
    })
}
