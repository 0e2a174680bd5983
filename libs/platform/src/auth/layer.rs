//! The tower layer that authenticates every gRPC call before it reaches a
//! service.

use std::{
    fmt,
    future::{self, Future},
    pin::Pin,
    task::{Context, Poll},
};

use http::{HeaderMap, Request, Response, header::AUTHORIZATION};
use tonic::Status;
use tower::{Layer, Service};

use super::{AuthError, OperatorName, Role, TokenVerifier, Verified};
use crate::revocation::Revocations;

/// Health and reflection are public on every server: probes and tools such as
/// grpcurl carry no token.
const ALWAYS_PUBLIC: &[&str] = &[
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1.ServerReflection/",
    "/grpc.reflection.v1alpha.ServerReflection/",
];

/// A tower [`Layer`] for tonic servers. For every gRPC method not in
/// `public_methods` (full paths such as
/// `"/basra.accounts.v1.AccountsService/GuestLogin"`; health and reflection are
/// always public) it requires `authorization: Bearer <jwt>`, verifies it and
/// inserts the [`Caller`](super::Caller) into the request extensions (read it with
/// [`caller`](super::caller)), and beside it the [`OperatorName`] an operator's token
/// gives (read it with [`operator_name`](super::operator_name)). Otherwise it answers
/// `UNAUTHENTICATED` without calling the service.
///
/// Public methods pass without a token; when one carries a valid token, its
/// `Caller` is inserted too (an invalid one is ignored there).
#[derive(Clone)]
pub struct AuthLayer {
    verifier: TokenVerifier,
    public_methods: &'static [&'static str],
    revocations: Option<Revocations>,
}

impl AuthLayer {
    /// A layer verifying tokens with `verifier`, letting `public_methods`
    /// through without one.
    pub fn new(verifier: TokenVerifier, public_methods: &'static [&'static str]) -> AuthLayer {
        AuthLayer {
            verifier,
            public_methods,
            revocations: None,
        }
    }

    /// Also refuses the players in `revocations` (banned or deleted accounts), with the
    /// status [`Revoked::status`](crate::revocation::Revoked::status) names, though
    /// their tokens are otherwise valid.
    pub fn with_revocations(mut self, revocations: Revocations) -> AuthLayer {
        self.revocations = Some(revocations);
        self
    }
}

impl fmt::Debug for AuthLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthLayer")
            .field("verifier", &self.verifier)
            .field("public_methods", &self.public_methods)
            .finish()
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = AuthService<S>;

    fn layer(&self, inner: S) -> AuthService<S> {
        AuthService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service made by [`AuthLayer`].
#[derive(Clone, Debug)]
pub struct AuthService<S> {
    inner: S,
    layer: AuthLayer,
}

impl<S> AuthService<S> {
    /// The caller of a request to `path`, if any; `Err` only when the method
    /// needs a token and there is no acceptable one.
    fn authenticate(&self, path: &str, headers: &HeaderMap) -> Result<Option<Verified>, Status> {
        let verified = self
            .verify(path, headers)
            .map_err(|err| Status::unauthenticated(err.to_string()))?;
        let caller = verified.as_ref().map(|v| &v.caller);
        if let (Some(caller), Some(revocations)) = (caller, &self.layer.revocations)
            && caller.role == Role::Player
            && let Some(revoked) = revocations.check(caller.user_id)
        {
            if self.layer.public_methods.contains(&path) {
                // Public methods (sign-in) decide for themselves; they get no caller.
                return Ok(None);
            }
            return Err(revoked.status());
        }
        Ok(verified)
    }

    fn verify(&self, path: &str, headers: &HeaderMap) -> Result<Option<Verified>, AuthError> {
        if ALWAYS_PUBLIC.iter().any(|prefix| path.starts_with(prefix)) {
            return Ok(None);
        }
        let token = bearer_token(headers);
        if self.layer.public_methods.contains(&path) {
            // A public method still learns who calls when a valid token comes
            // along (e.g. a guest upgrading to a registered account). A bad or
            // expired one is ignored, not refused: clients may well send a
            // stale access token with Refresh.
            return Ok(token
                .ok()
                .and_then(|token| self.layer.verifier.verify_claims(token).ok()));
        }
        self.layer.verifier.verify_claims(token?).map(Some)
    }
}

/// The token of `authorization: Bearer <token>` (the scheme in any case).
fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthError> {
    let value = headers.get(AUTHORIZATION).ok_or(AuthError::Missing)?;
    value
        .to_str()
        .ok()
        .and_then(|value| value.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|token| !token.is_empty())
        .ok_or(AuthError::Malformed)
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for AuthService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: Default + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<ReqBody>) -> Self::Future {
        match self.authenticate(request.uri().path(), request.headers()) {
            Ok(Some(Verified {
                caller,
                operator_name,
            })) => {
                request.extensions_mut().insert(caller);
                if let Some(name) = operator_name {
                    request.extensions_mut().insert(OperatorName(name));
                }
            }
            Ok(None) => {}
            Err(status) => {
                tracing::debug!(method = request.uri().path(), error = %status.message(), "call rejected");
                // A complete gRPC answer (trailers-only status), so clients
                // see UNAUTHENTICATED (or PERMISSION_DENIED for a banned player) and the
                // message, not a transport error.
                let response = status.into_http();
                return Box::pin(future::ready(Ok(response)));
            }
        }
        // `inner` was polled ready and its future owns what it needs, so
        // calling it directly is sound (no clone-and-swap needed).
        Box::pin(self.inner.call(request))
    }
}
