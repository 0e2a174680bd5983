//! The whole product through its public API: players sign up, meet in the queue, by a
//! private code, in the public lobby or against the computer, play to the end over the
//! streaming API, survive a dropped connection, and find the match rated, recorded and
//! replayable (by anyone when its room allowed spectators); a player away finds what
//! happened in their inbox.

use std::time::Duration;

use basra::player::{Command, Driver, command, play_room, resume_room};
use basra::session::Session;
use basra::table::Table;
use basra::{friends, lobby};
use basra_e2e::{Backend, spawn_backend, spawn_dev};
use basra_engine::bot::{self, Policy};
use basra_engine::{Action, Seat, Seed, Settings, replay};
use basra_proto::basra::accounts::v1::notice::Body as NoticeBody;
use basra_proto::basra::accounts::v1::watch_friends_response::Event as FeedEvent;
use basra_proto::basra::accounts::v1::{
    AcceptFriendRequest, Activity, AddFriendRequest, CountUnreadNoticesRequest, GetProfileRequest,
    GetReplayRequest, LeaderboardRequest, ListNoticesRequest, ListNoticesResponse,
    MatchHistoryRequest, NoticeKind, RegisterRequest, WatchFriendsResponse, add_friend_request,
};
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use basra_proto::basra::game::v1::play_request::Kind;
use basra_proto::basra::game::v1::play_response::Event as GameEvent;
use basra_proto::basra::game::v1::{AskRematchRequest, Join, PlayRequest};
use basra_proto::basra::matchmaking::v1::join_room_request::Target;
use basra_proto::basra::matchmaking::v1::{InviteFriendRequest, JoinRoomRequest};
use basra_records::{ActionKind, ActionRecord};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Each scenario runs against the services on their own ports with PostgreSQL and Redis,
/// against `basra dev` with its in-memory stores, and against `basra dev` with rooms and
/// the queue on a Redis Cluster.
macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        mod separate_services {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::spawn_backend().await.expect("backend")).await;
                }
            )*
        }
        mod basra_dev {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::spawn_dev().await.expect("basra dev")).await;
                }
            )*
        }
        mod basra_dev_on_a_redis_cluster {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::spawn_dev_on_a_cluster().await).await;
                }
            )*
        }
    };
}

/// `basra dev` with rooms and the queue on the test Redis Cluster (`REDIS_CLUSTER_URL`,
/// `make redis-cluster`), under key prefixes of this test alone (the temporary cluster
/// keeps them).
async fn spawn_dev_on_a_cluster() -> Backend {
    let url = basra_testkit::redis_cluster_url();
    let tag = uuid::Uuid::now_v7().simple().to_string();
    basra_e2e::spawn_dev_with(
        Some(url.clone()),
        vec![
            (
                "BASRA_GAME_SESSION_REDIS__PREFIX".to_owned(),
                format!("e2e-gs-{tag}"),
            ),
            (
                "BASRA_MATCHMAKING_REDIS__PREFIX".to_owned(),
                format!("e2e-mm-{tag}"),
            ),
            (
                "BASRA_ACCOUNTS_REDIS__PREFIX".to_owned(),
                format!("e2e-ac-{tag}"),
            ),
        ],
    )
    .await
    .unwrap_or_else(|err| {
        panic!("basra dev on the Redis Cluster at {url} (make redis-cluster): {err:#}")
    })
}

scenarios!(
    a_ranked_match_is_rated_recorded_and_replayable,
    players_meet_by_code_in_the_lobby_and_against_the_computer,
    a_dropped_connection_resumes_mid_match,
    friends_meet_by_invite_and_play_a_rematch,
    a_player_away_finds_their_notices_in_the_inbox,
    anyone_replays_a_match_that_allowed_spectators_not_a_private_one,
);

const GREEDY: Driver = Driver::Bot {
    policy: Policy::Greedy,
    delay: Duration::ZERO,
};
const RANDOM: Driver = Driver::Bot {
    policy: Policy::Random,
    delay: Duration::ZERO,
};

async fn register(backend: &Backend, username: &str) -> Session {
    let username = username.to_owned();
    Session::sign_in(&backend.endpoints, |mut accounts| async move {
        let response = accounts
            .register(RegisterRequest {
                username: username.clone(),
                password: "correct horse battery staple".into(),
                display_name: username,
            })
            .await?;
        Ok(response.into_inner().tokens)
    })
    .await
    .expect("registered")
}

