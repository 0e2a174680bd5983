//! Two `basra dev --listen 127.0.0.1:0` run side by side: each takes free ports for the API
//! and the web page, and every address it prints is one it really serves.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A `basra dev` child, stopped when dropped.
struct Dev {
    child: Child,
    api: SocketAddr,
    web: SocketAddr,
    play: String,
}

impl Drop for Dev {
    fn drop(&mut self) {
        crate::dev_process::stop(&mut self.child);
    }
}

/// Starts `basra dev --listen 127.0.0.1:0` with a page in `web_dir` and reads what it
/// prints until `stop:`.
fn start(web_dir: &std::path::Path) -> Dev {
    let mut child = Command::new(env!("CARGO_BIN_EXE_basra"))
        .args(["dev", "--listen", "127.0.0.1:0"])
        .env("BASRA_DEV_WEB_DIR", web_dir)
        .env_remove("BASRA_DEV_LISTEN")
        .env_remove("BASRA_DEV_WEB_LISTEN")
        .env_remove("BASRA_DEV_DATABASE_URL")
        .env_remove("BASRA_DEV_REDIS_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("basra dev starts");
    let stdout = child.stdout.take().unwrap();
    let (lines, printed) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let (mut api, mut web, mut play) = (None, None, None);
    loop {
        let line = printed
            .recv_timeout(Duration::from_secs(60))
            .expect("basra dev prints where it listens within a minute");
        if let Some(rest) = line.strip_prefix("basra dev: ") {
            api = Some(rest.rsplit(' ').next().unwrap().parse().unwrap());
        } else if let Some(rest) = line.strip_prefix("web:    open http://") {
            web = Some(rest.split('/').next().unwrap().parse().unwrap());
        } else if let Some(rest) = line.strip_prefix("play:   ") {
            play = Some(rest.to_owned());
        } else if line.starts_with("stop:") {
            break;
        }
    }
    Dev {
        child,
        api: api.expect("the API's address is printed"),
        web: web.expect("the page's address is printed"),
        play: play.expect("how to play is printed"),
    }
}

/// `GET /config.json` of the page at `web`.
fn page_config(web: SocketAddr) -> String {
    let mut stream = TcpStream::connect(web).expect("the page's printed address answers");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET /config.json HTTP/1.1\r\nHost: {web}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn two_dev_backends_on_port_zero_run_side_by_side() {
    let web_dir = tempfile::tempdir().unwrap();
    std::fs::write(web_dir.path().join("index.html"), "<!doctype html>").unwrap();
    std::fs::write(web_dir.path().join("app.js"), "").unwrap();

    let first = start(web_dir.path());
    let second = start(web_dir.path());

    for dev in [&first, &second] {
        assert_ne!(dev.api.port(), 0);
        assert_ne!(dev.web.port(), 0);
        assert_ne!(
            dev.web.port(),
            8080,
            "port 0 asks for a free port for the page too"
        );
        TcpStream::connect(dev.api).expect("the API's printed address answers");
        let config = page_config(dev.web);
        assert!(
            config.contains(&format!(
                r#"{{"api":"http://127.0.0.1:{}"}}"#,
                dev.api.port()
            )),
            "the page points at its own backend: {config}"
        );
        assert_eq!(
            dev.play,
            format!(
                "basra play --server http://{0}   (in this tree: cargo run -p basra -- play --server http://{0})",
                dev.api
            ),
            "not `make play`: that goes to port 50051"
        );
    }
    assert_ne!(first.api, second.api);
    assert_ne!(first.web, second.web);
}
