//! A player's event match waiting or being played, for the lobby's and the queue's one
//! seat a player rule (`MatchmakingApi::current_seat`): a player who has one is refused
//! a search or another room as one seated in an unfinished room is, so nobody plays an
//! event match and another match at once.

use super::EventDeps;
use super::model::{EntryStatus, Phase};
use super::play::LiveEvent;
use crate::error::{MatchmakingError, Result};

/// How many of a player's events are looked at, the latest start first: an event a
/// player is playing now is among their latest.
const LATEST: u32 = 20;

/// The room of `user`'s match in a running event that is made and has no result yet
/// (the one GetMyMatch answers), if any. The room's own state (whether its match has
/// ended meanwhile) is game-session's to say.
pub(crate) async fn event_room(deps: &EventDeps, user: &str) -> Result<Option<String>> {
    let (entries, _) = deps.store.entries_of(user, 0, LATEST).await?;
    for entry in entries.iter().filter(|e| e.status == EntryStatus::Playing) {
        let running = deps
            .store
            .get(&entry.event_id)
            .await?
            .is_some_and(|e| e.phase == Phase::Running);
        if !running {
            continue;
        }
        let Some(stored) = deps.live.load(&entry.event_id).await? else {
            continue;
        };
        let live: LiveEvent = serde_json::from_str(&stored.json)
            .map_err(|err| MatchmakingError::Corrupt(format!("event state: {err}")))?;
        if let Some(m) = live.match_of(user).filter(|m| m.created) {
            return Ok(Some(m.room_id.clone()));
        }
    }
    Ok(None)
}
