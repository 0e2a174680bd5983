//! The terminal player and the operator's tool as a person meets them: `basra play` and
//! `basra admin` child processes against a `basra dev` child, driven through their
//! standard input (kept open, as a terminal is) and read line by line on standard output.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::dev_process::DevProcess;

/// A `basra` child whose output is read line by line; killed when dropped.
struct Terminal {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Terminal {
    fn start(args: &[&str]) -> Terminal {
        let mut child = Command::new(env!("CARGO_BIN_EXE_basra"))
            .args(args)
            .env_remove("BASRA_SERVER")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("basra starts");
        let (tx, lines) = mpsc::channel();
        for output in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                // Prompts end without a newline: split them off at their `] ` or `? `.
                for line in BufReader::new(output).split(b'\n') {
                    let Ok(line) = line else { break };
                    let _ = tx.send(String::from_utf8_lossy(&line).into_owned());
                }
            });
        }
        Terminal {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (at most `within`) for a line containing `text`; returns it.
    fn expect(&mut self, text: &str, within: Duration) -> String {
        let end = Instant::now() + within;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(text) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no line with {text:?} within {within:?}; printed:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    fn type_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Waits (at most `within`) for the process to end, its input still open.
    fn exits_within(&mut self, within: Duration) -> std::process::ExitStatus {
        let end = Instant::now() + within;
        while Instant::now() < end {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "still running {within:?} later (input open); printed:\n{}",
            self.seen.join("\n")
        );
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `basra ARGS` to its end; its standard output, or a panic with what it said.
fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_basra"))
        .args(args)
        .output()
        .expect("basra runs");
    assert!(
        out.status.success(),
        "basra {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

const STEP: Duration = Duration::from_secs(20);

fn server(dev: &DevProcess) -> String {
    format!("http://{}", dev.addr)
}

/// Flags after the subcommand, a rematch in the same room, a resignation that says who
/// resigned, and an exit at once after `quit`, the input still open.
#[test]
fn a_match_against_the_computer_ends_offers_a_rematch_and_quits_at_once() {
    let dev = DevProcess::start(&["--bot-delay-ms", "0"], &[]);
    let server = server(&dev);
    let mut player = Terminal::start(&[
        "play",
        "computer",
        "--level",
        "easy",
        "--server",
        &server,
        "--device-id",
        "terminal-rematch",
        "--name",
        "سارة",
    ]);
    player.expect("your turn", STEP);
    player.type_line("resign");
    let over = player.expect("match over", STEP);
    assert!(over.contains("you lost"), "{over}");
    assert!(over.contains("(you resigned)"), "{over}");
    assert!(over.contains(" them"), "{over}");
    player.expect("type `rematch`", STEP);
    player.type_line("rematch");
    player.expect("match started", STEP);
    player.expect("your turn", STEP);
    player.type_line("resign");
    player.expect("match over", STEP);
    player.type_line("quit");
    assert!(player.exits_within(Duration::from_secs(5)).success());
    let said = player.seen.join("\n");
    assert!(!said.contains("side 0"), "{said}");
    assert!(!said.contains("resuming from event"), "{said}");
}

/// `quit` during a match warns first; a second one leaves; the next `basra play` offers
/// the room the player is still seated in, and goes back to it.
#[test]
fn quitting_a_match_warns_and_the_next_play_goes_back_to_the_room() {
    let dev = DevProcess::start(&["--bot-delay-ms", "0"], &[]);
    let server = server(&dev);
    let args = |seat: &'static str| {
        vec![
            "play".to_owned(),
            seat.to_owned(),
            "--server".to_owned(),
            server.clone(),
            "--device-id".to_owned(),
            "terminal-back".to_owned(),
        ]
    };
    let computer = args("computer");
    let mut player = Terminal::start(&computer.iter().map(String::as_str).collect::<Vec<_>>());
    player.expect("your turn", STEP);
    player.type_line("quit");
    player.expect("the match is not over", STEP);
    player.type_line("quit");
    assert!(player.exits_within(Duration::from_secs(5)).success());

    let quick = args("quick");
    let mut back = Terminal::start(&quick.iter().map(String::as_str).collect::<Vec<_>>());
    back.expect("you are still seated in room", STEP);
    back.type_line("");
    back.expect("joined", STEP);
    back.type_line("resign");
    back.expect("(you resigned)", STEP);
    back.type_line("quit");
    assert!(back.exits_within(Duration::from_secs(5)).success());
}

/// `basra dev`'s banner gives a ready `basra admin token` command; `admin room` speaks
/// ISO 8601 and JSON; closing the room ends the player's client at once with the reason.
#[test]
fn the_banner_mints_an_operator_token_and_a_closed_room_ends_the_client_at_once() {
    let dev = DevProcess::start(&["--bot-delay-ms", "0"], &[]);
    let server = server(&dev);
    let admin = dev
        .banner
        .iter()
        .find_map(|line| line.strip_prefix("admin:  "))
        .expect("the banner says how to get an operator token");
    let token_args: Vec<&str> = admin
        .split("   (")
        .next()
        .unwrap()
        .split_whitespace()
        .skip(1)
        .collect();
    let token = run(&token_args).trim().to_owned();

    let mut player = Terminal::start(&[
        "play",
        "computer",
        "--server",
        &server,
        "--device-id",
        "terminal-closed",
    ]);
    player.expect("your turn", STEP);

    let connection = ["--server", server.as_str(), "--token", token.as_str()];
    let rooms = run(&[
        &["admin", "rooms", "--status", "in-progress"][..],
        &connection,
    ]
    .concat());
    let room_id = rooms
        .lines()
        .nth(1)
        .and_then(|line| line.split_whitespace().next())
        .expect("the room is listed")
        .to_owned();
    let json = run(&[
        &["admin", "room", room_id.as_str(), "--json"][..],
        &connection,
    ]
    .concat());
    let room: serde_json::Value = serde_json::from_str(&json).expect("--json prints JSON");
    assert_eq!(room["view"]["status"], "in-progress", "{json}");
    assert!(room["view"]["seed_commitment"].is_string(), "{json}");
    let deadline = room["view"]["turn_deadline"].as_str().expect("a deadline");
    assert!(
        chrono::DateTime::parse_from_rfc3339(deadline).is_ok() && deadline.ends_with('Z'),
        "{deadline}"
    );
    let text = run(&[&["admin", "room", room_id.as_str()][..], &connection].concat());
    assert!(text.contains("seed commitment "), "{text}");
    assert!(!text.contains("GameView"), "{text}");

    run(&[
        &[
            "admin",
            "close",
            room_id.as_str(),
            "--reason",
            "server maintenance",
        ][..],
        &connection,
    ]
    .concat());
    player.expect(
        "(the room was closed by an operator: server maintenance)",
        STEP,
    );
    assert!(player.exits_within(Duration::from_secs(5)).success());
}
