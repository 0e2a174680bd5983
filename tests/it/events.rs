//! Events end to end (issue 47): an operator creates a small knockout, four players
//! register, the event starts on its second, each match is played to its end over the
//! Play stream by the players' own clients (a greedy bot at the keys), the winners meet
//! in the final, and the standings are final with a champion — against the services on
//! their own ports (PostgreSQL and Redis) and against `basra dev`.

use std::time::{Duration, SystemTime};

use basra::admin::operator_token;
use basra::player::{Driver, play_room};
use basra::session::{Endpoints, Session};
use basra_e2e::{Backend, spawn_backend, spawn_dev};
use basra_engine::bot::Policy;
use basra_proto::basra::accounts::v1::{
    EventMatchReadyNotice, GuestLoginRequest, ListNoticesRequest, notice,
};
use basra_proto::basra::common::v1::RuleSettings;
use basra_proto::basra::matchmaking::v1::event_admin_service_client::EventAdminServiceClient;
use basra_proto::basra::matchmaking::v1::{
    CreateEventRequest, EventDefinition, EventFormat, EventStatus, GetEventRequest,
    GetMyMatchRequest, GetStandingsRequest, RegisterRequest,
};
use basra_proto::convert::timestamp;

const ISS: &str = "basra-accounts";
const AUD: &str = "basra";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_knockout_is_played_to_its_final_on_separate_services() {
    let backend = spawn_backend().await.expect("backend");
    let token = operator(&backend);
    a_knockout_is_played_to_its_final(&backend.endpoints, token).await;
    backend.stop().await.expect("stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_knockout_is_played_to_its_final_on_basra_dev() {
    let backend = spawn_dev().await.expect("basra dev");
    let token = operator(&backend);
    a_knockout_is_played_to_its_final(&backend.endpoints, token).await;
    backend.stop().await.expect("stopped");
}

/// With the settings `deploy/` ships: matchmaking keeps events in the deployment's
/// PostgreSQL (`BASRA_EVENTS__DATABASE_URL` from the Secret basra-database) and trusts
/// the operators' key for EventAdminService.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_knockout_is_played_to_its_final_on_the_services_as_deployed() {
    let deployed = crate::deployed::spawn_deployed().await;
    let event =
        a_knockout_is_played_to_its_final(&deployed.endpoints, deployed.operator.clone()).await;
    let pool = sqlx::PgPool::connect(&deployed.database_url())
        .await
        .expect("the deployment's database");
    let (stored,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM event_results WHERE event_id::text = $1")
            .bind(&event)
            .fetch_one(&pool)
            .await
            .expect("event_results");
    assert_eq!(
        stored, 3,
        "a four-player knockout's three results, in PostgreSQL"
    );
    pool.close().await;
    deployed.stop().await;
}

fn operator(backend: &Backend) -> String {
    let (kid, pem) = backend.operator_key.clone().expect("an operator key");
    operator_token(&pem, &kid, ISS, AUD, "ops-events", Duration::from_secs(600))
        .expect("an operator token")
}

async fn guest(endpoints: &Endpoints, device: String) -> Session {
    Session::sign_in(endpoints, |mut accounts| async move {
        let response = accounts
            .guest_login(GuestLoginRequest {
                device_id: device,
                display_name: String::new(),
            })
            .await?;
        Ok(response.into_inner().tokens)
    })
    .await
    .expect("signed in")
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

async fn status(session: &Session, event: &str) -> i32 {
    session
        .events()
        .get_event(GetEventRequest {
            event_id: event.into(),
        })
        .await
        .expect("GetEvent")
        .into_inner()
        .event
        .unwrap()
        .event
        .unwrap()
        .status
}

/// Plays every match the player is given until the event is over. A match just played
/// is still the player's until the event's clock has taken its result (within a tick):
/// it is not played again.
async fn play_the_event(session: Session, event: String) {
    let mut played = Vec::new();
    loop {
        let status = status(&session, &event).await;
        if status == EventStatus::Finished as i32 || status == EventStatus::Cancelled as i32 {
            return;
        }
        let ready = session
            .events()
            .get_my_match(GetMyMatchRequest {
                event_id: event.clone(),
            })
            .await;
        match ready {
            Ok(m) => {
                let room = m.into_inner().room_id;
                if played.contains(&room) {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                played.push(room.clone());
                let driver = Driver::Bot {
                    policy: Policy::Greedy,
                    delay: Duration::ZERO,
                };
                play_room(&session, &room, driver).await.expect("played");
                // The next match, if any, comes once the clock has seen the result.
            }
            Err(status) => assert_eq!(status.code(), tonic::Code::NotFound, "{status:?}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Plays the knockout and answers its id.
async fn a_knockout_is_played_to_its_final(endpoints: &Endpoints, token: String) -> String {
    let channel = tonic::transport::Endpoint::from_shared(endpoints.matchmaking.clone())
        .unwrap()
        .connect()
        .await
        .expect("matchmaking answers");
    let mut admin = EventAdminServiceClient::with_interceptor(
        channel,
        move |mut request: tonic::Request<()>| {
            request
                .metadata_mut()
                .insert("authorization", format!("Bearer {token}").parse().unwrap());
            Ok(request)
        },
    );
    // The players sign in before the event is made, so that the few
    // seconds before its start are left to registration alone (signing in
    // is the slow part on a loaded machine).
    let tag = uuid::Uuid::now_v7().simple().to_string();
    let mut players = Vec::new();
    for i in 0..4 {
        players.push(guest(endpoints, format!("ev-{tag}-{i}")).await);
    }
    let start = now_ms() + 4_000;
    let event = admin
        .create_event(CreateEventRequest {
            definition: Some(EventDefinition {
                name: "e2e knockout".into(),
                format: EventFormat::Knockout as i32,
                start_at: Some(timestamp(start)),
                registration_opens_seconds_before: 3600,
                cap: 4,
                join_deadline_seconds: 60,
                settings: Some(RuleSettings {
                    target_score: Some(11),
                    ..RuleSettings::default()
                }),
                allow_spectators: true,
                ..EventDefinition::default()
            }),
            request_id: String::new(),
        })
        .await
        .expect("created")
        .into_inner()
        .event
        .unwrap()
        .event_id;
    for session in &players {
        session
            .events()
            .register(RegisterRequest {
                event_id: event.clone(),
            })
            .await
            .expect("registered");
    }
    let watcher = players[0].clone();
    let tasks: Vec<_> = players
        .into_iter()
        .map(|p| tokio::spawn(play_the_event(p, event.clone())))
        .collect();
    let all = async {
        for task in tasks {
            task.await.expect("a player's task");
        }
    };
    tokio::time::timeout(Duration::from_secs(120), all)
        .await
        .expect("the knockout ends within two minutes");

    let standings = watcher
        .events()
        .get_standings(GetStandingsRequest {
            event_id: event.clone(),
        })
        .await
        .expect("standings")
        .into_inner();
    assert!(standings.r#final);
    let ended = standings.event.unwrap();
    assert_eq!(ended.status, EventStatus::Finished as i32);
    assert!(!ended.champion.is_empty(), "a champion");
    assert_eq!((ended.current_round, ended.rounds_total), (2, 2));
    assert_eq!(standings.standings[0].user_id, ended.champion);
    assert_eq!(standings.standings[0].rank, 1);
    assert_eq!(standings.standings.len(), 4);
    // "Your match is ready" reached the player's inbox in accounts, once a match.
    let notices = watcher
        .accounts()
        .list_notices(ListNoticesRequest::default())
        .await
        .expect("ListNotices")
        .into_inner()
        .notices;
    let ready: Vec<&EventMatchReadyNotice> = notices
        .iter()
        .filter_map(|n| match &n.body {
            Some(notice::Body::EventMatchReady(ready)) => Some(ready),
            _ => None,
        })
        .collect();
    assert!(!ready.is_empty(), "a match-ready notice: {notices:?}");
    assert!(ready.iter().all(|r| r.event_id == event && r.round >= 1));
    event
}
