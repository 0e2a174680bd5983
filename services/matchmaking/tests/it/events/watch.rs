//! `WatchEvent` through the API: every status the .proto documents (INVALID_ARGUMENT,
//! NOT_FOUND, RESOURCE_EXHAUSTED past 4 streams of one account, UNAVAILABLE when the
//! replica drains), and many streams of one event, sharing the replica's one snapshot,
//! each told of a change with its own message.

use std::time::Duration;

use basra_proto::basra::matchmaking::v1::{RegisterRequest, WatchEventRequest, WatchEventResponse};
use basra_testkit::authed;
use basra_testkit::matchmaking::{Player, TestApp};
use tonic::{Code, Status, Streaming};

use super::{Operator, assert_refused, events_client, knockout};

async fn watch(
    app: &TestApp,
    p: &Player,
    event: &str,
    last_seen_version: u64,
) -> Result<Streaming<WatchEventResponse>, Status> {
    Ok(events_client(app)
        .watch_event(authed(
            WatchEventRequest {
                event_id: event.into(),
                last_seen_version,
                changes_only: false,
            },
            &p.token,
        ))
        .await?
        .into_inner())
}

async fn next(stream: &mut Streaming<WatchEventResponse>) -> Result<WatchEventResponse, Status> {
    tokio::time::timeout(Duration::from_secs(10), stream.message())
        .await
        .expect("a message within 10 s")?
        .ok_or_else(|| Status::ok("the stream ended"))
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

#[tokio::test]
async fn watch_event_refusals_have_their_status() {
    let app = TestApp::builder().memory().spawn().await;
    let event = Operator::of(&app)
        .create(knockout(8))
        .await
        .unwrap()
        .event_id;
    let p = app.player();
    let empty = watch(&app, &p, "", 0).await.unwrap_err();
    assert_refused(&empty, Code::InvalidArgument, None);
    let unknown = watch(&app, &p, "no-such-event", 0).await.unwrap_err();
    assert_refused(&unknown, Code::NotFound, None);

    // Four streams an account on a replica; the fifth is refused, another account's is
    // not, and a stream closed frees its place.
    let mut four = Vec::new();
    for _ in 0..4 {
        let mut s = watch(&app, &p, &event, 0).await.expect("within the limit");
        next(&mut s).await.expect("the first state");
        four.push(s);
    }
    let fifth = watch(&app, &p, &event, 0).await.unwrap_err();
    assert_refused(&fifth, Code::ResourceExhausted, None);
    let mut other = watch(&app, &app.player(), &event, 0)
        .await
        .expect("another account");
    next(&mut other).await.expect("its first state");
    drop(four.pop());
    let mut freed = None;
    for _ in 0..100 {
        match watch(&app, &p, &event, 0).await {
            Ok(s) => {
                freed = Some(s);
                break;
            }
            Err(status) => {
                assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    assert!(freed.is_some(), "a closed stream frees its place");
}

#[tokio::test]
async fn many_streams_of_one_event_each_get_every_change_then_unavailable_on_draining() {
    let app = TestApp::builder().memory().spawn().await;
    let event = Operator::of(&app)
        .create(knockout(64))
        .await
        .unwrap()
        .event_id;
    let watchers: Vec<Player> = (0..20).map(|_| app.player()).collect();
    let mut streams = Vec::new();
    for p in &watchers {
        streams.push(watch(&app, p, &event, 0).await.expect("watching"));
    }
    // A new event (version 0, nobody registered) has its first whole state sent too.
    let mut first = None;
    for s in &mut streams {
        let state = next(s).await.expect("the first state");
        assert_eq!(state.event.as_ref().unwrap().registered, 0);
        let v = *first.get_or_insert(state.version);
        assert_eq!(state.version, v, "the same state");
    }
    let first = first.unwrap();

    // A change (a registration) reaches every stream, each once, at a higher version.
    register(&app, &watchers[0], &event).await;
    for s in &mut streams {
        let state = next(s).await.expect("the change");
        assert!(state.version > first, "{} > {first}", state.version);
        assert_eq!(state.event.as_ref().unwrap().registered, 1);
    }
    // A stream reopened at the version seen gets nothing until the next change, which
    // it gets.
    let seen = first + 1;
    let mut resumed = watch(&app, &watchers[1], &event, seen).await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(600), resumed.message())
            .await
            .is_err(),
        "nothing newer than last_seen_version"
    );
    register(&app, &watchers[1], &event).await;
    let state = next(&mut resumed).await.expect("the next change");
    assert_eq!(state.event.as_ref().unwrap().registered, 2);
    for s in &mut streams {
        next(s).await.expect("the second change");
    }

    // The replica drains: every stream ends with UNAVAILABLE.
    app.first_replica().shutdown.cancel();
    streams.push(resumed);
    for s in &mut streams {
        let end = next(s).await.expect_err("the stream ends");
        assert_eq!(end.code(), Code::Unavailable, "{end:?}");
    }
}
