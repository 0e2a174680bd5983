//! A ban and a deletion reach every service, in every way the backend runs: one table of
//! the status each method answers a banned and a deleted player's old token
//! ([`EXPECTED`]), held against `basra dev` (on memory stores, and on Redis) and against
//! the three services started with the settings `deploy/` ships
//! ([`spawn_deployed`](crate::deployed::spawn_deployed)). The streams the players had open
//! (a FindMatch search, a Play stream) end with the same status.

use std::time::{Duration, Instant};

use basra::session::Endpoints;
use basra_platform::auth::SigningKey;
use basra_proto::basra::accounts::v1 as accounts;
use basra_proto::basra::accounts::v1::accounts_admin_service_client::AccountsAdminServiceClient;
use basra_proto::basra::accounts::v1::accounts_service_client::AccountsServiceClient;
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use basra_proto::basra::game::v1::game_service_client::GameServiceClient;
use basra_proto::basra::game::v1::play_request::Kind;
use basra_proto::basra::game::v1::{Join, PlayRequest, WatchRequest};
use basra_proto::basra::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;
use basra_proto::basra::matchmaking::v1::{
    CreateRoomRequest, FindMatchRequest, ListPublicRoomsRequest,
};
use basra_testkit::authed;
use tonic::Code;
use tonic::transport::Channel;

/// A call a player makes with their access token (Refresh: with their refresh token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    GetProfile,
    ListFriends,
    SetDisplayName,
    AddFriend,
    ExportMyData,
    WatchFriends,
    Refresh,
    CreateRoom,
    ListPublicRooms,
    FindMatch,
    Watch,
    Play,
}

/// What each call answers the old tokens of a banned player and of a deleted one: a ban
/// is PERMISSION_DENIED (with the reason), a deletion UNAUTHENTICATED, in every service,
/// new streams included.
const EXPECTED: &[(Call, Code, Code)] = &[
    // accounts
    (
        Call::GetProfile,
        Code::PermissionDenied,
        Code::Unauthenticated,
    ),
    (
        Call::ListFriends,
        Code::PermissionDenied,
        Code::Unauthenticated,
    ),
    (
        Call::SetDisplayName,
        Code::PermissionDenied,
        Code::Unauthenticated,
    ),
    (
        Call::AddFriend,
        Code::PermissionDenied,
        Code::Unauthenticated,
    ),
    (
        Call::ExportMyData,
        Code::PermissionDenied,
        Code::Unauthenticated,
    ),
    (
        Call::WatchFriends,
        Code::PermissionDenied,
        Code::Unauthenticated,
    ),
    (Call::Refresh, Code::PermissionDenied, Code::Unauthenticated),
    // matchmaking
    (
        Call::CreateRoom,
        Code::PermissionDenied,
        Code::Unauthenticated,
    ),
    (
        Call::ListPublicRooms,
        Code::PermissionDenied,
        Code::Unauthenticated,
    ),
    (
        Call::FindMatch,
        Code::PermissionDenied,
        Code::Unauthenticated,
    ),
    // game-session
    (Call::Watch, Code::PermissionDenied, Code::Unauthenticated),
    (Call::Play, Code::PermissionDenied, Code::Unauthenticated),
];

/// How long a ban or a deletion may take to reach every service.
const REACH: Duration = Duration::from_secs(5);

/// A signed-in player's tokens.
#[derive(Debug, Clone)]
struct Player {
    user_id: String,
    access: String,
    refresh: String,
}

/// Clients of the three services.
#[derive(Clone)]
struct Clients {
    accounts: AccountsServiceClient<Channel>,
    admin: AccountsAdminServiceClient<Channel>,
    queue: MatchmakingServiceClient<Channel>,
    game: GameServiceClient<Channel>,
}

impl Clients {
    async fn connect(endpoints: &Endpoints) -> Clients {
        let channel = |url: &str| {
            Channel::from_shared(url.to_owned())
                .expect("a URL")
                .connect_lazy()
        };
        let accounts = channel(&endpoints.accounts);
        Clients {
            accounts: AccountsServiceClient::new(accounts.clone()),
            admin: AccountsAdminServiceClient::new(accounts),
            queue: MatchmakingServiceClient::new(channel(&endpoints.matchmaking)),
            game: GameServiceClient::new(channel(&endpoints.game)),
        }
    }

    async fn guest(&self, device: &str) -> Player {
        let tokens = self
            .accounts
            .clone()
            .guest_login(accounts::GuestLoginRequest {
                device_id: device.to_owned(),
                display_name: String::new(),
            })
            .await
            .expect("a guest signs in")
            .into_inner()
            .tokens
            .unwrap();
        Player {
            user_id: tokens.user_id,
            access: tokens.access_token,
            refresh: tokens.refresh_token,
        }
    }

