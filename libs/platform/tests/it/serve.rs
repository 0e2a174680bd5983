//! The server as clients see it: a real tonic server on 127.0.0.1:0 with a
//! real generated service behind the auth layer, and real gRPC clients.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use basra_platform::{
    auth::{self, AuthLayer, Caller, Role, SigningKey, TokenIssuer},
    config::ConnectionLimits,
    serve::{ServeError, ServeOptions, serve},
    unsent::Resending,
};
use basra_proto::basra::game::v1::{
    CloseRoomRequest, CloseRoomResponse, DrainReplicaRequest, DrainReplicaResponse, GetRoomRequest,
    GetRoomResponse, ListRoomsRequest, ListRoomsResponse, UndrainReplicaRequest,
    UndrainReplicaResponse,
    game_admin_service_client::GameAdminServiceClient,
    game_admin_service_server::{GameAdminService, GameAdminServiceServer},
};
use tokio::{net::TcpListener, task::JoinHandle};
use tokio_util::sync::CancellationToken;
use tonic::{
    Code, Request, Response, Status,
    service::Routes,
    transport::{Channel, Endpoint},
};
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};
use uuid::Uuid;

const GAME_ADMIN: &str = "basra.game.v1.GameAdminService";
/// GetRoom is public here (it is not in the real API): it shows what a
/// public method sees.
const PUBLIC: &[&str] = &["/basra.game.v1.GameAdminService/GetRoom"];

/// A GameAdmin that reports what it saw instead of administering anything.
struct Probe;

#[tonic::async_trait]
impl GameAdminService for Probe {
    /// Protected: answers with the caller in the response metadata.
    async fn list_rooms(
        &self,
        request: Request<ListRoomsRequest>,
    ) -> Result<Response<ListRoomsResponse>, Status> {
        let caller = auth::caller(&request)?;
        let peer = request.remote_addr().is_some();
        let mut response = Response::new(ListRoomsResponse::default());
        let metadata = response.metadata_mut();
        metadata.insert("x-caller-id", caller.user_id.to_string().parse().unwrap());
        metadata.insert("x-caller-role", caller.role.as_str().parse().unwrap());
        metadata.insert("x-peer-known", peer.to_string().parse().unwrap());
        Ok(response)
    }

    /// Public: says whether a caller came along.
    async fn get_room(
        &self,
        request: Request<GetRoomRequest>,
    ) -> Result<Response<GetRoomResponse>, Status> {
        let seen = match auth::caller(&request) {
            Ok(caller) => format!("caller {}", caller.user_id),
            Err(_) => "anonymous".to_owned(),
        };
        // Which of the client's connections it came on.
        let mut status = Status::not_found(seen);
        if let Some(peer) = request.remote_addr() {
            status
                .metadata_mut()
                .insert("x-peer-port", peer.port().to_string().parse().unwrap());
        }
        Err(status)
    }

    /// Operators only.
    async fn close_room(
        &self,
        request: Request<CloseRoomRequest>,
    ) -> Result<Response<CloseRoomResponse>, Status> {
        auth::require_role(&auth::caller(&request)?, Role::Operator)?;
        Ok(Response::new(CloseRoomResponse::default()))
    }

    /// A slow call, to watch draining.
    async fn drain_replica(
        &self,
        _request: Request<DrainReplicaRequest>,
    ) -> Result<Response<DrainReplicaResponse>, Status> {
        tokio::time::sleep(Duration::from_millis(400)).await;
        Ok(Response::new(DrainReplicaResponse::default()))
    }

    async fn undrain_replica(
        &self,
        _request: Request<UndrainReplicaRequest>,
    ) -> Result<Response<UndrainReplicaResponse>, Status> {
        Err(Status::unimplemented("a probe"))
    }
}

pub(crate) struct App {
    pub(crate) addr: SocketAddr,
    shutdown: CancellationToken,
    server: JoinHandle<Result<(), ServeError>>,
    issuer: TokenIssuer,
}

/// The probe's largest request message, as each service sets its own.
pub(crate) const PROBE_MAX_MESSAGE: usize = 1024;