async fn guest(backend: &Backend, device: &str) -> Session {
    backend.guest(device).await.expect("signed in")
}

fn short(target: u32) -> RuleSettings {
    RuleSettings {
        target_score: Some(target),
        ..RuleSettings::default()
    }
}

/// Waits until the outbox has delivered the player's match to accounts.
async fn history(session: &Session) -> Vec<basra_proto::basra::accounts::v1::MatchSummary> {
    for _ in 0..200 {
        let matches = session
            .accounts()
            .match_history(MatchHistoryRequest {
                page_size: 10,
                page_token: String::new(),
            })
            .await
            .expect("history")
            .into_inner()
            .matches;
        if !matches.is_empty() {
            return matches;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the match never reached accounts");
}

async fn a_ranked_match_is_rated_recorded_and_replayable(backend: Backend) {
    let tag = &uuid::Uuid::now_v7().simple().to_string()[20..];
    let alice = register(&backend, &format!("alice_{tag}")).await;
    let bob = register(&backend, &format!("bob_{tag}")).await;

    let (seat_a, seat_b) = tokio::join!(
        lobby::quick_match(&alice, true, false, 2),
        lobby::quick_match(&bob, true, false, 2)
    );
    let (seat_a, seat_b) = (seat_a.unwrap(), seat_b.unwrap());
    assert_eq!(seat_a.room_id, seat_b.room_id, "matched together");
    let (end_a, end_b) = tokio::join!(
        play_room(&alice, &seat_a.room_id, GREEDY),
        play_room(&bob, &seat_b.room_id, RANDOM)
    );
    let (end_a, end_b) = (end_a.unwrap(), end_b.unwrap());
    assert_eq!(end_a.totals, end_b.totals);
    let ended = end_a.ended.clone().unwrap();

    // Both find it in their history, ranked, with a rating change.
    let a_history = history(&alice).await;
    let b_history = history(&bob).await;
    assert_eq!(a_history[0].match_id, ended.match_id);
    assert_eq!(b_history[0].match_id, ended.match_id);
    assert!(a_history[0].ranked);
    let change = a_history[0].your_rating_change.clone().unwrap();
    assert_ne!(
        change.rating_before, change.rating_after,
        "the rating moved"
    );
    for player in [&alice, &bob] {
        let profile = player
            .accounts()
            .get_profile(GetProfileRequest {
                user_id: String::new(),
            })
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap();
        assert_eq!(profile.ranked_matches, 1);
        assert_ne!(profile.rating, 1500.0);
    }
    let board = alice
        .accounts()
        .leaderboard(LeaderboardRequest {
            page_size: 50,
            page_token: String::new(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let listed: Vec<&str> = board.entries.iter().map(|e| e.user_id.as_str()).collect();
    assert!(listed.contains(&alice.user_id.as_str()) && listed.contains(&bob.user_id.as_str()));
    assert!(
        board.season.is_some_and(|s| s.current),
        "the current season's leaderboard"
    );

    // Each player replays it move by move as a spectator saw it (no hand shown), to the
    // same end; the analysis of their plays comes beside it (pending or ready).
    for player in [&alice, &bob] {
        let replay = player
            .accounts()
            .get_replay(GetReplayRequest {
                match_id: ended.match_id.clone(),
                with_analysis: true,
            })
            .await
            .unwrap()
            .into_inner();
        let Some(GameEvent::MatchEnded(end)) = replay.events.last().and_then(|e| e.event.clone())
        else {
            panic!("a replay ends with the match's end");
        };
        assert_eq!(end.totals, ended.totals);
        assert!(replay.events.iter().all(|e| match &e.event {
            Some(GameEvent::HandDealt(deal)) => deal.cards.is_empty(),
            _ => true,
        }));
        assert!(replay.analysis.is_some());
    }

    // The stored record replays, from its seed and action log, to the same totals.
    let Some(db) = &backend.db else {
        // In memory there is no database to read the record from.
        return backend.stop().await.unwrap();
    };
    let (settings, seed, action_log, totals): (
        serde_json::Value,
        Vec<u8>,
        Vec<u8>,
        serde_json::Value,
    ) = sqlx::query_as(
        "SELECT settings, seed, action_log, final_totals FROM matches WHERE match_id = $1",
    )
    .bind(&ended.match_id)
    .fetch_one(db)
    .await
    .unwrap();
    let settings: Settings = serde_json::from_value(settings).unwrap();
    let seed = Seed(seed.try_into().expect("32 bytes"));
    assert_eq!(
        seed.0.as_slice(),
        ended.seed.as_slice(),
        "the revealed seed"
    );
    let log: Vec<ActionRecord> = accounts::action_log::decode(&action_log).unwrap();
    let actions: Vec<Action> = log
        .iter()
        .map(|record| match &record.action {
            ActionKind::Play { card, capture } => Action::Play {
                seat: Seat(record.seat),
                card: *card,
                take: capture
                    .as_ref()
                    .map(|cards| cards.iter().copied().collect()),
            },
            ActionKind::Resign => Action::Resign {
                seat: Seat(record.seat),
            },
        })
        .collect();
    let (game, _) = replay(settings, seed, &actions).expect("the log replays");
    let replayed = game.result().expect("the replay ends the match").totals;
    let stored: [u32; 2] = serde_json::from_value(totals).unwrap();
    assert_eq!(replayed, stored);
    assert_eq!(replayed, end_a.totals);
    backend.stop().await.unwrap();
}

async fn players_meet_by_code_in_the_lobby_and_against_the_computer(backend: Backend) {
    let ana = guest(&backend, "e2e-ana").await;
    let ben = guest(&backend, "e2e-ben").await;

    // A private room, joined by its code.
    let created = lobby::create_room(
        &ana,
        RoomVisibility::Private,
        Vec::new(),
        BotLevel::Unspecified,
        short(30),
    )
    .await
    .unwrap();
    let code = created.join_code.clone().expect("a code");
    let joined = lobby::join(&ben, Target::JoinCode(code.clone()))
        .await
        .unwrap();
    assert_eq!(joined.room_id, created.room_id);
    let (a, b) = tokio::join!(
        play_room(&ana, &created.room_id, GREEDY),
        play_room(&ben, &joined.room_id, GREEDY)
    );
    assert_eq!(a.unwrap().totals, b.unwrap().totals);
    // The code still finds the room, whose match has ended: it takes nobody now, not
    // even a player of it (a join would seat them at a finished table).
    for (who, player) in [
        ("a stranger", guest(&backend, "e2e-cara").await),
        ("ben", ben.clone()),
    ] {
        let err = lobby::join(&player, Target::JoinCode(code.clone()))
            .await
            .unwrap_err();
        let status = err.downcast_ref::<tonic::Status>().expect("a gRPC status");
        assert_eq!(
            status.code(),
            tonic::Code::FailedPrecondition,
            "{who}: {status}"
        );
    }

    // A public room, found in the lobby.
    let public = lobby::create_room(
        &ana,
        RoomVisibility::Public,
        Vec::new(),
        BotLevel::Unspecified,
        short(30),
    )
    .await
    .unwrap();
    let rooms = lobby::public_rooms(&ben).await.unwrap();
    let listed = rooms
        .iter()
        .find(|room| room.room_id == public.room_id)
        .expect("the room is in the lobby");
    let joined = lobby::join(&ben, Target::RoomId(listed.room_id.clone()))
        .await
        .unwrap();
    let (a, b) = tokio::join!(
        play_room(&ana, &public.room_id, GREEDY),
        play_room(&ben, &joined.room_id, RANDOM)
    );
    assert_eq!(a.unwrap().totals, b.unwrap().totals);
    let rooms = lobby::public_rooms(&ben).await.unwrap();
    assert!(
        rooms.iter().all(|room| room.room_id != public.room_id),
        "a full room leaves the lobby"
    );

    // Against the computer, at the level chosen; the table names the bot by its level.
    let computer = lobby::create_room(
        &ana,
        RoomVisibility::Private,
        vec![1],
        BotLevel::Easy,
        short(30),
    )
    .await
    .unwrap();
    let table = play_room(&ana, &computer.room_id, GREEDY).await.unwrap();
    assert!(table.totals.iter().any(|&t| t >= 30));
    assert_eq!(table.names[1], "Bot (easy)");
    backend.stop().await.unwrap();
}

/// Plays a match in a new room of `visibility` between `host` and `guest` (the public room
/// from the lobby, the private one by its code); answers its match id once recorded.
async fn played_in(visibility: RoomVisibility, host: &Session, other: &Session) -> String {
    let created = lobby::create_room(
        host,
        visibility,
        Vec::new(),
        BotLevel::Unspecified,
        short(30),
    )
    .await
    .unwrap();
    let target = match &created.join_code {
        Some(code) => Target::JoinCode(code.clone()),
        None => Target::RoomId(created.room_id.clone()),
    };
    let joined = lobby::join(other, target).await.unwrap();
    let (a, b) = tokio::join!(
        play_room(host, &created.room_id, GREEDY),
        play_room(other, &joined.room_id, RANDOM)
    );
    b.unwrap();
    let match_id = a.unwrap().ended.expect("the match ended").match_id;
    for _ in 0..200 {
        if history(host).await.iter().any(|m| m.match_id == match_id) {
            return match_id;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("match {match_id} never reached accounts");
}

async fn anyone_replays_a_match_that_allowed_spectators_not_a_private_one(backend: Backend) {
    let tag = &uuid::Uuid::now_v7().simple().to_string()[20..];
    let ana = guest(&backend, &format!("e2e-watched-ana-{tag}")).await;
    let ben = guest(&backend, &format!("e2e-watched-ben-{tag}")).await;
    let cara = guest(&backend, &format!("e2e-watched-cara-{tag}")).await;
    // A public room allows spectators (the lobby's rule); a private one does not.
    let public = played_in(RoomVisibility::Public, &ana, &ben).await;
    let private = played_in(RoomVisibility::Private, &ana, &ben).await;
    let replay = |session: &Session, match_id: &str| {
        let mut accounts = session.accounts();
        let request = GetReplayRequest {
            match_id: match_id.to_owned(),
            with_analysis: true,
        };
        async move { accounts.get_replay(request).await.map(|r| r.into_inner()) }
    };

    // Cara, who did not play, replays the public match as its spectators saw it: the
    // same events as its players get, no analysis.
    let watched = replay(&cara, &public)
        .await
        .expect("a public match replays");
    assert!(watched.spectator);
    assert!(watched.analysis.is_none());
    let played = replay(&ana, &public).await.unwrap();
    assert!(!played.spectator);
    assert!(played.analysis.is_some());
    assert_eq!(watched.events, played.events);
    assert!(matches!(
        watched.events.last().and_then(|e| e.event.clone()),
        Some(GameEvent::MatchEnded(_))
    ));
    // The private match is its players' alone.
    let refused = replay(&cara, &private).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused}");
    assert!(!replay(&ben, &private).await.unwrap().spectator);

    // What the database keeps says who may replay.
    if let Some(db) = &backend.db {
        for (match_id, allowed) in [(&public, true), (&private, false)] {
            let (allow, event): (bool, Option<String>) = sqlx::query_as(
                "SELECT allow_spectators, event_id FROM matches WHERE match_id = $1",
            )
            .bind(match_id)
            .fetch_one(db)
            .await
            .unwrap();
            assert_eq!((allow, event), (allowed, None));
        }
    }
    backend.stop().await.unwrap();
}

async fn a_dropped_connection_resumes_mid_match(backend: Backend) {
    let ana = guest(&backend, "e2e-drop-ana").await;
    let ben = guest(&backend, "e2e-drop-ben").await;
    let created = lobby::create_room(
        &ana,
        RoomVisibility::Private,
        Vec::new(),
        BotLevel::Unspecified,
        short(60),
    )
    .await
    .unwrap();
    lobby::join(&ben, Target::JoinCode(created.join_code.clone().unwrap()))
        .await
        .unwrap();
    let room = created.room_id.clone();
    let ben_plays = tokio::spawn({
        let ben = ben.clone();
        let room = room.clone();
        async move { play_room(&ben, &room, GREEDY).await }
    });

    // Ana plays a few cards by hand over a raw stream, then the connection drops.
    let (tx, rx) = mpsc::channel(16);
    tx.send(PlayRequest {
        kind: Some(Kind::Join(Join {
            room_id: room.clone(),
            last_seen_seq: None,
            spectate: false,
        })),
    })
    .await
    .unwrap();
    let mut stream = ana
        .game()
        .play(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    let mut table = Table::default();
    let mut rng = rand_free_seed();
    let mut played = 0;
    let mut answered = None;
    while played < 5 {
        let event = stream
            .message()
            .await
            .unwrap()
            .expect("the stream stays open");
        table.apply(&event).unwrap();
        if table.my_turn() && answered != table.last_seq {
            answered = table.last_seq;
            let Some(Action::Play { card, .. }) =
                bot::choose(Policy::Greedy, &table.view(), &mut rng)
            else {
                panic!("a play");
            };
            let Command::Send(message) = command(&table, &card.to_string()) else {
                panic!("a card in hand is a play");
            };
            tx.send(message).await.unwrap();
            played += 1;
        }
    }
    let seen = table.last_seq.expect("events were seen");
    drop(stream);
    drop(tx);

    // She comes back with the last sequence she saw and finishes the match.
    let resumed = resume_room(&ana, &room, GREEDY, table).await.unwrap();
    assert!(resumed.last_seq.unwrap() > seen);
    let ben_end = ben_plays.await.unwrap().unwrap();
    assert_eq!(resumed.totals, ben_end.totals);
    assert_eq!(resumed.ended.unwrap().seed, ben_end.ended.unwrap().seed);
    backend.stop().await.unwrap();
}

fn rand_free_seed() -> rand_chacha::ChaCha8Rng {
    use rand_core::SeedableRng;
    rand_chacha::ChaCha8Rng::seed_from_u64(7)
}

/// `basra dev` gives each service its own settings through `BASRA_<SERVICE>_…` variables:
/// here each Redis store writes under the key prefix its own variable names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basra_dev_gives_each_service_its_own_settings() {
    let redis_url = basra_testkit::redis_url();
    let tag = uuid::Uuid::now_v7().simple().to_string();
    let (rooms_prefix, queue_prefix) = (format!("e2e-gs-{tag}"), format!("e2e-mm-{tag}"));
    let backend = basra_e2e::spawn_dev_with(
        Some(redis_url.clone()),
        vec![
            (
                "BASRA_GAME_SESSION_REDIS__PREFIX".to_owned(),
                rooms_prefix.clone(),
            ),
            (
                "BASRA_MATCHMAKING_REDIS__PREFIX".to_owned(),
                queue_prefix.clone(),
            ),
        ],
    )
    .await
    .expect("basra dev with Redis (REDIS_URL)");
    let ana = guest(&backend, &format!("e2e-dev-{tag}")).await;
    lobby::create_room(
        &ana,
        RoomVisibility::Private,
        Vec::new(),
        BotLevel::Unspecified,
        short(30),
    )
    .await
    .unwrap();
    backend.stop().await.unwrap();

    let mut redis = redis::Client::open(redis_url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    for prefix in [rooms_prefix, queue_prefix] {
        let deleted = basra_e2e::delete_keys(&mut redis, &format!("{prefix}:*"))
            .await
            .unwrap();
        assert!(deleted > 0, "nothing was written under {prefix}");
    }
}

/// Reads `feed` until `pick` accepts an event (within 10 s).
async fn on_feed<T>(
    feed: &mut tonic::Streaming<WatchFriendsResponse>,
    what: &str,
    pick: impl Fn(&WatchFriendsResponse) -> Option<T>,
) -> T {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let event = feed
                .message()
                .await
                .expect("the feed goes on")
                .expect("the feed is open");
            if let Some(found) = pick(&event) {
                return found;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {what} on the feed"))
}

/// `asker` and `other` (username `username`) become friends.
async fn befriend(asker: &Session, other: &Session, username: &str) {
    asker
        .accounts()
        .add_friend(AddFriendRequest {
            target: Some(add_friend_request::Target::Username(username.into())),
        })
        .await
        .unwrap();
    other
        .accounts()
        .accept_friend(AcceptFriendRequest {
            user_id: asker.user_id.clone(),
        })
        .await
        .unwrap();
}

/// What a presence change says `user_id` is doing.
fn activity_of(user_id: &str) -> impl Fn(&WatchFriendsResponse) -> Option<Activity> {
    let user_id = user_id.to_owned();
    move |event| match &event.event {
        Some(FeedEvent::PresenceChanged(p)) if p.friend.as_ref()?.user_id == user_id => {
            Some(p.presence.as_ref()?.activity())
        }
        _ => None,
    }
}

/// Two players become friends, one invites the other to a private room from the live
/// feed, they play, see each other in the match, and play again in one call each.
async fn friends_meet_by_invite_and_play_a_rematch(backend: Backend) {
    let ana = register(&backend, "e2e_ana").await;
    let ben = register(&backend, "e2e_ben").await;
    let mut ben_feed = friends::watch(&ben, 0).await.unwrap();
    let mut ana_feed = friends::watch(&ana, 0).await.unwrap();

    // A friend request, seen live, accepted.
    ana.accounts()
        .add_friend(AddFriendRequest {
            target: Some(add_friend_request::Target::Username("e2e_ben".into())),
        })
        .await
        .unwrap();
    let asker = on_feed(&mut ben_feed, "friend request", |e| match &e.event {
        Some(FeedEvent::FriendRequest(f)) => Some(f.user_id.clone()),
        _ => None,
    })
    .await;
    assert_eq!(asker, ana.user_id);
    ben.accounts()
        .accept_friend(AcceptFriendRequest {
            user_id: ana.user_id.clone(),
        })
        .await
        .unwrap();
    on_feed(&mut ana_feed, "friend added", |e| match &e.event {
        Some(FeedEvent::FriendAdded(f)) if f.user_id == ben.user_id => Some(()),
        _ => None,
    })
    .await;

    // An invite to a private room; ben joins with the code it carries, in one call.
    let created = lobby::create_room(
        &ana,
        RoomVisibility::Private,
        Vec::new(),
        BotLevel::Unspecified,
        short(30),
    )
    .await
    .unwrap();
    friends::invite(&ana, &created.room_id, &ben.user_id)
        .await
        .unwrap();
    let invite = on_feed(&mut ben_feed, "invite", |e| match &e.event {
        Some(FeedEvent::Invite(i)) => Some(i.clone()),
        _ => None,
    })
    .await;
    assert_eq!(invite.room_id, created.room_id);
    assert_eq!(invite.from.unwrap().user_id, ana.user_id);
    let joined = lobby::join(&ben, Target::JoinCode(invite.join_code.clone()))
        .await
        .unwrap();
    assert_eq!(joined.room_id, created.room_id);

    // They play, at a pace a friend can see (a change reaches accounts within 250 ms);
    // ana sees ben in the match on her feed.
    let paced = Driver::Bot {
        policy: Policy::Greedy,
        delay: Duration::from_millis(100),
    };
    let (a, b, seen) = tokio::join!(
        play_room(&ana, &created.room_id, paced),
        play_room(&ben, &joined.room_id, paced),
        on_feed(&mut ana_feed, "ben in the match", |e| {
            (activity_of(&ben.user_id)(e)? == Activity::InMatch).then_some(())
        }),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.totals, b.totals);
    let () = seen;
    let first = a.ended.expect("the first match ended").match_id;

    // The match has ended: its room seats nobody, not even ben with the invite's code
    // (a page that offers the old invite again), and takes no new invite.
    let cyd = register(&backend, "e2e_cyd").await;
    befriend(&ana, &cyd, "e2e_cyd").await;
    let join = ben
        .matchmaking()
        .join_room(JoinRoomRequest {
            target: Some(Target::JoinCode(invite.join_code.clone())),
            preferred_seat: None,
        })
        .await
        .expect_err("a join to a room whose match has ended is refused");
    assert_eq!(join.code(), tonic::Code::FailedPrecondition, "{join:?}");
    let invited = ana
        .matchmaking()
        .invite_friend(InviteFriendRequest {
            room_id: created.room_id.clone(),
            user_id: cyd.user_id.clone(),
        })
        .await
        .expect_err("an invite to a room whose match has ended is refused");
    assert_eq!(
        invited.code(),
        tonic::Code::FailedPrecondition,
        "{invited:?}"
    );

    // A rematch: one call each, then the same room plays a new match.
    for player in [&ana, &ben] {
        player
            .game()
            .ask_rematch(AskRematchRequest {
                room_id: created.room_id.clone(),
            })
            .await
            .unwrap();
    }
    let (a, b) = tokio::join!(
        play_room(&ana, &created.room_id, GREEDY),
        play_room(&ben, &created.room_id, RANDOM)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.totals, b.totals);
    let second = a.ended.expect("the rematch ended").match_id;
    assert_ne!(first, second, "a new match, not the old one again");
    backend.stop().await.unwrap();
}

/// The kept notices of `session`, newest first, once they number `at_least`: a match's
/// result reaches accounts through game-session's outbox (within 20 s).
async fn inbox(session: &Session, at_least: usize) -> ListNoticesResponse {
    for _ in 0..200 {
        let page = session
            .accounts()
            .list_notices(ListNoticesRequest::default())
            .await
            .expect("ListNotices")
            .into_inner();
        if page.notices.len() >= at_least {
            return page;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("fewer than {at_least} notices after 20 s");
}

/// Nobody holds a feed open: the friend request, the acceptance, the invite and the
/// result of the match they play are each kept in the inbox, listed newest first, marked
/// read, and replayed once on the feed opened afterwards.
async fn a_player_away_finds_their_notices_in_the_inbox(backend: Backend) {
    let ana = register(&backend, "inbox_ana").await;
    let ben = register(&backend, "inbox_ben").await;
    befriend(&ana, &ben, "inbox_ben").await;
    let created = lobby::create_room(
        &ana,
        RoomVisibility::Private,
        Vec::new(),
        BotLevel::Unspecified,
        short(30),
    )
    .await
    .unwrap();
    friends::invite(&ana, &created.room_id, &ben.user_id)
        .await
        .unwrap();
    let page = inbox(&ben, 2).await;
    let Some(NoticeBody::Invite(invite)) = &page.notices[0].body else {
        panic!("the invite is the newest: {page:?}");
    };
    assert_eq!(invite.room_id, created.room_id);
    let joined = lobby::join(&ben, Target::JoinCode(invite.join_code.clone()))
        .await
        .unwrap();
    let (a, b) = tokio::join!(
        play_room(&ana, &created.room_id, GREEDY),
        play_room(&ben, &joined.room_id, GREEDY)
    );
    let played = a.unwrap().ended.expect("the match ended").match_id;
    assert_eq!(b.unwrap().ended.expect("ended").match_id, played);

    // ben's inbox: the match's result, the invite, the request; all unread.
    let page = inbox(&ben, 3).await;
    let kinds: Vec<NoticeKind> = page.notices.iter().map(|n| n.kind()).collect();
    assert_eq!(
        kinds,
        [
            NoticeKind::MatchResult,
            NoticeKind::Invite,
            NoticeKind::FriendRequest
        ]
    );
    let Some(NoticeBody::MatchResult(result)) = &page.notices[0].body else {
        panic!("a match result: {:?}", page.notices[0]);
    };
    assert_eq!(result.match_id, played);
    assert_eq!(page.unread_count, 3);
    // ana's: her match's result and ben's acceptance.
    let hers = inbox(&ana, 2).await;
    let kinds: Vec<NoticeKind> = hers.notices.iter().map(|n| n.kind()).collect();
    assert_eq!(kinds, [NoticeKind::MatchResult, NoticeKind::FriendAdded]);

    // `basra inbox read --all`, then the count is 0 and the list says read.
    basra::inbox::run(
        &ben,
        Some(basra::inbox::InboxCommand::Read {
            ids: Vec::new(),
            all: true,
        }),
    )
    .await
    .unwrap();
    let count = ben
        .accounts()
        .count_unread_notices(CountUnreadNoticesRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(count.unread_count, 0);
    assert!(inbox(&ben, 3).await.notices.iter().all(|n| n.read));

    // ben opens his feed from the start: each notice comes once, with its id, oldest
    // first, after a snapshot that counts none unread.
    let mut feed = friends::watch(&ben, 0).await.unwrap();
    let mut seen = Vec::new();
    while let Ok(message) = tokio::time::timeout(Duration::from_secs(1), feed.message()).await {
        let Some(event) = message.expect("the feed goes on") else {
            break;
        };
        if let Some(FeedEvent::Snapshot(snapshot)) = &event.event {
            assert_eq!(snapshot.unread_notices, 0);
            assert_eq!(snapshot.newest_notice_id, page.notices[0].id);
        }
        if event.notice_id != 0 {
            seen.push(event.notice_id);
        }
    }
    let mut oldest_first: Vec<u64> = page.notices.iter().map(|n| n.id).collect();
    oldest_first.reverse();
    assert_eq!(seen, oldest_first);
    backend.stop().await.unwrap();
}
