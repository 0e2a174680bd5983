//! Password hashing with argon2id, off the async threads, a bounded number at a time.
//!
//! Each hash holds `memory_kib` of memory (19 MiB by default) and a thread for tens of
//! milliseconds, so a flood of Register or Login calls could exhaust memory. At most
//! `max_concurrent` run at once, on as many threads of their own (`workers`); a call
//! that cannot get a slot within `queue_wait` is answered RESOURCE_EXHAUSTED with a
//! retry hint.

mod workers;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::domain::Password;
use crate::error::{AccountsError, Result};
use workers::Workers;

/// Hashes and checks passwords as argon2id PHC strings
/// (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`). The parameters of a stored hash
/// travel in the string, so changing the cost affects new hashes only.
#[derive(Clone)]
pub struct PasswordHasherPool {
    argon2: Arc<Argon2<'static>>,
    slots: Arc<Semaphore>,
    workers: Workers,
    queue_wait: Duration,
    // A hash of a random password, checked when the username is unknown so that
    // a failed login takes as long whether or not the account exists.
    dummy: Arc<OnceLock<String>>,
}

impl std::fmt::Debug for PasswordHasherPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordHasherPool")
            .field("params", self.argon2.params())
            .field("free_slots", &self.slots.available_permits())
            .field("threads", &self.workers.threads())
            .field("queue_wait", &self.queue_wait)
            .finish()
    }
}

impl PasswordHasherPool {
    /// argon2id with `memory_kib` KiB, `iterations` passes and one lane (the OWASP
    /// minimum is 19 MiB and 2 passes), at most `max_concurrent` hashes at once (at
    /// least 1, each on a thread of its own), a caller waiting at most `queue_wait` for
    /// its turn.
    pub fn new(
        memory_kib: u32,
        iterations: u32,
        max_concurrent: usize,
        queue_wait: Duration,
    ) -> Result<PasswordHasherPool> {
        let params = Params::new(memory_kib, iterations, 1, None)
            .map_err(|e| AccountsError::Internal(format!("bad argon2 parameters: {e}")))?;
        let max_concurrent = max_concurrent.max(1);
        Ok(PasswordHasherPool {
            argon2: Arc::new(Argon2::new(Algorithm::Argon2id, Version::V0x13, params)),
            slots: Arc::new(Semaphore::new(max_concurrent)),
            workers: Workers::start("password-hash", max_concurrent)?,
            queue_wait,
            dummy: Arc::new(OnceLock::new()),
        })
    }

    /// A hashing slot, or RESOURCE_EXHAUSTED when none frees up within the queue wait.
    async fn slot(&self) -> Result<OwnedSemaphorePermit> {
        let acquire = Arc::clone(&self.slots).acquire_owned();
        match tokio::time::timeout(self.queue_wait, acquire).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_closed)) => Err(AccountsError::Internal(
                "password hashing pool closed".into(),
            )),
            Err(_elapsed) => {
                tracing::warn!("password hashing at capacity: call refused");
                Err(AccountsError::Overloaded {
                    what: "password hashing",
                    retry_after: Duration::from_secs(1),
                })
            }
        }
    }

    /// The PHC string of `password` with a fresh random salt.
    pub async fn hash(&self, password: &Password) -> Result<String> {
        let slot = self.slot().await?;
        let argon2 = Arc::clone(&self.argon2);
        let password = password.clone();
        self.workers
            .run(move || {
                let _slot = slot;
                hash_with(&argon2, password.expose())
            })
            .await?
    }

    /// Whether `password` matches the PHC string `hash`; `None` checks against a
    /// dummy hash and always answers false, taking as long as a real check.
    pub async fn verify(&self, password: &Password, hash: Option<String>) -> Result<bool> {
        let slot = self.slot().await?;
        let argon2 = Arc::clone(&self.argon2);
        let dummy = Arc::clone(&self.dummy);
        let password = password.clone();
        self.workers
            .run(move || {
                let _slot = slot;
                let (hash, real) = match hash {
                    Some(hash) => (hash, true),
                    None => {
                        let dummy = match dummy.get() {
                            Some(d) => d.clone(),
                            None => {
                                let d = hash_with(&argon2, &random_string())?;
                                dummy.get_or_init(|| d).clone()
                            }
                        };
                        (dummy, false)
                    }
                };
                let parsed = PasswordHash::new(&hash)
                    .map_err(|e| AccountsError::Internal(format!("stored password hash: {e}")))?;
                let matches = argon2
                    .verify_password(password.expose().as_bytes(), &parsed)
                    .is_ok();
                Ok(matches && real)
            })
            .await?
    }
}

fn hash_with(argon2: &Argon2<'_>, password: &str) -> Result<String> {
    let salt_bytes: [u8; 16] = rand::random();
    let salt = SaltString::encode_b64(&salt_bytes)
        .map_err(|e| AccountsError::Internal(format!("password salt: {e}")))?;
    argon2
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| AccountsError::Internal(format!("password hashing: {e}")))
}

fn random_string() -> String {
    let bytes: [u8; 24] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hash_then_verify() {
        let pool = PasswordHasherPool::new(1024, 1, 2, Duration::from_secs(5)).unwrap();
        let pw = Password::parse("correct horse").unwrap();
        let hash = pool.hash(&pw).await.unwrap();
        assert!(hash.starts_with("$argon2id$v=19$m=1024,t=1,p=1$"), "{hash}");
        assert!(pool.verify(&pw, Some(hash.clone())).await.unwrap());
        let wrong = Password::parse("wrong horse").unwrap();
        assert!(!pool.verify(&wrong, Some(hash.clone())).await.unwrap());
        assert!(!pool.verify(&pw, None).await.unwrap());
        // Salted: the same password hashes differently.
        assert_ne!(hash, pool.hash(&pw).await.unwrap());
    }

    #[tokio::test]
    async fn a_full_pool_refuses_after_the_queue_wait_and_recovers() {
        // One slot and a 50 ms wait; a hash of 64 MiB × 3 passes takes far longer.
        let pool = PasswordHasherPool::new(65536, 3, 1, Duration::from_millis(50)).unwrap();
        let pw = Password::parse("correct horse").unwrap();
        let busy = {
            let pool = pool.clone();
            let pw = pw.clone();
            tokio::spawn(async move { pool.hash(&pw).await })
        };
        // Let the first call take the slot.
        while pool.slots.available_permits() == 1 {
            tokio::task::yield_now().await;
        }
        let refused = pool.verify(&pw, None).await.unwrap_err();
        assert!(
            matches!(refused, AccountsError::Overloaded { .. }),
            "{refused:?}"
        );
        let status = tonic::Status::from(refused);
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert!(status.message().contains("retry"), "{}", status.message());
        // Once the slot is free again, calls go through.
        busy.await.unwrap().unwrap();
        assert_eq!(pool.slots.available_permits(), 1);
        assert!(!pool.verify(&pw, None).await.unwrap());
    }
}
