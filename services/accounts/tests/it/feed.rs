//! The friends' feed (WatchFriends), ReportPresence and SendInvite through real tonic
//! clients: on PostgreSQL (a fresh database per test) and on the in-memory store.

use std::time::Duration;

use crate::helpers::{TestApp, authed, spawn_app, test_settings, tokens};
use accounts::store::Store;
use basra_proto::basra::accounts::v1 as pb;
use pb::watch_friends_response::Event;
use tonic::{Code, Streaming};

on_both_stores! {
    cases in cases {
        the_feed_shows_requests_friends_presence_and_invites_and_resumes,
        bad_feed_presence_and_invite_input_gets_clear_statuses,
        a_friend_whose_reports_stop_goes_offline_by_themselves,
    }
}

async fn register<S: Store>(app: &TestApp<S>, username: &str) -> pb::AuthTokens {
    tokens(
        app.client()
            .await
            .register(pb::RegisterRequest {
                username: username.into(),
                password: "correct horse battery".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .tokens,
    )
}

async fn feed<S: Store>(
    app: &TestApp<S>,
    token: &str,
    last_seen_seq: u64,
) -> Streaming<pb::WatchFriendsResponse> {
    app.client()
        .await
        .watch_friends(authed(pb::WatchFriendsRequest { last_seen_seq }, token))
        .await
        .expect("the feed opens")
        .into_inner()
}

/// `asker` asks the player `username` (signed in as `other`) to be friends; they accept.
async fn befriend<S: Store>(
    app: &TestApp<S>,
    asker: &pb::AuthTokens,
    other: &pb::AuthTokens,
    username: &str,
) {
    let mut client = app.client().await;
    client
        .add_friend(authed(
            pb::AddFriendRequest {
                target: Some(pb::add_friend_request::Target::Username(username.into())),
            },
            &asker.access_token,
        ))
        .await
        .unwrap();
    client
        .accept_friend(authed(
            pb::AcceptFriendRequest {
                user_id: asker.user_id.clone(),
            },
            &other.access_token,
        ))
        .await
        .unwrap();
}

/// Reads the feed until an event `pick` accepts (within 3 s), skipping others.
async fn until<T>(
    feed: &mut Streaming<pb::WatchFriendsResponse>,
    what: &str,
    pick: impl Fn(&pb::WatchFriendsResponse) -> Option<T>,
) -> T {
    tokio::time::timeout(Duration::from_secs(3), async {
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
    .unwrap_or_else(|_| panic!("no {what} on the feed within 3 s"))
}

fn snapshot(event: &pb::WatchFriendsResponse) -> Option<pb::FriendsSnapshot> {
    match &event.event {
        Some(Event::Snapshot(s)) => Some(s.clone()),
        _ => None,
    }
}

/// The presence a `presence_changed` event gives `user_id`.
fn presence_of(user_id: &str) -> impl Fn(&pb::WatchFriendsResponse) -> Option<pb::Presence> {
    let user_id = user_id.to_owned();
    move |event| match &event.event {
        Some(Event::PresenceChanged(p)) if p.friend.as_ref()?.user_id == user_id => {
            p.presence.clone()
        }
        _ => None,
    }
}

fn presence(activity: pb::Activity, room_id: &str) -> pb::Presence {
    pb::Presence {
        activity: activity as i32,
        room_id: room_id.into(),
    }
}

fn report(user_id: &str, activity: pb::Activity, room_id: &str, ended: bool) -> pb::PresenceReport {
    pb::PresenceReport {
        user_id: user_id.into(),
        activity: activity as i32,
        room_id: room_id.into(),
        ended,
        spectatable: true,
    }
}

fn invite(from: &str, to: &str) -> pb::SendInviteRequest {
    pb::SendInviteRequest {
        from_user_id: from.into(),
        to_user_id: to.into(),
        room_id: "room-42".into(),
        join_code: "ABC234".into(),
        settings: None,
        expires_at: Some(prost_types::Timestamp {
            seconds: chrono::Utc::now().timestamp() + 600,
            nanos: 0,
        }),
    }
}

fn code<T: std::fmt::Debug>(result: Result<tonic::Response<T>, tonic::Status>) -> Code {
    result.expect_err("the call should fail").code()
}

mod cases {
    use super::*;

    pub(super) async fn the_feed_shows_requests_friends_presence_and_invites_and_resumes<
        S: Store,
    >(
        store: S,
    ) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let service = app.service_token();
        let amira = register(&app, "amira").await;
        let badr = register(&app, "badr").await;

        let mut badr_feed = feed(&app, &badr.access_token, 0).await;
        let first = until(&mut badr_feed, "snapshot", snapshot).await;
        assert!(first.friends.is_empty() && first.incoming.is_empty());

        // A request reaches the other player's open feed, numbered.
        client
            .add_friend(authed(
                pb::AddFriendRequest {
                    target: Some(pb::add_friend_request::Target::Username("badr".into())),
                },
                &amira.access_token,
            ))
            .await
            .unwrap();
        let (seq, from) = until(&mut badr_feed, "friend request", |e| match &e.event {
            Some(Event::FriendRequest(f)) => Some((e.seq, f.user_id.clone())),
            _ => None,
        })
        .await;
        assert_eq!((seq, from.as_str()), (1, amira.user_id.as_str()));

        // Accepted: amira hears it, and each sees the other online (both feeds are open).
        let mut amira_feed = feed(&app, &amira.access_token, 0).await;
        until(&mut amira_feed, "snapshot", snapshot).await;
        client
            .accept_friend(authed(
                pb::AcceptFriendRequest {
                    user_id: amira.user_id.clone(),
                },
                &badr.access_token,
            ))
            .await
            .unwrap();
        let added = until(&mut amira_feed, "friend added", |e| match &e.event {
            Some(Event::FriendAdded(f)) => Some((e.seq, f.user_id.clone())),
            _ => None,
        })
        .await;
        assert_eq!(added, (1, badr.user_id.clone()));
        assert_eq!(
            until(
                &mut amira_feed,
                "badr's presence",
                presence_of(&badr.user_id)
            )
            .await,
            presence(pb::Activity::Online, "")
        );
        assert_eq!(
            until(
                &mut badr_feed,
                "amira's presence",
                presence_of(&amira.user_id)
            )
            .await,
            presence(pb::Activity::Online, "")
        );

        // game-session says amira plays in a room friends may watch.
        client
            .report_presence(authed(
                pb::ReportPresenceRequest {
                    reports: vec![report(
                        &amira.user_id,
                        pb::Activity::InMatch,
                        "room-7",
                        false,
                    )],
                },
                &service,
            ))
            .await
            .unwrap();
        assert_eq!(
            until(
                &mut badr_feed,
                "amira in a match",
                presence_of(&amira.user_id)
            )
            .await,
            presence(pb::Activity::InMatch, "room-7")
        );

        // matchmaking hands an invite over: it is kept, numbered 2 on badr's feed.
        let sent = client
            .send_invite(authed(invite(&amira.user_id, &badr.user_id), &service))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(sent.seq, 2);
        let got = until(&mut badr_feed, "invite", |e| match &e.event {
            Some(Event::Invite(i)) => Some((e.seq, i.clone())),
            _ => None,
        })
        .await;
        assert_eq!(got.0, 2);
        assert_eq!(got.1.from.unwrap().user_id, amira.user_id);
        assert_eq!(
            (got.1.room_id.as_str(), got.1.join_code.as_str()),
            ("room-42", "ABC234")
        );

        // badr's connection breaks; the resumed feed starts with a current snapshot and
        // gives only the notes after the last one seen.
        drop(badr_feed);
        let mut resumed = feed(&app, &badr.access_token, 1).await;
        let now = until(&mut resumed, "snapshot", snapshot).await;
        assert_eq!(now.friends.len(), 1);
        assert_eq!(
            now.friends[0].presence,
            Some(presence(pb::Activity::InMatch, "room-7"))
        );
        let replayed = until(&mut resumed, "replayed note", |e| {
            (e.seq > 0).then_some(e.seq)
        })
        .await;
        assert_eq!(
            replayed, 2,
            "the request (seq 1) was seen; the invite comes again"
        );

        // The match ends: friends see amira back to merely online.
        client
            .report_presence(authed(
                pb::ReportPresenceRequest {
                    reports: vec![report(
                        &amira.user_id,
                        pb::Activity::InMatch,
                        "room-7",
                        true,
                    )],
                },
                &service,
            ))
            .await
            .unwrap();
        assert_eq!(
            until(
                &mut resumed,
                "amira out of the match",
                presence_of(&amira.user_id)
            )
            .await,
            presence(pb::Activity::Online, "")
        );

        // amira closes her feed: she goes offline for her friends.
        drop(amira_feed);
        assert_eq!(
            until(&mut resumed, "amira offline", presence_of(&amira.user_id)).await,
            presence(pb::Activity::Offline, "")
        );
    }

    pub(super) async fn bad_feed_presence_and_invite_input_gets_clear_statuses<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let service = app.service_token();
        let amira = register(&app, "amira").await;
        let badr = register(&app, "badr").await;
        let carol = register(&app, "carol").await;

        // The feed: players only, at most four open per player.
        assert_eq!(
            code(
                client
                    .watch_friends(pb::WatchFriendsRequest::default())
                    .await
            ),
            Code::Unauthenticated
        );
        assert_eq!(
            code(
                client
                    .watch_friends(authed(pb::WatchFriendsRequest::default(), &service))
                    .await
            ),
            Code::PermissionDenied
        );
        let mut open = Vec::new();
        for _ in 0..accounts::service::MAX_FEEDS_PER_PLAYER {
            open.push(feed(&app, &carol.access_token, 0).await);
        }
        assert_eq!(
            code(
                client
                    .watch_friends(authed(
                        pb::WatchFriendsRequest::default(),
                        &carol.access_token
                    ))
                    .await
            ),
            Code::ResourceExhausted
        );
        let gauge = &app.service.metrics().feeds_open;
        assert_eq!(gauge.get(), 4, "basra_accounts_feeds_open counts them");
        drop(open);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        while gauge.get() != 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "closed feeds are uncounted"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        // ReportPresence: services only; a bad report refuses the whole batch.
        let report_call = |token: String, reports: Vec<pb::PresenceReport>| {
            let mut client = client.clone();
            async move {
                client
                    .report_presence(authed(pb::ReportPresenceRequest { reports }, &token))
                    .await
            }
        };
        let good = report(&amira.user_id, pb::Activity::InQueue, "", false);
        assert_eq!(
            code(report_call(amira.access_token.clone(), vec![good.clone()]).await),
            Code::PermissionDenied
        );
        for bad in [
            report("not-a-user", pb::Activity::InQueue, "", false),
            report(&amira.user_id, pb::Activity::Online, "", false),
            report(&amira.user_id, pb::Activity::Unspecified, "", false),
            report(&amira.user_id, pb::Activity::InQueue, "room-1", false),
            report(
                &amira.user_id,
                pb::Activity::InMatch,
                &"r".repeat(129),
                false,
            ),
        ] {
            assert_eq!(
                code(report_call(service.clone(), vec![good.clone(), bad.clone()]).await),
                Code::InvalidArgument,
                "{bad:?}"
            );
        }
        assert_eq!(
            code(report_call(service.clone(), vec![good.clone(); 1001]).await),
            Code::InvalidArgument
        );
        // Nothing of the refused batches was stored: a feed of amira's friend shows her
        // offline. (Make badr her friend first.)
        befriend(&app, &amira, &badr, "badr").await;
        let mut badr_feed = feed(&app, &badr.access_token, 0).await;
        let first = until(&mut badr_feed, "snapshot", snapshot).await;
        assert_eq!(
            first.friends[0].presence,
            Some(presence(pb::Activity::Offline, ""))
        );

        // SendInvite: services only; friends only; a blocker is "no such player".
        assert_eq!(
            code(
                client
                    .send_invite(authed(
                        invite(&amira.user_id, &badr.user_id),
                        &amira.access_token
                    ))
                    .await
            ),
            Code::PermissionDenied
        );
        let sender = client.clone();
        let send = |request: pb::SendInviteRequest| {
            let mut client = sender.clone();
            let service = service.clone();
            async move { client.send_invite(authed(request, &service)).await }
        };
        assert_eq!(
            code(send(invite(&amira.user_id, &amira.user_id)).await),
            Code::InvalidArgument
        );
        assert_eq!(
            code(send(invite("x", &badr.user_id)).await),
            Code::InvalidArgument
        );
        let mut no_code = invite(&amira.user_id, &badr.user_id);
        no_code.join_code.clear();
        assert_eq!(code(send(no_code).await), Code::InvalidArgument);
        let mut lapsed = invite(&amira.user_id, &badr.user_id);
        lapsed.expires_at = Some(prost_types::Timestamp {
            seconds: chrono::Utc::now().timestamp() - 1,
            nanos: 0,
        });
        assert_eq!(code(send(lapsed).await), Code::InvalidArgument);
        assert_eq!(
            code(send(invite(&amira.user_id, &carol.user_id)).await),
            Code::FailedPrecondition,
            "not friends"
        );
        assert_eq!(
            code(send(invite(&amira.user_id, &uuid::Uuid::now_v7().to_string())).await),
            Code::NotFound
        );
        client
            .block_player(authed(
                pb::BlockPlayerRequest {
                    user_id: amira.user_id.clone(),
                },
                &badr.access_token,
            ))
            .await
            .unwrap();
        assert_eq!(
            code(send(invite(&amira.user_id, &badr.user_id)).await),
            Code::NotFound
        );
        // None of these left a note: badr's feed, reopened after the friend request
        // (seq 1), replays nothing.
        drop(badr_feed);
        let mut again = feed(&app, &badr.access_token, 1).await;
        until(&mut again, "snapshot", snapshot).await;
        let next = tokio::time::timeout(Duration::from_millis(300), again.message()).await;
        assert!(next.is_err(), "no note was kept: {next:?}");
    }

    /// A replica that dies says nothing: its report lapses, and an open feed is told when
    /// it does, not on its next periodic look (reports last 300 ms here, and feeds would
    /// look again only after an hour).
    pub(super) async fn a_friend_whose_reports_stop_goes_offline_by_themselves<S: Store>(store: S) {
        let social = accounts::social::SocialStore::Memory(
            accounts::social::MemorySocial::new().with_report_ttl(Duration::from_millis(300)),
        );
        let social = accounts::service::Social::new(social, Default::default())
            .with_look_again(Duration::from_secs(3600));
        let app = TestApp::builder(store)
            .settings(test_settings(&[]))
            .social(social)
            .spawn()
            .await;
        let mut client = app.client().await;
        let amira = register(&app, "amira").await;
        let badr = register(&app, "badr").await;
        befriend(&app, &amira, &badr, "badr").await;
        let mut badr_feed = feed(&app, &badr.access_token, 0).await;
        until(&mut badr_feed, "snapshot", snapshot).await;
        client
            .report_presence(authed(
                pb::ReportPresenceRequest {
                    reports: vec![report(&amira.user_id, pb::Activity::InQueue, "", false)],
                },
                &app.service_token(),
            ))
            .await
            .unwrap();
        assert_eq!(
            until(
                &mut badr_feed,
                "amira searching",
                presence_of(&amira.user_id)
            )
            .await,
            presence(pb::Activity::InQueue, "")
        );
        // No repeat, no end: the report lapses.
        assert_eq!(
            until(&mut badr_feed, "amira gone", presence_of(&amira.user_id)).await,
            presence(pb::Activity::Offline, "")
        );
    }
}
