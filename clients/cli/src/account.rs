//! `basra account …`: the player's own account, from the terminal: export everything the
//! service holds about them (ExportMyData, one JSON document) and delete the account for
//! good (DeleteAccount), after a typed confirmation. The terminal client signs in as this
//! machine's guest, whose proof for a deletion is its device id.

use std::io::{BufRead, Write};

use anyhow::Context as _;
use basra_proto::basra::accounts::v1::delete_account_request::Proof;
use basra_proto::basra::accounts::v1::{DeleteAccountRequest, ExportMyDataRequest};

use crate::session::Session;

/// The word a player types to confirm a deletion.
pub const CONFIRMATION_WORD: &str = "DELETE";

/// Writes the export of the signed-in player's data to `out`; answers the bytes written.
pub async fn export(session: &Session, out: &mut dyn Write) -> anyhow::Result<u64> {
    let mut stream = session
        .with_refresh(|| async {
            session
                .accounts()
                .export_my_data(ExportMyDataRequest {})
                .await
        })
        .await?
        .into_inner();
    let mut written = 0u64;
    while let Some(piece) = stream.message().await? {
        out.write_all(&piece.data)
            .context("cannot write the export")?;
        written += piece.data.len() as u64;
    }
    out.flush().context("cannot write the export")?;
    Ok(written)
}

/// Whether `typed` (a line the player typed) confirms a deletion: the word
/// [`CONFIRMATION_WORD`], in any case, with any surrounding white space.
pub fn confirms(typed: &str) -> bool {
    typed.trim().eq_ignore_ascii_case(CONFIRMATION_WORD)
}

/// Asks on `output` for the confirmation word and reads a line of `input`.
pub fn ask_confirmation(input: &mut dyn BufRead, output: &mut dyn Write) -> anyhow::Result<bool> {
    write!(
        output,
        "This deletes your account for good: your name, rating, friends and sign-ins. \
         Finished matches stay for the other players, your seat named \"Deleted player\".\n\
         Type {CONFIRMATION_WORD} to delete it: "
    )?;
    output.flush()?;
    let mut line = String::new();
    input.read_line(&mut line)?;
    Ok(confirms(&line))
}

/// Deletes the signed-in player's account, proving it is them with `proof` (a guest's
/// device id, an account's password); answers how many recorded matches were kept
/// (anonymous).
pub async fn delete(session: &Session, proof: Proof) -> anyhow::Result<u32> {
    let response = session
        .with_refresh(|| async {
            session
                .accounts()
                .delete_account(DeleteAccountRequest {
                    proof: Some(proof.clone()),
                })
                .await
        })
        .await?;
    Ok(response.into_inner().matches_kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_word_confirms() {
        assert!(confirms("DELETE\n"));
        assert!(confirms("  delete "));
        assert!(!confirms("yes"));
        assert!(!confirms(""));
        assert!(!confirms("DELETE IT"));
        let mut shown = Vec::new();
        assert!(!ask_confirmation(&mut "no\n".as_bytes(), &mut shown).unwrap());
        assert!(String::from_utf8(shown).unwrap().contains("Type DELETE"));
        assert!(ask_confirmation(&mut "delete\n".as_bytes(), &mut Vec::new()).unwrap());
    }
}
