//! GetReplay: a finished match move by move as a spectator saw it
//! ([`basra_records::spectator::replay`], the projection game-session's streams use), with
//! the analysis of the caller's plays ([`crate::analysis::Analyst`]) when asked.
//!
//! Who may replay: a player of the match; and anyone, as a spectator, when the match is
//! public ([`MatchRecord::is_public`]: an event match, or its room allowed spectators,
//! who saw it live). Such a caller gets the events alone, never an analysis (there are no
//! plays of theirs to judge), and `spectator` says so. Anyone else is refused
//! PERMISSION_DENIED; an unknown id is NOT_FOUND.

use basra_engine::analysis::{PlayReview, Quality};
use basra_platform::auth::{Caller, Role};
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::game::v1::play_response::Event as E;
use basra_proto::convert::card_to_pb;
use basra_records::{ActionKind, MatchRecord};

use super::AccountsApi;
use super::profile::match_summary;
use crate::analysis::Analysis;
use crate::domain::MATCH_ID_MAX;
use crate::error::{AccountsError, Result};
use crate::store::{HistoryEntry, PlayedMatch, Store};

impl<S: Store> AccountsApi<S> {
    pub(super) async fn do_get_replay(
        &self,
        caller: Caller,
        req: pb::GetReplayRequest,
    ) -> Result<pb::GetReplayResponse> {
        if caller.role != Role::Player {
            return Err(AccountsError::PermissionDenied("GetReplay is for players"));
        }
        if req.match_id.is_empty() || req.match_id.chars().count() > MATCH_ID_MAX {
            return Err(AccountsError::invalid(
                "match_id",
                format!("must be 1 to {MATCH_ID_MAX} characters long"),
            ));
        }
        let store = &self.inner.store;
        let (played, spectator) = match store.played_match(caller.user_id, &req.match_id).await? {
            Some(played) => (played, false),
            None => (watched(store.recorded_match(&req.match_id).await?)?, true),
        };
        let events = basra_records::spectator::replay(&played.record).map_err(|e| {
            AccountsError::Internal(format!("match {} does not replay: {e}", req.match_id))
        })?;
        let analysis = if req.with_analysis && !spectator {
            let analyst = &self.inner.config.analyst;
            let outcome = analyst
                .analyse(&self.inner.store, &played.record, played.your_seat)
                .await?;
            Some(self.analysis_to_proto(&played, &events, outcome))
        } else {
            None
        };
        Ok(pb::GetReplayResponse {
            summary: Some(match_summary(history_entry(&played))),
            events,
            analysis,
            spectator,
        })
    }

    fn analysis_to_proto(
        &self,
        played: &PlayedMatch,
        events: &[basra_proto::basra::game::v1::PlayResponse],
        outcome: Analysis,
    ) -> pb::MatchAnalysis {
        let thresholds = self.inner.config.analyst.thresholds;
        let mut analysis = pb::MatchAnalysis {
            seat: u32::from(played.your_seat),
            inaccuracy_from: thresholds.inaccuracy,
            mistake_from: thresholds.mistake,
            blunder_from: thresholds.blunder,
            ..Default::default()
        };
        let reviews = match outcome {
            Analysis::Pending => {
                analysis.state = pb::AnalysisState::Pending as i32;
                return analysis;
            }
            Analysis::Ready(reviews) => reviews,
        };
        analysis.state = pb::AnalysisState::Ready as i32;
        // The n-th play of the log made the n-th card_played event.
        let play_seqs: Vec<u64> = events
            .iter()
            .filter(|e| matches!(e.event, Some(E::CardPlayed(_))))
            .map(|e| e.seq)
            .collect();
        let actions = &played.record.actions;
        analysis.plays = reviews
            .iter()
            .filter_map(|r: &PlayReview| {
                let ordinal = actions
                    .get(..r.action)?
                    .iter()
                    .filter(|a| matches!(a.action, ActionKind::Play { .. }))
                    .count();
                Some(pb::PlayVerdict {
                    seq: *play_seqs.get(ordinal)?,
                    played: Some(card_to_pb(r.played)),
                    best: Some(card_to_pb(r.best)),
                    expected_loss: r.loss,
                    quality: quality_to_proto(thresholds.quality(r.loss)) as i32,
                })
            })
            .collect();
        analysis
    }
}

fn quality_to_proto(quality: Quality) -> pb::PlayQuality {
    match quality {
        Quality::Good => pb::PlayQuality::Good,
        Quality::Inaccuracy => pb::PlayQuality::Inaccuracy,
        Quality::Mistake => pb::PlayQuality::Mistake,
        Quality::Blunder => pb::PlayQuality::Blunder,
    }
}

/// A recorded match of others as its replay to someone who did not play in it: allowed
/// when the match is public, with no seat of the caller's and no rating change.
fn watched(record: Option<MatchRecord>) -> Result<PlayedMatch> {
    let record = record.ok_or(AccountsError::NotFound("no match of this id"))?;
    if !record.is_public() {
        return Err(AccountsError::PermissionDenied(
            "only its players may replay this match: it was not an event match and its room \
             did not allow spectators",
        ));
    }
    Ok(PlayedMatch {
        record,
        your_seat: 0,
        rating_change: None,
        your_client: None,
    })
}

/// The match as the player's history shows it.
fn history_entry(played: &PlayedMatch) -> HistoryEntry {
    let record = &played.record;
    HistoryEntry {
        match_id: record.match_id.clone(),
        room_id: record.room_id.clone(),
        ranked: record.ranked,
        settings: record.settings,
        seats: record.seats.clone(),
        your_seat: played.your_seat,
        winner_side: record.winner_side,
        end_reason: record.end_reason,
        final_totals: record.final_totals.clone(),
        rounds: record.rounds.len() as u32,
        your_rating_change: played.rating_change,
        started_at: record.started_at,
        ended_at: record.ended_at,
    }
}
