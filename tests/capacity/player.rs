//! One simulated player's session: arrive at its scheduled instant, sign in (new guest,
//! returning guest, password), read its profile, then until its session length is spent
//! do what the mix says — quick match, ranked, a room with a friend, against the
//! computer, watching a friend — looking at its history and the leaderboard after some
//! matches, and leave. Every call goes through the services' gRPC front doors and is
//! timed from its scheduled instant.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use basra_proto::basra::accounts::v1::accounts_service_client::AccountsServiceClient;
use basra_proto::basra::accounts::v1::watch_friends_response::Event as FeedEvent;
use basra_proto::basra::accounts::v1::{
    AcceptFriendRequest, AddFriendRequest, AuthTokens, GetProfileRequest, GuestLoginRequest,
    LeaderboardRequest, LoginRequest, MatchHistoryRequest, RefreshRequest, RegisterRequest,
    WatchFriendsRequest, add_friend_request,
};
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use basra_proto::basra::matchmaking::v1::find_match_response::Update;
use basra_proto::basra::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;
use basra_proto::basra::matchmaking::v1::{
    CancelFindRequest, CancelFindResponse, CreateRoomRequest, FindMatchRequest,
    GetCurrentSeatRequest, InviteFriendRequest, JoinRoomRequest, MatchPreset, join_room_request,
};
use rand::Rng as _;

use crate::front::{Links, Player, authed};
use crate::mix::{Activity, SignIn};
use crate::seat;
use crate::sim::{Sim, Watchable, lock, sleep_until};

type Failed = String;

/// How long a host's access token is used by a watcher asking to be friends: a minute
/// short of accounts' `access_ttl_seconds` (900, its default and the stack's).
const HOST_TOKEN_USABLE: Duration = Duration::from_secs(14 * 60);

fn u() -> f64 {
    rand::rng().random()
}

fn player_of(tokens: Option<AuthTokens>, since: Instant) -> Result<Player, Failed> {
    let tokens = tokens.ok_or("answer without tokens")?;
    Ok(Player {
        user_id: tokens.user_id,
        bearer: format!("Bearer {}", tokens.access_token)
            .parse()
            .map_err(|_| "a token that is not ASCII")?,
        refresh_token: tokens.refresh_token,
        since: since.into(),
    })
}

/// What a player signed in with, given back for a later session when it leaves (one
/// session per device or account at a time, as one phone).
pub enum Credential {
    /// A guest's device.
    Device(String),
    /// A username and password.
    Account(String, String),
}

/// Gives `credential` back for a later session.
pub fn give_back(sim: &Sim, credential: Credential) {
    match credential {
        Credential::Device(device) => lock(&sim.devices).push(device),
        Credential::Account(username, password) => lock(&sim.accounts).push((username, password)),
    }
}

/// Calls `call` again while it answers RESOURCE_EXHAUSTED (a limit's "back off and
/// retry": password hashing at capacity), at most three times after 1 s each; each
/// refusal is recorded as "ResourceExhausted (retried)", apart from failures.
async fn with_retry<T, F, Fut>(
    sim: &Sim,
    name: &str,
    scheduled: Instant,
    mut call: F,
) -> Result<T, tonic::Status>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    let mut tries = 0;
    loop {
        tries += 1;
        match call().await {
            Err(status) if status.code() == tonic::Code::ResourceExhausted && tries <= 3 => {
                sim.rec
                    .record(name, scheduled, Instant::now(), Err(RETRIED.into()));
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            answer => {
                sim.rec.rpc(name, scheduled, &answer);
                return answer.map(tonic::Response::into_inner);
            }
        }
    }
}

/// The reason under which refusals retried after their hint are recorded.
pub const RETRIED: &str = "ResourceExhausted (retried)";

