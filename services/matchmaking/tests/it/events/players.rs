//! `EventService` for players: register, withdraw, check in, and every refusal the
//! .proto documents (registering twice, after the cap, outside the rating band, before
//! registration opens, after the start, to a cancelled event), each with its status and
//! reason and the event left as it was.

use basra_proto::basra::matchmaking::v1::{
    CancelEventRequest, CheckInRequest, EntryStatus, GetEventRequest, ListMyEventsRequest,
    RatingBand, RegisterRequest, WithdrawRequest,
};
use basra_testkit::authed;
use basra_testkit::matchmaking::{Player, TestApp};
use tonic::Code;

use super::{Operator, assert_refused, events_client, knockout};

async fn register(app: &TestApp, p: &Player, event: &str) -> Result<EntryStatus, tonic::Status> {
    let answer = events_client(app)
        .register(authed(
            RegisterRequest {
                event_id: event.into(),
            },
            &p.token,
        ))
        .await?
        .into_inner();
    Ok(EntryStatus::try_from(answer.entry.unwrap().status).unwrap())
}

async fn registered(app: &TestApp, p: &Player, event: &str) -> u32 {
    events_client(app)
        .get_event(authed(
            GetEventRequest {
                event_id: event.into(),
                with_state: false,
            },
            &p.token,
        ))
        .await
        .expect("GetEvent")
        .into_inner()
        .event
        .unwrap()
        .event
        .unwrap()
        .registered
}

