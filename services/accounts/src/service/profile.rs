//! What players read about each other: GetProfile (with the tier and the best season
//! finish), the Leaderboard (of a season) and MatchHistory
//! (pages of at most [`MAX_PAGE`], continued by [`super::page_token`]s), and GetPlayers,
//! the services' batch look-up (matchmaking's ratings and blocks).

use basra_platform::auth::{Caller, Role};
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::common::v1 as common;
use basra_proto::convert::settings_to_pb;
use basra_records::wire::{basras_to_proto, timestamp_to_proto};
use uuid::Uuid;

use super::AccountsApi;
use super::page_token::{
    decode_history_token, decode_leaderboard_token, encode_history_token, encode_leaderboard_token,
};
use super::seasons::Board;
use crate::error::{AccountsError, Result};
use crate::seasons::Calendar;
use crate::store::{HistoryEntry, LeaderboardRow, RatingChange, Store};

/// Leaderboard page size when the request says 0.
pub const LEADERBOARD_DEFAULT_PAGE: u32 = 50;
/// Match history page size when the request says 0.
pub const HISTORY_DEFAULT_PAGE: u32 = 20;
/// The largest page of either.
pub const MAX_PAGE: u32 = 100;

/// The most players one GetPlayers call may ask for.
const MAX_PLAYERS_PER_CALL: usize = 100;

impl<S: Store> AccountsApi<S> {
    pub(super) async fn do_get_profile(
        &self,
        caller: Caller,
        req: pb::GetProfileRequest,
    ) -> Result<pb::GetProfileResponse> {
        let user_id = if req.user_id.is_empty() {
            caller.user_id
        } else {
            Uuid::parse_str(&req.user_id)
                .map_err(|_| AccountsError::invalid("user_id", "is not a user id"))?
        };
        let own = user_id == caller.user_id;
        let profile = self
            .inner
            .store
            .profile(user_id, self.inner.config.leaderboard)
            .await?
            .ok_or(AccountsError::UserNotFound)?;
        let calendar = &self.inner.config.calendar;
        let best_season_finish = self.best_season_finish(user_id).await?;
        let friend_code = if own {
            let code = self.inner.store.friend_code(user_id).await?;
            code.map(|c| c.to_string()).unwrap_or_default()
        } else {
            String::new()
        };
        Ok(pb::GetProfileResponse {
            profile: Some(pb::Profile {
                user_id: profile.user.id.to_string(),
                display_name: profile.user.display_name,
                username: if own {
                    profile.user.username.unwrap_or_default()
                } else {
                    String::new()
                },
                is_guest: profile.user.is_guest,
                rating: profile.rating.rating,
                rating_deviation: profile.rating.deviation,
                ranked_matches: profile.ranked_matches,
                matches_played: profile.matches_played,
                wins: profile.wins,
                losses: profile.losses,
                basras: Some(basras_to_proto(profile.basras)),
                leaderboard_rank: profile.leaderboard_rank,
                created_at: Some(timestamp_to_proto(profile.user.created_at)),
                friend_code,
                tier: calendar.tier_name(profile.rating.rating).to_owned(),
                best_season_finish,
                season_id: calendar.id_at(crate::domain::now()).to_owned(),
            }),
        })
    }

    pub(super) async fn do_leaderboard(
        &self,
        caller: Caller,
        req: pb::LeaderboardRequest,
    ) -> Result<pb::LeaderboardResponse> {
        let limit = page_size(req.page_size, LEADERBOARD_DEFAULT_PAGE);
        let (first_rank, after) = if req.page_token.is_empty() {
            (1, None)
        } else {
            let (rank, cursor) = decode_leaderboard_token(&req.page_token)?;
            (rank + 1, Some(cursor))
        };
        let rules = self.inner.config.leaderboard;
        let board = self.board(&req.season_id).await?;
        let store = &self.inner.store;
        let (mut rows, caller_row, season) = match board {
            Board::Current(season) => (
                store.leaderboard(rules, after, limit + 1).await?,
                store.leaderboard_position(caller.user_id, rules).await?,
                season,
            ),
            Board::Finished(season) => (
                store
                    .season_leaderboard(&season.id, rules, after, limit + 1)
                    .await?,
                store
                    .season_position(caller.user_id, &season.id, rules)
                    .await?,
                Some(season),
            ),
        };
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_page_token = match rows.last() {
            Some(last) if more => {
                encode_leaderboard_token(first_rank + rows.len() as u32 - 1, &last.cursor())
            }
            _ => String::new(),
        };
        let calendar = &self.inner.config.calendar;
        Ok(pb::LeaderboardResponse {
            entries: rows
                .into_iter()
                .enumerate()
                .map(|(i, row)| leaderboard_entry(first_rank + i as u32, row, calendar))
                .collect(),
            next_page_token,
            caller: caller_row.map(|(rank, row)| leaderboard_entry(rank, row, calendar)),
            season: season.map(|s| self.season_to_proto(s, crate::domain::now())),
        })
    }

