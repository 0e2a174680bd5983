//! The service's one error enum and its place in the shared status table.

use basra_platform::error::{ServiceError, to_status};
use tonic::Code;

/// Everything that can go wrong in game-session.
#[derive(Debug, thiserror::Error)]
pub enum GameError {
    /// A request is malformed (INVALID_ARGUMENT).
    #[error("{0}")]
    Invalid(String),
    /// No such room (NOT_FOUND).
    #[error("no room {0:?}")]
    RoomNotFound(String),
    /// Something else does not exist (NOT_FOUND).
    #[error("{0}")]
    NotFound(String),
    /// The caller may not do this (PERMISSION_DENIED).
    #[error("{0}")]
    Denied(String),
    /// Not possible in the room's current state (FAILED_PRECONDITION).
    #[error("{0}")]
    Precondition(String),
    /// A capacity limit (RESOURCE_EXHAUSTED).
    #[error("{0}")]
    Exhausted(String),
    /// An account holds its most streams of a kind here (RESOURCE_EXHAUSTED, retry hint).
    #[error(transparent)]
    TooManyStreams(#[from] basra_platform::stream_limit::TooManyStreams),
    /// This replica is draining or stopping (UNAVAILABLE).
    #[error("{0}")]
    Unavailable(String),
    /// Redis failed (UNAVAILABLE: another attempt may work).
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// Stored data could not be read back: a bug or a foreign writer (INTERNAL).
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// Too many concurrent writers on one room (UNAVAILABLE: retry).
    #[error("room {0:?} is too busy; retry")]
    Contention(String),
    /// A bug (INTERNAL).
    #[error("{0}")]
    Internal(String),
    /// A setting that cannot be used: the replica does not start (never a call's answer).
    #[error(transparent)]
    Settings(#[from] basra_platform::config::ConfigError),
}

impl ServiceError for GameError {
    fn code(&self) -> Code {
        match self {
            GameError::Invalid(_) => Code::InvalidArgument,
            GameError::RoomNotFound(_) | GameError::NotFound(_) => Code::NotFound,
            GameError::Denied(_) => Code::PermissionDenied,
            GameError::Precondition(_) => Code::FailedPrecondition,
            GameError::Exhausted(_) | GameError::TooManyStreams(_) => Code::ResourceExhausted,
            GameError::Unavailable(_) | GameError::Redis(_) | GameError::Contention(_) => {
                Code::Unavailable
            }
            GameError::Corrupt(_) | GameError::Internal(_) | GameError::Settings(_) => {
                Code::Internal
            }
        }
    }

    fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            GameError::TooManyStreams(refused) => refused.retry_after(),
            _ => None,
        }
    }
}

impl From<GameError> for tonic::Status {
    fn from(error: GameError) -> tonic::Status {
        to_status(&error)
    }
}

impl From<serde_json::Error> for GameError {
    fn from(error: serde_json::Error) -> GameError {
        GameError::Corrupt(error.to_string())
    }
}

/// The service's result type.
pub type Result<T, E = GameError> = std::result::Result<T, E>;
