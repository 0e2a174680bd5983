//! TLS end to end: a CA and a server certificate made with openssl, `basra dev --tls-cert
//! --tls-key` serving with them, and `basra bot` playing a whole match against the computer
//! over `https://` with `--ca-file`. Without the CA the same client refuses the server, and a
//! cleartext client gets no answer from the TLS port.

use std::path::Path;
use std::process::{Command, Output};

use crate::dev_process::DevProcess;

/// Runs openssl with `args` in `dir`, failing loudly when it cannot.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs (apt-get install openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA (`ca.pem`) and a certificate it signed for 127.0.0.1 and localhost
/// (`server.pem`, `server.key`), in `dir`.
fn make_certificates(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "1", "-subj", "/CN=basra test CA"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    openssl(dir, &ca);
    let mut request = vec!["req", "-new", "-subj", "/CN=localhost"];
    request.extend(ec);
    request.extend(["-keyout", "server.key", "-out", "server.csr"]);
    openssl(dir, &request);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    );
}

/// `basra bot` against `server`, one match against the computer, with `extra` arguments.
fn bot(server: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_basra"))
        .args([
            "bot",
            "--server",
            server,
            "--delay-ms",
            "0",
            "--matches",
            "1",
        ])
        .args(["--device-id", &format!("tls-test-{}", std::process::id())])
        .args(extra)
        .arg("computer")
        .env_remove("BASRA_CA_FILE")
        .env_remove("BASRA_SERVER")
        .output()
        .expect("basra bot runs")
}

#[test]
fn the_cli_plays_a_match_over_tls_with_a_private_ca() {
    let dir = tempfile::tempdir().unwrap();
    make_certificates(dir.path());
    let file = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let dev = DevProcess::start(
        &[
            "--tls-cert",
            &file("server.pem"),
            "--tls-key",
            &file("server.key"),
            "--bot-delay-ms",
            "0",
        ],
        &[],
    );
    let https = format!("https://127.0.0.1:{}", dev.addr.port());

    let played = bot(&https, &["--ca-file", &file("ca.pem")]);
    let printed = String::from_utf8_lossy(&played.stdout);
    assert!(
        played.status.success(),
        "the match over TLS failed: {printed}\n{}",
        String::from_utf8_lossy(&played.stderr)
    );
    assert!(printed.contains("match 1 in room"), "{printed}");

    // The server's certificate is checked: without the CA it is refused.
    let untrusted = bot(&https, &[]);
    let error = String::from_utf8_lossy(&untrusted.stderr);
    assert!(!untrusted.status.success(), "an unknown CA was trusted");
    assert!(error.contains("cannot reach"), "{error}");

    // And the port speaks nothing but TLS.
    let cleartext = bot(&format!("http://127.0.0.1:{}", dev.addr.port()), &[]);
    assert!(
        !cleartext.status.success(),
        "a cleartext client was answered on the TLS port"
    );
}
