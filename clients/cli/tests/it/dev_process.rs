//! A `basra dev --listen 127.0.0.1:0` child process for the suites that talk to it from
//! outside (another language's client, TLS): started with extra arguments and variables,
//! stopped when dropped.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A running `basra dev`, stopped when dropped ([`stop`]).
pub(crate) struct DevProcess {
    child: Child,
    /// Where it serves the API.
    pub(crate) addr: SocketAddr,
    /// What it printed when it started, up to `stop:`.
    pub(crate) banner: Vec<String>,
}

impl DevProcess {
    /// Starts `basra dev --listen 127.0.0.1:0 ARGS` (no web page) with the variables `env`
    /// and waits until it has printed its banner.
    pub(crate) fn start(args: &[&str], env: &[(&str, &str)]) -> DevProcess {
        let no_page = std::env::temp_dir().join("basra-no-web-page");
        let mut child = Command::new(env!("CARGO_BIN_EXE_basra"))
            .args(["dev", "--listen", "127.0.0.1:0"])
            .args(args)
            .env("BASRA_DEV_WEB_DIR", no_page)
            .env_remove("BASRA_DEV_LISTEN")
            .env_remove("BASRA_DEV_WEB_LISTEN")
            .env_remove("BASRA_DEV_DATABASE_URL")
            .env_remove("BASRA_DEV_REDIS_URL")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("basra dev starts");
        let stdout = child.stdout.take().unwrap();
        // Killed when dropped, also when it never says where it listens.
        let mut dev = DevProcess {
            child,
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            banner: Vec::new(),
        };
        let (lines, printed) = mpsc::channel();
        // Reads to the end, also once nobody listens: basra dev goes on printing, and a
        // closed pipe would make its next line fail.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = lines.send(line);
            }
        });
        loop {
            let line = printed
                .recv_timeout(Duration::from_secs(60))
                .expect("basra dev prints its banner within a minute");
            if let Some(rest) = line.strip_prefix("basra dev: ") {
                dev.addr = rest.rsplit(' ').next().unwrap().parse().unwrap();
            }
            let last = line.starts_with("stop:");
            dev.banner.push(line);
            if last {
                return dev;
            }
        }
    }
}

impl Drop for DevProcess {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// Stops a `basra dev` as Ctrl-C or Kubernetes would (SIGTERM), so that it removes its
/// temporary directory and the development key in it (a killed one leaves them in
/// /tmp); killed if it is still running 10 s later.
pub(crate) fn stop(child: &mut Child) {
    let asked = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .is_ok_and(|status| status.success());
    if asked {
        for _ in 0..200 {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl DevProcess {
    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}
