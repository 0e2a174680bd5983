//! The Android-shaped client (`clients/jvm`: grpc-java, Netty, protobuf-lite, javac from
//! Debian's packages) against a `basra dev` started here: it signs in as a guest, plays a
//! whole match against the computer on the `Play` stream, drops its connection and resumes
//! from `last_seen_seq` (its checks: every event once, in order, no snapshot), refreshes
//! its access token ahead of expiry and after an UNAUTHENTICATED, and finds the match in
//! its history. Its exit status and output are the assertions.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::dev_process::DevProcess;

#[test]
fn the_jvm_client_plays_resumes_and_refreshes_against_basra_dev() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("jvm");
    let build = Command::new(format!("{root}/clients/jvm/build.sh"))
        .arg(&out)
        .output()
        .expect("clients/jvm/build.sh runs");
    assert!(
        build.status.success(),
        "clients/jvm/build.sh failed (make deps installs Debian's JDK, protoc and grpc-java):\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let classpath = std::fs::read_to_string(out.join("classpath")).unwrap();

    // Access tokens of 2 s and a computer that thinks 40 ms a play: the match (about 70
    // plays each) lasts at least 2.8 s however fast the machine is (the think delay is a
    // floor), so it outlives the first token and the client must refresh to finish it.
    let dev = DevProcess::start(
        &["--bot-delay-ms", "40"],
        &[("BASRA_ACCOUNTS_TOKENS__ACCESS_TTL_SECONDS", "2")],
    );
    let started = Instant::now();
    let run = Command::new("java")
        .args(["-cp", classpath.trim(), "online.basra.jvmclient.Main"])
        .arg(dev.addr.to_string())
        .args(["--drop-after", "3", "--offline-ms", "500"])
        .output()
        .expect("java runs");
    let elapsed = started.elapsed();
    let printed = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "the JVM client failed:\n{printed}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for line in [
        "resumed with last_seen_seq",
        "refreshed (ahead of expiry)",
        "refreshed (Play answered UNAUTHENTICATED)",
        "history: match",
        "ok: signed in, a whole match",
    ] {
        assert!(printed.contains(line), "no `{line}` in:\n{printed}");
    }
    assert!(
        elapsed < Duration::from_secs(30),
        "the JVM client took {elapsed:?}:\n{printed}"
    );
}