/// Signs a player in at `scheduled`, the way the sign-in mix says.
pub async fn sign_in(
    sim: &Sim,
    links: &Links,
    scheduled: Instant,
) -> Result<(Player, Credential), Failed> {
    let accounts = AccountsServiceClient::new(links.accounts.clone());
    let mut how = sim.sign_ins.pick(u());
    let returning = match how {
        SignIn::ReturningGuest => {
            let mut devices = lock(&sim.devices);
            let at = (!devices.is_empty()).then(|| rand::rng().random_range(0..devices.len()));
            at.map(|i| devices.swap_remove(i))
        }
        _ => None,
    };
    if how == SignIn::ReturningGuest && returning.is_none() {
        how = SignIn::Guest;
    }
    match how {
        SignIn::Guest | SignIn::ReturningGuest => {
            let device = returning
                .unwrap_or_else(|| format!("cap-{}-{}", sim.tag, uuid::Uuid::now_v7().simple()));
            let name = if how == SignIn::Guest {
                "GuestLogin (new)"
            } else {
                "GuestLogin (returning)"
            };
            let request = GuestLoginRequest {
                device_id: device.clone(),
                display_name: "Sim".into(),
            };
            let answer = with_retry(sim, name, scheduled, || {
                let (mut client, request) = (accounts.clone(), request.clone());
                async move { client.guest_login(request).await }
            })
            .await
            .map_err(|s| format!("{name}: {s}"))?;
            Ok((
                player_of(answer.tokens, scheduled)?,
                Credential::Device(device),
            ))
        }
        SignIn::Password => {
            let known = {
                let mut accounts = lock(&sim.accounts);
                let at = (!accounts.is_empty() && u() < 0.7)
                    .then(|| rand::rng().random_range(0..accounts.len()));
                at.map(|i| accounts.swap_remove(i))
            };
            match known {
                Some((username, password)) => {
                    let request = LoginRequest {
                        username: username.clone(),
                        password: password.clone(),
                    };
                    let answer = with_retry(sim, "Login", scheduled, || {
                        let (mut client, request) = (accounts.clone(), request.clone());
                        async move { client.login(request).await }
                    })
                    .await;
                    let answer = match answer {
                        Ok(answer) => answer,
                        Err(status) => {
                            lock(&sim.accounts).push((username, password));
                            return Err(format!("Login: {status}"));
                        }
                    };
                    Ok((
                        player_of(answer.tokens, scheduled)?,
                        Credential::Account(username, password),
                    ))
                }
                None => {
                    // 3 to 20 characters: "c" and 18 of a v7 UUID's random digits.
                    let username = format!("c{}", &uuid::Uuid::now_v7().simple().to_string()[14..]);
                    let password = format!("pw-{}", uuid::Uuid::now_v7().simple());
                    let request = RegisterRequest {
                        username: username.clone(),
                        password: password.clone(),
                        display_name: "Sim".into(),
                    };
                    let answer = with_retry(sim, "Register", scheduled, || {
                        let (mut client, request) = (accounts.clone(), request.clone());
                        async move { client.register(request).await }
                    })
                    .await
                    .map_err(|s| format!("Register: {s}"))?;
                    Ok((
                        player_of(answer.tokens, scheduled)?,
                        Credential::Account(username, password),
                    ))
                }
            }
        }
    }
}

async fn refresh_if_old(sim: &Sim, links: &Links, player: &mut Player) -> Result<(), Failed> {
    if player.since.elapsed() < sim.behaviour.refresh_after {
        return Ok(());
    }
    let scheduled = Instant::now();
    let answer = AccountsServiceClient::new(links.accounts.clone())
        .refresh(RefreshRequest {
            refresh_token: player.refresh_token.clone(),
        })
        .await;
    sim.rec.rpc("Refresh", scheduled, &answer);
    let answer = answer.map_err(|s| format!("Refresh: {s}"))?.into_inner();
    *player = player_of(answer.tokens, scheduled)?;
    Ok(())
}

