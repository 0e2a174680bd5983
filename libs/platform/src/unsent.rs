//! Calls that never reached the server, sent again.
//!
//! A server that ends a connection gracefully (its connection age reached, the server
//! draining before a restart) sends HTTP/2's GOAWAY: the calls it had begun finish, and
//! those its client sent after the server's last accepted stream are refused unseen, as
//! are calls still queued on the client's side of the closing connection. gRPC's own
//! clients (grpc-java, grpc-go, grpc-swift) send such calls again on a new connection
//! without telling the caller ("transparent retry"); tonic does not: it fails them
//! (`INTERNAL` "h2 protocol error", `CANCELLED` "operation was canceled"). A call that
//! never reached the server is safe to send again whatever it does, so the Rust clients
//! of these services call through [`Resending`].

use std::{
    collections::HashSet,
    pin::Pin,
    sync::OnceLock,
    task::{Context, Poll},
};

use bytes::Bytes;
use http::{Request, Response, request::Parts};
use http_body_util::{BodyExt as _, Full};
use prost::Message as _;
use tonic::{body::Body, codegen::StdError};
use tower::{Service, ServiceExt as _};

/// How many times a call is sent in all while it fails before reaching the server: a new
/// connection right away almost always takes it.
pub const MAX_SENDS: usize = 3;

/// Whether `error` (a failed call's, or a source in its chain) says the call never
/// reached the server's handler: the request was still queued on the client when its
/// connection closed (hyper's "canceled"), or the server refused its stream unseen (a
/// GOAWAY whose last stream is before it, or `REFUSED_STREAM`). A connection broken while
/// the call was in flight (the server may have begun it) is not.
pub fn never_reached_server(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(error) = source {
        if let Some(hyper) = error.downcast_ref::<hyper::Error>()
            && hyper.is_canceled()
        {
            return true;
        }
        if let Some(h2) = error.downcast_ref::<h2::Error>() {
            let refused = h2.reason() == Some(h2::Reason::REFUSED_STREAM);
            let after_goaway =
                h2.is_go_away() && h2.is_remote() && h2.reason() == Some(h2::Reason::NO_ERROR);
            return refused || after_goaway;
        }
        source = error.source();
    }
    false
}

/// The paths (`/package.Service/Method`) of the API's methods whose client sends a
/// stream (Play): their requests are not kept to be sent again.
fn client_streaming() -> &'static HashSet<String> {
    static PATHS: OnceLock<HashSet<String>> = OnceLock::new();
    PATHS.get_or_init(|| {
        let files = prost_types::FileDescriptorSet::decode(basra_proto::FILE_DESCRIPTOR_SET)
            .expect("the API's descriptors decode");
        let mut paths = HashSet::new();
        for file in &files.file {
            for service in &file.service {
                for method in &service.method {
                    if method.client_streaming() {
                        paths.insert(format!(
                            "/{}.{}/{}",
                            file.package(),
                            service.name(),
                            method.name()
                        ));
                    }
                }
            }
        }
        paths
    })
}

/// A gRPC channel (`S`, usually tonic's `Channel`) that sends a call again, at most
/// [`MAX_SENDS`] times in all, while it fails before reaching the server
/// ([`never_reached_server`]). It keeps each request's few bytes until the answer's
/// headers come; a client-streaming call (Play) goes through as it is.
#[derive(Debug, Clone)]
pub struct Resending<S> {
    inner: S,
}

impl<S> Resending<S> {
    /// `inner`, sending again what never reached the server.
    pub fn new(inner: S) -> Self {
        Resending { inner }
    }
}

/// A request again from its parts and body bytes.
fn rebuild(parts: &Parts, body: &Bytes) -> Request<Body> {
    let mut request = Request::new(Body::new(Full::new(body.clone())));
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = parts.uri.clone();
    *request.version_mut() = parts.version;
    *request.headers_mut() = parts.headers.clone();
    *request.extensions_mut() = parts.extensions.clone();
    request
}

impl<S> Service<Request<Body>> for Resending<S>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Error: Into<StdError>,
    S::Future: Send,
{
    type Response = Response<Body>;
    type Error = StdError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, StdError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StdError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The clone for the next call; the one made ready goes with this call.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        if client_streaming().contains(request.uri().path()) {
            let call = inner.call(request);
            return Box::pin(async move { call.await.map_err(Into::into) });
        }
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let body = body.collect().await?.to_bytes();
            let mut sends = 1;
            let mut answer = inner.call(rebuild(&parts, &body)).await.map_err(Into::into);
            while let Err(error) = &answer
                && sends < MAX_SENDS
                && never_reached_server(error.as_ref())
            {
                tracing::debug!(path = parts.uri.path(), %error, "the call never reached the server: sending it again");
                sends += 1;
                let ready = inner.ready().await.map_err(Into::into);
                answer = match ready {
                    Ok(ready) => ready.call(rebuild(&parts, &body)).await.map_err(Into::into),
                    Err(error) => Err(error),
                };
            }
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_play_streams_from_the_client() {
        let paths = client_streaming();
        assert!(
            paths.contains("/basra.game.v1.GameService/Play"),
            "{paths:?}"
        );
        // Server-streaming calls send one request: it is kept and may be sent again.
        assert!(!paths.contains("/basra.game.v1.GameService/Watch"));
        assert!(!paths.contains("/basra.accounts.v1.AccountsService/WatchFriends"));
        assert_eq!(paths.len(), 1, "{paths:?}");
    }

    #[test]
    fn a_broken_connection_or_an_answer_is_not_sent_again() {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(!never_reached_server(&reset));
        let answered = tonic::Status::unavailable("the replica is draining");
        assert!(!never_reached_server(&answered));
        // An h2 reset the server sent for a stream it had begun.
        let cancelled = h2::Error::from(h2::Reason::CANCEL);
        assert!(!never_reached_server(&cancelled));
        let refused = h2::Error::from(h2::Reason::REFUSED_STREAM);
        assert!(never_reached_server(&refused));
    }
}