    /// What `call` answers `player` now: a unary call's status; a stream's status when
    /// it is refused or ends with one, OK when it opens and sends or stays open.
    async fn answer(&self, call: Call, player: &Player, world: &World) -> Code {
        let token = player.access.as_str();
        match call {
            Call::GetProfile => unary(
                self.accounts
                    .clone()
                    .get_profile(authed(accounts::GetProfileRequest::default(), token))
                    .await,
            ),
            Call::ListFriends => unary(
                self.accounts
                    .clone()
                    .list_friends(authed(accounts::ListFriendsRequest::default(), token))
                    .await,
            ),
            Call::SetDisplayName => unary(
                self.accounts
                    .clone()
                    .set_display_name(authed(
                        accounts::SetDisplayNameRequest {
                            display_name: "Still Here".into(),
                        },
                        token,
                    ))
                    .await,
            ),
            Call::AddFriend => unary(
                self.accounts
                    .clone()
                    .add_friend(authed(
                        accounts::AddFriendRequest {
                            target: Some(accounts::add_friend_request::Target::UserId(
                                world.host.user_id.clone(),
                            )),
                        },
                        token,
                    ))
                    .await,
            ),
            Call::ExportMyData => {
                first(
                    self.accounts
                        .clone()
                        .export_my_data(authed(accounts::ExportMyDataRequest::default(), token))
                        .await,
                )
                .await
            }
            Call::WatchFriends => {
                first(
                    self.accounts
                        .clone()
                        .watch_friends(authed(accounts::WatchFriendsRequest::default(), token))
                        .await,
                )
                .await
            }
            Call::Refresh => unary(
                self.accounts
                    .clone()
                    .refresh(accounts::RefreshRequest {
                        refresh_token: player.refresh.clone(),
                    })
                    .await,
            ),
            Call::CreateRoom => unary(
                self.queue
                    .clone()
                    .create_room(authed(
                        CreateRoomRequest {
                            request_id: uuid::Uuid::now_v7().to_string(),
                            visibility: RoomVisibility::Private as i32,
                            settings: Some(RuleSettings::default()),
                            ranked: false,
                            bot_seats: vec![1],
                            bot_level: BotLevel::Easy as i32,
                        },
                        token,
                    ))
                    .await,
            ),
            Call::ListPublicRooms => unary(
                self.queue
                    .clone()
                    .list_public_rooms(authed(ListPublicRoomsRequest::default(), token))
                    .await,
            ),
            Call::FindMatch => {
                first(
                    self.queue
                        .clone()
                        .find_match(authed(search(&uuid::Uuid::now_v7().to_string()), token))
                        .await,
                )
                .await
            }
            Call::Watch => {
                first(
                    self.game
                        .clone()
                        .watch(authed(
                            WatchRequest {
                                room_id: world.room.clone(),
                                last_seen_seq: None,
                                spectate: true,
                            },
                            token,
                        ))
                        .await,
                )
                .await
            }
            Call::Play => {
                first(
                    self.game
                        .clone()
                        .play(authed(tokio_stream::iter([spectate(&world.room)]), token))
                        .await,
                )
                .await
            }
        }
    }
}

/// An unranked search without bots.
fn search(ticket: &str) -> FindMatchRequest {
    FindMatchRequest {
        ticket_id: ticket.to_owned(),
        ranked: false,
        preset: None,
        allow_bots: Some(false),
    }
}

/// The first message of a Play stream: watch `room` as a spectator.
fn spectate(room: &str) -> PlayRequest {
    PlayRequest {
        kind: Some(Kind::Join(Join {
            room_id: room.to_owned(),
            last_seen_seq: None,
            spectate: true,
        })),
    }
}

/// A unary call's answer.
fn unary<T>(result: Result<T, tonic::Status>) -> Code {
    match result {
        Ok(_) => Code::Ok,
        Err(status) => status.code(),
    }
}

/// A stream's answer: refused, ended with a status, or open (OK).
async fn first<T>(opened: Result<tonic::Response<tonic::Streaming<T>>, tonic::Status>) -> Code {
    let mut stream = match opened {
        Ok(stream) => stream.into_inner(),
        Err(status) => return status.code(),
    };
    match tokio::time::timeout(Duration::from_millis(500), stream.message()).await {
        Ok(Err(status)) => status.code(),
        Ok(Ok(_)) | Err(_) => Code::Ok,
    }
}

/// What the players act on: a public room of another player (against the computer).
struct World {
    host: Player,
    room: String,
}

