//! The one mapping from service errors to gRPC statuses.
//!
//! Each service has one error enum and says, per variant, which gRPC code it
//! is ([`ServiceError`]); [`to_status`] turns it into a `tonic::Status`.
//! Internal errors are logged with their whole cause chain and answered with
//! a generic message: their details (SQL, hostnames, …) are not for clients.

use std::{error::Error, fmt};

use tonic::{Code, Status};

/// A service error's place in the shared code table (see the Basra API
/// docs): INVALID_ARGUMENT for malformed input, FAILED_PRECONDITION for
/// actions illegal in the current state, NOT_FOUND, PERMISSION_DENIED,
/// UNAUTHENTICATED, RESOURCE_EXHAUSTED for rate and capacity limits,
/// UNAVAILABLE for "retry elsewhere", INTERNAL for bugs and broken
/// dependencies.
pub trait ServiceError: Error {
    /// The gRPC code clients see for this error.
    fn code(&self) -> Code;

    /// For a limit (RESOURCE_EXHAUSTED), when a retry is likely to succeed: sent as
    /// the [`RETRY_AFTER_MS`] metadata of the status, besides the message.
    fn retry_after(&self) -> Option<std::time::Duration> {
        None
    }
}

/// The status metadata telling a client how many milliseconds to wait before retrying.
pub const RETRY_AFTER_MS: &str = "retry-after-ms";

/// The message clients get for internal errors.
pub const INTERNAL_MESSAGE: &str = "internal error";

/// The status answering `error`. For `INTERNAL`, `UNKNOWN` and `DATA_LOSS`
/// the error and its cause chain are logged (`tracing::error!`) and the
/// client gets only [`INTERNAL_MESSAGE`]; otherwise the client gets the
/// error's `Display`.
pub fn to_status<E: ServiceError + ?Sized>(error: &E) -> Status {
    let code = error.code();
    match code {
        Code::Internal | Code::Unknown | Code::DataLoss => {
            tracing::error!(error = %ErrorChain(error), code = ?code, "internal error");
            Status::new(code, INTERNAL_MESSAGE)
        }
        _ => {
            let mut status = Status::new(code, error.to_string());
            if let Some(wait) = error.retry_after() {
                let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
                status.metadata_mut().insert(RETRY_AFTER_MS, ms.into());
            }
            status
        }
    }
}

/// Displays an error followed by each of its sources, joined by `": "`
/// (`cannot record match: database: connection refused`).
pub struct ErrorChain<'a, E: ?Sized>(pub &'a E);

impl<E: Error + ?Sized> fmt::Display for ErrorChain<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(err) = source {
            write!(f, ": {err}")?;
            source = err.source();
        }
        Ok(())
    }
}

impl<E: Error + ?Sized> fmt::Debug for ErrorChain<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
