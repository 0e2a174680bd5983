//! `basra-rules`: answers Basra rule questions, one JSON line per request line on stdin.

use std::io::{self, BufRead, Write};

fn main() -> io::Result<()> {
    let stdin = io::stdin();
    let mut stdout = io::stdout().lock();
    for line in stdin.lock().lines() {
        writeln!(stdout, "{}", basra_rules::answer(&line?))?;
        // Answer each line as it comes, so a driver can talk to the tool interactively.
        stdout.flush()?;
    }
    Ok(())
}