    pub(super) async fn do_match_history(
        &self,
        caller: Caller,
        req: pb::MatchHistoryRequest,
    ) -> Result<pb::MatchHistoryResponse> {
        let limit = page_size(req.page_size, HISTORY_DEFAULT_PAGE);
        let after = if req.page_token.is_empty() {
            None
        } else {
            Some(decode_history_token(&req.page_token)?)
        };
        let mut entries = self
            .inner
            .store
            .match_history(caller.user_id, after, limit + 1)
            .await?;
        let more = entries.len() > limit as usize;
        entries.truncate(limit as usize);
        let next_page_token = match entries.last() {
            Some(last) if more => encode_history_token(&last.cursor()),
            _ => String::new(),
        };
        Ok(pb::MatchHistoryResponse {
            matches: entries.into_iter().map(match_summary).collect(),
            next_page_token,
        })
    }

    pub(super) async fn do_get_players(
        &self,
        caller: Caller,
        req: pb::GetPlayersRequest,
    ) -> Result<pb::GetPlayersResponse> {
        if caller.role != Role::Service {
            return Err(AccountsError::PermissionDenied(
                "GetPlayers needs a service token; players use GetProfile",
            ));
        }
        if req.user_ids.is_empty() || req.user_ids.len() > MAX_PLAYERS_PER_CALL {
            return Err(AccountsError::invalid(
                "user_ids",
                "must hold 1 to 100 user ids",
            ));
        }
        let ids = req
            .user_ids
            .iter()
            .map(|id| Uuid::parse_str(id))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| {
                AccountsError::invalid("user_ids", "holds a value that is not a user id")
            })?;
        let players = self.inner.store.players(&ids).await?;
        let mut blocks: std::collections::HashMap<Uuid, Vec<String>> =
            std::collections::HashMap::new();
        if req.include_blocks {
            for (blocker, blocked) in self.inner.store.blocks(&ids).await? {
                blocks.entry(blocker).or_default().push(blocked.to_string());
            }
        }
        Ok(pb::GetPlayersResponse {
            players: players
                .into_iter()
                .map(|(user, rating)| pb::PlayerSummary {
                    user_id: user.id.to_string(),
                    blocked_user_ids: blocks.remove(&user.id).unwrap_or_default(),
                    display_name: user.display_name,
                    is_guest: user.is_guest,
                    rating: rating.rating,
                    rating_deviation: rating.deviation,
                })
                .collect(),
        })
    }
}

fn page_size(requested: u32, default: u32) -> u32 {
    match requested {
        0 => default,
        n => n.min(MAX_PAGE),
    }
}

fn leaderboard_entry(rank: u32, row: LeaderboardRow, calendar: &Calendar) -> pb::LeaderboardEntry {
    pb::LeaderboardEntry {
        rank,
        user_id: row.user_id.to_string(),
        display_name: row.display_name,
        tier: calendar.tier_name(row.rating).to_owned(),
        rating: row.rating,
        ranked_matches: row.ranked_matches,
    }
}

pub(super) fn rating_change_to_proto(c: &RatingChange) -> common::RatingChange {
    common::RatingChange {
        user_id: c.user_id.to_string(),
        seat: u32::from(c.seat),
        rating_before: c.rating_before,
        rating_after: c.rating_after,
        deviation_after: c.deviation_after,
    }
}

pub(super) fn match_summary(e: HistoryEntry) -> pb::MatchSummary {
    pb::MatchSummary {
        match_id: e.match_id,
        room_id: e.room_id,
        ranked: e.ranked,
        settings: Some(settings_to_pb(&e.settings)),
        seats: e
            .seats
            .into_iter()
            .map(|s| pb::MatchSeat {
                seat: u32::from(s.seat),
                side: u32::from(s.side),
                user_id: s.user_id.map(|id| id.to_string()).unwrap_or_default(),
                display_name: s.display_name,
                is_bot: s.is_bot,
            })
            .collect(),
        your_seat: u32::from(e.your_seat),
        winner_side: e.winner_side.map(u32::from),
        end_reason: e.end_reason.to_proto() as i32,
        final_totals: e.final_totals,
        rounds: e.rounds,
        your_rating_change: e.your_rating_change.as_ref().map(rating_change_to_proto),
        started_at: Some(timestamp_to_proto(e.started_at)),
        ended_at: Some(timestamp_to_proto(e.ended_at)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sizes() {
        assert_eq!(page_size(0, 50), 50);
        assert_eq!(page_size(7, 50), 7);
        assert_eq!(page_size(1000, 50), 100);
    }
}
