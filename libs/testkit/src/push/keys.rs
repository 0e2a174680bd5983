//! Keys and certificates for a test, made by openssl (as the rest of the workspace's TLS
//! tests do) in a temporary directory that lives as long as the value.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

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

/// A directory of test keys.
pub struct Keys {
    /// The directory (removed when dropped).
    pub dir: TempDir,
}

impl Default for Keys {
    fn default() -> Keys {
        Keys::new()
    }
}

impl Keys {
    /// A fresh empty directory.
    pub fn new() -> Keys {
        Keys {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// The path of `name` in it.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The text of `name`.
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap()
    }

    /// An RSA key in PKCS#8 PEM (`{name}.pem`, as a Google service account key holds it)
    /// and its public key (`{name}.pub.pem`).
    pub fn rsa(&self, name: &str) {
        let (private, public) = (format!("{name}.pem"), format!("{name}.pub.pem"));
        let dir = self.dir.path();
        openssl(
            dir,
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
                &private,
            ],
        );
        openssl(dir, &["pkey", "-in", &private, "-pubout", "-out", &public]);
    }

    /// A P-256 key in PKCS#8 PEM (`{name}.p8`, as Apple's .p8 key file) and its public
    /// key (`{name}.pub.pem`).
    pub fn p256(&self, name: &str) {
        let (private, public) = (format!("{name}.p8"), format!("{name}.pub.pem"));
        let dir = self.dir.path();
        openssl(
            dir,
            &[
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
                &private,
            ],
        );
        openssl(dir, &["pkey", "-in", &private, "-pubout", "-out", &public]);
    }

    /// A test CA (`{name}-ca.crt`) and a server certificate it signed for 127.0.0.1
    /// (`{name}.crt`, key `{name}.key`).
    pub fn certificate(&self, name: &str) {
        let dir = self.dir.path();
        let (ca_key, ca) = (format!("{name}-ca.key"), format!("{name}-ca.crt"));
        let (key, csr, cert, ext) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.crt"),
            format!("{name}.ext"),
        );
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        let mut make_ca = vec!["req", "-x509"];
        make_ca.extend(ec);
        make_ca.extend([
            "-keyout",
            &ca_key,
            "-out",
            &ca,
            "-days",
            "1",
            "-subj",
            "/CN=basra-push test CA",
        ]);
        openssl(dir, &make_ca);
        let mut request = vec!["req"];
        request.extend(ec);
        request.extend(["-keyout", &key, "-out", &csr, "-subj", "/CN=127.0.0.1"]);
        openssl(dir, &request);
        std::fs::write(
            dir.join(&ext),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &ca,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-out",
                &cert,
                "-days",
                "1",
                "-extfile",
                &ext,
            ],
        );
    }
}
