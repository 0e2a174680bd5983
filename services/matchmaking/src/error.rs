//! The one error type of the matchmaking service and its gRPC codes.

use basra_platform::error::{ServiceError, to_status};
use tonic::Code;

/// Everything that can go wrong in matchmaking. Client-facing messages say
/// what to do; internal ones are logged and answered generically.
#[derive(Debug, thiserror::Error)]
pub enum MatchmakingError {
    /// The request is malformed or a value is out of range.
    #[error("{0}")]
    InvalidArgument(String),
    /// No such ticket, room or code (for this caller).
    #[error("{0}")]
    NotFound(String),
    /// Illegal in the current state (room full, seat taken, …).
    #[error("{0}")]
    FailedPrecondition(String),
    /// The caller holds a seat in a match that is not finished, so may not take another
    /// (FAILED_PRECONDITION, with the room in the `google.rpc.ErrorInfo`): a room's, or
    /// an event's match (its room `ev-…`) made and without a result yet.
    #[error("{}", seated_message(.room_id))]
    Seated {
        /// The room the caller sits in.
        room_id: String,
    },
    /// The caller may not do this (e.g. ranked for guests).
    #[error("{0}")]
    PermissionDenied(String),
    /// A rate or capacity limit: back off.
    #[error("{0}")]
    ResourceExhausted(String),
    /// An account holds its most FindMatch streams here (RESOURCE_EXHAUSTED, retry hint).
    #[error(transparent)]
    TooManyStreams(#[from] basra_platform::stream_limit::TooManyStreams),
    /// A dependency (game-session, accounts, Redis) is unreachable: retry.
    #[error("{0}")]
    Unavailable(String),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] redis::RedisError),
    /// Stored data could not be read back (a bug or a foreign writer).
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// A dependency answered something it should not have.
    #[error("{context}: {status}")]
    Upstream {
        /// What we were doing.
        context: &'static str,
        /// What it answered.
        status: tonic::Status,
    },
    /// An event refused the call (issue 47): the code and the `google.rpc.ErrorInfo`
    /// reason the .proto documents for it.
    #[error("{message}")]
    Refused {
        /// ALREADY_EXISTS, NOT_FOUND or FAILED_PRECONDITION.
        code: Code,
        /// The ErrorInfo reason (`EVENT_FULL`, …).
        reason: &'static str,
        /// What to tell the player.
        message: String,
    },
    /// The events database failed.
    #[error("events database: {0}")]
    Database(#[from] sqlx::Error),
    /// The server could not start or failed.
    #[error("server: {0}")]
    Serve(#[from] basra_platform::serve::ServeError),
    /// A setting that cannot be used: the service does not start (never a call's answer).
    #[error(transparent)]
    Settings(#[from] basra_platform::config::ConfigError),
}

impl ServiceError for MatchmakingError {
    fn code(&self) -> Code {
        match self {
            MatchmakingError::InvalidArgument(_) => Code::InvalidArgument,
            MatchmakingError::NotFound(_) => Code::NotFound,
            MatchmakingError::FailedPrecondition(_) | MatchmakingError::Seated { .. } => {
                Code::FailedPrecondition
            }
            MatchmakingError::PermissionDenied(_) => Code::PermissionDenied,
            MatchmakingError::ResourceExhausted(_) | MatchmakingError::TooManyStreams(_) => {
                Code::ResourceExhausted
            }
            MatchmakingError::Unavailable(_) => Code::Unavailable,
            MatchmakingError::Refused { code, .. } => *code,
            MatchmakingError::Database(
                sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed,
            ) => Code::Unavailable,
            // A lost Redis connection is transient: clients retry elsewhere.
            MatchmakingError::Store(err)
                if err.is_io_error() || err.is_connection_dropped() || err.is_timeout() =>
            {
                Code::Unavailable
            }
            MatchmakingError::Store(_)
            | MatchmakingError::Corrupt(_)
            | MatchmakingError::Upstream { .. }
            | MatchmakingError::Database(_)
            | MatchmakingError::Serve(_)
            | MatchmakingError::Settings(_) => Code::Internal,
        }
    }

    fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            MatchmakingError::TooManyStreams(refused) => refused.retry_after(),
            _ => None,
        }
    }

    fn error_info(&self) -> Option<(&'static str, std::collections::HashMap<String, String>)> {
        match self {
            MatchmakingError::Seated { room_id } => Some((
                SEATED_REASON,
                [(ROOM_ID_KEY.to_owned(), room_id.clone())].into(),
            )),
            MatchmakingError::Refused { reason, .. } => Some((reason, Default::default())),
            _ => None,
        }
    }
}

/// What [`MatchmakingError::Seated`] says: an event's match (its room made by the event
/// clock, `ev-<event>-<match>`) is named as such.
fn seated_message(room_id: &str) -> String {
    if let Some(event) = room_id
        .strip_prefix("ev-")
        .and_then(|rest| rest.rsplit_once('-'))
        .map(|(event, _)| event)
    {
        format!(
            "you have a match of event {event} waiting or being played (room {room_id}): \
             play it out first (or withdraw from the event)"
        )
    } else {
        format!(
            "you are seated in room {room_id}, whose match is not finished: \
             play it out or resign (or leave it, before it starts) first"
        )
    }
}

/// The `google.rpc.ErrorInfo` reason of [`MatchmakingError::Seated`].
pub const SEATED_REASON: &str = "SEATED_IN_UNFINISHED_MATCH";
/// The `google.rpc.ErrorInfo` metadata key holding the room of [`SEATED_REASON`].
pub const ROOM_ID_KEY: &str = "room_id";

impl MatchmakingError {
    /// A setting the service cannot use (the message names the key).
    pub fn bad_setting(message: impl Into<String>) -> MatchmakingError {
        basra_platform::config::ConfigError::invalid(message).into()
    }
}

impl From<MatchmakingError> for tonic::Status {
    fn from(err: MatchmakingError) -> tonic::Status {
        to_status(&err)
    }
}

/// A malformed card or rule settings in a request (the shared engine <-> API
/// conversions of `basra_proto::convert`).
impl From<basra_proto::convert::ConvertError> for MatchmakingError {
    fn from(err: basra_proto::convert::ConvertError) -> Self {
        MatchmakingError::InvalidArgument(err.0)
    }
}

impl From<serde_json::Error> for MatchmakingError {
    fn from(err: serde_json::Error) -> Self {
        MatchmakingError::Corrupt(err.to_string())
    }
}

/// A shorthand for results of this crate.
pub type Result<T, E = MatchmakingError> = std::result::Result<T, E>;