/// One whole session: arrives at `arrival`, stays about `length`.
pub async fn session(sim: Arc<Sim>, arrival: Instant, length: Duration) {
    sleep_until(arrival).await;
    sim.counters.arrive();
    sim.counters.sessions.fetch_add(1, Ordering::Relaxed);
    let links = sim.front.links();
    let outcome = async {
        let (mut player, credential) = sign_in(&sim, &links, arrival).await?;
        let mut accounts = AccountsServiceClient::new(links.accounts.clone());
        let scheduled = Instant::now();
        let answer = accounts
            .get_profile(authed(GetProfileRequest::default(), &player.bearer))
            .await;
        sim.rec.rpc("GetProfile", scheduled, &answer);
        let leave_at = arrival + length;
        let mut next = Instant::now() + sim.behaviour.between.pick(u());
        // At least one activity: a session is there to play.
        loop {
            sleep_until(next).await;
            refresh_if_old(&sim, &links, &mut player).await?;
            let activity = sim.activities.pick(u());
            let played = run_activity(&sim, &links, &player, activity, next).await;
            // A match outlasts an access token's quarter hour: renew it before the reads.
            refresh_if_old(&sim, &links, &mut player).await?;
            let now = Instant::now();
            if played.is_ok() {
                if u() < sim.behaviour.history_share {
                    let answer = accounts
                        .match_history(authed(
                            MatchHistoryRequest {
                                page_size: 10,
                                page_token: String::new(),
                            },
                            &player.bearer,
                        ))
                        .await;
                    sim.rec.rpc("MatchHistory", now, &answer);
                }
                if u() < sim.behaviour.leaderboard_share {
                    let now = Instant::now();
                    let answer = accounts
                        .leaderboard(authed(
                            LeaderboardRequest {
                                page_size: 20,
                                ..Default::default()
                            },
                            &player.bearer,
                        ))
                        .await;
                    sim.rec.rpc("Leaderboard", now, &answer);
                }
            }
            next = Instant::now() + sim.behaviour.between.pick(u());
            if next >= leave_at {
                break;
            }
            if played.is_err() {
                // Something failed (counted where it failed): as a client restarted,
                // find the seat held, if any, and settle it before the next activity.
                settle(&sim, &links, &player).await;
            }
        }
        give_back(&sim, credential);
        Ok::<(), Failed>(())
    }
    .await;
    if let Err(reason) = outcome {
        sim.rec.record(
            "session ended by a failure",
            arrival,
            Instant::now(),
            Err(first_words(&reason)),
        );
    }
    sim.counters.leave();
}

fn first_words(reason: &str) -> String {
    reason.split(':').next().unwrap_or(reason).to_owned()
}

async fn run_activity(
    sim: &Sim,
    links: &Links,
    player: &Player,
    activity: Activity,
    scheduled: Instant,
) -> Result<(), Failed> {
    match activity {
        Activity::Quick => queue(sim, links, player, false, scheduled).await,
        Activity::Ranked => queue(sim, links, player, true, scheduled).await,
        Activity::Friends => friends(sim, links, player, scheduled).await,
        Activity::Computer => computer(sim, links, player, scheduled).await,
        Activity::Watch => watch(sim, links, player, scheduled).await,
    }
}

