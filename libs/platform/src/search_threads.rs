//! Threads of their own for searches (game-session's hard bot, accounts' match analysis),
//! apart from the runtime's.
//!
//! A search is milliseconds of CPU. On tokio's blocking pool it competes with the
//! runtime's worker threads as an equal, so on a replica whose cores are busy the players'
//! plays wait behind the computer's thinking. These threads can run at the lowest CPU
//! priority instead (`[bots] search_priority = "low"`, nice 19): the kernel then gives the
//! workers the CPU whenever they want it, and the searches the rest. A search that cannot
//! start in time makes the bot play greedy (game-session's `Bots` queue), so a busy
//! replica trades the computer's strength for its players' latency, not the reverse. A
//! nice-19 thread yields to every thread of its CPU group: on Kubernetes its own pod's; on
//! a host shared with busy processes, theirs too, and the bots then mostly play greedy
//! (`docs/performance.md`, "Hard bots in game-session"; `search_priority = "normal"`).
//!
//! Lowering a thread's priority needs no privilege; raising it back does (`RLIMIT_NICE`),
//! which is why the searches get threads of their own rather than borrowing pool threads.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

/// The CPU priority of the search threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchPriority {
    /// The lowest (nice 19): the runtime's threads first.
    Low,
    /// As every other thread of the process.
    Normal,
}

type Job = Box<dyn FnOnce() + Send>;

/// A fixed set of threads that run jobs in the order they come (clones share them). The
/// threads end when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct SearchThreads {
    jobs: Sender<Job>,
}

impl SearchThreads {
    /// Starts `threads` threads at `priority`, named `name-0`, `name-1`, …. A thread whose
    /// priority the system refuses to lower runs at the normal one, and says so in the log.
    pub fn start(name: &str, threads: usize, priority: SearchPriority) -> SearchThreads {
        let (jobs, queue) = channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..threads.max(1) {
            let queue = Arc::clone(&queue);
            let spawned = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    if priority == SearchPriority::Low {
                        lower_priority();
                    }
                    run(&queue);
                });
            if let Err(err) = spawned {
                tracing::error!(%err, "could not start a search thread");
            }
        }
        SearchThreads { jobs }
    }

    /// Runs `job` on the next free thread.
    pub fn run(&self, job: impl FnOnce() + Send + 'static) {
        // The threads outlive every sender, so the queue is open while `self` is.
        let _ = self.jobs.send(Box::new(job));
    }
}

fn lower_priority() {
    if let Err(err) =
        thread_priority::set_current_thread_priority(thread_priority::ThreadPriority::Min)
    {
        tracing::warn!(?err, "a search thread runs at the normal CPU priority");
    }
}

fn run(queue: &Mutex<Receiver<Job>>) {
    loop {
        let next = queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .recv();
        match next {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// The calling thread's nice value (`/proc/thread-self/stat`, Linux); `None` where the
/// kernel does not say.
pub fn thread_nice() -> Option<i32> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces: state
    // is field 3, nice field 19.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(16)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nice_on(threads: &SearchThreads) -> Option<i32> {
        let (tx, rx) = channel();
        threads.run(move || {
            let _ = tx.send(thread_nice());
        });
        rx.recv().expect("the job ran")
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn low_priority_threads_run_at_nice_19_and_normal_ones_as_the_process() {
        let process = thread_nice().expect("Linux says a thread's nice value");
        assert_eq!(
            nice_on(&SearchThreads::start("hard-bot", 1, SearchPriority::Low)),
            Some(19)
        );
        assert_eq!(
            nice_on(&SearchThreads::start("hard-bot", 1, SearchPriority::Normal)),
            Some(process)
        );
    }

    #[test]
    fn every_job_runs_once_on_the_threads() {
        let threads = SearchThreads::start("hard-bot", 2, SearchPriority::Low);
        let (tx, rx) = channel();
        for i in 0..50 {
            let tx = tx.clone();
            threads.run(move || {
                let _ = tx.send((i, std::thread::current().name().map(str::to_owned)));
            });
        }
        drop(tx);
        let mut seen: Vec<_> = rx.iter().collect();
        seen.sort();
        assert_eq!(seen.len(), 50);
        assert!(seen.iter().enumerate().all(|(i, (j, _))| i == *j));
        assert!(
            seen.iter()
                .all(|(_, name)| name.as_deref().is_some_and(|n| n.starts_with("hard-bot-")))
        );
    }
}