impl App {
    async fn spawn(drain: Duration) -> App {
        App::spawn_with(ServeOptions::with_drain(drain)).await
    }

    pub(crate) async fn spawn_with(options: ServeOptions) -> App {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let issuer = TokenIssuer::new(SigningKey::generate(), "basra-accounts", "basra");
        let auth = AuthLayer::new(issuer.verifier(), PUBLIC);
        let shutdown = CancellationToken::new();
        let routes = Routes::new(
            GameAdminServiceServer::new(Probe).max_decoding_message_size(PROBE_MAX_MESSAGE),
        );
        let server = tokio::spawn(serve(
            listener,
            routes,
            &[GAME_ADMIN],
            auth,
            shutdown.clone(),
            options,
        ));
        App {
            addr,
            shutdown,
            server,
            issuer,
        }
    }

    pub(crate) async fn channel(&self) -> Channel {
        Endpoint::from_shared(format!("http://{}", self.addr))
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    fn token(&self, caller: &Caller) -> String {
        self.issuer
            .issue(caller, Duration::from_secs(60))
            .unwrap()
            .token
    }
}

fn player() -> Caller {
    Caller {
        user_id: Uuid::now_v7(),
        role: Role::Player,
        guest: false,
    }
}

fn with_auth<T>(message: T, authorization: &str) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", authorization.parse().unwrap());
    request
}

fn assert_status(result: Result<impl std::fmt::Debug, Status>, code: Code, message: &str) {
    let status = result.expect_err("the call should fail");
    assert_eq!(status.code(), code, "{status:?}");
    assert!(
        status.message().contains(message),
        "{message:?} not in {status:?}"
    );
}

#[tokio::test]
async fn protected_methods_need_a_valid_token() {
    let app = App::spawn(Duration::from_secs(1)).await;
    let mut client = GameAdminServiceClient::new(app.channel().await);

    let none = client.list_rooms(ListRoomsRequest::default()).await;
    assert_status(none, Code::Unauthenticated, "missing access token");

    let basic = client
        .list_rooms(with_auth(ListRoomsRequest::default(), "Basic dXNlcg=="))
        .await;
    assert_status(basic, Code::Unauthenticated, "malformed");

    let garbage = client
        .list_rooms(with_auth(ListRoomsRequest::default(), "Bearer abc"))
        .await;
    assert_status(garbage, Code::Unauthenticated, "malformed");

    // A well-formed token from a key this server does not know.
    let stranger = TokenIssuer::new(SigningKey::generate(), "basra-accounts", "basra");
    let token = stranger
        .issue(&player(), Duration::from_secs(60))
        .unwrap()
        .token;
    let foreign = client
        .list_rooms(with_auth(
            ListRoomsRequest::default(),
            &format!("Bearer {token}"),
        ))
        .await;
    assert_status(foreign, Code::Unauthenticated, "unknown key");
}

#[tokio::test]
async fn the_handler_sees_the_verified_caller() {
    let app = App::spawn(Duration::from_secs(1)).await;
    let mut client = GameAdminServiceClient::new(app.channel().await);
    let caller = player();
    let bearer = format!("Bearer {}", app.token(&caller));

    let response = client
        .list_rooms(with_auth(ListRoomsRequest::default(), &bearer))
        .await;
    let metadata = response.unwrap().metadata().clone();
    assert_eq!(
        metadata.get("x-caller-id").unwrap(),
        caller.user_id.to_string().as_str()
    );
    assert_eq!(metadata.get("x-caller-role").unwrap(), "player");
    // The peer address survives the server's connection wrapper (accounts
    // rate-limits logins by it).
    assert_eq!(metadata.get("x-peer-known").unwrap(), "true");

    // The scheme is case-insensitive.
    let lower = format!("bearer {}", app.token(&caller));
    client
        .list_rooms(with_auth(ListRoomsRequest::default(), &lower))
        .await
        .unwrap();
}

