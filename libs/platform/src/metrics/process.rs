//! The process's own figures, read from `/proc` at each scrape (Linux; elsewhere they
//! are left out), under the names every Prometheus client library uses, so stock
//! dashboards and alerts read them:
//!
//! | metric | what |
//! |---|---|
//! | `process_cpu_seconds_total` | user and system CPU time |
//! | `process_resident_memory_bytes` | resident set size |
//! | `process_virtual_memory_bytes` | virtual memory size |
//! | `process_open_fds` / `process_max_fds` | open file descriptors (sockets among them) / the limit |
//! | `process_threads` | OS threads |
//! | `process_start_time_seconds` | start, in seconds since the Unix epoch |
//!
//! and the tokio runtime's, where they cost nothing: `basra_tokio_workers`,
//! `basra_tokio_alive_tasks`, `basra_tokio_global_queue_depth`.

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{counter::ConstCounter, gauge::ConstGauge},
};

/// `/proc` counts CPU time in clock ticks of `USER_HZ`, which Linux fixes at 100 for
/// every architecture's user-space ABI.
const USER_HZ: f64 = 100.0;

/// The figures of one read of a process's `/proc` files; each `None` when unreadable.
/// Public so that load tools (the whole-system simulator, `tests/capacity`) read the
/// services' processes as the services read themselves.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProcessSample {
    /// User and system CPU time, in seconds.
    pub cpu_seconds: Option<f64>,
    /// Resident set size, in bytes.
    pub resident_bytes: Option<i64>,
    /// Virtual memory size, in bytes.
    pub virtual_bytes: Option<i64>,
    /// Open file descriptors.
    pub open_fds: Option<i64>,
    /// The soft limit of open file descriptors.
    pub max_fds: Option<i64>,
    /// OS threads.
    pub threads: Option<i64>,
    /// Start, in seconds since the Unix epoch.
    pub start_time_seconds: Option<f64>,
}

impl ProcessSample {
    /// Reads `/proc/self` now.
    pub fn read() -> ProcessSample {
        ProcessSample::read_dir("/proc/self")
    }

    /// Reads `/proc/<pid>` now (all `None` once the process is gone).
    pub fn read_pid(pid: u32) -> ProcessSample {
        ProcessSample::read_dir(&format!("/proc/{pid}"))
    }

    fn read_dir(proc_dir: &str) -> ProcessSample {
        let text = |file: &str| std::fs::read_to_string(format!("{proc_dir}/{file}")).ok();
        let stat = text("stat").and_then(|s| parse_stat(&s));
        let status = text("status");
        let status_kib = |key: &str| status.as_deref().and_then(|s| status_field(s, key));
        let boot = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|s| boot_time(&s));
        ProcessSample {
            cpu_seconds: stat.map(|s| (s.utime + s.stime) as f64 / USER_HZ),
            resident_bytes: status_kib("VmRSS:").map(|kib| kib * 1024),
            virtual_bytes: status_kib("VmSize:").map(|kib| kib * 1024),
            open_fds: std::fs::read_dir(format!("{proc_dir}/fd"))
                .ok()
                .map(|dir| dir.count() as i64),
            max_fds: text("limits").and_then(|s| max_open_files(&s)),
            threads: status_kib("Threads:"),
            start_time_seconds: stat
                .zip(boot)
                .map(|(s, boot)| boot as f64 + s.start_ticks as f64 / USER_HZ),
        }
    }
}

/// The open sockets of process `pid` (its file descriptors that are sockets: connections
/// and listeners); `None` when its `/proc/<pid>/fd` is unreadable. Apart from
/// [`ProcessSample`] because it reads a link per descriptor: for load tools, not scrapes.
pub fn open_sockets(pid: u32) -> Option<i64> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    let sockets = dir
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with("socket:"))
        .count();
    Some(sockets as i64)
}

/// The fields of `/proc/<pid>/stat` used here, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// User CPU time.
    pub utime: u64,
    /// System CPU time.
    pub stime: u64,
    /// Start, after boot.
    pub start_ticks: u64,
}

