//! The error table: client errors show their message, internal ones are
//! logged with their cause chain and answered generically.

use std::{
    io,
    sync::{Arc, Mutex},
};

use basra_platform::{
    auth::AuthError,
    error::{ErrorChain, INTERNAL_MESSAGE, ServiceError, to_status},
};
use tonic::Code;

/// A service's error enum, the way services write one.
#[derive(Debug, thiserror::Error)]
enum AccountsError {
    #[error("username {0:?} is taken")]
    UsernameTaken(String),
    #[error("too many login attempts: retry in 30 s")]
    RateLimited,
    #[error("cannot save the account")]
    Store(#[source] StoreError),
}

#[derive(Debug, thiserror::Error)]
#[error("database at 10.0.0.7:5432 unreachable")]
struct StoreError(#[source] io::Error);

impl ServiceError for AccountsError {
    fn code(&self) -> Code {
        match self {
            AccountsError::UsernameTaken(_) => Code::AlreadyExists,
            AccountsError::RateLimited => Code::ResourceExhausted,
            AccountsError::Store(_) => Code::Internal,
        }
    }
}

fn store_error() -> AccountsError {
    AccountsError::Store(StoreError(io::Error::new(
        io::ErrorKind::ConnectionRefused,
        "refused",
    )))
}

#[test]
fn client_errors_keep_their_code_and_message() {
    let status = to_status(&AccountsError::UsernameTaken("ali".into()));
    assert_eq!(status.code(), Code::AlreadyExists);
    assert_eq!(status.message(), r#"username "ali" is taken"#);

    let status = to_status(&AccountsError::RateLimited);
    assert_eq!(status.code(), Code::ResourceExhausted);
}

#[test]
fn internal_errors_are_generic_to_clients_and_logged_in_full() {
    let logs = Logs::default();
    let status = tracing::subscriber::with_default(logs.subscriber(), || to_status(&store_error()));
    assert_eq!(status.code(), Code::Internal);
    assert_eq!(status.message(), INTERNAL_MESSAGE);
    assert!(!status.message().contains("10.0.0.7"));

    let logged = logs.text();
    assert!(logged.contains("ERROR"), "{logged}");
    assert!(
        logged.contains("cannot save the account: database at 10.0.0.7:5432 unreachable: refused"),
        "{logged}"
    );
}

#[test]
fn auth_errors_are_unauthenticated_except_key_problems() {
    assert_eq!(to_status(&AuthError::Expired).code(), Code::Unauthenticated);
    assert!(
        to_status(&AuthError::Missing)
            .message()
            .contains("authorization: Bearer")
    );
    let status = to_status(&AuthError::Key("bad pem".into()));
    assert_eq!(status.code(), Code::Internal);
    assert_eq!(status.message(), INTERNAL_MESSAGE);
}

#[test]
fn error_chain_joins_the_sources() {
    assert_eq!(
        ErrorChain(&store_error()).to_string(),
        "cannot save the account: database at 10.0.0.7:5432 unreachable: refused"
    );
}

/// Captures what a tracing subscriber writes.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        let logs = self.clone();
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || logs.clone())
            .finish()
    }

    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
