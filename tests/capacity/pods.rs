//! Pod-sized processes: each service replica confined to a CPU quota as a Kubernetes
//! pod's `limits.cpu` confines it. A pod's limit is a CFS bandwidth quota per period;
//! this machine mounts cgroup v1 with the `cpu` controller at `/sys/fs/cgroup/cpu`
//! (`cpu.cfs_quota_us` / `cpu.cfs_period_us`, what the kubelet writes on cgroup v1
//! nodes), and cgroup v2's `cpu.max` (the same quota) where the v2 hierarchy has the cpu
//! controller. Each replica gets its own group, removed at the end.

use std::path::{Path, PathBuf};

/// The CFS period, as the kubelet sets it (100 ms).
const PERIOD_US: u64 = 100_000;

/// The quota in microseconds per period for `cores` (0.5 → 50,000).
pub fn quota_us(cores: f64) -> u64 {
    ((cores * PERIOD_US as f64).round() as u64).max(1_000)
}

/// Which cgroup interface the quota is written through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// cgroup v1, `cpu.cfs_quota_us`.
    V1,
    /// cgroup v2, `cpu.max`.
    V2,
}

/// One pod's group.
#[derive(Debug)]
pub struct Pod {
    dir: PathBuf,
    flavour: Flavour,
    root: PathBuf,
}

/// Where a quota can be set on this machine, if anywhere.
pub fn detect() -> Option<(Flavour, PathBuf)> {
    let v2 = Path::new("/sys/fs/cgroup");
    if std::fs::read_to_string(v2.join("cgroup.controllers"))
        .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"))
    {
        return Some((Flavour::V2, v2.to_owned()));
    }
    for v1 in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"] {
        let v1 = Path::new(v1);
        if v1.join("cpu.cfs_quota_us").exists() {
            return Some((Flavour::V1, v1.to_owned()));
        }
    }
    None
}

impl Pod {
    /// A group named `name` limited to `cores`, holding process `pid` (all its threads).
    pub fn confine(name: &str, cores: f64, pid: u32) -> anyhow::Result<Pod> {
        let (flavour, root) = detect().ok_or_else(|| {
            anyhow::anyhow!("no cgroup cpu controller to set a quota with (neither v2 cpu.max nor v1 cpu.cfs_quota_us)")
        })?;
        let dir = root.join(format!("basra-capacity-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let quota = quota_us(cores);
        match flavour {
            Flavour::V1 => {
                std::fs::write(dir.join("cpu.cfs_period_us"), PERIOD_US.to_string())?;
                std::fs::write(dir.join("cpu.cfs_quota_us"), quota.to_string())?;
            }
            Flavour::V2 => std::fs::write(dir.join("cpu.max"), format!("{quota} {PERIOD_US}"))?,
        }
        std::fs::write(dir.join("cgroup.procs"), pid.to_string())?;
        Ok(Pod { dir, flavour, root })
    }

    /// The interface used.
    pub fn flavour(&self) -> Flavour {
        self.flavour
    }

    /// Periods in which the group used its whole quota and was held back.
    pub fn throttled_periods(&self) -> u64 {
        let stat = std::fs::read_to_string(self.dir.join("cpu.stat")).unwrap_or_default();
        stat.lines()
            .find_map(|line| line.strip_prefix("nr_throttled "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        // Hand any process still in the group back to the root, then remove the group.
        if let Ok(procs) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
            for pid in procs.lines() {
                let _ = std::fs::write(self.root.join("cgroup.procs"), pid);
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_per_period() {
        assert_eq!(quota_us(0.5), 50_000);
        assert_eq!(quota_us(2.0), 200_000);
        // The kernel refuses a quota under 1 ms.
        assert_eq!(quota_us(0.001), 1_000);
    }

    #[test]
    fn a_busy_process_is_held_to_its_quota() {
        let mut busy = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        if detect().is_none() {
            // A kernel without any cpu controller: no quota can exist to check.
            eprintln!("no cgroup cpu controller on this machine: nothing to check");
            busy.kill().unwrap();
            busy.wait().unwrap();
            return;
        }
        // A controller exists: setting the quota must work (it needs root, as
        // `make capacity-pods` does); a failure here is this test failing.
        let pod = Pod::confine("test", 0.1, busy.id()).unwrap_or_else(|err| {
            let _ = busy.kill();
            panic!("a cpu controller exists but the quota could not be set (root needed): {err:#}")
        });
        let cpu = || {
            basra_platform::metrics::process::ProcessSample::read_pid(busy.id())
                .cpu_seconds
                .unwrap()
        };
        let before = cpu();
        std::thread::sleep(std::time::Duration::from_millis(1_500));
        let used = cpu() - before;
        let throttled = pod.throttled_periods();
        busy.kill().unwrap();
        busy.wait().unwrap();
        drop(pod);
        // 0.1 core for 1.5 s is 0.15 CPU seconds (ticks of 10 ms, some slack).
        assert!(used <= 0.3, "{used} CPU seconds under a 0.1-core quota");
        assert!(throttled > 0, "never throttled");
    }
}