/// FindMatch, then the match it makes.
async fn queue(
    sim: &Sim,
    links: &Links,
    player: &Player,
    ranked: bool,
    scheduled: Instant,
) -> Result<(), Failed> {
    let (open_name, matched_name) = if ranked {
        (
            "FindMatch ranked: open → first update",
            "FindMatch ranked: queue → matched",
        )
    } else {
        (
            "FindMatch quick: open → first update",
            "FindMatch quick: queue → matched",
        )
    };
    let mut mm = MatchmakingServiceClient::new(links.matchmaking.clone());
    let request = FindMatchRequest {
        ticket_id: uuid::Uuid::now_v7().to_string(),
        ranked,
        preset: Some(MatchPreset {
            seats: Some(2),
            target_score: Some(sim.behaviour.target_score),
        }),
        allow_bots: None,
    };
    let mut attempts = 0;
    let matched = 'search: loop {
        attempts += 1;
        if attempts > 3 {
            // Give the search up as a client leaving the queue does: CancelFind, which
            // answers with the match if one was made meanwhile.
            let now = Instant::now();
            let answer = mm
                .cancel_find(authed(
                    CancelFindRequest {
                        ticket_id: request.ticket_id.clone(),
                    },
                    &player.bearer,
                ))
                .await;
            if matches!(&answer, Err(status) if status.code() == tonic::Code::NotFound) {
                // No ticket was made (every open was refused): nothing to cancel.
                sim.rec.record("CancelFind", now, Instant::now(), Ok(()));
            } else {
                sim.rec.rpc("CancelFind", now, &answer);
            }
            match answer.map(tonic::Response::into_inner) {
                Ok(CancelFindResponse {
                    cancelled: false,
                    matched: Some(matched),
                }) => break 'search matched,
                _ => return Err("FindMatch: gave up after 3 broken streams".into()),
            }
        }
        let answer = mm.find_match(authed(request.clone(), &player.bearer)).await;
        let mut stream = match answer {
            Ok(stream) => stream.into_inner(),
            Err(status) => {
                let code = status.code();
                sim.rec.rpc::<()>(open_name, scheduled, &Err(status));
                if code == tonic::Code::FailedPrecondition {
                    // Seated elsewhere: the session settles that seat first.
                    return Err("FindMatch: seated in another room".into());
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let mut first = attempts == 1;
        loop {
            match stream.message().await {
                Ok(Some(update)) => {
                    if std::mem::take(&mut first) {
                        sim.rec.record(open_name, scheduled, Instant::now(), Ok(()));
                    }
                    match update.update {
                        Some(Update::Matched(matched)) => {
                            sim.rec
                                .record(matched_name, scheduled, Instant::now(), Ok(()));
                            break 'search matched;
                        }
                        Some(Update::Cancelled(cancelled)) => {
                            let reason = format!("cancelled (reason {})", cancelled.reason);
                            sim.rec.record(
                                matched_name,
                                scheduled,
                                Instant::now(),
                                Err(reason.clone()),
                            );
                            return Err(reason);
                        }
                        _ => {}
                    }
                }
                Ok(None) => {
                    sim.rec.record(
                        "FindMatch: stream broke",
                        scheduled,
                        Instant::now(),
                        Err("ended early".into()),
                    );
                    break;
                }
                Err(status) => {
                    sim.rec
                        .rpc::<()>("FindMatch: stream broke", scheduled, &Err(status));
                    break;
                }
            }
        }
        // Resume the search with the same ticket (the queue keeps the place 30 s).
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    seat::play(sim, links, player, &matched.room_id, Instant::now()).await?;
    Ok(())
}

/// CreateRoom (public, so friends may watch), at `scheduled`.
async fn create_room(
    sim: &Sim,
    links: &Links,
    player: &Player,
    bot: bool,
    scheduled: Instant,
) -> Result<(String, String), Failed> {
    let name = if bot {
        "CreateRoom (vs computer)"
    } else {
        "CreateRoom (friends)"
    };
    let answer = MatchmakingServiceClient::new(links.matchmaking.clone())
        .create_room(authed(
            CreateRoomRequest {
                request_id: uuid::Uuid::now_v7().to_string(),
                visibility: if bot {
                    RoomVisibility::Private
                } else {
                    RoomVisibility::Public
                } as i32,
                settings: Some(RuleSettings {
                    target_score: Some(sim.behaviour.target_score),
                    ..Default::default()
                }),
                ranked: false,
                bot_seats: if bot { vec![1] } else { Vec::new() },
                bot_level: if bot { BotLevel::Medium as i32 } else { 0 },
            },
            &player.bearer,
        ))
        .await;
    sim.rec.rpc(name, scheduled, &answer);
    let room = answer.map_err(|s| format!("{name}: {s}"))?.into_inner();
    Ok((room.room_id, room.join_code))
}

/// Against the computer.
async fn computer(
    sim: &Sim,
    links: &Links,
    player: &Player,
    scheduled: Instant,
) -> Result<(), Failed> {
    let (room_id, _) = create_room(sim, links, player, true, scheduled).await?;
    seat::play(sim, links, player, &room_id, Instant::now()).await?;
    Ok(())
}

/// `a` asks `b` to be friends and `b` accepts, both at `scheduled`.
async fn befriend(
    sim: &Sim,
    links: &Links,
    a: &Player,
    b: &Player,
    scheduled: Instant,
) -> Result<(), Failed> {
    let mut accounts = AccountsServiceClient::new(links.accounts.clone());
    let answer = accounts
        .add_friend(authed(
            AddFriendRequest {
                target: Some(add_friend_request::Target::UserId(b.user_id.clone())),
            },
            &a.bearer,
        ))
        .await;
    // A friend signing in as a returning player may be an earlier friend already (or the
    // earlier request may still wait): ALREADY_EXISTS is the friendship asked for.
    let already = matches!(&answer, Err(s) if s.code() == tonic::Code::AlreadyExists);
    if already {
        sim.rec.rpc(
            "AddFriend (friends already)",
            scheduled,
            &Ok::<(), tonic::Status>(()),
        );
    } else {
        sim.rec.rpc("AddFriend", scheduled, &answer);
        answer.map_err(|s| format!("AddFriend: {s}"))?;
    }
    let now = Instant::now();
    let answer = accounts
        .accept_friend(authed(
            AcceptFriendRequest {
                user_id: a.user_id.clone(),
            },
            &b.bearer,
        ))
        .await;
    if already && matches!(&answer, Err(s) if s.code() == tonic::Code::NotFound) {
        // No request waiting: they were friends before.
        return Ok(());
    }
    sim.rec.rpc("AcceptFriend", now, &answer);
    answer.map_err(|s| format!("AcceptFriend: {s}"))?;
    Ok(())
}

/// A room with a friend: a second player arrives with this one (a friend signing in on
/// their own phone), they become friends, this one creates a room and invites them,
/// the friend reads the invite on their WatchFriends feed and joins by its code, and
/// both play; meanwhile the room is listed for watchers.
async fn friends(
    sim: &Sim,
    links: &Links,
    host: &Player,
    scheduled: Instant,
) -> Result<(), Failed> {
    sim.counters.arrive();
    let outcome = async {
        let friend_links = sim.front.links();
        let (friend, credential) = sign_in(sim, &friend_links, scheduled).await?;
        let outcome = with_friend(sim, links, host, &friend, &friend_links).await;
        if outcome.is_err() {
            settle(sim, &friend_links, &friend).await;
        }
        give_back(sim, credential);
        outcome
    }
    .await;
    sim.counters.leave();
    outcome
}

async fn with_friend(
    sim: &Sim,
    links: &Links,
    host: &Player,
    friend: &Player,
    friend_links: &Links,
) -> Result<(), Failed> {
    {
        befriend(sim, links, host, friend, Instant::now()).await?;
        let feed_at = Instant::now();
        let feed = AccountsServiceClient::new(friend_links.accounts.clone())
            .watch_friends(authed(
                WatchFriendsRequest { last_seen_seq: 0 },
                &friend.bearer,
            ))
            .await;
        sim.rec.rpc("WatchFriends: open", feed_at, &feed);
        let mut feed = feed.map_err(|s| format!("WatchFriends: {s}"))?.into_inner();
        let (room_id, code) = create_room(sim, links, host, false, Instant::now()).await?;
        let invited_at = Instant::now();
        let answer = MatchmakingServiceClient::new(links.matchmaking.clone())
            .invite_friend(authed(
                InviteFriendRequest {
                    room_id: room_id.clone(),
                    user_id: friend.user_id.clone(),
                },
                &host.bearer,
            ))
            .await;
        sim.rec.rpc("InviteFriend", invited_at, &answer);
        answer.map_err(|s| format!("InviteFriend: {s}"))?;
        // The invite on the friend's feed.
        let seen = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                match feed.message().await {
                    Ok(Some(event)) => {
                        if let Some(FeedEvent::Invite(invite)) = event.event
                            && invite.room_id == room_id
                        {
                            return Ok(invite.join_code);
                        }
                    }
                    Ok(None) => return Err("ended early".to_owned()),
                    Err(status) => return Err(format!("{:?}", status.code())),
                }
            }
        })
        .await
        .unwrap_or_else(|_| Err("no invite within 30 s".into()));
        sim.rec.record(
            "InviteFriend → invite on the friend's feed",
            invited_at,
            Instant::now(),
            seen.clone().map(|_| ()),
        );
        let code = seen.unwrap_or(code);
        drop(feed);
        let join_at = Instant::now() + sim.behaviour.think.pick(u());
        sleep_until(join_at).await;
        let answer = MatchmakingServiceClient::new(friend_links.matchmaking.clone())
            .join_room(authed(
                JoinRoomRequest {
                    target: Some(join_room_request::Target::JoinCode(code)),
                    preferred_seat: None,
                },
                &friend.bearer,
            ))
            .await;
        sim.rec.rpc("JoinRoom (by code)", join_at, &answer);
        answer.map_err(|s| format!("JoinRoom: {s}"))?;
        lock(&sim.watchable).push(Watchable {
            room_id: room_id.clone(),
            host: host.clone(),
        });
        let now = Instant::now();
        let (a, b) = tokio::join!(
            seat::play(sim, links, host, &room_id, now),
            seat::play(sim, friend_links, friend, &room_id, now),
        );
        lock(&sim.watchable).retain(|w| w.room_id != room_id);
        a?;
        b?;
        Ok(())
    }
}

