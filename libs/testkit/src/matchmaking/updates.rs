//! Reading a FindMatch stream in a test: the next update within [`WAIT`], the next one
//! that is not a (re)position, and the update a test expects, which panics naming what
//! came instead.

use std::time::Duration;

use basra_proto::basra::matchmaking::v1::{
    Cancelled, FindMatchResponse, Matched, Queued, find_match_response::Update,
};
use tonic::{Status, Streaming};

/// How long a test waits for an update (or for a condition to hold).
pub const WAIT: Duration = Duration::from_secs(5);

/// The next update; the stream's error if it ended with one. Panics when none comes
/// within [`WAIT`] or the stream ends OK.
pub async fn next(stream: &mut Streaming<FindMatchResponse>) -> Result<Update, Status> {
    let message = tokio::time::timeout(WAIT, stream.message())
        .await
        .expect("an update in time")?;
    Ok(message
        .expect("the stream is still open")
        .update
        .expect("an update"))
}

/// The next update that is not a (re)position.
pub async fn next_change(stream: &mut Streaming<FindMatchResponse>) -> Result<Update, Status> {
    loop {
        match next(stream).await? {
            Update::Queued(_) => continue,
            other => return Ok(other),
        }
    }
}

/// The next update, which must be a position in the queue.
pub async fn queued(stream: &mut Streaming<FindMatchResponse>) -> Queued {
    match next(stream).await {
        Ok(Update::Queued(queued)) => queued,
        other => panic!("expected a position in the queue, got {other:?}"),
    }
}

/// The next change, which must be the match.
pub async fn matched(stream: &mut Streaming<FindMatchResponse>) -> Matched {
    match next_change(stream).await {
        Ok(Update::Matched(matched)) => matched,
        other => panic!("expected the match, got {other:?}"),
    }
}

/// The next change, which must be the end of the search without a match.
pub async fn cancelled(stream: &mut Streaming<FindMatchResponse>) -> Cancelled {
    match next_change(stream).await {
        Ok(Update::Cancelled(cancelled)) => cancelled,
        other => panic!("expected the search to be cancelled, got {other:?}"),
    }
}

/// The status the stream ends with at its next change (a test that expects an error).
pub async fn ended(stream: &mut Streaming<FindMatchResponse>) -> Status {
    match next_change(stream).await {
        Err(status) => status,
        Ok(update) => panic!("expected the stream to end with an error, got {update:?}"),
    }
}
