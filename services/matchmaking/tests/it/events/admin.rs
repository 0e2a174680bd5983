//! `EventAdminService`: operators only; create, list, cancel; bad definitions refused
//! with nothing made.

use std::sync::Arc;
use std::time::Duration;

use basra_proto::basra::matchmaking::v1::{
    CancelEventRequest, EventFormat, EventStatus, GetEventRequest, ListAllEventsRequest,
    ListEventsRequest, RatingBand, Recurrence, RegisterRequest,
};
use basra_proto::convert::timestamp;
use basra_testkit::authed;
use basra_testkit::matchmaking::Player;
use basra_testkit::matchmaking::{CLOCK_START, TestApp};
use matchmaking::events::EventDeps;
use matchmaking::events::notices::{Notice, RecordedNotices};
use tonic::Code;

use super::{Operator, assert_refused, events_client, knockout};

async fn all_events(op: &Operator) -> Vec<basra_proto::basra::matchmaking::v1::Event> {
    op.client
        .clone()
        .list_all_events(authed(ListAllEventsRequest::default(), &op.token))
        .await
        .expect("ListAllEvents")
        .into_inner()
        .events
}

#[tokio::test]
async fn operators_create_list_and_cancel_events() {
    let app = TestApp::builder().memory().spawn().await;
    let op = Operator::of(&app);
    let event = op.create(knockout(8)).await.expect("created");
    assert_eq!(event.status, EventStatus::Registration as i32);
    assert_eq!(event.registered, 0);
    assert_eq!(all_events(&op).await.len(), 1);

    // Players see it among the upcoming events.
    let player = app.player();
    let listed = events_client(&app)
        .list_events(authed(ListEventsRequest::default(), &player.token))
        .await
        .expect("ListEvents")
        .into_inner();
    assert_eq!(listed.events.len(), 1);
    assert!(listed.events[0].entry.is_none());

    // A player's token is not an operator's.
    let refused = basra_proto::basra::matchmaking::v1::event_admin_service_client::EventAdminServiceClient::new(
        super::channel(&app),
    )
    .list_all_events(authed(ListAllEventsRequest::default(), &player.token))
    .await
    .unwrap_err();
    assert_refused(&refused, Code::PermissionDenied, None);

    let cancel = |reason: &str| {
        authed(
            CancelEventRequest {
                event_id: event.event_id.clone(),
                reason: reason.into(),
                ..Default::default()
            },
            &op.token,
        )
    };
    let empty = op
        .client
        .clone()
        .cancel_event(cancel(""))
        .await
        .unwrap_err();
    assert_refused(&empty, Code::InvalidArgument, None);
    let cancelled = op
        .client
        .clone()
        .cancel_event(cancel("venue flooded"))
        .await
        .expect("cancelled")
        .into_inner();
    let after = cancelled.event.expect("the event");
    assert_eq!(after.status, EventStatus::Cancelled as i32);
    assert_eq!(after.cancel_reason, "venue flooded");
    // Idempotent.
    let again = op
        .client
        .clone()
        .cancel_event(cancel("again"))
        .await
        .expect("idempotent");
    assert_eq!(again.into_inner().notified, 0);
    // No longer listed for players.
    let listed = events_client(&app)
        .list_events(authed(ListEventsRequest::default(), &player.token))
        .await
        .expect("ListEvents")
        .into_inner();
    assert!(listed.events.is_empty());
}

