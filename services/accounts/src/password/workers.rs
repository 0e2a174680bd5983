//! The threads password hashes run on: a fixed set, started with the pool and ended
//! when the last handle to it is dropped.
//!
//! Not tokio's blocking pool: its threads come and go (a new one whenever none is idle
//! at the moment a job arrives), and under glibc's malloc each new thread may get an
//! arena of its own that keeps the freed 19 MiB of an argon2 hash. A flood of wrong
//! passwords then left accounts hundreds of MiB larger for good (docs/performance.md,
//! "Password hashing"). A fixed set of threads touches a fixed set of arenas, whatever
//! the allocator.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::error::{AccountsError, Result};

type Job = Box<dyn FnOnce() + Send>;

/// `threads` threads, each running one job at a time; clone freely.
#[derive(Debug, Clone)]
pub(super) struct Workers {
    jobs: Sender<Job>,
    threads: usize,
}

impl Workers {
    /// Starts `threads` (at least 1) threads named `{name}-{i}`.
    pub(super) fn start(name: &str, threads: usize) -> Result<Workers> {
        let threads = threads.max(1);
        // Unbounded, but callers hold a slot of the pool's semaphore (as many as there
        // are threads) until their job ends: no job waits here for long.
        let (jobs, queue) = channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..threads {
            let queue = Arc::clone(&queue);
            std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || work(&queue))
                .map_err(|e| AccountsError::Internal(format!("cannot start {name}-{i}: {e}")))?;
        }
        Ok(Workers { jobs, threads })
    }

    /// How many threads run the jobs.
    pub(super) fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `job` on one of the threads and answers its result.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(job());
        });
        let gone = || AccountsError::Internal("password hashing threads stopped".into());
        self.jobs.send(job).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())
    }
}

/// One thread: takes jobs until every handle is dropped. A job that panics loses its
/// answer (the caller gets INTERNAL), not the thread.
fn work(queue: &Mutex<Receiver<Job>>) {
    loop {
        let job = {
            let queue = queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.recv()
        };
        let Ok(job) = job else { return };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Barrier;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Not timing: every job waits at a barrier for as many jobs as there are threads,
    /// so the jobs run in full waves of exactly `threads`; one more at once would show
    /// in the count, one fewer thread would never pass the barrier.
    #[tokio::test]
    async fn never_more_jobs_at_once_than_threads_and_always_the_same_threads() {
        const THREADS: usize = 3;
        let workers = Workers::start("test-hash", THREADS).unwrap();
        let wave = Arc::new(Barrier::new(THREADS));
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let mut jobs = tokio::task::JoinSet::new();
        for _ in 0..THREADS * 10 {
            let (wave, running, peak) = (wave.clone(), running.clone(), peak.clone());
            let workers = workers.clone();
            jobs.spawn(async move {
                workers
                    .run(move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        wave.wait();
                        running.fetch_sub(1, Ordering::SeqCst);
                        std::thread::current().name().unwrap().to_owned()
                    })
                    .await
                    .unwrap()
            });
        }
        let all = tokio::time::timeout(std::time::Duration::from_secs(10), jobs.join_all())
            .await
            .expect("every wave met at the barrier");
        let threads: HashSet<String> = all.into_iter().collect();
        assert_eq!(peak.load(Ordering::SeqCst), THREADS);
        assert_eq!(threads.len(), THREADS, "{threads:?}");
    }

    #[tokio::test]
    async fn a_job_that_panics_answers_an_error_and_the_thread_goes_on() {
        let workers = Workers::start("test-panic", 1).unwrap();
        assert!(workers.run(|| panic!("boom")).await.is_err());
        assert_eq!(workers.run(|| 7).await.unwrap(), 7);
    }
}
