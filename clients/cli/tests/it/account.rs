//! `basra account export|delete` against a `basra dev` process: the export is the
//! player's JSON document; a deletion needs the typed word (anything else deletes
//! nothing), then removes the account, and the device signs in to a new, empty guest.

use std::io::Write as _;
use std::process::{Command, Stdio};

use crate::dev_process::DevProcess;

fn basra(dev: &DevProcess, device: &str, args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_basra"))
        .arg("account")
        .args([
            "--server",
            &format!("http://{}", dev.addr),
            "--device-id",
            device,
        ])
        .args(args)
        .env_remove("BASRA_SERVER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("basra account runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The exported document of `device`'s guest.
fn export(dev: &DevProcess, device: &str) -> serde_json::Value {
    let out = basra(dev, device, &["export"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the export is one JSON document")
}

#[test]
fn a_player_exports_their_data_and_deletes_their_account_after_confirming() {
    let dev = DevProcess::start(&[], &[]);
    let device = format!("account-test-{}", std::process::id());
    let first = export(&dev, &device);
    assert_eq!(first["format"], "basra-account-export/1");
    assert_eq!(first["account"]["is_guest"], true);
    let user_id = first["account"]["user_id"].as_str().unwrap().to_owned();

    // To a file, too.
    let file = std::env::temp_dir().join(format!("basra-export-{}.json", std::process::id()));
    let out = basra(
        &dev,
        &device,
        &["export", "--out", file.to_str().unwrap()],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(saved["account"]["user_id"], user_id.as_str());
    let _ = std::fs::remove_file(&file);

    // Not confirmed: nothing deleted.
    let refused = basra(&dev, &device, &["delete"], "yes\n");
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stdout).contains("Type DELETE"));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("nothing was deleted"));
    assert_eq!(
        export(&dev, &device)["account"]["user_id"],
        user_id.as_str()
    );

    // Confirmed: deleted; the device now signs in to a new guest.
    let deleted = basra(&dev, &device, &["delete"], "DELETE\n");
    let printed = String::from_utf8_lossy(&deleted.stdout);
    assert!(
        deleted.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&deleted.stderr)
    );
    assert!(
        printed.contains(&format!("deleted account {user_id}")),
        "{printed}"
    );
    let after = export(&dev, &device);
    assert_ne!(after["account"]["user_id"], user_id.as_str());
}
