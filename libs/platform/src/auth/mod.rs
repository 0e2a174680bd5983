//! Who is calling: Ed25519-signed JWT access tokens and the tower layer that
//! checks them on every gRPC call.
//!
//! Accounts holds a [`SigningKey`] and issues tokens with a [`TokenIssuer`];
//! every service verifies them with a [`TokenVerifier`] (public keys only),
//! usually through an [`AuthLayer`] on its server. Handlers then ask
//! [`caller`] who is calling and [`require_role`] for internal or operator
//! RPCs.
//!
//! Service-to-service calls carry tokens the calling service mints itself with its own
//! key ([`ServiceIdentity`]); receivers trust each key by `kid` for one role
//! ([`TrustedKey`], [`TokenVerifier::trusting`]).

mod credentials;
mod identity;
mod layer;
mod token;

use serde::{Deserialize, Serialize};
use tonic::Status;
use uuid::Uuid;

use crate::error::ServiceError;

pub use credentials::ServiceCredentials;
pub use identity::{
    AuthSettings, IdentitySettings, ServiceIdentity, TrustedKeySettings, load_trusted,
};
pub use layer::{AuthLayer, AuthService};
pub use token::{
    IssuedToken, MAX_OPERATOR_NAME_CHARS, SigningKey, TokenIssuer, TokenVerifier, TrustedKey,
    Verified, valid_operator_name,
};

/// What a verified token says about the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The account (for a player or operator) or the service identity (for a
    /// service token): the token's `sub` claim.
    pub user_id: Uuid,
    /// What the caller may do.
    pub role: Role,
    /// A guest account (signed in with a device id only, no password yet).
    pub guest: bool,
}

/// The name an operator's token gives (`basra admin token --operator NAME`), in the
/// request extensions beside the [`Caller`]: who acted, for the audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorName(pub String);

/// The operator's name the verified token of `request` gives, if any.
pub fn operator_name<T>(request: &tonic::Request<T>) -> Option<String> {
    request
        .extensions()
        .get::<OperatorName>()
        .map(|name| name.0.clone())
}

/// The role a token grants. Roles do not nest: an operator is not a player
/// and a player cannot call service-only RPCs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A person playing the game.
    Player,
    /// Another Basra service (e.g. game-session recording a match).
    Service,
    /// A person operating the platform (admin RPCs).
    Operator,
}

impl Role {
    /// The name used in tokens and messages: `player`, `service`, `operator`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Player => "player",
            Role::Service => "service",
            Role::Operator => "operator",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a token could not be issued or was not accepted. The messages are
/// written for a client developer: they say what to send instead.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// No `authorization` metadata on a call that needs it.
    #[error("missing access token: send the metadata `authorization: Bearer <access token>`")]
    Missing,
    /// The metadata or the token does not have the expected shape.
    #[error(
        "malformed access token: expected the metadata `authorization: Bearer <JWT>` with a \
         three-part JWT"
    )]
    Malformed,
    /// The token was valid but is past its `exp`.
    #[error("access token expired: get a new one with Refresh and retry")]
    Expired,
    /// The token is well-formed but not acceptable (signature, algorithm, key,
    /// issuer, audience or claims); the string says which.
    #[error("invalid access token: {0}")]
    Invalid(String),
    /// A signing or verification key could not be loaded or used (a server
    /// configuration problem, not the caller's).
    #[error("token key: {0}")]
    Key(String),
}

impl ServiceError for AuthError {
    fn code(&self) -> tonic::Code {
        match self {
            AuthError::Key(_) => tonic::Code::Internal,
            _ => tonic::Code::Unauthenticated,
        }
    }
}

/// The verified caller of a request. The [`AuthLayer`] puts it into the http
/// request extensions and tonic copies those into the `tonic::Request`.
///
/// Errors with `UNAUTHENTICATED` if there is none: the method was public, or
/// the server has no [`AuthLayer`].
pub fn caller<T>(request: &tonic::Request<T>) -> Result<Caller, Status> {
    request
        .extensions()
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| Status::unauthenticated(AuthError::Missing.to_string()))
}

/// The verified caller of a player's call: [`caller`], and `PERMISSION_DENIED` when the
/// token's role is not `player` (a service or an operator acts through its own methods,
/// never as a player).
pub fn player<T>(request: &tonic::Request<T>) -> Result<Caller, Status> {
    let caller = caller(request)?;
    require_role(&caller, Role::Player)?;
    Ok(caller)
}

/// `Ok` if the caller has `role`, else `PERMISSION_DENIED` naming the role
/// the call needs.
pub fn require_role(caller: &Caller, role: Role) -> Result<(), Status> {
    if caller.role == role {
        Ok(())
    } else {
        Err(Status::permission_denied(format!(
            "this call needs a token with the {role} role; this token has the {} role",
            caller.role
        )))
    }
}
