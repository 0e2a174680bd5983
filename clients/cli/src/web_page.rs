//! The web client's page, served by `basra dev` on a port of its own: the files `make web`
//! builds into `clients/web/dist`, and `config.json`, which tells the page where the API
//! is (the host the browser used, on the API's port). The page calls the API through
//! gRPC-Web from its own origin, as a page hosted elsewhere would in production.
//!
//! Every answer carries the page's security headers ([`security_headers`]): a
//! Content-Security-Policy that lets the page load only its own files and call only its
//! own origin and the API, in no frame; `X-Content-Type-Options: nosniff`. The web image's
//! nginx sends the same policy with the API on the page's own origin
//! (`deploy/docker/web.nginx.conf`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::Response;
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
    let api = move |headers: &HeaderMap| format!("{scheme}://{}:{api_port}", api_host(headers));
    let config = move |headers: HeaderMap| async move {
        (
            [(header::CONTENT_TYPE, "application/json")],
            format!(r#"{{"api":"{}"}}"#, api(&headers)),
        )
    };
    let secure = move |request: Request, next: Next| async move {
        let api = api(request.headers());
        let mut response: Response = next.run(request).await;
        response.headers_mut().extend(security_headers(&api));
        response
    };
    let app = Router::new()
        .route("/config.json", get(config))
        .fallback_service(ServeDir::new(dir))
        .layer(middleware::from_fn(secure));
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

/// The host the browser reached the page by (the API is on the same host), if it is a
/// plain host name or address; else 127.0.0.1.
fn api_host(headers: &HeaderMap) -> &str {
    headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .map(host_without_port)
        .filter(|host| {
            host.chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
        })
        .unwrap_or("127.0.0.1")
}

/// The page's Content-Security-Policy, calling the API at `api` (an origin, or `'self'`
/// when the API is on the page's own origin, as behind the gateway): its own scripts,
/// styles and images (and the empty `data:` icon), gRPC-Web to its origin and the API,
/// no plugins, no `<base>` or form elsewhere, no frame around it (clickjacking).
pub fn content_security_policy(api: &str) -> String {
    let connect = if api == "'self'" {
        "'self'".to_owned()
    } else {
        format!("'self' {api}")
    };
    format!(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src {connect}; object-src 'none'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    )
}

/// The headers every answer of the page server carries, the API at `api`.
pub fn security_headers(api: &str) -> [(HeaderName, HeaderValue); 4] {
    let policy = HeaderValue::from_str(&content_security_policy(api))
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'self'"));
    [
        (header::CONTENT_SECURITY_POLICY, policy),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        // For browsers older than frame-ancestors.
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
    ]
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
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// The answer's head to `GET path` with `Host: host`, over plain HTTP/1.1.
    async fn head(addr: SocketAddr, path: &str, host: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
            .split("\r\n\r\n")
            .next()
            .unwrap()
            .to_ascii_lowercase()
    }

    #[tokio::test]
    async fn every_answer_carries_the_security_headers_with_the_api_as_the_browser_reaches_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "<!doctype html>").unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(serve(
            listener,
            dir.path().to_owned(),
            50051,
            false,
            shutdown.clone(),
        ));
        for (path, status) in [("/", "200"), ("/config.json", "200"), ("/nope.js", "404")] {
            let head = head(addr, path, "play.local:8080").await;
            assert!(
                head.starts_with(&format!("http/1.1 {status}")),
                "{path}: {head}"
            );
            assert!(
                head.contains(
                    "content-security-policy: default-src 'self'; script-src 'self'; style-src 'self'; \
                     img-src 'self' data:; connect-src 'self' http://play.local:50051; object-src 'none'; \
                     base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n"
                ),
                "{path}: {head}"
            );
            assert!(
                head.contains("x-content-type-options: nosniff"),
                "{path}: {head}"
            );
            assert!(head.contains("x-frame-options: deny"), "{path}: {head}");
        }
        shutdown.cancel();
        server.await.unwrap().unwrap();
    }

    /// The web image's nginx sends the same policy, the API on the page's own origin.
    #[test]
    fn the_web_image_sends_the_same_policy() {
        let conf = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/docker/web.nginx.conf"),
        )
        .unwrap();
        let policy = content_security_policy("'self'");
        for header in [
            format!("add_header Content-Security-Policy \"{policy}\" always;"),
            "add_header X-Content-Type-Options \"nosniff\" always;".to_owned(),
            "add_header X-Frame-Options \"DENY\" always;".to_owned(),
            "add_header Referrer-Policy \"no-referrer\" always;".to_owned(),
        ] {
            assert!(conf.contains(&header), "{header} in\n{conf}");
        }
    }

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
