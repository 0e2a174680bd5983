//! The one place a reported display name is hidden: a display name reported as offensive
//! by `[reports] hide_name_reporters` distinct players (open reports) is shown to every
//! other player as [`hidden_placeholder`] until a moderator resolves the reports
//! (dismiss shows it again, rename replaces it). Its owner still sees it.
//!
//! Every answer that shows other players' names implements [`ShowsNames`] (which names
//! it carries, and whose), and the glue passes it through [`AccountsApi::shown`] on its
//! way out: profiles, the leaderboard, match histories, friend lists, the friends'
//! feed and the inbox (`grpc.rs`, `feed.rs`), and GetPlayers, whence matchmaking's lobby and
//! game-session's seats take their names (`internal.rs`). Operators
//! (AccountsAdminService) see names as they are.

use basra_proto::basra::accounts::v1 as pb;
use uuid::Uuid;

use super::AccountsApi;
use crate::error::Result;
use crate::reports::hidden_placeholder;
use crate::store::Store;

/// An answer that shows players' names.
pub(super) trait ShowsNames {
    /// Calls `f` with each (user id, display name) the answer shows.
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String));
}

impl<T: ShowsNames> ShowsNames for Vec<T> {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        for item in self {
            item.each_name(f);
        }
    }
}

impl<T: ShowsNames> ShowsNames for Option<T> {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        if let Some(item) = self {
            item.each_name(f);
        }
    }
}

impl<S: Store> AccountsApi<S> {
    /// `answer` as `viewer` may see it (`None`: a service, which shows it to players
    /// alike): every other player's hidden name replaced by the placeholder. One store
    /// read, only when the answer names someone else.
    pub(super) async fn shown<M: ShowsNames>(
        &self,
        viewer: Option<Uuid>,
        mut answer: M,
    ) -> Result<M> {
        let other = |raw: &str| Uuid::parse_str(raw).ok().filter(|id| Some(*id) != viewer);
        let mut ids = Vec::new();
        answer.each_name(&mut |id, _| ids.extend(other(id)));
        if ids.is_empty() {
            return Ok(answer);
        }
        ids.sort_unstable();
        ids.dedup();
        let hidden = self
            .inner
            .store
            .hidden_among(&ids, self.inner.config.reports.hide_name_reporters)
            .await?;
        if !hidden.is_empty() {
            answer.each_name(&mut |id, name| {
                if let Some(id) = other(id).filter(|id| hidden.contains(id)) {
                    *name = hidden_placeholder(id);
                }
            });
        }
        Ok(answer)
    }
}

impl ShowsNames for pb::Profile {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        f(&self.user_id, &mut self.display_name);
    }
}

impl ShowsNames for pb::GetProfileResponse {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        self.profile.each_name(f);
    }
}

impl ShowsNames for pb::LeaderboardEntry {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        f(&self.user_id, &mut self.display_name);
    }
}

impl ShowsNames for pb::LeaderboardResponse {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        self.entries.each_name(f);
        self.caller.each_name(f);
    }
}

impl ShowsNames for pb::MatchSeat {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        f(&self.user_id, &mut self.display_name);
    }
}

impl ShowsNames for pb::MatchSummary {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        self.seats.each_name(f);
    }
}

impl ShowsNames for pb::MatchHistoryResponse {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        self.matches.each_name(f);
    }
}

impl ShowsNames for pb::PlayerSummary {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        f(&self.user_id, &mut self.display_name);
    }
}

impl ShowsNames for pb::GetPlayersResponse {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        self.players.each_name(f);
    }
}

impl ShowsNames for pb::Friend {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        f(&self.user_id, &mut self.display_name);
    }
}

impl ShowsNames for pb::FriendPresence {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        self.friend.each_name(f);
    }
}

impl ShowsNames for pb::ListFriendsResponse {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        self.friends.each_name(f);
        self.incoming.each_name(f);
        self.outgoing.each_name(f);
        self.blocked.each_name(f);
    }
}

impl ShowsNames for pb::AddFriendResponse {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        self.friend.each_name(f);
    }
}

impl ShowsNames for pb::WatchFriendsResponse {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        use pb::watch_friends_response::Event;
        match &mut self.event {
            Some(Event::Snapshot(snapshot)) => {
                snapshot.friends.each_name(f);
                snapshot.incoming.each_name(f);
            }
            Some(Event::PresenceChanged(presence)) => presence.each_name(f),
            Some(Event::FriendRequest(friend) | Event::FriendAdded(friend)) => friend.each_name(f),
            Some(Event::Invite(invite)) => invite.from.each_name(f),
            Some(Event::Notice(notice)) => notice.each_name(f),
            None => {}
        }
    }
}

impl ShowsNames for pb::Notice {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        use pb::notice::Body;
        match &mut self.body {
            Some(Body::FriendRequest(friend) | Body::FriendAdded(friend)) => friend.each_name(f),
            Some(Body::Invite(invite)) => invite.from.each_name(f),
            Some(Body::MatchResult(summary)) => summary.each_name(f),
            // Names without an id (an event's opponent) are the sender's to show.
            Some(_) | None => {}
        }
    }
}

impl ShowsNames for pb::ListNoticesResponse {
    fn each_name(&mut self, f: &mut dyn FnMut(&str, &mut String)) {
        self.notices.each_name(f);
    }
}
