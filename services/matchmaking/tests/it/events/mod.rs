//! Events (issue 47) through the API: `EventAdminService` (create, list, cancel, and
//! the definitions it refuses), `EventService` (register, withdraw, check in, and every
//! refusal the .proto documents, each leaving the event as it was), a knockout
//! played to its final by the event clock against the fake game-session, and
//! `WatchEvent`'s statuses and shared streams.

mod admin;
mod clock;
mod players;
mod watch;

use basra_proto::basra::common::v1::RuleSettings;
use basra_proto::basra::matchmaking::v1::{
    CreateEventRequest, EventDefinition, EventFormat,
    event_admin_service_client::EventAdminServiceClient, event_service_client::EventServiceClient,
};
use basra_proto::convert::timestamp;
use basra_testkit::authed;
use basra_testkit::matchmaking::{CLOCK_START, TestApp};
use tonic::transport::Channel;
use tonic::{Code, Status};

/// An operator's client.
pub(crate) struct Operator {
    client: EventAdminServiceClient<Channel>,
    token: String,
}

impl Operator {
    pub(crate) fn of(app: &TestApp) -> Operator {
        Operator {
            client: EventAdminServiceClient::new(channel(app)),
            token: app.operator_token(),
        }
    }

    pub(crate) async fn create(
        &self,
        definition: EventDefinition,
    ) -> Result<basra_proto::basra::matchmaking::v1::Event, Status> {
        let answer = self
            .client
            .clone()
            .create_event(authed(
                CreateEventRequest {
                    definition: Some(definition),
                    request_id: String::new(),
                },
                &self.token,
            ))
            .await?;
        Ok(answer.into_inner().event.expect("an event"))
    }
}

/// The app's channel (one connection shared by every client).
pub(crate) fn channel(app: &TestApp) -> Channel {
    // The matchmaking client's channel serves every service of the replica.
    tonic::transport::Endpoint::from_shared(format!("http://{}", app.address))
        .expect("an address")
        .connect_lazy()
}

/// A player's events client.
pub(crate) fn events_client(app: &TestApp) -> EventServiceClient<Channel> {
    EventServiceClient::new(channel(app))
}

/// A knockout starting a minute after the app's clock, registration open an hour
/// before, no check-in, cap `cap`, to 11 points.
pub(crate) fn knockout(cap: u32) -> EventDefinition {
    EventDefinition {
        name: "Friday knockout".into(),
        format: EventFormat::Knockout as i32,
        start_at: Some(timestamp(CLOCK_START + 60_000)),
        registration_opens_seconds_before: 3600,
        cap,
        join_deadline_seconds: 60,
        settings: Some(RuleSettings {
            target_score: Some(11),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Asserts `status` has `code` and, when given, the `google.rpc.ErrorInfo` `reason`.
pub(crate) fn assert_refused(status: &Status, code: Code, reason: Option<&str>) {
    assert_eq!(status.code(), code, "{status:?}");
    if let Some(reason) = reason {
        assert_eq!(
            basra_platform::error::reason_of(status).as_deref(),
            Some(reason),
            "{status:?}"
        );
    }
}