#[tokio::test]
async fn registration_refusals_have_their_status_and_change_nothing() {
    let app = TestApp::builder().memory().spawn().await;
    let op = Operator::of(&app);
    let mut definition = knockout(2);
    definition.rating_band = Some(RatingBand {
        min: 1000,
        max: 1600,
    });
    let event = op.create(definition).await.unwrap().event_id;
    let (a, b, c, strong) = (app.player(), app.player(), app.player(), app.player());
    app.ratings().set(strong.id, 1700.0);

    assert_eq!(
        register(&app, &a, &event).await.unwrap(),
        EntryStatus::CheckedIn
    );
    let twice = register(&app, &a, &event).await.unwrap_err();
    assert_refused(
        &twice,
        Code::AlreadyExists,
        Some("EVENT_ALREADY_REGISTERED"),
    );
    let band = register(&app, &strong, &event).await.unwrap_err();
    assert_refused(&band, Code::FailedPrecondition, Some("EVENT_RATING_BAND"));
    assert_eq!(registered(&app, &a, &event).await, 1);
    register(&app, &b, &event).await.unwrap();
    let full = register(&app, &c, &event).await.unwrap_err();
    assert_refused(&full, Code::FailedPrecondition, Some("EVENT_FULL"));
    assert_eq!(registered(&app, &a, &event).await, 2);

    // A withdrawal before the start frees the place.
    let withdrawn = events_client(&app)
        .withdraw(authed(
            WithdrawRequest {
                event_id: event.clone(),
            },
            &b.token,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(withdrawn.entry.is_none());
    register(&app, &c, &event).await.expect("the freed place");
    assert_eq!(registered(&app, &a, &event).await, 2);

    // Unknown events.
    let unknown = register(&app, &a, "no-such-event").await.unwrap_err();
    assert_refused(&unknown, Code::NotFound, None);
    let empty = register(&app, &a, "").await.unwrap_err();
    assert_refused(&empty, Code::InvalidArgument, None);

    // After the start second.
    app.clock().advance(60_000);
    let late = register(&app, &b, &event).await.unwrap_err();
    assert_refused(&late, Code::FailedPrecondition, Some("EVENT_STARTED"));
}

#[tokio::test]
async fn registration_not_open_yet_and_cancelled_events_are_refused() {
    let app = TestApp::builder().memory().spawn().await;
    let op = Operator::of(&app);
    let mut definition = knockout(8);
    definition.registration_opens_seconds_before = 30; // opens 30 s from now
    let event = op.create(definition).await.unwrap().event_id;
    let p = app.player();
    let early = register(&app, &p, &event).await.unwrap_err();
    assert_refused(
        &early,
        Code::FailedPrecondition,
        Some("EVENT_REGISTRATION_NOT_OPEN"),
    );
    app.clock().advance(30_000);
    register(&app, &p, &event).await.expect("open now");

    op.client
        .clone()
        .cancel_event(authed(
            CancelEventRequest {
                event_id: event.clone(),
                reason: "no venue".into(),
                ..Default::default()
            },
            &op.token,
        ))
        .await
        .unwrap();
    let q = app.player();
    let cancelled = register(&app, &q, &event).await.unwrap_err();
    assert_refused(
        &cancelled,
        Code::FailedPrecondition,
        Some("EVENT_CANCELLED"),
    );
    assert_eq!(registered(&app, &p, &event).await, 1);
    let withdraw = events_client(&app)
        .withdraw(authed(
            WithdrawRequest {
                event_id: event.clone(),
            },
            &p.token,
        ))
        .await
        .unwrap_err();
    assert_refused(&withdraw, Code::FailedPrecondition, Some("EVENT_CANCELLED"));
}

#[tokio::test]
async fn guests_may_not_enter_rated_events() {
    let app = TestApp::builder().memory().spawn().await;
    let op = Operator::of(&app);
    let mut definition = knockout(8);
    definition.rated = true;
    let event = op.create(definition).await.unwrap().event_id;
    let guest = app.guest();
    let refused = register(&app, &guest, &event).await.unwrap_err();
    assert_refused(&refused, Code::PermissionDenied, None);
    assert_eq!(registered(&app, &guest, &event).await, 0);
}

#[tokio::test]
async fn check_in_only_in_its_window() {
    let app = TestApp::builder().memory().spawn().await;
    let op = Operator::of(&app);
    let mut definition = knockout(8);
    definition.check_in_seconds = 20; // opens 40 s from now
    let event = op.create(definition).await.unwrap().event_id;
    let p = app.player();
    assert_eq!(
        register(&app, &p, &event).await.unwrap(),
        EntryStatus::Registered
    );
    let client = events_client(&app);
    let check_in = || {
        let mut client = client.clone();
        let request = authed(
            CheckInRequest {
                event_id: event.clone(),
            },
            &p.token,
        );
        async move { client.check_in(request).await }
    };
    let closed = check_in().await.unwrap_err();
    assert_refused(
        &closed,
        Code::FailedPrecondition,
        Some("EVENT_CHECK_IN_CLOSED"),
    );
    app.clock().advance(40_000);
    let entry = check_in().await.unwrap().into_inner().entry.unwrap();
    assert_eq!(entry.status, EntryStatus::CheckedIn as i32);
    check_in().await.expect("idempotent");
    // A stranger is not registered.
    let stranger = app.player();
    let refused = events_client(&app)
        .check_in(authed(
            CheckInRequest {
                event_id: event.clone(),
            },
            &stranger.token,
        ))
        .await
        .unwrap_err();
    assert_refused(&refused, Code::NotFound, None);

    let mine = events_client(&app)
        .list_my_events(authed(ListMyEventsRequest::default(), &p.token))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(mine.events.len(), 1);
}

/// `registration_opens_seconds_before` 0 means registration is open from the event's
/// creation, as the .proto says: the event is in REGISTRATION at once, with no opening
/// time, and a player registers before the start.
#[tokio::test]
async fn registration_opens_at_once_when_no_lead_time_is_set() {
    let app = TestApp::builder().memory().spawn().await;
    let op = Operator::of(&app);
    let mut definition = knockout(2);
    definition.registration_opens_seconds_before = 0;
    let event = op.create(definition).await.unwrap().event_id;
    let p = app.player();
    let shown = events_client(&app)
        .get_event(authed(
            GetEventRequest {
                event_id: event.clone(),
                with_state: false,
            },
            &p.token,
        ))
        .await
        .expect("GetEvent")
        .into_inner()
        .event
        .unwrap()
        .event
        .unwrap();
    assert_eq!(
        shown.status,
        basra_proto::basra::matchmaking::v1::EventStatus::Registration as i32
    );
    assert_eq!(shown.registration_opens_at, None);
    register(&app, &p, &event)
        .await
        .expect("registered at once");
    assert_eq!(registered(&app, &p, &event).await, 1);
}
