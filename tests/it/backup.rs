//! The PostgreSQL backup, rehearsed (deploy/README.md, "Back up and restore PostgreSQL"):
//! players register, become friends and play a recorded match; `pg_dump` (custom format)
//! of the accounts database; `pg_restore` into a fresh database; the migrations on the
//! restored database have nothing left to apply; a new accounts server on it signs the
//! same players in by password and answers the same profiles, friends and match
//! histories as before. Needs `pg_dump` and `pg_restore` of the server's major version
//! on PATH (`postgresql-client`); fails when they are missing.

use std::process::Command;
use std::time::Duration;

use accounts::{AccountsApi, PgStore};
use basra::lobby;
use basra::player::{Driver, play_room};
use basra::session::{Endpoints, Session};
use basra_e2e::spawn_backend;
use basra_engine::bot::Policy;
use basra_platform::auth::SigningKey;
use basra_proto::basra::accounts::v1::{
    AcceptFriendRequest, AddFriendRequest, GetProfileRequest, ListFriendsRequest, LoginRequest,
    MatchHistoryRequest, RegisterRequest, add_friend_request,
};
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

const PASSWORD: &str = "correct horse battery staple";

/// What accounts answers a player about themselves: profile, friends, history.
async fn snapshot(session: &Session) -> String {
    let mut accounts = session.accounts();
    let profile = accounts
        .get_profile(GetProfileRequest {
            user_id: String::new(),
        })
        .await
        .expect("profile")
        .into_inner();
    let friends = accounts
        .list_friends(ListFriendsRequest::default())
        .await
        .expect("friends")
        .into_inner();
    let history = accounts
        .match_history(MatchHistoryRequest {
            page_size: 50,
            page_token: String::new(),
        })
        .await
        .expect("history")
        .into_inner();
    format!("{profile:?}\n{friends:?}\n{history:?}")
}

async fn sign_in(endpoints: &Endpoints, username: &str, register: bool) -> Session {
    let username = username.to_owned();
    Session::sign_in(endpoints, |mut accounts| async move {
        let tokens = if register {
            accounts
                .register(RegisterRequest {
                    username: username.clone(),
                    password: PASSWORD.into(),
                    display_name: username,
                })
                .await?
                .into_inner()
                .tokens
        } else {
            accounts
                .login(LoginRequest {
                    username,
                    password: PASSWORD.into(),
                })
                .await?
                .into_inner()
                .tokens
        };
        Ok(tokens)
    })
    .await
    .expect("signed in")
}

fn run(tool: &str, args: &[&str]) {
    let out = Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{tool} is needed on PATH (postgresql-client): {e}"));
    assert!(
        out.status.success(),
        "{tool} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_dump_serves_the_same_profiles_friends_and_histories() {
    let backend = spawn_backend().await.expect("backend");
    let tag = &uuid::Uuid::now_v7().simple().to_string()[20..];
    let (ana_name, ben_name) = (format!("bk_ana_{tag}"), format!("bk_ben_{tag}"));
    let ana = sign_in(&backend.endpoints, &ana_name, true).await;
    let ben = sign_in(&backend.endpoints, &ben_name, true).await;
    ana.accounts()
        .add_friend(AddFriendRequest {
            target: Some(add_friend_request::Target::Username(ben_name.clone())),
        })
        .await
        .expect("asked");
    ben.accounts()
        .accept_friend(AcceptFriendRequest {
            user_id: ana.user_id.clone(),
        })
        .await
        .expect("accepted");
    for player in [&ana, &ben] {
        let rules = RuleSettings {
            target_score: Some(11),
            ..RuleSettings::default()
        };
        let room = lobby::create_room(
            player,
            RoomVisibility::Private,
            vec![1],
            BotLevel::Hard,
            rules,
        )
        .await
        .expect("room");
        let bot = Driver::Bot {
            policy: Policy::Greedy,
            delay: Duration::ZERO,
        };
        play_room(player, &room.room_id, bot).await.expect("played");
    }
    // Both records delivered by game-session's outbox.
    let mut before = Vec::new();
    for player in [&ana, &ben] {
        let mut recorded = false;
        for _ in 0..200 {
            let history = player
                .accounts()
                .match_history(MatchHistoryRequest {
                    page_size: 1,
                    page_token: String::new(),
                })
                .await
                .unwrap()
                .into_inner();
            if !history.matches.is_empty() {
                recorded = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(recorded, "the match reached accounts");
        before.push(snapshot(player).await);
    }
    assert!(before[0].contains(&ben_name), "ana's friends name ben");

    // Back up, restore into a fresh database.
    let db = backend.db.as_ref().expect("PostgreSQL");
    let options = db.connect_options();
    let source = options.get_database().expect("a database").to_owned();
    let admin_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let (base, _) = admin_url.rsplit_once('/').unwrap();
    let restored = format!("{source}_restored");
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("accounts.dump");
    run(
        "pg_dump",
        &[
            "--format=custom",
            "--no-owner",
            "--file",
            dump.to_str().unwrap(),
            &format!("{base}/{source}"),
        ],
    );
    let admin = PgPool::connect(&admin_url).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {restored}")))
        .execute(&admin)
        .await
        .unwrap();
    run(
        "pg_restore",
        &[
            "--no-owner",
            "--exit-on-error",
            "--dbname",
            &format!("{base}/{restored}"),
            dump.to_str().unwrap(),
        ],
    );

    // A new accounts server on the restored database, with a key of its own.
    let store = PgStore::connect(&format!("{base}/{restored}"), 4)
        .await
        .expect("restored database");
    store
        .migrate()
        .await
        .expect("the restored schema is the migrations' own: nothing to apply");
    let settings = accounts::Settings::load().unwrap();
    let config = accounts::service_config(&settings, SigningKey::generate()).unwrap();
    let service = AccountsApi::new(store, config);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let server = tokio::spawn(accounts::serve(
        listener,
        service,
        stop.clone(),
        Duration::from_secs(1),
    ));
    let endpoints = Endpoints {
        accounts: url,
        ..backend.endpoints.clone()
    };
    let ana_again = sign_in(&endpoints, &ana_name, false).await;
    let ben_again = sign_in(&endpoints, &ben_name, false).await;
    assert_eq!(ana_again.user_id, ana.user_id, "the same account");
    assert_eq!(ben_again.user_id, ben.user_id, "the same account");
    assert_eq!(snapshot(&ana_again).await, before[0]);
    assert_eq!(snapshot(&ben_again).await, before[1]);

    stop.cancel();
    server.await.unwrap().unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {restored} WITH (FORCE)"
    )))
    .execute(&admin)
    .await
    .unwrap();
    backend.stop().await.unwrap();
}
