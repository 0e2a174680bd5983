//! An S3-compatible server for tests: moto's standalone server (PyPI `moto[server]`,
//! installed by `make deps`), started on a free loopback port and stopped (killed) when
//! the [`Moto`] is dropped. It keeps its objects in memory and needs no network.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running moto server.
#[derive(Debug)]
pub struct Moto {
    child: Child,
    addr: SocketAddr,
}

/// How long moto may take to answer after it was started (it imports a lot of Python).
const START_TIMEOUT: Duration = Duration::from_secs(60);

impl Moto {
    /// Starts `python3 -m moto.server` on 127.0.0.1 and a free port, and waits until it
    /// answers. Panics, naming what to install, when it cannot.
    pub fn start() -> Moto {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut child = Command::new("python3")
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs moto's S3 server (make deps: pip install 'moto[server]')");
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().expect("the moto process") {
                panic!(
                    "moto's server exited ({status}): is it installed? \
                     python3 -m pip install 'moto[server]' (make deps)"
                );
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                break;
            }
            if started.elapsed() > START_TIMEOUT {
                let _ = child.kill();
                panic!("moto's server did not answer on {addr} within {START_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Moto { child, addr }
    }

    /// `http://127.0.0.1:<port>`: the endpoint (`AWS_ENDPOINT_URL`).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The `AWS_*` variables a client of this server needs (moto takes any keys).
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ACCESS_KEY_ID", "testing".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "testing".to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ENDPOINT_URL", self.endpoint()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// Stops the server (SIGSTOP) until [`Moto::resume`]: every request hangs, as on a
    /// network that went quiet (a test kills a client at that moment).
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused server go on (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} moto");
    }

    /// Creates the bucket `name` (a plain `PUT /<name>`: moto checks no signature).
    pub fn create_bucket(&self, name: &str) {
        let mut stream = TcpStream::connect(self.addr).expect("moto answers");
        write!(
            stream,
            "PUT /{name} HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .expect("the request is sent");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("moto answers");
        assert!(
            answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200"),
            "creating bucket {name}: {answer}"
        );
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
