//! RecordMatch and RecordMatches, the services' calls that record finished matches: each
//! record checked by [`MatchRecord::from_proto`] (the `basra-records` rules), then stored
//! with its rating changes in one transaction, exactly once per match id. A match
//! recorded by RecordMatch (game-session's, not the bulk RecordMatches) leaves a "match
//! result" notice in the inbox of each player who had no feed open.

use basra_platform::auth::{Caller, Role};
use basra_proto::basra::accounts::v1 as pb;
use basra_records::MatchRecord;

use super::AccountsApi;
use super::profile::rating_change_to_proto;
use crate::domain;
use crate::error::{AccountsError, Result};
use crate::store::{Recorded, Store};

/// The most records one RecordMatches call may carry.
pub const MAX_RECORDS_PER_CALL: usize = 100;

impl<S: Store> AccountsApi<S> {
    pub(super) async fn do_record_match(
        &self,
        caller: Caller,
        req: pb::RecordMatchRequest,
    ) -> Result<pb::RecordMatchResponse> {
        if caller.role != Role::Service {
            return Err(AccountsError::PermissionDenied(
                "RecordMatch needs a service token; players cannot record matches",
            ));
        }
        let record = MatchRecord::from_proto(
            req.record
                .ok_or_else(|| AccountsError::invalid("record", "is missing"))?,
        )?;
        let recorded = self
            .inner
            .store
            .record_match(&record, domain::now())
            .await?;
        tracing::info!(
            match_id = %record.match_id,
            already_recorded = recorded.already_recorded,
            rated = !recorded.rating_changes.is_empty(),
            "match recorded"
        );
        if !recorded.already_recorded {
            self.keep_match_results(&record, &recorded.rating_changes)
                .await;
        }
        Ok(recorded_to_proto(&recorded))
    }

    pub(super) async fn do_record_matches(
        &self,
        caller: Caller,
        req: pb::RecordMatchesRequest,
    ) -> Result<pb::RecordMatchesResponse> {
        if caller.role != Role::Service {
            return Err(AccountsError::PermissionDenied(
                "RecordMatches needs a service token; players cannot record matches",
            ));
        }
        if req.records.is_empty() || req.records.len() > MAX_RECORDS_PER_CALL {
            return Err(AccountsError::invalid(
                "records",
                format!("must hold 1 to {MAX_RECORDS_PER_CALL} records"),
            ));
        }
        let records = req
            .records
            .into_iter()
            .enumerate()
            .map(|(index, record)| {
                MatchRecord::from_proto(record).map_err(|e| AccountsError::from(e).in_record(index))
            })
            .collect::<Result<Vec<_>>>()?;
        let recorded = self
            .inner
            .store
            .record_matches(&records, domain::now())
            .await?;
        tracing::info!(
            records = records.len(),
            already_recorded = recorded.iter().filter(|r| r.already_recorded).count(),
            "matches recorded"
        );
        Ok(pb::RecordMatchesResponse {
            results: recorded.iter().map(recorded_to_proto).collect(),
        })
    }
}

fn recorded_to_proto(recorded: &Recorded) -> pb::RecordMatchResponse {
    pb::RecordMatchResponse {
        rating_changes: recorded
            .rating_changes
            .iter()
            .map(rating_change_to_proto)
            .collect(),
        already_recorded: recorded.already_recorded,
    }
}
