//! One trace per match action across the services: a real OTLP receiver (the
//! `opentelemetry-proto` tonic server) runs in this process, the backend exports its
//! spans there, and one finished match's `RecordMatch` span in accounts arrives as the
//! child of game-session's outbox delivery, itself the child of the game-session span
//! that finished the match — one trace id for all three, carried by W3C `traceparent`
//! on the gRPC call and through the outbox record in Redis.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use basra::lobby;
use basra::player::{Driver, play_room};
use basra::session::Session;
use basra_e2e::spawn_backend;
use basra_engine::bot::Policy;
use basra_platform::config::TelemetrySettings;
use basra_proto::basra::accounts::v1::MatchHistoryRequest;
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::trace::v1::Span;
use tokio_util::sync::CancellationToken;

/// The OTLP trace receiver: keeps every span it is sent.
#[derive(Clone, Default)]
struct Receiver {
    spans: Arc<Mutex<Vec<Span>>>,
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut spans = self.spans.lock().unwrap();
        for resource in request.into_inner().resource_spans {
            for scope in resource.scope_spans {
                spans.extend(scope.spans);
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

const RECORD_MATCH: &str = "basra.accounts.v1.AccountsInternalService/RecordMatch";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_match_record_continues_the_trace_of_the_action_that_finished_the_match() {
    let receiver = Receiver::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let server = tokio::spawn({
        let receiver = receiver.clone();
        let stop = stop.clone();
        async move {
            tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(receiver))
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                    stop.cancelled_owned(),
                )
                .await
                .expect("OTLP receiver serves");
        }
    });
    let telemetry = basra_platform::telemetry::init(
        "basra-e2e",
        &TelemetrySettings {
            filter: "info".into(),
            json: false,
            otlp_endpoint: Some(format!("http://{addr}")),
        },
    )
    .expect("telemetry");

    let backend = spawn_backend().await.expect("backend");
    let ana = backend.guest("traces-ana").await.expect("signed in");
    let rules = RuleSettings {
        target_score: Some(11),
        ..RuleSettings::default()
    };
    let room = lobby::create_room(
        &ana,
        RoomVisibility::Private,
        vec![1],
        BotLevel::Hard,
        rules,
    )
    .await
    .expect("room");
    let greedy = Driver::Bot {
        policy: Policy::Greedy,
        delay: Duration::ZERO,
    };
    play_room(&ana, &room.room_id, greedy)
        .await
        .expect("played");
    let match_id = wait_for_history(&ana).await;
    backend.stop().await.unwrap();
    // Dropping the guard flushes every span not yet exported.
    drop(telemetry);

    let spans = receiver.spans.lock().unwrap().clone();
    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    let names = || spans.iter().map(|s| s.name.as_str()).collect::<Vec<_>>();
    // This test's match: the other tests of this binary run their own backends in this
    // process meanwhile, and their spans reach the receiver too (a match of theirs may
    // have finished before the receiver was installed).
    let delivery = spans
        .iter()
        .find(|s| {
            s.name == "outbox.record_match" && string_attribute(s, "match_id") == Some(&match_id)
        })
        .unwrap_or_else(|| panic!("no outbox delivery of {match_id} among {:?}", names()));
    let record = spans
        .iter()
        .find(|s| s.name == RECORD_MATCH && s.parent_span_id == delivery.span_id)
        .unwrap_or_else(|| panic!("no {RECORD_MATCH} span under the delivery: {:?}", names()));
    assert_eq!(delivery.trace_id, record.trace_id, "one trace");
    let finisher = by_id
        .get(delivery.parent_span_id.as_slice())
        .unwrap_or_else(|| {
            panic!(
                "the span that finished the match did not arrive: {:?}",
                names()
            )
        });
    assert_eq!(finisher.trace_id, record.trace_id, "one trace");
    // The last card of a match is the player's (handled in its Play stream's span,
    // `play_stream`) or the computer's (a timer firing, `game.timer`): the deal decides.
    assert!(
        ["game.timer", "play_stream"].contains(&finisher.name.as_str()),
        "finished by the player's Play stream or a timer in game-session, not {:?}",
        finisher.name
    );

    stop.cancel();
    server.await.unwrap();
}

/// A span's string attribute.
fn string_attribute<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            Value::StringValue(text) => Some(text.as_str()),
            _ => None,
        })
}

/// Waits until the outbox has delivered the match to accounts; its match id.
async fn wait_for_history(session: &Session) -> String {
    for _ in 0..200 {
        let matches = session
            .accounts()
            .match_history(MatchHistoryRequest {
                page_size: 1,
                page_token: String::new(),
            })
            .await
            .expect("history")
            .into_inner()
            .matches;
        if let Some(summary) = matches.first() {
            return summary.match_id.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the match never reached accounts");
}
