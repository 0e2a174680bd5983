//! The service-to-service calls that moved out of the client services (API release 2:
//! `AccountsService` → `AccountsInternalService`, `GameService` → `GameInternalService`),
//! still answered at their old paths for one release.
//!
//! During a rolling upgrade, replicas of the previous release keep calling the old paths:
//! matchmaking creating rooms and seating players, game-session recording matches and
//! reporting presence. [`MovedMethodsLayer`] rewrites such a call's path to the new one
//! before the RED metrics and auth see it, so those calls keep working until every replica
//! runs this release. A client that calls an old path gets what the new path answers
//! (PERMISSION_DENIED without a service token). Remove this module with the next API
//! release (docs/runbook.md, "Upgrades").

use std::task::{Context, Poll};

use http::{Request, Uri};
use tower::{Layer, Service};

/// Each moved method: its old path and the path that serves it now.
pub const MOVED_METHODS: &[(&str, &str)] = &[
    (
        "/basra.accounts.v1.AccountsService/RecordMatch",
        "/basra.accounts.v1.AccountsInternalService/RecordMatch",
    ),
    (
        "/basra.accounts.v1.AccountsService/RecordMatches",
        "/basra.accounts.v1.AccountsInternalService/RecordMatches",
    ),
    (
        "/basra.accounts.v1.AccountsService/GetPlayers",
        "/basra.accounts.v1.AccountsInternalService/GetPlayers",
    ),
    (
        "/basra.accounts.v1.AccountsService/ReportPresence",
        "/basra.accounts.v1.AccountsInternalService/ReportPresence",
    ),
    (
        "/basra.accounts.v1.AccountsService/SendInvite",
        "/basra.accounts.v1.AccountsInternalService/SendInvite",
    ),
    (
        "/basra.game.v1.GameService/CreateRoom",
        "/basra.game.v1.GameInternalService/CreateRoom",
    ),
    (
        "/basra.game.v1.GameService/SeatPlayer",
        "/basra.game.v1.GameInternalService/SeatPlayer",
    ),
    (
        "/basra.game.v1.GameService/GetSeat",
        "/basra.game.v1.GameInternalService/GetSeat",
    ),
];

/// The path that serves `path` now: its new path when it moved, else `None`.
pub fn moved_to(path: &str) -> Option<&'static str> {
    MOVED_METHODS
        .iter()
        .find(|(old, _)| *old == path)
        .map(|(_, new)| *new)
}

/// Serves the [`MOVED_METHODS`] at their old paths (see the module's doc).
#[derive(Debug, Clone, Copy, Default)]
pub struct MovedMethodsLayer;

impl<S> Layer<S> for MovedMethodsLayer {
    type Service = MovedMethods<S>;

    fn layer(&self, inner: S) -> MovedMethods<S> {
        MovedMethods { inner }
    }
}

/// The service of [`MovedMethodsLayer`].
#[derive(Debug, Clone)]
pub struct MovedMethods<S> {
    inner: S,
}

impl<S, B> Service<Request<B>> for MovedMethods<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        if let Some(new) = moved_to(request.uri().path()) {
            // A gRPC path has no query; the authority and scheme stay as they were.
            let mut parts = request.uri().clone().into_parts();
            parts.path_and_query = Some(http::uri::PathAndQuery::from_static(new));
            if let Ok(uri) = Uri::from_parts(parts) {
                *request.uri_mut() = uri;
            }
        }
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_moved_method_keeps_its_service_package_and_method_name() {
        for (old, new) in MOVED_METHODS {
            let (old_service, old_method) = old.rsplit_once('/').expect("a method path");
            let (new_service, new_method) = new.rsplit_once('/').expect("a method path");
            assert_eq!(old_method, new_method, "{old} → {new}");
            assert_eq!(
                new_service,
                old_service.replace("Service", "InternalService"),
                "{old} → {new}"
            );
        }
        assert_eq!(
            moved_to("/basra.game.v1.GameService/CreateRoom"),
            Some("/basra.game.v1.GameInternalService/CreateRoom")
        );
        assert_eq!(moved_to("/basra.game.v1.GameService/Play"), None);
    }
}
