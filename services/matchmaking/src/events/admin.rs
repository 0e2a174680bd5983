//! `EventAdminService`: operators create, list and cancel events. The operator role is
//! checked as `GameAdminService` and `AccountsAdminService` check it.

use basra_platform::auth::{self, Role};
use basra_proto::basra::matchmaking::v1::{
    self as pb, event_admin_service_server::EventAdminService,
};
use tonic::{Request, Response, Status};

use super::api::{next_token, paging};
use super::model::{EventRecord, Phase};
use super::notices::Notice;
use super::spec::EventSpec;
use super::{EventsApi, convert};
use crate::error::MatchmakingError;

/// The longest cancellation reason.
const MAX_REASON_CHARS: usize = 200;

/// Who calls, refused unless an operator: their name for the log.
fn operator<T>(request: &Request<T>) -> Result<String, Status> {
    let caller = auth::caller(request)?;
    auth::require_role(&caller, Role::Operator)?;
    Ok(auth::operator_name(request).unwrap_or_else(|| caller.user_id.to_string()))
}

#[tonic::async_trait]
impl EventAdminService for EventsApi {
    async fn create_event(
        &self,
        request: Request<pb::CreateEventRequest>,
    ) -> Result<Response<pb::CreateEventResponse>, Status> {
        let operator = operator(&request)?;
        let r = request.into_inner();
        let inner = &self.inner;
        if !r.request_id.is_empty() {
            crate::service::check_client_id("request_id", &r.request_id)?;
        }
        let definition = r
            .definition
            .ok_or_else(|| MatchmakingError::InvalidArgument("definition is required".into()))?;
        let (spec, start) = EventSpec::from_pb(&definition, inner.now())?;
        let id = uuid::Uuid::now_v7().to_string();
        let series_id = spec.recurrence.as_ref().map(|_| id.clone());
        let event = inner
            .store
            .create(EventRecord {
                id,
                series_id,
                request_id: (!r.request_id.is_empty()).then(|| format!("op-{}", r.request_id)),
                spec,
                starts_at_ms: start,
                phase: Phase::Upcoming,
                cancel_reason: String::new(),
                champion: None,
                current_round: 0,
                rounds_total: 0,
                ended_at_ms: 0,
                version: 0,
                registered: 0,
                starting_told: false,
            })
            .await?;
        tracing::info!(operator, event = %event.id, name = %event.spec.name, "event created");
        Ok(Response::new(pb::CreateEventResponse {
            event: Some(convert::event(&event, inner.now())),
        }))
    }

    async fn list_all_events(
        &self,
        request: Request<pb::ListAllEventsRequest>,
    ) -> Result<Response<pb::ListAllEventsResponse>, Status> {
        operator(&request)?;
        let r = request.into_inner();
        let (size, offset) = paging(r.page_size, &r.page_token)?;
        let inner = &self.inner;
        let all = [
            Phase::Upcoming,
            Phase::Running,
            Phase::Finished,
            Phase::Cancelled,
        ];
        let (events, next) = inner.store.list(&all, false, offset, size).await?;
        let now = inner.now();
        Ok(Response::new(pb::ListAllEventsResponse {
            events: events.iter().map(|e| convert::event(e, now)).collect(),
            next_page_token: next_token(next),
        }))
    }

    async fn cancel_event(
        &self,
        request: Request<pb::CancelEventRequest>,
    ) -> Result<Response<pb::CancelEventResponse>, Status> {
        let operator = operator(&request)?;
        let r = request.into_inner();
        let reason = r.reason.trim();
        if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
            return Err(MatchmakingError::InvalidArgument(
                "reason must be 1-200 characters".into(),
            )
            .into());
        }
        let inner = &self.inner;
        let before = inner.event(&r.event_id).await?;
        let cancelled = inner
            .store
            .cancel(&before.id, reason, inner.now(), r.series)
            .await?
            .map_err(MatchmakingError::from)?;
        let mut told: Vec<&EventRecord> = cancelled.series.iter().collect();
        if cancelled.now {
            told.insert(0, &cancelled.event);
        }
        let mut notified = 0;
        for event in told {
            tracing::info!(operator, event = %event.id, reason, series = r.series, "event cancelled");
            // Everyone in one batch (accounts takes a few hundred a call).
            let entries = inner.store.entries(&event.id).await?;
            let notices: Vec<(String, Notice)> = entries
                .into_iter()
                .map(|entry| {
                    let notice = Notice::Cancelled {
                        reason: reason.to_owned(),
                    };
                    (entry.user_id, notice)
                })
                .collect();
            notified += notices.len() as u32;
            if !notices.is_empty() {
                inner
                    .notices
                    .notify_all(&event.id, &event.spec.name, notices)
                    .await;
            }
        }
        let now = inner.now();
        Ok(Response::new(pb::CancelEventResponse {
            event: Some(convert::event(&cancelled.event, now)),
            notified,
            series_cancelled: cancelled
                .series
                .iter()
                .map(|e| convert::event(e, now))
                .collect(),
        }))
    }
}