/// How soon each service refused the banned and the deleted player (and their open
/// streams ended), and a line per answer that was not the table's within [`REACH`].
struct Verdict {
    figures: Vec<String>,
    wrong: Vec<String>,
}

/// Bans one guest and deletes another while each has a stream open, then checks that
/// the streams end and every call of [`EXPECTED`] answers as it says, within [`REACH`].
async fn hold_to_the_table(endpoints: &Endpoints, operator: &str, what: &str) -> Verdict {
    let clients = Clients::connect(endpoints).await;
    let tag = uuid::Uuid::now_v7().simple().to_string();
    let host = clients.guest(&format!("rv-host-{tag}")).await;
    let room = clients
        .queue
        .clone()
        .create_room(authed(
            CreateRoomRequest {
                request_id: String::new(),
                visibility: RoomVisibility::Public as i32,
                settings: Some(RuleSettings::default()),
                ranked: false,
                bot_seats: vec![1],
                bot_level: BotLevel::Easy as i32,
            },
            &host.access,
        ))
        .await
        .expect("the host's room")
        .into_inner()
        .room_id;
    let world = World { host, room };
    let banned = clients.guest(&format!("rv-banned-{tag}")).await;
    let deleted_device = format!("rv-deleted-{tag}");
    let deleted = clients.guest(&deleted_device).await;
    // Open streams: the banned player searches, the deleted one watches the room.
    let mut search = clients
        .queue
        .clone()
        .find_match(authed(search("rv-search"), &banned.access))
        .await
        .expect("the search opens")
        .into_inner();
    search.message().await.expect("queued").expect("an update");
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(spectate(&world.room)).await.unwrap();
    let mut play = clients
        .game
        .clone()
        .play(authed(
            tokio_stream::wrappers::ReceiverStream::new(rx),
            &deleted.access,
        ))
        .await
        .expect("the Play stream opens")
        .into_inner();
    play.message().await.expect("a snapshot").expect("open");

    let mut verdict = Verdict {
        figures: Vec::new(),
        wrong: Vec::new(),
    };
    // The streams' ends, as they come.
    let search = tokio::spawn(async move { ended(&mut search).await });
    let play = tokio::spawn(async move { ended(&mut play).await });
    clients
        .admin
        .clone()
        .ban_player(authed(
            accounts::BanPlayerRequest {
                user_id: banned.user_id.clone(),
                reason: "abuse in chat".into(),
                expires_at: None,
            },
            operator,
        ))
        .await
        .expect("banned");
    let banned_at = Instant::now();
    reach(
        &clients,
        &world,
        ("ban", &banned, banned_at, Code::PermissionDenied),
        &mut verdict,
    )
    .await;
    clients
        .accounts
        .clone()
        .delete_account(authed(
            accounts::DeleteAccountRequest {
                proof: Some(accounts::delete_account_request::Proof::DeviceId(
                    deleted_device,
                )),
            },
            &deleted.access,
        ))
        .await
        .expect("deleted");
    let deleted_at = Instant::now();
    reach(
        &clients,
        &world,
        ("deletion", &deleted, deleted_at, Code::Unauthenticated),
        &mut verdict,
    )
    .await;
    for (name, stream, at, expected) in [
        (
            "FindMatch open at the ban",
            search,
            banned_at,
            Code::PermissionDenied,
        ),
        (
            "Play open at the deletion",
            play,
            deleted_at,
            Code::Unauthenticated,
        ),
    ] {
        match stream.await.unwrap() {
            Some((code, when)) if code == expected => verdict.figures.push(format!(
                "{name} ended {code:?} after {:?}",
                when.saturating_duration_since(at)
            )),
            other => verdict.wrong.push(format!(
                "{name}: {other:?}, expected {expected:?} within {REACH:?}"
            )),
        }
    }
    drop(tx);
    // Every call of the table (what a service knows, it knows for every method).
    for (call, if_banned, if_deleted) in EXPECTED {
        for (who, player, expected) in [
            ("banned", &banned, *if_banned),
            ("deleted", &deleted, *if_deleted),
        ] {
            let code = loop {
                let code = clients.answer(*call, player, &world).await;
                if code == expected || deleted_at.elapsed() > REACH {
                    break code;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            if code != expected {
                verdict
                    .wrong
                    .push(format!("{call:?} ({who}): {code:?}, expected {expected:?}"));
            }
        }
    }
    println!("{what}:\n  {}", verdict.figures.join("\n  "));
    verdict
}

/// How `stream` ended (its status and when), if it did within [`REACH`].
async fn ended<T>(stream: &mut tonic::Streaming<T>) -> Option<(Code, Instant)> {
    let since = Instant::now();
    loop {
        let left = (REACH * 2).saturating_sub(since.elapsed());
        match tokio::time::timeout(left, stream.message()).await {
            Ok(Ok(Some(_))) => continue,
            Ok(Ok(None)) => return Some((Code::Ok, Instant::now())),
            Ok(Err(status)) => return Some((status.code(), Instant::now())),
            Err(_) => return None,
        }
    }
}

/// How soon each service answers `expected` to a new call of `player`, whom `what` (a
/// ban or a deletion) done at `at` concerns: looked at every 10 ms, for [`REACH`].
async fn reach(
    clients: &Clients,
    world: &World,
    (what, player, at, expected): (&str, &Player, Instant, Code),
    verdict: &mut Verdict,
) {
    // Each service on its own, so that one's answer does not wait for another's.
    let probe = |call: Call| async move {
        while at.elapsed() < REACH {
            if clients.answer(call, player, world).await == expected {
                return Some(at.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    };
    let (accounts, queue, game) = tokio::join!(
        probe(Call::GetProfile),
        probe(Call::ListPublicRooms),
        probe(Call::Watch)
    );
    for (service, reached) in [
        ("accounts", accounts),
        ("matchmaking", queue),
        ("game-session", game),
    ] {
        match reached {
            Some(after) => verdict
                .figures
                .push(format!("{what} refused by {service} after {after:?}")),
            None => verdict
                .wrong
                .push(format!("{what} not refused by {service} within {REACH:?}")),
        }
    }
}

fn assert_held(verdict: Verdict, what: &str) {
    assert!(
        verdict.wrong.is_empty(),
        "{what} does not answer as the table says:\n{}",
        verdict.wrong.join("\n")
    );
}

/// `basra dev` with a signing key of the test's, so that it can mint an operator token
/// (accounts trusts its own key for every role): (the key's file, the operator token).
pub(crate) fn dev_operator() -> (tempfile::NamedTempFile, Vec<(String, String)>, String) {
    let key = SigningKey::generate();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), key.private_pem()).unwrap();
    let env = vec![
        (
            "BASRA_ACCOUNTS_IDENTITY__SIGNING_KEY_FILE".to_owned(),
            file.path().display().to_string(),
        ),
        (
            "BASRA_ACCOUNTS_IDENTITY__KEY_ID".to_owned(),
            key.kid().to_owned(),
        ),
    ];
    let token = basra::admin::operator_token(
        &key.private_pem(),
        key.kid(),
        "basra-accounts",
        "basra",
        "ops-test",
        Duration::from_secs(300),
    )
    .unwrap();
    (file, env, token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basra_dev_on_memory_stores_answers_as_the_table_says() {
    let (_key, env, operator) = dev_operator();
    let backend = basra_e2e::spawn_dev_with(None, env)
        .await
        .expect("basra dev");
    let verdict = hold_to_the_table(&backend.endpoints, &operator, "basra dev").await;
    backend.stop().await.unwrap();
    assert_held(verdict, "basra dev");
}

/// `basra dev` with rooms, the queue, presence and the list in Redis: each service reads
/// the list under the one shared prefix (the test's own here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basra_dev_on_redis_answers_as_the_table_says() {
    let (_key, mut env, operator) = dev_operator();
    let tag = format!("rv-dev-{}", uuid::Uuid::now_v7().simple());
    for service in ["ACCOUNTS", "MATCHMAKING", "GAME_SESSION"] {
        env.push((
            format!("BASRA_{service}_REDIS__PREFIX"),
            format!("{tag}-{service}"),
        ));
        env.push((format!("BASRA_{service}_REDIS__SHARED_PREFIX"), tag.clone()));
    }
    let redis_url = basra_testkit::redis_url();
    let backend = basra_e2e::spawn_dev_with(Some(redis_url.clone()), env)
        .await
        .expect("basra dev on Redis (REDIS_URL)");
    let verdict = hold_to_the_table(&backend.endpoints, &operator, "basra dev on Redis").await;
    backend.stop().await.unwrap();
    let mut redis = redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    basra_e2e::delete_keys(&mut redis, &format!("{tag}*"))
        .await
        .unwrap();
    assert_held(verdict, "basra dev on Redis");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_services_as_deployed_answer_as_the_table_says() {
    let deployed = crate::deployed::spawn_deployed().await;
    let verdict = hold_to_the_table(
        &deployed.endpoints,
        &deployed.operator,
        "the services as deployed",
    )
    .await;
    deployed.stop().await;
    assert_held(verdict, "the services as deploy/ configures them");
}