/// What a client does at start (docs/clients.md, "Resuming after a restart"): asks where
/// it is seated and, if anywhere, plays that match out, or leaves the room if its match
/// has not started.
async fn settle(sim: &Sim, links: &Links, player: &Player) {
    let scheduled = Instant::now() + Duration::from_secs(1);
    sleep_until(scheduled).await;
    let answer = MatchmakingServiceClient::new(links.matchmaking.clone())
        .get_current_seat(authed(GetCurrentSeatRequest {}, &player.bearer))
        .await;
    if matches!(&answer, Err(status) if status.code() == tonic::Code::NotFound) {
        sim.rec
            .record("GetCurrentSeat", scheduled, Instant::now(), Ok(()));
        return;
    }
    sim.rec.rpc("GetCurrentSeat", scheduled, &answer);
    let Ok(seat) = answer.map(tonic::Response::into_inner) else {
        return;
    };
    if seat.started {
        let _ = seat::play(sim, links, player, &seat.room_id, Instant::now()).await;
    } else {
        seat::leave(sim, links, player, &seat.room_id, Instant::now()).await;
    }
}

/// Watching a friend: befriend the host of a room being played and spectate it for a
/// while (the computer instead when nothing is being played).
async fn watch(
    sim: &Sim,
    links: &Links,
    player: &Player,
    scheduled: Instant,
) -> Result<(), Failed> {
    // The host's copy holds the token it created the room with: its phone renews it
    // between activities, this copy cannot (a refresh rotates the refresh token), so a
    // host whose token is near its end is one not to ask now.
    let pick = {
        let rooms = lock(&sim.watchable);
        let fresh: Vec<&Watchable> = rooms
            .iter()
            .filter(|w| w.host.since.elapsed() < HOST_TOKEN_USABLE)
            .collect();
        (!fresh.is_empty()).then(|| fresh[rand::rng().random_range(0..fresh.len())].clone())
    };
    let Some(room) = pick else {
        sim.counters
            .nothing_to_watch
            .fetch_add(1, Ordering::Relaxed);
        return computer(sim, links, player, scheduled).await;
    };
    befriend(sim, links, player, &room.host, scheduled).await?;
    let now = Instant::now();
    let until = now + sim.behaviour.watch_for.pick(u());
    seat::watch(sim, links, player, &room.room_id, now, until).await?;
    Ok(())
}
