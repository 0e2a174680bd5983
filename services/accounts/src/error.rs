//! The one error type of the accounts service and its gRPC status codes.

use std::time::Duration;

use basra_platform::error::ServiceError;
use tonic::Code;

/// Everything that can go wrong in the accounts service, from bad input to a
/// lost database connection. Each variant maps to one gRPC code
/// ([`ServiceError::code`]); the message of a client-side error is shown to the
/// client as is, an internal one is logged with its cause and answered with a
/// generic message.
#[derive(Debug, thiserror::Error)]
pub enum AccountsError {
    /// A request field does not meet its rules.
    #[error("{field}: {reason}")]
    InvalidArgument {
        /// The offending field, as named in the proto.
        field: &'static str,
        /// What is wrong, for the client developer.
        reason: String,
    },
    /// One record of a `RecordMatches` batch is refused, and with it the whole batch.
    #[error("records[{index}]: {error}")]
    InvalidRecord {
        /// The record's position in the request.
        index: usize,
        /// Why it is refused (an [`AccountsError::InvalidArgument`]).
        error: Box<AccountsError>,
    },
    /// The username belongs to another account.
    #[error("username is already taken")]
    UsernameTaken,
    /// The provider account (provider, subject) signs in to another account already.
    #[error("this {0} account is already linked to another Basra account")]
    ProviderTaken(&'static str),
    /// Unknown username or wrong password (deliberately not told apart).
    #[error("invalid username or password")]
    BadCredentials,
    /// The refresh token is unknown, expired, revoked or was already used.
    #[error("refresh token is invalid, expired or already used: sign in again")]
    BadRefreshToken,
    /// The device's guest account was upgraded to a registered account.
    #[error(
        "this device's guest account was registered: sign in with Login, or with the provider it was linked to"
    )]
    GuestUpgraded,
    /// Register was called with the token of an account that is not a guest.
    #[error("this account is already registered")]
    AlreadyRegistered,
    /// Too many login attempts for this account or from this address.
    #[error("too many login attempts: retry in {}s", retry_after.as_secs().max(1))]
    RateLimited {
        /// How long until the next attempt is allowed.
        retry_after: Duration,
    },
    /// Too many sign-ups (Register, GuestLogin) from this address or in all.
    #[error("too many sign-ups: retry in {}s", retry_after.as_secs().max(1))]
    SignupLimited {
        /// How long until the next attempt is allowed.
        retry_after: Duration,
    },
    /// A bounded resource (password hashing, sign-ups) is at capacity right now.
    #[error("{what} is at capacity: retry in {}s", retry_after.as_secs().max(1))]
    Overloaded {
        /// What is busy.
        what: &'static str,
        /// When a retry is likely to succeed.
        retry_after: Duration,
    },
    /// An account holds its most WatchFriends streams here (RESOURCE_EXHAUSTED, retry hint).
    #[error(transparent)]
    TooManyStreams(#[from] basra_platform::stream_limit::TooManyStreams),
    /// Too many display name changes within the rolling window.
    #[error(
        "too many display name changes: the next one is allowed at {}",
        next_change_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )]
    NameChangesLimited {
        /// When the next change is allowed.
        next_change_at: chrono::DateTime<chrono::Utc>,
    },
    /// Too many reports (ReportPlayer) by one player within the rolling window.
    #[error(
        "too many reports: the next one is accepted at {}",
        next_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )]
    ReportsLimited {
        /// When the next report is accepted.
        next_at: chrono::DateTime<chrono::Utc>,
    },
    /// No such user.
    #[error("no such user")]
    UserNotFound,
    /// A notice id that is not one of the caller's kept notices.
    #[error("no such notice: unknown, expired, dropped or not the caller's")]
    NoticeNotFound,
    /// Something else the request names does not exist (the message says what).
    #[error("{0}")]
    NotFound(&'static str),
    /// A friend action the rules refuse (its code is the refusal's).
    #[error(transparent)]
    Friend(#[from] crate::friends::Refusal),

    /// The request is fine but the state of things refuses it.
    #[error("{0}")]
    Precondition(&'static str),
    /// Presence and notifications (Redis) could not be reached; the call may be retried.
    #[error("presence and notifications are unavailable: retry later")]
    SocialUnavailable(String),
    /// The caller is authenticated but not allowed to do this.
    #[error("{0}")]
    PermissionDenied(&'static str),
    /// The account is banned (the message names the reason and the end).
    #[error("{0}")]
    Banned(String),
    /// The request needs a valid access token.
    #[error("{0}")]
    Unauthenticated(String),
    /// An identity provider's keys could not be fetched; the call may be retried.
    #[error("{0}")]
    ProviderUnavailable(String),
    /// The database could not be reached; the call may be retried.
    #[error("the database is unavailable: retry later")]
    Unavailable(#[source] sqlx::Error),
    /// A database error that is not the client's fault.
    #[error("database error")]
    Database(#[source] sqlx::Error),
    /// Anything else that is not the client's fault.
    #[error("{0}")]
    Internal(String),
    /// A setting that cannot be used: the service does not start (never a call's answer).
    #[error(transparent)]
    Settings(#[from] basra_platform::config::ConfigError),
}

impl AccountsError {
    /// A setting the service cannot use (the message names the key).
    pub fn bad_setting(message: impl Into<String>) -> AccountsError {
        basra_platform::config::ConfigError::invalid(message).into()
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = AccountsError> = std::result::Result<T, E>;

impl From<basra_records::InvalidRecord> for AccountsError {
    fn from(e: basra_records::InvalidRecord) -> AccountsError {
        AccountsError::InvalidArgument {
            field: e.field,
            reason: e.reason,
        }
    }
}

impl AccountsError {
    /// An [`AccountsError::InvalidArgument`] for `field`.
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> AccountsError {
        AccountsError::InvalidArgument {
            field,
            reason: reason.into(),
        }
    }
}

impl AccountsError {
    /// This error, about the `index`-th record of a batch: an invalid argument names the
    /// record; any other error (the database) is the batch's as a whole.
    pub fn in_record(self, index: usize) -> AccountsError {
        match self {
            AccountsError::InvalidArgument { .. } => AccountsError::InvalidRecord {
                index,
                error: Box::new(self),
            },
            other => other,
        }
    }

    /// The error about one record, without the record's position (a batch of one is a
    /// `RecordMatch`).
    pub fn without_record(self) -> AccountsError {
        match self {
            AccountsError::InvalidRecord { error, .. } => *error,
            other => other,
        }
    }
}

impl From<sqlx::Error> for AccountsError {
    fn from(err: sqlx::Error) -> AccountsError {
        match err {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => AccountsError::Unavailable(err),
            other => AccountsError::Database(other),
        }
    }
}

impl ServiceError for AccountsError {
    fn code(&self) -> Code {
        match self {
            AccountsError::InvalidArgument { .. } | AccountsError::InvalidRecord { .. } => {
                Code::InvalidArgument
            }
            AccountsError::UsernameTaken | AccountsError::ProviderTaken(_) => Code::AlreadyExists,
            AccountsError::BadCredentials
            | AccountsError::BadRefreshToken
            | AccountsError::Unauthenticated(_) => Code::Unauthenticated,
            AccountsError::GuestUpgraded
            | AccountsError::AlreadyRegistered
            | AccountsError::Precondition(_) => Code::FailedPrecondition,
            AccountsError::RateLimited { .. }
            | AccountsError::SignupLimited { .. }
            | AccountsError::Overloaded { .. }
            | AccountsError::TooManyStreams(_)
            | AccountsError::NameChangesLimited { .. }
            | AccountsError::ReportsLimited { .. } => Code::ResourceExhausted,
            AccountsError::UserNotFound
            | AccountsError::NoticeNotFound
            | AccountsError::NotFound(_) => Code::NotFound,
            AccountsError::Friend(refusal) => refusal.code(),
            AccountsError::PermissionDenied(_) | AccountsError::Banned(_) => Code::PermissionDenied,
            AccountsError::Unavailable(_)
            | AccountsError::SocialUnavailable(_)
            | AccountsError::ProviderUnavailable(_) => Code::Unavailable,
            AccountsError::Database(_)
            | AccountsError::Internal(_)
            | AccountsError::Settings(_) => Code::Internal,
        }
    }

    fn bad_field(&self) -> Option<(String, String)> {
        match self {
            AccountsError::InvalidArgument { field, reason } => {
                Some(((*field).to_owned(), reason.clone()))
            }
            AccountsError::InvalidRecord { index, error } => {
                let (field, reason) = error.bad_field()?;
                Some((format!("records[{index}].{field}"), reason))
            }
            _ => None,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            AccountsError::RateLimited { retry_after }
            | AccountsError::SignupLimited { retry_after }
            | AccountsError::Overloaded { retry_after, .. } => Some(*retry_after),
            AccountsError::TooManyStreams(refused) => refused.retry_after(),
            AccountsError::NameChangesLimited {
                next_change_at: next_at,
            }
            | AccountsError::ReportsLimited { next_at } => Some(
                (*next_at - chrono::Utc::now())
                    .to_std()
                    .unwrap_or(Duration::ZERO),
            ),
            // The daily count starts over at the next UTC midnight.
            AccountsError::Friend(crate::friends::Refusal::TooManyRequests) => {
                Some(crate::friends::until_next_day(chrono::Utc::now()))
            }
            _ => None,
        }
    }
}

impl From<AccountsError> for tonic::Status {
    fn from(err: AccountsError) -> tonic::Status {
        basra_platform::error::to_status(&err)
    }
}