/// Parses `/proc/<pid>/stat`: fields 14 (utime), 15 (stime) and 22 (starttime). The
/// command name (field 2) is in parentheses and may hold spaces and parentheses, so the
/// fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    // After the name: field 3 (state) is index 0.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        utime: field(14)?,
        stime: field(15)?,
        start_ticks: field(22)?,
    })
}

/// The number after `key` in `/proc/<pid>/status` (`VmRSS:  1234 kB` → 1234).
pub fn status_field(text: &str, key: &str) -> Option<i64> {
    text.lines()
        .find_map(|line| line.strip_prefix(key))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The soft limit of `Max open files` in `/proc/<pid>/limits`.
pub(crate) fn max_open_files(text: &str) -> Option<i64> {
    text.lines()
        .find_map(|line| line.strip_prefix("Max open files"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `btime` of `/proc/stat`: the boot time in seconds since the Unix epoch.
pub(crate) fn boot_time(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

/// A [`Collector`] of the process's and the tokio runtime's figures (see the
/// [module](self) table).
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> std::fmt::Result {
        let sample = ProcessSample::read();
        if let Some(cpu) = sample.cpu_seconds {
            let counter = ConstCounter::new(cpu);
            counter.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                counter.metric_type(),
            )?)?;
        }
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                sample.resident_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                sample.virtual_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                sample.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                sample.max_fds,
            ),
            ("process_threads", "Number of OS threads", sample.threads),
        ];
        for (name, help, value) in gauges {
            if let Some(value) = value {
                gauge(&mut encoder, name, help, value)?;
            }
        }
        if let Some(start) = sample.start_time_seconds {
            let value = ConstGauge::new(start);
            value.encode(encoder.encode_descriptor(
                "process_start_time_seconds",
                "Start time of the process since the Unix epoch in seconds",
                None,
                value.metric_type(),
            )?)?;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let runtime = handle.metrics();
            let as_i64 = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
            gauge(
                &mut encoder,
                "basra_tokio_workers",
                "Worker threads of the tokio runtime serving the metrics",
                as_i64(runtime.num_workers()),
            )?;
            gauge(
                &mut encoder,
                "basra_tokio_alive_tasks",
                "Tasks alive in the tokio runtime",
                as_i64(runtime.num_alive_tasks()),
            )?;
            gauge(
                &mut encoder,
                "basra_tokio_global_queue_depth",
                "Tasks waiting in the tokio runtime's global queue",
                as_i64(runtime.global_queue_depth()),
            )?;
        }
        Ok(())
    }
}

fn gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: i64,
) -> std::fmt::Result {
    let gauge = ConstGauge::new(value);
    gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        let stat = "1234 (tokio (rt) x) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 9 0 4200 1000 300";
        assert_eq!(
            parse_stat(stat),
            Some(Stat {
                utime: 250,
                stime: 50,
                start_ticks: 4200
            })
        );
        let status = "Name:\tgame-session\nVmSize:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t7\n";
        assert_eq!(status_field(status, "VmRSS:"), Some(1024));
        assert_eq!(status_field(status, "Threads:"), Some(7));
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1048576              1048576              files\n";
        assert_eq!(max_open_files(limits), Some(1_048_576));
        assert_eq!(
            boot_time("cpu 1 2 3\nbtime 1700000000\n"),
            Some(1_700_000_000)
        );
    }

    #[test]
    fn reads_this_process() {
        let sample = ProcessSample::read();
        assert!(sample.resident_bytes.unwrap() > 0, "{sample:?}");
        assert!(sample.open_fds.unwrap() >= 3, "{sample:?}");
        assert!(sample.threads.unwrap() >= 1, "{sample:?}");
        assert!(sample.cpu_seconds.unwrap() >= 0.0, "{sample:?}");
        // This test's own listener is a socket of this process.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(open_sockets(std::process::id()).unwrap() >= 1);
        drop(listener);
        assert_eq!(open_sockets(u32::MAX), None);
        assert!(ProcessSample::read_pid(std::process::id()).threads.unwrap() >= 1);
        assert_eq!(ProcessSample::read_pid(u32::MAX), ProcessSample::default());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let start = sample.start_time_seconds.unwrap();
        assert!(
            start <= now + 1.0 && start > now - 86_400.0 * 365.0,
            "{start}"
        );
    }
}
