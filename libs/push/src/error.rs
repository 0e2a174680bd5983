//! Why a [`Pusher`](crate::Pusher) cannot be built from its settings.

use std::path::PathBuf;

/// A setting or a credential that cannot be used. Sending never fails with this: a send
/// answers an [`Outcome`](crate::Outcome).
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// A credential file named in the settings could not be read.
    #[error("cannot read the {what} {path}: {source}")]
    Read {
        /// Which file: "FCM service account file", "APNs key file", …
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A setting or a credential is unusable; the message names the key and never
    /// quotes a secret.
    #[error("{0}")]
    Invalid(String),
}
