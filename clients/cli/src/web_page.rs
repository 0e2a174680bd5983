//! The web client's page, served by `basra dev` on a port of its own: the files `make web`
//! builds into `clients/web/dist`, and `config.json`, which tells the page where the API
//! is (the host the browser used, on the API's port). The page calls the API through
//! gRPC-Web from its own origin, as a page hosted elsewhere would in production.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use axum::Router;
use axum::http::{HeaderMap, header};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_http::services::ServeDir;

/// Where the page is served from.
#[derive(Debug, Clone)]
pub struct WebOptions {
    /// Where the page listens.
    pub listen: SocketAddr,
    /// The built page (`index.html`, `app.js`, `style.css`).
    pub dir: PathBuf,
}

/// Where the page listens unless told: 127.0.0.1:8080, or a free port of 127.0.0.1 when
/// the API itself asks for one (`--listen …:0`), so that two `basra dev` run side by side.
pub fn default_listen(api_listen: SocketAddr) -> SocketAddr {
    let port = if api_listen.port() == 0 { 0 } else { 8080 };
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// The built page's directory in this source tree (`make web` writes it).
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/dist")
}

/// Whether `dir` holds a built page.
pub fn is_built(dir: &Path) -> bool {
    dir.join("index.html").is_file() && dir.join("app.js").is_file()
}

/// Serves the page in `dir` on `listener` until `shutdown`; its `config.json` names the
/// API on `api_port` of whichever host the browser reached the page by, over `https` when
/// `api_tls`.
pub async fn serve(
    listener: TcpListener,
    dir: PathBuf,
    api_port: u16,
    api_tls: bool,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let scheme = if api_tls { "https" } else { "http" };
    let config = move |headers: HeaderMap| async move {
        let host = headers
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
            .map(host_without_port)
            .filter(|host| {
                host.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
            })
            .unwrap_or("127.0.0.1");
        (
            [(header::CONTENT_TYPE, "application/json")],
            format!(r#"{{"api":"{scheme}://{host}:{api_port}"}}"#),
        )
    };
    let app = Router::new()
        .route("/config.json", get(config))
        .fallback_service(ServeDir::new(dir));
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

/// `host` without its port: `127.0.0.1:8080` → `127.0.0.1`, `[::1]:8080` → `[::1]`.
fn host_without_port(host: &str) -> &str {
    match host.rfind(':') {
        Some(colon) if !host[colon..].contains(']') => &host[..colon],
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::{default_listen, host_without_port};

    #[test]
    fn the_page_takes_a_free_port_when_the_api_does() {
        let page = |api: &str| default_listen(api.parse().unwrap()).to_string();
        assert_eq!(page("127.0.0.1:50051"), "127.0.0.1:8080");
        assert_eq!(page("0.0.0.0:50052"), "127.0.0.1:8080");
        assert_eq!(page("127.0.0.1:0"), "127.0.0.1:0");
        assert_eq!(page("[::1]:0"), "127.0.0.1:0");
    }

    #[test]
    fn the_port_is_cut_from_host_names_and_addresses() {
        assert_eq!(host_without_port("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host_without_port("localhost"), "localhost");
        assert_eq!(host_without_port("[::1]:8080"), "[::1]");
        assert_eq!(host_without_port("[::1]"), "[::1]");
    }
}
