//! The gRPC glue of `AccountsInternalService`: the calls other services make with a
//! service token (recording matches, player facts, presence, invites, notices). Each
//! method takes the caller the auth layer put in the request and calls the concern's
//! `do_…` method; the concern refuses a caller that is not a service. No rule lives here.

use basra_platform::auth;
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::accounts::v1::accounts_internal_service_server::AccountsInternalService;
use tonic::{Request, Response, Status};

use super::AccountsApi;
use crate::metrics::{ResultLabel, code_label};
use crate::store::Store;

#[tonic::async_trait]
impl<S: Store> AccountsInternalService for AccountsApi<S> {
    #[tracing::instrument(skip_all, fields(caller))]
    async fn report_presence(
        &self,
        request: Request<pb::ReportPresenceRequest>,
    ) -> Result<Response<pb::ReportPresenceResponse>, Status> {
        let caller = auth::caller(&request)?;
        tracing::Span::current().record("caller", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_report_presence(caller, request.into_inner())
                .await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(caller))]
    async fn send_invite(
        &self,
        request: Request<pb::SendInviteRequest>,
    ) -> Result<Response<pb::SendInviteResponse>, Status> {
        let caller = auth::caller(&request)?;
        tracing::Span::current().record("caller", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_send_invite(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(caller))]
    async fn get_players(
        &self,
        request: Request<pb::GetPlayersRequest>,
    ) -> Result<Response<pb::GetPlayersResponse>, Status> {
        let caller = auth::caller(&request)?;
        tracing::Span::current().record("caller", tracing::field::display(caller.user_id));
        let answer = self.do_get_players(caller, request.into_inner()).await?;
        // Seat and lobby names: every player sees them alike.
        Ok(Response::new(self.shown(None, answer).await?))
    }

    #[tracing::instrument(skip_all, fields(caller))]
    async fn record_match(
        &self,
        request: Request<pb::RecordMatchRequest>,
    ) -> Result<Response<pb::RecordMatchResponse>, Status> {
        let caller = auth::caller(&request)?;
        tracing::Span::current().record("caller", tracing::field::display(caller.user_id));
        let started = std::time::Instant::now();
        let outcome = self
            .do_record_match(caller, request.into_inner())
            .await
            .map_err(Status::from);
        let metrics = &self.inner.metrics;
        metrics
            .record_match_seconds
            .observe(started.elapsed().as_secs_f64());
        let result = match &outcome {
            Ok(answer) if answer.already_recorded => "duplicate".to_owned(),
            Ok(_) => "recorded".to_owned(),
            Err(status) => code_label(status.code()),
        };
        metrics
            .record_match
            .get_or_create(&ResultLabel { result })
            .inc();
        Ok(Response::new(outcome?))
    }

    #[tracing::instrument(skip_all, fields(caller))]
    async fn record_matches(
        &self,
        request: Request<pb::RecordMatchesRequest>,
    ) -> Result<Response<pb::RecordMatchesResponse>, Status> {
        let caller = auth::caller(&request)?;
        tracing::Span::current().record("caller", tracing::field::display(caller.user_id));
        let outcome = self
            .do_record_matches(caller, request.into_inner())
            .await
            .map_err(Status::from);
        // The same counter as RecordMatch, one count per record.
        let counter = &self.inner.metrics.record_match;
        match &outcome {
            Ok(answer) => {
                for result in &answer.results {
                    let result = if result.already_recorded {
                        "duplicate"
                    } else {
                        "recorded"
                    };
                    counter
                        .get_or_create(&ResultLabel {
                            result: result.to_owned(),
                        })
                        .inc();
                }
            }
            Err(status) => {
                counter
                    .get_or_create(&ResultLabel {
                        result: code_label(status.code()),
                    })
                    .inc();
            }
        }
        Ok(Response::new(outcome?))
    }
    #[tracing::instrument(skip_all, fields(caller))]
    async fn send_notice(
        &self,
        request: Request<pb::SendNoticeRequest>,
    ) -> Result<Response<pb::SendNoticeResponse>, Status> {
        let caller = auth::caller(&request)?;
        tracing::Span::current().record("caller", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_send_notice(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(caller, notices))]
    async fn send_notices(
        &self,
        request: Request<pb::SendNoticesRequest>,
    ) -> Result<Response<pb::SendNoticesResponse>, Status> {
        let caller = auth::caller(&request)?;
        let span = tracing::Span::current();
        span.record("caller", tracing::field::display(caller.user_id));
        span.record("notices", request.get_ref().notices.len());
        Ok(Response::new(
            self.do_send_notices(caller, request.into_inner()).await?,
        ))
    }
}
