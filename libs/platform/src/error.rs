//! The one mapping from service errors to gRPC statuses.
//!
//! Each service has one error enum and says, per variant, which gRPC code it
//! is ([`ServiceError`]); [`to_status`] turns it into a `tonic::Status`.
//! Internal errors are logged with their whole cause chain and answered with
//! a generic message: their details (SQL, hostnames, …) are not for clients.
//!
//! What a client acts on travels as the standard rich error details
//! (`grpc-status-details-bin`, `google.rpc.Status`), which the gRPC libraries of
//! every platform read: `google.rpc.RetryInfo` (when to retry a limit) and
//! `google.rpc.ErrorInfo` (a machine-readable reason, such as a refusal's
//! `RejectCode`) and `google.rpc.BadRequest` (the field at fault in malformed input,
//! where the service names it). The custom metadata that carried them before (`retry-after-ms`,
//! `basra-reject-code`) is still sent for one release, for clients built on it.

use std::{collections::HashMap, error::Error, fmt, time::Duration};

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt as _};

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
    /// `google.rpc.RetryInfo` (and, for one more release, the [`RETRY_AFTER_MS`]
    /// metadata), besides the message.
    fn retry_after(&self) -> Option<std::time::Duration> {
        None
    }

    /// For malformed input (INVALID_ARGUMENT), the field at fault and what is wrong with
    /// it, when the service knows them: sent as a `google.rpc.BadRequest` field violation
    /// (`field` as a path into the request, `records[2].seats`), besides the message.
    fn bad_field(&self) -> Option<(String, String)> {
        None
    }

    /// A machine-readable reason and its facts (for FAILED_PRECONDITION, the room a
    /// refusal is about), when the service gives them: sent as `google.rpc.ErrorInfo
    /// { reason, domain: ERROR_DOMAIN, metadata }`, besides the message.
    fn error_info(&self) -> Option<(&'static str, HashMap<String, String>)> {
        None
    }
}

/// The status metadata telling a client how many milliseconds to wait before retrying.
/// Deprecated: `google.rpc.RetryInfo` says it ([`retry_after_of`]); sent for one more
/// release.
pub const RETRY_AFTER_MS: &str = "retry-after-ms";

/// The `google.rpc.ErrorInfo` domain of Basra online's reasons.
pub const ERROR_DOMAIN: &str = "basra.online";

/// A status with `google.rpc.ErrorInfo { reason, domain: ERROR_DOMAIN }` in its details.
pub fn status_with_reason(code: Code, message: impl Into<String>, reason: &str) -> Status {
    Status::with_error_details(
        code,
        message,
        ErrorDetails::with_error_info(reason, ERROR_DOMAIN, HashMap::new()),
    )
}

/// The `google.rpc.RetryInfo` delay of `status`, if it has one.
pub fn retry_after_of(status: &Status) -> Option<Duration> {
    status.get_details_retry_info()?.retry_delay
}

/// The `google.rpc.BadRequest` field violations of `status`: (field, description) pairs.
pub fn bad_fields_of(status: &Status) -> Vec<(String, String)> {
    status
        .get_details_bad_request()
        .map(|bad| {
            bad.field_violations
                .into_iter()
                .map(|violation| (violation.field, violation.description))
                .collect()
        })
        .unwrap_or_default()
}

/// The `google.rpc.ErrorInfo` reason of `status`, if it has one.
pub fn reason_of(status: &Status) -> Option<String> {
    Some(status.get_details_error_info()?.reason)
}

/// The value of `key` in the `google.rpc.ErrorInfo` metadata of `status`, if it has one.
pub fn error_metadata_of(status: &Status, key: &str) -> Option<String> {
    status.get_details_error_info()?.metadata.remove(key)
}

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
            let mut details = ErrorDetails::new();
            let retry_ms = error.retry_after().map(|wait| {
                let wait = wait.max(Duration::from_millis(1));
                details.set_retry_info(Some(wait));
                u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
            });
            if code == Code::InvalidArgument
                && let Some((field, description)) = error.bad_field()
            {
                details.add_bad_request_violation(field, description);
            }
            let info = error.error_info();
            if let Some((reason, metadata)) = info.clone() {
                details.set_error_info(reason, ERROR_DOMAIN, metadata);
            }
            if retry_ms.is_none() && !details.has_bad_request_violations() && info.is_none() {
                return Status::new(code, error.to_string());
            }
            let mut status = Status::with_error_details(code, error.to_string(), details);
            if let Some(ms) = retry_ms {
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