#[tokio::test]
async fn roles_are_enforced_by_the_handler() {
    let app = App::spawn(Duration::from_secs(1)).await;
    let mut client = GameAdminServiceClient::new(app.channel().await);
    let as_player = format!("Bearer {}", app.token(&player()));
    let denied = client
        .close_room(with_auth(CloseRoomRequest::default(), &as_player))
        .await;
    assert_status(denied, Code::PermissionDenied, "operator role");

    let operator = Caller {
        role: Role::Operator,
        ..player()
    };
    let as_operator = format!("Bearer {}", app.token(&operator));
    client
        .close_room(with_auth(CloseRoomRequest::default(), &as_operator))
        .await
        .unwrap();
}

#[tokio::test]
async fn public_methods_pass_without_a_token() {
    let app = App::spawn(Duration::from_secs(1)).await;
    let mut client = GameAdminServiceClient::new(app.channel().await);

    // No token: the handler runs, with no caller.
    let anonymous = client.get_room(GetRoomRequest::default()).await;
    assert_status(anonymous, Code::NotFound, "anonymous");

    // A bad token on a public method is ignored, not refused.
    let bad = client
        .get_room(with_auth(GetRoomRequest::default(), "Bearer abc"))
        .await;
    assert_status(bad, Code::NotFound, "anonymous");

    // A good one is still verified and passed on.
    let caller = player();
    let bearer = format!("Bearer {}", app.token(&caller));
    let known = client
        .get_room(with_auth(GetRoomRequest::default(), &bearer))
        .await;
    assert_status(known, Code::NotFound, &format!("caller {}", caller.user_id));
}

