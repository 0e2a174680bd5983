//! Events from the terminal, through the real binary against `basra dev`: an operator
//! mints a token and creates a three-player knockout with a check-in window (`basra admin
//! tournament create`); three players `basra tournament join --bot` it at once: each
//! registers, checks in, and plays each match as it is ready (the top seed has a bye,
//! then the final); one wins the event, the others are out or finish second; `basra
//! tournament standings` and `list --mine` show the final standings, `basra admin
//! tournament list --json` the event finished with its champion. A second event is
//! cancelled (`basra admin tournament cancel`) and its registered player told.

use std::process::{Command, Output};

use crate::dev_process::DevProcess;

fn basra(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_basra"))
        .args(args)
        .env_remove("BASRA_SERVER")
        .env_remove("BASRA_OPERATOR_TOKEN")
        .env_remove("BASRA_EVENTS_ADMIN_SERVER")
        .output()
        .expect("basra runs")
}

fn ok(output: &Output) -> String {
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// The operator token the banner's `basra admin token` line mints.
fn operator_token(dev: &DevProcess) -> String {
    let line = dev
        .banner
        .iter()
        .find_map(|l| l.strip_prefix("admin:  basra admin token "))
        .expect("the banner says how to mint an operator token");
    let words: Vec<&str> = line.split_whitespace().collect();
    let after = |flag: &str| words[words.iter().position(|w| *w == flag).unwrap() + 1];
    let token = basra(&[
        "admin",
        "token",
        "--key-file",
        after("--key-file"),
        "--kid",
        after("--kid"),
        "--operator",
        "events-test",
    ]);
    ok(&token).trim().to_owned()
}

#[test]
fn three_players_play_a_knockout_to_its_end_from_the_terminal() {
    let dev = DevProcess::start(&["--bot-delay-ms", "0"], &[]);
    let server = format!("http://{}", dev.addr);
    let token = operator_token(&dev);
    let admin = |args: &[&str]| {
        let mut all = vec!["admin", "--json", "tournament"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--server", &server, "--token", &token]);
        let out = ok(&basra(&all));
        serde_json::from_str::<serde_json::Value>(out.trim())
            .unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    // Check-in is open from now; the start is 8 s away.
    let created = admin(&[
        "create",
        "--name",
        "Terminal cup",
        "--in",
        "8",
        "--check-in",
        "60",
        "--cap",
        "4",
        "--target",
        "1",
        "--join-deadline",
        "60",
    ]);
    let event_id = created["event_id"].as_str().unwrap().to_owned();
    assert_eq!(created["status"], "registration open", "{created}");
    assert_eq!(created["format"], "knockout", "{created}");

    let players: Vec<_> = (0..3)
        .map(|i| {
            let (server, event_id) = (server.clone(), event_id.clone());
            std::thread::spawn(move || {
                let device = format!("tournament-test-{}-{i}", std::process::id());
                let name = ["Amal", "Badr", "Camil"][i];
                let out = basra(&[
                    "tournament",
                    "join",
                    &event_id,
                    "--bot",
                    "greedy",
                    "--delay-ms",
                    "0",
                    "--server",
                    &server,
                    "--device-id",
                    &device,
                    "--name",
                    name,
                ]);
                (device, ok(&out))
            })
        })
        .collect();
    let players: Vec<(String, String)> = players.into_iter().map(|p| p.join().unwrap()).collect();
    for (_, printed) in &players {
        assert!(printed.contains("registered for"), "{printed}");
        assert!(printed.contains("checked in"), "{printed}");
        assert!(printed.contains("your match is ready"), "{printed}");
    }
    let winners: Vec<_> = players
        .iter()
        .filter(|(_, p)| p.contains("you won the event!"))
        .collect();
    assert_eq!(winners.len(), 1, "one champion: {players:#?}");
    let finals = players
        .iter()
        .filter(|(_, p)| p.matches("your match is ready").count() == 2)
        .count();
    assert!(finals >= 1, "someone played two rounds: {players:#?}");

    let (device, _) = &winners[0];
    let standings = ok(&basra(&[
        "tournament",
        "standings",
        &event_id,
        "--server",
        &server,
        "--device-id",
        device,
    ]));
    assert!(standings.contains("final standings:"), "{standings}");
    assert!(
        standings.contains("rank  points  played  round  player"),
        "{standings}"
    );
    let mine = ok(&basra(&[
        "tournament",
        "list",
        "--mine",
        "--server",
        &server,
        "--device-id",
        device,
    ]));
    assert!(mine.contains("you finished #1"), "{mine}");

    let all = admin(&["list"]);
    let listed = all
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event_id"] == event_id.as_str())
        .expect("the event is listed");
    assert_eq!(listed["status"], "finished", "{listed}");
    assert_ne!(listed["champion"], "", "{listed}");

    // A second event: one player registers, the operator cancels it, the player is told.
    let second = admin(&["create", "--name", "Cancelled cup", "--in", "3600"]);
    let second_id = second["event_id"].as_str().unwrap();
    let listed = ok(&basra(&[
        "tournament",
        "list",
        "--server",
        &server,
        "--device-id",
        device,
    ]));
    assert!(listed.contains("Cancelled cup"), "{listed}");
    // Joining from a pipe: register, then wait; the cancellation ends it.
    let waiting = std::thread::spawn({
        let (server, device, id) = (server.clone(), device.clone(), second_id.to_owned());
        move || {
            basra(&[
                "tournament",
                "join",
                &id,
                "--bot",
                "random",
                "--server",
                &server,
                "--device-id",
                &device,
            ])
        }
    });
    let registered = std::time::Instant::now();
    loop {
        let all = admin(&["list"]);
        let e = all
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["event_id"] == second_id)
            .cloned();
        if e.is_some_and(|e| e["registered"] == 1) {
            break;
        }
        assert!(registered.elapsed().as_secs() < 30, "the player registered");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let cancelled = admin(&["cancel", second_id, "--reason", "the hall is closed"]);
    assert_eq!(cancelled["notified"], 1, "{cancelled}");
    assert_eq!(cancelled["event"]["status"], "cancelled", "{cancelled}");
    let told = ok(&waiting.join().unwrap());
    assert!(told.contains("the event was cancelled"), "{told}");
}
