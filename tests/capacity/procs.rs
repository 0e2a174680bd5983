//! What each process of the deployment spends: CPU seconds, resident memory and open
//! sockets, read from `/proc` with basra-platform's readers (the ones the services'
//! `/metrics` use for themselves). A store counts all its processes: PostgreSQL's
//! postmaster and every backend it forked.

use std::path::PathBuf;

use basra_platform::metrics::process::{ProcessSample, open_sockets};

/// Where a group's processes come from.
#[derive(Debug, Clone)]
pub enum Pids {
    /// One process.
    One(u32),
    /// The postmaster whose pid is the first line of this `postmaster.pid`, and its
    /// children.
    Postgres(PathBuf),
}

impl Pids {
    /// The process ids now.
    pub fn now(&self) -> Vec<u32> {
        match self {
            Pids::One(pid) => vec![*pid],
            Pids::Postgres(file) => {
                let Some(master) = std::fs::read_to_string(file)
                    .ok()
                    .and_then(|text| text.lines().next()?.trim().parse::<u32>().ok())
                else {
                    return Vec::new();
                };
                let mut pids = vec![master];
                pids.extend(children_of(master));
                pids
            }
        }
    }
}

/// The processes whose parent is `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parent_of(&stat))
                == Some(parent)
        })
        .collect()
}

/// Field 4 (ppid) of `/proc/<pid>/stat`.
fn parent_of(stat: &str) -> Option<u32> {
    // Field 3 (state) is the first after the command name's closing parenthesis.
    stat.get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// One read of a group.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Usage {
    /// CPU seconds of the group's live processes since they started. (A backend that
    /// exited took its CPU time with it: PostgreSQL's are pooled by the services and
    /// live for the run.)
    pub cpu_seconds: f64,
    /// Resident memory, bytes.
    pub rss_bytes: u64,
    /// Open sockets.
    pub sockets: u64,
    /// Live processes.
    pub processes: u32,
}

/// Reads `pids` now.
pub fn usage(pids: &[u32]) -> Usage {
    let mut usage = Usage::default();
    for &pid in pids {
        let sample = ProcessSample::read_pid(pid);
        let Some(cpu) = sample.cpu_seconds else {
            continue;
        };
        usage.processes += 1;
        usage.cpu_seconds += cpu;
        usage.rss_bytes += sample.resident_bytes.unwrap_or(0).max(0) as u64;
        usage.sockets += open_sockets(pid).unwrap_or(0).max(0) as u64;
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_parents_and_a_live_group() {
        assert_eq!(parent_of("42 (post gres: (idle)) S 7 42 42 0 -1"), Some(7));
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert!(children_of(me).contains(&child.id()));
        let now = usage(&Pids::One(me).now());
        assert_eq!(now.processes, 1);
        assert!(now.rss_bytes > 0);
        let both = usage(&[me, child.id()]);
        assert_eq!(both.processes, 2);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(usage(&[child.id()]).processes, 0);
    }
}
