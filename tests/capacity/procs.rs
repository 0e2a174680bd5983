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
    /// The group's usage now. PostgreSQL's counts the backends that exited too (the
    /// services' pools replace their connections, every 30 minutes at the latest): the
    /// postmaster reaps them, and the kernel adds their CPU time to its children's.
    pub fn usage(&self) -> Usage {
        let pids = self.now();
        let mut usage = usage(&pids);
        if let (Pids::Postgres(_), Some(&master)) = (self, pids.first()) {
            usage.cpu_seconds += std::fs::read_to_string(format!("/proc/{master}/stat"))
                .ok()
                .and_then(|stat| reaped_children_cpu_seconds(&stat))
                .unwrap_or(0.0);
        }
        usage
    }

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

/// Fields 16 and 17 (cutime, cstime) of `/proc/<pid>/stat`: the CPU time of the
/// children it has waited for, in seconds (`USER_HZ` is 100 on Linux).
fn reaped_children_cpu_seconds(stat: &str) -> Option<f64> {
    let mut fields = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .skip(13);
    let cutime: u64 = fields.next()?.parse().ok()?;
    let cstime: u64 = fields.next()?.parse().ok()?;
    Some((cutime + cstime) as f64 / 100.0)
}

/// One read of a group.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Usage {
    /// CPU seconds of the group's processes since they started (PostgreSQL's: with
    /// the backends that exited, see [`Pids::usage`]).
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
        // utime 250, stime 50, cutime 1200, cstime 34 ticks.
        let stat = "42 (postgres) S 1 42 42 0 -1 4194560 10 20 0 0 250 50 1200 34 20 0 1 0 4200";
        assert_eq!(reaped_children_cpu_seconds(stat), Some(12.34));
        assert_eq!(reaped_children_cpu_seconds("42 (postgres) S 1"), None);
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