#[tokio::test]
async fn health_serves_then_goes_not_serving_on_shutdown() {
    let drain = Duration::from_millis(300);
    let app = App::spawn(drain).await;
    let mut health = HealthClient::new(app.channel().await);

    for service in ["", GAME_ADMIN] {
        let request = HealthCheckRequest {
            service: service.into(),
        };
        let status = health.check(request).await.unwrap().into_inner().status();
        assert_eq!(status, ServingStatus::Serving, "{service:?}");
    }
    let unknown = health
        .check(HealthCheckRequest {
            service: "nope.Nope".into(),
        })
        .await;
    assert_eq!(unknown.unwrap_err().code(), Code::NotFound);

    let mut watch = serving_watch(&mut health).await;

    let stopping = Instant::now();
    app.shutdown.cancel();
    assert_eq!(
        watch.message().await.unwrap().unwrap().status(),
        ServingStatus::NotServing
    );

    // The watch stream never ends by itself: the server waits out the drain
    // deadline, cuts the connection and returns.
    tokio::time::timeout(Duration::from_secs(5), app.server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let took = stopping.elapsed();
    assert!(
        took >= drain && took < drain + Duration::from_secs(2),
        "{took:?}"
    );
    // Cut, not left hanging: the client sees the stream end.
    assert_ends_within(&mut watch, Duration::from_secs(2)).await;
}

#[tokio::test]
async fn shutdown_lets_in_flight_calls_finish_and_refuses_new_connections() {
    let app = App::spawn(Duration::from_secs(10)).await;
    let mut client = GameAdminServiceClient::new(app.channel().await);
    let bearer = format!("Bearer {}", app.token(&player()));
    let slow = tokio::spawn(async move {
        client
            .drain_replica(with_auth(DrainReplicaRequest::default(), &bearer))
            .await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;

    let stopping = Instant::now();
    app.shutdown.cancel();
    slow.await.unwrap().expect("the in-flight call completes");
    tokio::time::timeout(Duration::from_secs(5), app.server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // Returned when the call was done, long before the 10 s deadline.
    assert!(
        stopping.elapsed() < Duration::from_secs(2),
        "{:?}",
        stopping.elapsed()
    );

    let endpoint = Endpoint::from_shared(format!("http://{}", app.addr)).unwrap();
    assert!(
        endpoint.connect().await.is_err(),
        "the listener should be closed"
    );
}

#[tokio::test]
async fn reflection_lists_the_served_services() {
    use tonic_reflection::pb::{v1, v1alpha};

    let app = App::spawn(Duration::from_secs(1)).await;
    let channel = app.channel().await;

    let mut client = v1::server_reflection_client::ServerReflectionClient::new(channel.clone());
    let request = v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(v1::server_reflection_request::MessageRequest::ListServices(
            String::new(),
        )),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let response = responses.message().await.unwrap().unwrap();
    let Some(v1::server_reflection_response::MessageResponse::ListServicesResponse(list)) =
        response.message_response
    else {
        panic!("unexpected reflection answer {response:?}");
    };
    let mut names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    names.sort();
    assert_eq!(
        names,
        [
            GAME_ADMIN,
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        ]
    );

    // The descriptors behind a service resolve (what grpcurl needs to call it).
    let request = v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(
            v1::server_reflection_request::MessageRequest::FileContainingSymbol(format!(
                "{GAME_ADMIN}.ListRooms"
            )),
        ),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let response = responses.message().await.unwrap().unwrap();
    assert!(
        matches!(
            response.message_response,
            Some(v1::server_reflection_response::MessageResponse::FileDescriptorResponse(ref files))
                if !files.file_descriptor_proto.is_empty()
        ),
        "{response:?}"
    );

    // The older v1alpha protocol, still used by many tools, answers too.
    let mut alpha = v1alpha::server_reflection_client::ServerReflectionClient::new(channel);
    let request = v1alpha::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(
            v1alpha::server_reflection_request::MessageRequest::ListServices(String::new()),
        ),
    };
    let mut responses = alpha
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let response = responses.message().await.unwrap().unwrap();
    assert!(format!("{response:?}").contains(GAME_ADMIN), "{response:?}");
}

pub(crate) fn limited(limits: ConnectionLimits) -> ServeOptions {
    ServeOptions {
        limits,
        ..ServeOptions::with_drain(Duration::from_secs(1))
    }
}

/// Connections asked to go away after 1 s, and ended a drain (1 s) later.
fn aged_one_second() -> ServeOptions {
    limited(ConnectionLimits {
        max_connection_age_seconds: 1,
        ..ConnectionLimits::default()
    })
}

/// The health Watch of the probe's service, past its first answer (SERVING).
async fn serving_watch(
    health: &mut HealthClient<Channel>,
) -> tonic::Streaming<tonic_health::pb::HealthCheckResponse> {
    let mut watch = health
        .watch(HealthCheckRequest {
            service: GAME_ADMIN.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        watch.message().await.unwrap().unwrap().status(),
        ServingStatus::Serving
    );
    watch
}

/// The stream ends (an error or its end, not silence) within `within`.
async fn assert_ends_within(
    watch: &mut tonic::Streaming<tonic_health::pb::HealthCheckResponse>,
    within: Duration,
) {
    let after = tokio::time::timeout(within, watch.message()).await;
    assert!(
        matches!(after, Ok(Err(_) | Ok(None))),
        "the stream should have ended: {after:?}"
    );
}

/// The public GetRoom answers NOT_FOUND "anonymous" once it reaches the handler.
pub(crate) async fn reaches_the_handler(client: &mut GameAdminServiceClient<Channel>) -> bool {
    let status = client
        .get_room(GetRoomRequest::default())
        .await
        .expect_err("the probe answers NOT_FOUND");
    status.code() == Code::NotFound && status.message() == "anonymous"
}

#[tokio::test]
async fn connections_beyond_the_cap_are_closed_until_one_frees_up() {
    let app = App::spawn_with(limited(ConnectionLimits {
        max_connections: 1,
        ..ConnectionLimits::default()
    }))
    .await;
    let mut first = GameAdminServiceClient::new(app.channel().await);
    assert!(reaches_the_handler(&mut first).await);

    let endpoint = Endpoint::from_shared(format!("http://{}", app.addr)).unwrap();
    let refused = match endpoint.connect().await {
        Err(_) => true,
        Ok(channel) => !reaches_the_handler(&mut GameAdminServiceClient::new(channel)).await,
    };
    assert!(
        refused,
        "a second connection was served beyond the cap of 1"
    );

    // The slot frees when the first connection closes.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(channel) = endpoint.connect().await
            && reaches_the_handler(&mut GameAdminServiceClient::new(channel)).await
        {
            break;
        }
        assert!(Instant::now() < deadline, "the freed slot was never reused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn calls_beyond_the_per_connection_stream_cap_wait_their_turn() {
    let app = App::spawn_with(limited(ConnectionLimits {
        max_streams_per_connection: 1,
        ..ConnectionLimits::default()
    }))
    .await;
    let client = GameAdminServiceClient::new(app.channel().await);
    let bearer = format!("Bearer {}", app.token(&player()));
    // The first call settles the connection: from then on the client knows the cap.
    // (A stream opened before the server's SETTINGS arrive is refused with
    // REFUSED_STREAM, which clients see as UNAVAILABLE and may retry.)
    let (mut a, mut b) = (client.clone(), client);
    a.drain_replica(with_auth(DrainReplicaRequest::default(), &bearer))
        .await
        .unwrap();
    let started = Instant::now();
    let (first, second) = tokio::join!(
        a.drain_replica(with_auth(DrainReplicaRequest::default(), &bearer)),
        b.drain_replica(with_auth(DrainReplicaRequest::default(), &bearer)),
    );
    first.expect("served");
    second.expect("served after the first");
    // Each call takes 400 ms; with one stream at a time they cannot overlap.
    assert!(
        started.elapsed() >= Duration::from_millis(790),
        "{:?}",
        started.elapsed()
    );
}

/// A server that ends its connections at their age (GOAWAY, then the drain as grace)
/// loses no call of a client that sends again what never reached it (without that, tonic
/// fails a few dozen of these calls: checked), with calls in flight
/// at every moment: each call is answered by the handler, on connection after connection.
#[tokio::test]
async fn calls_go_on_across_the_connection_age() {
    let app = App::spawn_with(aged_one_second()).await;
    let channel = Resending::new(
        Endpoint::from_shared(format!("http://{}", app.addr))
            .unwrap()
            .connect_lazy(),
    );
    let until = Instant::now() + Duration::from_millis(4500);
    let mut callers = tokio::task::JoinSet::new();
    for caller in 0..64u64 {
        let mut client = GameAdminServiceClient::new(channel.clone());
        callers.spawn(async move {
            let mut ports = std::collections::BTreeSet::new();
            let mut calls = 0u64;
            while Instant::now() < until {
                calls += 1;
                // Spread over the connection's life, not in lockstep.
                let pause = (calls * 7919 + caller * 104_729) % 3000;
                tokio::time::sleep(Duration::from_micros(pause)).await;
                let status = client
                    .get_room(GetRoomRequest::default())
                    .await
                    .expect_err("the probe answers NOT_FOUND");
                assert_eq!(
                    (status.code(), status.message()),
                    (Code::NotFound, "anonymous"),
                    "call {calls} of caller {caller} failed: {status:?}"
                );
                ports.insert(status.metadata().get("x-peer-port").cloned());
            }
            (calls, ports)
        });
    }
    let (mut calls, mut ports) = (0, std::collections::BTreeSet::new());
    while let Some(done) = callers.join_next().await {
        let (made, seen) = done.unwrap();
        calls += made;
        ports.extend(seen);
    }
    // At least one new connection a second of age (more when calls raced a closing one).
    assert!(
        ports.len() >= 4,
        "{calls} calls on only {} connections",
        ports.len()
    );
}

/// A stream open past the connection age and its grace (the drain) is ended, and the
/// client's next call goes over a new connection.
#[tokio::test]
async fn a_stream_ends_at_the_connection_age_and_grace() {
    let app = App::spawn_with(aged_one_second()).await;
    let channel = app.channel().await;
    let mut health = HealthClient::new(channel.clone());
    let opened = Instant::now();
    let mut watch = serving_watch(&mut health).await;
    assert_ends_within(&mut watch, Duration::from_secs(5)).await;
    let lived = opened.elapsed();
    assert!(
        lived >= Duration::from_secs(2) && lived < Duration::from_secs(4),
        "{lived:?}"
    );
    let mut client = GameAdminServiceClient::new(channel);
    assert!(reaches_the_handler(&mut client).await);
}
