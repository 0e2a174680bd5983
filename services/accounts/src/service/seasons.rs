//! Rating seasons: ListSeasons, the season a Leaderboard lists, the tiers and best
//! finishes GetProfile shows, and the closing of finished seasons (once per season
//! across replicas: [`Seasons::close_season`](crate::store::Seasons::close_season); this replica remembers which it saw
//! closed, so each costs it one store call).

use basra_platform::auth::{Caller, Role};
use basra_proto::basra::accounts::v1 as pb;
use basra_records::wire::timestamp_to_proto;
use uuid::Uuid;

use super::AccountsApi;
use crate::error::{AccountsError, Result};
use crate::seasons::{SEASON_ID_MAX, Season, SeasonState};
use crate::store::{SeasonFinish, Store};

/// Which leaderboard a Leaderboard call reads.
pub(super) enum Board<'a> {
    /// The current season's (live ratings).
    Current(Option<&'a Season>),
    /// A finished season's (kept).
    Finished(&'a Season),
}

impl<S: Store> AccountsApi<S> {
    pub(super) async fn do_list_seasons(
        &self,
        caller: Caller,
        _req: pb::ListSeasonsRequest,
    ) -> Result<pb::ListSeasonsResponse> {
        if caller.role != Role::Player {
            return Err(AccountsError::PermissionDenied(
                "ListSeasons is for players",
            ));
        }
        let now = crate::domain::now();
        let calendar = &self.inner.config.calendar;
        let seasons = calendar
            .list
            .iter()
            .rev()
            .filter(|s| s.start <= now)
            .map(|s| self.season_to_proto(s, now))
            .collect();
        let next = calendar
            .list
            .iter()
            .find(|s| s.start > now)
            .map(|s| self.season_to_proto(s, now));
        Ok(pb::ListSeasonsResponse { seasons, next })
    }

    /// The leaderboard `season_id` asks for (empty: the current season's), its finished
    /// season closed first.
    pub(super) async fn board(&self, season_id: &str) -> Result<Board<'_>> {
        let now = crate::domain::now();
        let calendar = &self.inner.config.calendar;
        if season_id.is_empty() {
            return Ok(Board::Current(calendar.season_at(now)));
        }
        if season_id.len() > SEASON_ID_MAX {
            return Err(AccountsError::invalid(
                "season_id",
                format!("must be at most {SEASON_ID_MAX} characters long"),
            ));
        }
        let season = calendar.season(season_id);
        match (season, calendar.state(season_id, now)) {
            (Some(season), Some(SeasonState::Current)) => Ok(Board::Current(Some(season))),
            (Some(season), Some(SeasonState::Finished)) => {
                self.close_finished_seasons().await?;
                Ok(Board::Finished(season))
            }
            _ => Err(AccountsError::NotFound(
                "no season of this id has started (ListSeasons lists them)",
            )),
        }
    }

    /// Closes every season that has finished by now and that this replica has not seen
    /// closed.
    pub(super) async fn close_finished_seasons(&self) -> Result<()> {
        let now = crate::domain::now();
        let open: Vec<String> = {
            let closed = self
                .inner
                .closed_seasons
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            self.inner
                .config
                .calendar
                .finished_at(now)
                .filter(|s| !closed.contains(&s.id))
                .map(|s| s.id.clone())
                .collect()
        };
        for id in open {
            if self.inner.store.close_season(&id, now).await? {
                tracing::info!(season = %id, "season closed: its leaderboard is final");
            }
            self.inner
                .closed_seasons
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id);
        }
        Ok(())
    }

    /// The user's best finish on a finished season's leaderboard: the best rank, of
    /// equal ranks the latest season.
    pub(super) async fn best_season_finish(
        &self,
        user_id: Uuid,
    ) -> Result<Option<pb::SeasonFinish>> {
        let calendar = &self.inner.config.calendar;
        if calendar.list.is_empty() {
            return Ok(None);
        }
        self.close_finished_seasons().await?;
        let finishes = self
            .inner
            .store
            .season_finishes(user_id, self.inner.config.leaderboard)
            .await?;
        let position = |f: &SeasonFinish| calendar.list.iter().position(|s| s.id == f.season_id);
        let best = finishes
            .into_iter()
            .filter(|f| position(f).is_some())
            .min_by_key(|f| (f.rank, std::cmp::Reverse(position(f))));
        Ok(best.map(|f| pb::SeasonFinish {
            season_name: calendar
                .season(&f.season_id)
                .map(|s| s.name.clone())
                .unwrap_or_default(),
            tier: calendar.tier_name(f.rating).to_owned(),
            season_id: f.season_id,
            rank: f.rank,
            rating: f.rating,
        }))
    }

    /// `season` as the API shows it at `now`.
    pub(super) fn season_to_proto(
        &self,
        season: &Season,
        now: chrono::DateTime<chrono::Utc>,
    ) -> pb::Season {
        let calendar = &self.inner.config.calendar;
        pb::Season {
            id: season.id.clone(),
            name: season.name.clone(),
            starts_at: Some(timestamp_to_proto(season.start)),
            ends_at: calendar.end_of(&season.id).map(timestamp_to_proto),
            current: calendar.state(&season.id, now) == Some(SeasonState::Current),
        }
    }
}
