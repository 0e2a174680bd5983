//! Push notifications end to end, through `basra dev` and through the separate services
//! as `deploy/` configures them, with FCM a local stand-in (basra-testkit's): a player
//! whose app is closed gets a friend request and an invite on their device, in its
//! language, and nothing while their app holds the friends' feed.

use std::time::Duration;

use basra::session::{Endpoints, Session};
use basra::{friends, lobby};
use basra_proto::basra::accounts::v1::watch_friends_response::Event as FeedEvent;
use basra_proto::basra::accounts::v1::{
    AcceptFriendRequest, Activity, AddFriendRequest, PushPlatform, RegisterPushTokenRequest,
    RegisterRequest, WatchFriendsResponse, add_friend_request,
};
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use basra_push::{Locale, Notice};
use basra_testkit::push::FcmStandIn;

use crate::deployed::spawn_deployed_with;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basra_dev_pushes_to_a_closed_app() {
    let fcm = FcmStandIn::start().await;
    let mut env = vec![
        ("BASRA_ACCOUNTS_PUSH__ENABLED".to_owned(), "true".to_owned()),
        (
            "BASRA_ACCOUNTS_PUSH__QUIET_START".to_owned(),
            "00:00".to_owned(),
        ),
        (
            "BASRA_ACCOUNTS_PUSH__QUIET_END".to_owned(),
            "00:00".to_owned(),
        ),
    ];
    env.extend(
        fcm.env()
            .into_iter()
            .map(|(k, v)| (k.replacen("BASRA_", "BASRA_ACCOUNTS_", 1), v)),
    );
    let backend = basra_e2e::spawn_dev_with(None, env)
        .await
        .expect("basra dev");
    a_closed_app_gets_requests_and_invites_as_pushes(&backend.endpoints, &fcm).await;
    backend.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deployed_services_push_to_a_closed_app() {
    let fcm = FcmStandIn::start().await;
    let settings = fcm.settings();
    let deployed = spawn_deployed_with(|accounts| {
        accounts.push.enabled = true;
        accounts.push.quiet_start = "00:00".into();
        accounts.push.quiet_end = "00:00".into();
        accounts.push.fcm = Some(settings);
    })
    .await;
    a_closed_app_gets_requests_and_invites_as_pushes(&deployed.endpoints, &fcm).await;
    deployed.stop().await;
}

async fn register(endpoints: &Endpoints, username: &str) -> Session {
    let username = username.to_owned();
    Session::sign_in(endpoints, |mut accounts| async move {
        let response = accounts
            .register(RegisterRequest {
                username,
                password: "correct horse battery".into(),
                ..Default::default()
            })
            .await?;
        Ok(response.into_inner().tokens)
    })
    .await
    .expect("registered")
}

/// Waits (10 s at most) until the stand-in accepted `n` sends.
async fn accepted(fcm: &FcmStandIn, n: usize) -> serde_json::Value {
    for _ in 0..500 {
        let accepted = fcm.accepted();
        if accepted.len() >= n {
            return accepted[n - 1].json()["message"].clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("push {n} did not reach the stand-in");
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
                .expect("open");
            if let Some(found) = pick(&event) {
                return found;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {what} on the feed"))
}

async fn a_closed_app_gets_requests_and_invites_as_pushes(endpoints: &Endpoints, fcm: &FcmStandIn) {
    let tag = &uuid::Uuid::now_v7().simple().to_string()[22..];
    let (ana_name, ben_name) = (format!("pa_{tag}"), format!("pb_{tag}"));
    let ana = register(endpoints, &ana_name).await;
    let ben = register(endpoints, &ben_name).await;
    ben.accounts()
        .register_push_token(RegisterPushTokenRequest {
            platform: PushPlatform::Fcm as i32,
            token: format!("fcm-{tag}"),
            app_id: "online.basra.app".into(),
            locale: "ar-EG".into(),
            app_version: "3.0.0".into(),
            utc_offset_minutes: 120,
        })
        .await
        .expect("the device registered");

    // Ben's app is closed: ana's friend request reaches his phone, in Arabic.
    ana.accounts()
        .add_friend(AddFriendRequest {
            target: Some(add_friend_request::Target::Username(ben_name.clone())),
        })
        .await
        .unwrap();
    let message = accepted(fcm, 1).await;
    assert_eq!(message["token"], format!("fcm-{tag}"));
    assert_eq!(message["data"]["kind"], "friend_request");
    assert_eq!(message["data"]["user_id"], ana.user_id.as_str());
    let text = Notice::FriendRequest {
        from: ana_name.clone(),
    }
    .text(Locale::Ar);
    assert_eq!(message["notification"]["title"], text.title.as_str());
    assert_eq!(message["notification"]["body"], text.body.as_str());

    // Ben opens the app (his feed) and accepts; ana invites him to a room while it is
    // open: the feed shows it, nothing is pushed.
    let mut ben_feed = friends::watch(&ben, 0).await.unwrap();
    let mut ana_feed = friends::watch(&ana, 0).await.unwrap();
    ben.accounts()
        .accept_friend(AcceptFriendRequest {
            user_id: ana.user_id.clone(),
        })
        .await
        .unwrap();
    let rules = RuleSettings {
        target_score: Some(30),
        ..Default::default()
    };
    let room = lobby::create_room(
        &ana,
        RoomVisibility::Private,
        Vec::new(),
        BotLevel::Unspecified,
        rules,
    )
    .await
    .unwrap();
    friends::invite(&ana, &room.room_id, &ben.user_id)
        .await
        .unwrap();
    on_feed(&mut ben_feed, "the invite", |e| match &e.event {
        Some(FeedEvent::Invite(i)) => Some(i.room_id.clone()),
        _ => None,
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        fcm.sends().len(),
        1,
        "nothing pushed while the feed is open"
    );

    // Ben closes the app: once his friends see him offline, the next invite is pushed.
    drop(ben_feed);
    let ben_id = ben.user_id.clone();
    on_feed(&mut ana_feed, "ben offline", move |e| match &e.event {
        Some(FeedEvent::PresenceChanged(p))
            if p.friend.as_ref()?.user_id == ben_id
                && p.presence.as_ref()?.activity() == Activity::Offline =>
        {
            Some(())
        }
        _ => None,
    })
    .await;
    friends::invite(&ana, &room.room_id, &ben.user_id)
        .await
        .unwrap();
    let message = accepted(fcm, 2).await;
    assert_eq!(message["data"]["kind"], "room_invite");
    assert_eq!(message["data"]["room_id"], room.room_id.as_str());
    assert_eq!(message["android"]["priority"], "HIGH");
    assert!(message["android"]["collapse_key"].as_str().is_some());
}