#[tokio::test]
async fn bad_definitions_are_refused_and_nothing_is_made() {
    let app = TestApp::builder().memory().spawn().await;
    let op = Operator::of(&app);
    let cases = [
        ("a CRON expression that never fires", {
            let mut d = knockout(8);
            d.start_at = None;
            d.recurrence = Some(Recurrence {
                cron: "0 0 30 2 *".into(),
                time_zone: "Africa/Cairo".into(),
            });
            d
        }),
        ("an unknown time zone", {
            let mut d = knockout(8);
            d.start_at = None;
            d.recurrence = Some(Recurrence {
                cron: "0 20 * * *".into(),
                time_zone: "Mars/Olympus".into(),
            });
            d
        }),
        ("more Swiss rounds than the cap allows", {
            let mut d = knockout(4);
            d.format = EventFormat::Swiss as i32;
            d.swiss_rounds = 4;
            d
        }),
        ("a Swiss without rounds", {
            let mut d = knockout(8);
            d.format = EventFormat::Swiss as i32;
            d
        }),
        ("a start in the past", {
            let mut d = knockout(8);
            d.start_at = Some(timestamp(CLOCK_START - 1000));
            d
        }),
        ("no format", {
            let mut d = knockout(8);
            d.format = 0;
            d
        }),
        ("a cap of one", knockout(1)),
        ("an inverted rating band", {
            let mut d = knockout(8);
            d.rating_band = Some(RatingBand {
                min: 1600,
                max: 1400,
            });
            d
        }),
        ("four seats", {
            let mut d = knockout(8);
            d.settings.as_mut().unwrap().seats = Some(4);
            d
        }),
        ("an arena without a duration", {
            let mut d = knockout(8);
            d.format = EventFormat::Arena as i32;
            d
        }),
        ("a join deadline of 1 s", {
            let mut d = knockout(8);
            d.join_deadline_seconds = 1;
            d
        }),
    ];
    for (what, definition) in cases {
        let refused = op.create(definition).await.unwrap_err();
        assert_refused(&refused, Code::InvalidArgument, None);
        assert!(all_events(&op).await.is_empty(), "{what}: nothing made");
    }
    // The same Swiss with as many rounds as the cap allows is fine, and so is the CRON
    // series (its first occurrence is the next 20:00 in Cairo).
    let mut swiss = knockout(4);
    swiss.format = EventFormat::Swiss as i32;
    swiss.swiss_rounds = 3;
    op.create(swiss).await.expect("three rounds for four");
    let mut series = knockout(8);
    series.start_at = None;
    series.recurrence = Some(Recurrence {
        cron: "0 20 * * *".into(),
        time_zone: "Africa/Cairo".into(),
    });
    let first = op.create(series).await.expect("a series");
    assert_eq!(first.series_id, first.event_id);
    assert!(first.starts_at.unwrap().seconds * 1000 > CLOCK_START);
}

async fn register(app: &TestApp, p: &Player, event: &str) {
    events_client(app)
        .register(authed(
            RegisterRequest {
                event_id: event.into(),
            },
            &p.token,
        ))
        .await
        .expect("registered");
}

/// Cancelling a recurring series: the occurrence already made (when the running one
/// started) is cancelled with it and its registered players are told; no further
/// occurrence is made at its start.
#[tokio::test]
async fn cancelling_a_series_cancels_its_next_occurrence_and_tells_its_players() {
    let notices = Arc::new(RecordedNotices::default());
    let app = TestApp::builder()
        .memory()
        .events(EventDeps {
            notices: notices.clone(),
            ..EventDeps::memory()
        })
        .settings(|s| s.events.tick_millis = 20)
        .spawn()
        .await;
    let op = Operator::of(&app);
    let mut hourly = knockout(8);
    hourly.start_at = None;
    hourly.recurrence = Some(Recurrence {
        cron: "0 * * * *".into(),
        time_zone: "UTC".into(),
    });
    hourly.registration_opens_seconds_before = 0;
    let first = op.create(hourly).await.unwrap();
    let players: Vec<Player> = (0..3).map(|_| app.player()).collect();
    for p in &players[..2] {
        register(&app, p, &first.event_id).await;
    }
    // Its start: it runs, and the next occurrence is made.
    let starts = first.starts_at.unwrap().seconds * 1000;
    app.clock().advance(starts - CLOCK_START);
    let mut next = None;
    for _ in 0..500 {
        next = all_events(&op)
            .await
            .into_iter()
            .find(|e| e.event_id != first.event_id);
        if next.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let next = next.expect("the next occurrence");
    assert_eq!(next.series_id, first.event_id);
    register(&app, &players[2], &next.event_id).await;

    let cancelled = op
        .client
        .clone()
        .cancel_event(authed(
            CancelEventRequest {
                event_id: first.event_id.clone(),
                reason: "the series ends".into(),
                series: true,
            },
            &op.token,
        ))
        .await
        .expect("cancelled")
        .into_inner();
    assert_eq!(
        cancelled.event.unwrap().status,
        EventStatus::Cancelled as i32
    );
    let with_it: Vec<&str> = cancelled
        .series_cancelled
        .iter()
        .map(|e| e.event_id.as_str())
        .collect();
    assert_eq!(with_it, [next.event_id.as_str()]);
    assert_eq!(cancelled.notified, 3, "both occurrences' players");
    let told: Vec<(String, String)> = notices
        .sent
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, _, n)| matches!(n, Notice::Cancelled { .. }))
        .map(|(user, event, _)| (user.clone(), event.clone()))
        .collect();
    assert!(told.contains(&(players[2].id.to_string(), next.event_id.clone())));
    let status = events_client(&app)
        .get_event(authed(
            GetEventRequest {
                event_id: next.event_id.clone(),
                with_state: false,
            },
            &players[2].token,
        ))
        .await
        .unwrap()
        .into_inner()
        .event
        .unwrap()
        .event
        .unwrap()
        .status;
    assert_eq!(status, EventStatus::Cancelled as i32);
    // Past the next one's start: nothing more is made.
    app.clock().advance(3_600_000);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(all_events(&op).await.len(), 2, "the series ended");
}
