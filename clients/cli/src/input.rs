//! The player's typed lines, read by one thread for the whole process: a prompt, the game
//! loop and the next prompt take turns on the same lines, and a pending read never keeps
//! the program from ending (a blocked `stdin` read in tokio's blocking pool would: the
//! runtime waits for it at exit, so the last message would show only after Enter).

use std::io::{BufRead, Write};
use std::sync::OnceLock;

use tokio::sync::{Mutex, mpsc};

fn lines() -> &'static Mutex<mpsc::UnboundedReceiver<String>> {
    static LINES: OnceLock<Mutex<mpsc::UnboundedReceiver<String>>> = OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Mutex::new(rx)
    })
}

/// The next line typed (without its newline); `None` once standard input is closed.
pub async fn next_line() -> Option<String> {
    lines().lock().await.recv().await
}

/// Prints `prompt` (no newline) and answers the next line; an error once input is closed.
pub async fn ask(prompt: &str) -> anyhow::Result<String> {
    print!("{prompt}");
    std::io::stdout().flush()?;
    next_line()
        .await
        .ok_or_else(|| anyhow::anyhow!("standard input closed"))
}
