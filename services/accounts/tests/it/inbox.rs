//! The inbox through real tonic clients (ListNotices, MarkNoticesRead, CountUnreadNotices,
//! SendNotice, SendNotices, and the notices friend actions, invites and matches leave), on PostgreSQL
//! and on the in-memory store; and its read state across a restart on PostgreSQL.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::grpc::match_record;
use crate::helpers::{TestApp, authed, spawn_app, tokens};
use accounts::inbox::{KeptNotice, NoticeHook};
use accounts::store::Store;
use basra_proto::basra::accounts::v1 as pb;
use pb::notice::Body;
use pb::watch_friends_response::Event;
use tonic::{Code, Streaming};

on_both_stores! {
    cases in cases {
        a_notice_sent_while_away_is_listed_once_in_order_and_replayed_once,
        no_notice_comes_twice_across_a_feed_resume,
        friend_actions_invites_and_matches_while_away_leave_notices,
        the_inbox_rpcs_answer_their_documented_statuses,
        notices_expire_with_their_body_and_the_bound_holds,
        the_hook_hears_each_kept_notice_once,
        send_notices_answers_each_notice_in_order_and_keeps_the_rest,
        send_notices_answers_its_documented_statuses,
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

fn in_secs(secs: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: chrono::Utc::now().timestamp() + secs,
        nanos: 0,
    }
}

fn cancelled(to: &str, key: &str, name: &str) -> pb::SendNoticeRequest {
    pb::SendNoticeRequest {
        to_user_id: to.into(),
        dedupe_key: key.into(),
        body: Some(pb::send_notice_request::Body::EventCancelled(
            pb::EventCancelledNotice {
                event_id: format!("event-{name}"),
                event_name: name.into(),
            },
        )),
    }
}

fn ready(to: &str, key: &str, deadline_in_secs: i64) -> pb::SendNoticeRequest {
    pb::SendNoticeRequest {
        to_user_id: to.into(),
        dedupe_key: key.into(),
        body: Some(pb::send_notice_request::Body::EventMatchReady(
            pb::EventMatchReadyNotice {
                event_id: "cup-1".into(),
                event_name: "Friday cup".into(),
                round: 2,
                room_id: "room-9".into(),
                opponent_name: "Mona".into(),
                join_deadline: Some(in_secs(deadline_in_secs)),
            },
        )),
    }
}

async fn send<S: Store>(
    app: &TestApp<S>,
    request: pb::SendNoticeRequest,
) -> pb::SendNoticeResponse {
    app.client()
        .await
        .send_notice(authed(request, &app.service_token()))
        .await
        .expect("SendNotice")
        .into_inner()
}

async fn list<S: Store>(
    app: &TestApp<S>,
    player: &pb::AuthTokens,
    request: pb::ListNoticesRequest,
) -> pb::ListNoticesResponse {
    app.client()
        .await
        .list_notices(authed(request, &player.access_token))
        .await
        .expect("ListNotices")
        .into_inner()
}

fn event_name(notice: &pb::Notice) -> String {
    match &notice.body {
        Some(Body::EventCancelled(c)) => c.event_name.clone(),
        Some(Body::EventMatchReady(r)) => format!("ready {}", r.round),
        other => panic!("not an event notice: {other:?}"),
    }
}

async fn feed<S: Store>(
    app: &TestApp<S>,
    player: &pb::AuthTokens,
    last_seen_seq: u64,
) -> Streaming<pb::WatchFriendsResponse> {
    app.client()
        .await
        .watch_friends(authed(
            pb::WatchFriendsRequest { last_seen_seq },
            &player.access_token,
        ))
        .await
        .expect("the feed opens")
        .into_inner()
}

/// Every event the feed sends within `quiet` of the one before.
async fn drain(
    feed: &mut Streaming<pb::WatchFriendsResponse>,
    quiet: Duration,
) -> Vec<pb::WatchFriendsResponse> {
    let mut events = Vec::new();
    while let Ok(message) = tokio::time::timeout(quiet, feed.message()).await {
        let Some(event) = message.expect("the feed goes on") else {
            break;
        };
        events.push(event);
    }
    events
}

/// The notices a feed's events carry, as (seq, notice id).
fn notices_on(events: &[pb::WatchFriendsResponse]) -> Vec<(u64, u64)> {
    events
        .iter()
        .filter(|e| e.notice_id != 0)
        .map(|e| (e.seq, e.notice_id))
        .collect()
}

fn code<T: std::fmt::Debug>(result: Result<tonic::Response<T>, tonic::Status>) -> Code {
    result.expect_err("the call should fail").code()
}

/// Remembers every notice the hook is told of.
#[derive(Debug, Default)]
struct Heard(Mutex<Vec<KeptNotice>>);

impl NoticeHook for Heard {
    fn notice_kept(&self, notice: &KeptNotice) {
        self.0.lock().unwrap().push(notice.clone());
    }
}

mod cases {
    use super::*;

    pub(super) async fn a_notice_sent_while_away_is_listed_once_in_order_and_replayed_once<
        S: Store,
    >(
        store: S,
    ) {
        let app = spawn_app(store).await;
        let amira = register(&app, "amira").await;
        // Three notices while amira has no feed open; the second one's call is retried.
        let first = send(&app, cancelled(&amira.user_id, "k1", "first")).await;
        let second = send(&app, cancelled(&amira.user_id, "k2", "second")).await;
        let retried = send(&app, cancelled(&amira.user_id, "k2", "second")).await;
        assert!(!first.duplicate && !second.duplicate && retried.duplicate);
        assert_eq!(
            retried.notice, second.notice,
            "the retry answers the same notice"
        );
        send(&app, ready(&amira.user_id, "k3", 600)).await;

        // She returns: the list has each once, newest first, all unread.
        let page = list(&app, &amira, pb::ListNoticesRequest::default()).await;
        let shown: Vec<String> = page.notices.iter().map(event_name).collect();
        assert_eq!(shown, ["ready 2", "second", "first"]);
        assert_eq!(page.unread_count, 3);
        assert!(page.next_page_token.is_empty());
        let ready_notice = &page.notices[0];
        assert_eq!(ready_notice.kind, pb::NoticeKind::EventMatchReady as i32);
        assert!(!ready_notice.read);
        assert!(ready_notice.created_at.is_some() && ready_notice.expires_at.is_some());
        // Pages of one: the same three, in the same order, then none.
        let mut token = String::new();
        let mut paged = Vec::new();
        loop {
            let page = list(
                &app,
                &amira,
                pb::ListNoticesRequest {
                    page_size: 1,
                    page_token: token.clone(),
                    unread_only: false,
                },
            )
            .await;
            paged.extend(page.notices.iter().map(|n| n.id));
            if page.next_page_token.is_empty() {
                break;
            }
            token = page.next_page_token;
        }
        let ids: Vec<u64> = page.notices.iter().map(|n| n.id).collect();
        assert_eq!(paged, ids);

        // Her feed from the start: the snapshot counts them, then each comes once, oldest
        // first, with its id.
        let mut stream = feed(&app, &amira, 0).await;
        let events = drain(&mut stream, Duration::from_millis(500)).await;
        match &events[0].event {
            Some(Event::Snapshot(s)) => {
                assert_eq!(s.unread_notices, 3);
                assert_eq!(s.newest_notice_id, ids[0], "the replayed ones are counted");
            }
            other => panic!("the snapshot comes first, not {other:?}"),
        }
        let replayed: Vec<u64> = notices_on(&events).iter().map(|(_, id)| *id).collect();
        let mut oldest_first = ids.clone();
        oldest_first.reverse();
        assert_eq!(replayed, oldest_first);
        for event in &events[1..] {
            let Some(Event::Notice(notice)) = &event.event else {
                panic!("only notices follow: {event:?}");
            };
            assert_eq!(notice.id, event.notice_id);
        }
    }

    pub(super) async fn no_notice_comes_twice_across_a_feed_resume<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let amira = register(&app, "amira").await;
        let mut stream = feed(&app, &amira, 0).await;
        drain(&mut stream, Duration::from_millis(200)).await;
        let live = send(&app, cancelled(&amira.user_id, "k1", "live")).await;
        let events = drain(&mut stream, Duration::from_millis(500)).await;
        let seen = notices_on(&events);
        assert_eq!(seen.len(), 1, "the live notice, once: {events:?}");
        assert_eq!(seen[0].1, live.notice.unwrap().id);
        let last_seq = seen[0].0;
        drop(stream);

        // Away: one more, and the first one's call retried.
        let missed = send(&app, cancelled(&amira.user_id, "k2", "missed")).await;
        assert!(
            send(&app, cancelled(&amira.user_id, "k1", "live"))
                .await
                .duplicate
        );
        let mut resumed = feed(&app, &amira, last_seq).await;
        let events = drain(&mut resumed, Duration::from_millis(500)).await;
        let ids: Vec<u64> = notices_on(&events).iter().map(|(_, id)| *id).collect();
        assert_eq!(
            ids,
            [missed.notice.unwrap().id],
            "only what was missed, once"
        );
        let missed_id = ids[0];
        match &events[0].event {
            Some(Event::Snapshot(s)) => {
                assert_eq!((s.unread_notices, s.newest_notice_id), (2, missed_id));
            }
            other => panic!("the snapshot comes first, not {other:?}"),
        }
        // A notice kept now has a larger id than the snapshot's newest: one more unread.
        let after = send(&app, cancelled(&amira.user_id, "k3", "after")).await;
        let events = drain(&mut resumed, Duration::from_millis(500)).await;
        let late = notices_on(&events);
        assert_eq!(late.len(), 1);
        assert_eq!(late[0].1, after.notice.unwrap().id);
        assert!(late[0].1 > missed_id);
    }

    pub(super) async fn friend_actions_invites_and_matches_while_away_leave_notices<S: Store>(
        store: S,
    ) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let service = app.service_token();
        let amira = register(&app, "amira").await;
        let badr = register(&app, "badr").await;
        client
            .add_friend(authed(
                pb::AddFriendRequest {
                    target: Some(pb::add_friend_request::Target::Username("badr".into())),
                },
                &amira.access_token,
            ))
            .await
            .unwrap();
        let badrs = list(&app, &badr, pb::ListNoticesRequest::default()).await;
        assert_eq!(badrs.notices.len(), 1);
        let Some(Body::FriendRequest(from)) = &badrs.notices[0].body else {
            panic!("a friend request: {:?}", badrs.notices[0]);
        };
        assert_eq!(from.user_id, amira.user_id);
        assert_eq!(badrs.notices[0].kind, pb::NoticeKind::FriendRequest as i32);

        // badr's feed is open from here on: the acceptance's notice reaches amira's inbox
        // (her feed is closed), and the invite comes on badr's feed as an invite event
        // carrying its notice's id.
        let mut badr_feed = feed(&app, &badr, 0).await;
        drain(&mut badr_feed, Duration::from_millis(200)).await;
        client
            .accept_friend(authed(
                pb::AcceptFriendRequest {
                    user_id: amira.user_id.clone(),
                },
                &badr.access_token,
            ))
            .await
            .unwrap();
        let amiras = list(&app, &amira, pb::ListNoticesRequest::default()).await;
        assert!(matches!(
            &amiras.notices[..],
            [pb::Notice { body: Some(Body::FriendAdded(f)), .. }] if f.user_id == badr.user_id
        ));
        client
            .send_invite(authed(
                pb::SendInviteRequest {
                    from_user_id: amira.user_id.clone(),
                    to_user_id: badr.user_id.clone(),
                    room_id: "room-42".into(),
                    join_code: "ABC234".into(),
                    settings: None,
                    expires_at: Some(in_secs(600)),
                },
                &service,
            ))
            .await
            .unwrap();
        let events = drain(&mut badr_feed, Duration::from_millis(500)).await;
        let invite = events
            .iter()
            .find(|e| matches!(e.event, Some(Event::Invite(_))))
            .expect("the invite on the feed");
        assert!(invite.notice_id != 0);
        assert!(
            !events
                .iter()
                .any(|e| matches!(e.event, Some(Event::Notice(_)))),
            "an invite comes once, as an invite"
        );
        let badrs = list(&app, &badr, pb::ListNoticesRequest::default()).await;
        assert_eq!(badrs.notices[0].id, invite.notice_id);
        assert!(matches!(
            &badrs.notices[0].body,
            Some(Body::Invite(i)) if i.join_code == "ABC234"
        ));

        // A match ends: badr (feed open) gets no notice, amira (away) gets its result;
        // recorded again, nothing more.
        let record = match_record("m-away", &amira.user_id, &badr.user_id, true);
        for _ in 0..2 {
            client
                .record_match(authed(
                    pb::RecordMatchRequest {
                        record: Some(record.clone()),
                    },
                    &service,
                ))
                .await
                .unwrap();
        }
        let amiras = list(&app, &amira, pb::ListNoticesRequest::default()).await;
        let results: Vec<&pb::MatchSummary> = amiras
            .notices
            .iter()
            .filter_map(|n| match &n.body {
                Some(Body::MatchResult(m)) => Some(m),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].match_id, "m-away");
        assert_eq!((results[0].your_seat, results[0].winner_side), (0, Some(0)));
        assert!(results[0].your_rating_change.is_some(), "a ranked match");
        let badrs = list(&app, &badr, pb::ListNoticesRequest::default()).await;
        assert!(
            !badrs
                .notices
                .iter()
                .any(|n| matches!(n.body, Some(Body::MatchResult(_)))),
            "badr watched with an open feed"
        );
    }

    pub(super) async fn the_inbox_rpcs_answer_their_documented_statuses<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let service = app.service_token();
        let amira = register(&app, "amira").await;
        let badr = register(&app, "badr").await;
        let hers = send(&app, cancelled(&amira.user_id, "k1", "hers"))
            .await
            .notice
            .unwrap();
        let me = badr.access_token.clone();

        // ListNotices.
        let too_big = pb::ListNoticesRequest {
            page_size: 101,
            ..Default::default()
        };
        assert_eq!(
            code(client.list_notices(authed(too_big, &me)).await),
            Code::InvalidArgument
        );
        for token in ["garbage", "nt1.0", "mh1.5.x"] {
            let bad = pb::ListNoticesRequest {
                page_token: token.into(),
                ..Default::default()
            };
            assert_eq!(
                code(client.list_notices(authed(bad, &me)).await),
                Code::InvalidArgument
            );
        }
        let without_token = client.list_notices(pb::ListNoticesRequest::default()).await;
        assert_eq!(code(without_token), Code::Unauthenticated);
        let as_service = client
            .list_notices(authed(pb::ListNoticesRequest::default(), &service))
            .await;
        assert_eq!(code(as_service), Code::PermissionDenied);
        // Another player's inbox cannot be named: badr lists only his own (none).
        let his = list(&app, &badr, pb::ListNoticesRequest::default()).await;
        assert!(his.notices.is_empty() && his.unread_count == 0);

        // MarkNoticesRead.
        let marking = |ids: Vec<u64>, up_to_id: u64| pb::MarkNoticesReadRequest { ids, up_to_id };
        for bad in [
            marking(vec![], 0),
            marking(vec![1], 1),
            marking(vec![0], 0),
            marking((1..=101).collect(), 0),
        ] {
            assert_eq!(
                code(client.mark_notices_read(authed(bad, &me)).await),
                Code::InvalidArgument
            );
        }
        // Another player's notice: NOT_FOUND, as an unknown one, and it stays unread.
        assert_eq!(
            code(
                client
                    .mark_notices_read(authed(marking(vec![hers.id], 0), &me))
                    .await
            ),
            Code::NotFound
        );
        assert_eq!(
            code(
                client
                    .mark_notices_read(authed(marking(vec![hers.id + 1000], 0), &me))
                    .await
            ),
            Code::NotFound
        );
        let up_to = client
            .mark_notices_read(authed(marking(vec![], hers.id), &me))
            .await
            .unwrap()
            .into_inner();
        assert_eq!((up_to.marked, up_to.unread_count), (0, 0), "nothing of his");
        let as_service = client
            .mark_notices_read(authed(marking(vec![hers.id], 0), &service))
            .await;
        assert_eq!(code(as_service), Code::PermissionDenied);
        let unauthenticated = client.mark_notices_read(marking(vec![hers.id], 0)).await;
        assert_eq!(code(unauthenticated), Code::Unauthenticated);
        let hers_now = list(&app, &amira, pb::ListNoticesRequest::default()).await;
        assert_eq!(hers_now.unread_count, 1);
        assert!(!hers_now.notices[0].read);
        let marked = client
            .mark_notices_read(authed(marking(vec![hers.id], 0), &amira.access_token))
            .await
            .unwrap()
            .into_inner();
        assert_eq!((marked.marked, marked.unread_count), (1, 0));

        // CountUnreadNotices.
        let count = |token: &str| {
            let mut client = client.clone();
            let request = authed(pb::CountUnreadNoticesRequest {}, token);
            async move { client.count_unread_notices(request).await }
        };
        assert_eq!(
            count(&badr.access_token)
                .await
                .unwrap()
                .into_inner()
                .unread_count,
            0
        );
        assert_eq!(code(count(&service).await), Code::PermissionDenied);
        assert_eq!(
            code(
                client
                    .count_unread_notices(pb::CountUnreadNoticesRequest {})
                    .await
            ),
            Code::Unauthenticated
        );

        // SendNotice: services only, every field checked, a known player.
        let by_player = client
            .send_notice(authed(
                cancelled(&badr.user_id, "k", "x"),
                &amira.access_token,
            ))
            .await;
        assert_eq!(code(by_player), Code::PermissionDenied);
        let unauthenticated = client.send_notice(cancelled(&badr.user_id, "k", "x")).await;
        assert_eq!(code(unauthenticated), Code::Unauthenticated);
        let long = "k".repeat(129);
        for bad in [
            cancelled("not-a-user", "k", "x"),
            cancelled(&badr.user_id, "", "x"),
            cancelled(&badr.user_id, &long, "x"),
            cancelled(&badr.user_id, "k", ""),
            cancelled(&badr.user_id, "k", &long),
            pb::SendNoticeRequest {
                body: None,
                ..cancelled(&badr.user_id, "k", "x")
            },
            ready(&badr.user_id, "k", -5),
        ] {
            let answer = client.send_notice(authed(bad.clone(), &service)).await;
            assert_eq!(code(answer), Code::InvalidArgument, "{bad:?}");
        }
        let unknown = cancelled(&uuid::Uuid::now_v7().to_string(), "k", "x");
        assert_eq!(
            code(client.send_notice(authed(unknown, &service)).await),
            Code::NotFound
        );
        let his = list(&app, &badr, pb::ListNoticesRequest::default()).await;
        assert!(his.notices.is_empty(), "no refused call kept anything");
    }

    pub(super) async fn notices_expire_with_their_body_and_the_bound_holds<S: Store>(store: S) {
        let app = TestApp::builder(store)
            .env(&[("BASRA_INBOX__KEEP", "3")])
            .spawn()
            .await;
        let amira = register(&app, "amira").await;
        // "Your match is ready" lapses at its join deadline.
        // (2 to 3 s from now: `in_secs` counts from the current whole second.)
        let soon = send(&app, ready(&amira.user_id, "soon", 3))
            .await
            .notice
            .unwrap();
        let deadline = soon.expires_at.unwrap();
        assert!(deadline.seconds <= chrono::Utc::now().timestamp() + 3);
        assert_eq!(list(&app, &amira, Default::default()).await.unread_count, 1);
        tokio::time::sleep(Duration::from_millis(3200)).await;
        let after = list(&app, &amira, Default::default()).await;
        assert!(
            after.notices.is_empty() && after.unread_count == 0,
            "{after:?}"
        );

        // At most 3 kept: the fourth drops the oldest.
        for name in ["n1", "n2", "n3", "n4"] {
            send(&app, cancelled(&amira.user_id, name, name)).await;
        }
        let kept = list(&app, &amira, Default::default()).await;
        let names: Vec<String> = kept.notices.iter().map(event_name).collect();
        assert_eq!(names, ["n4", "n3", "n2"]);
        assert_eq!(kept.unread_count, 3);
        // A kept notice lasts inbox.keep_seconds (30 days unless set).
        let made = kept.notices[0].created_at.unwrap().seconds;
        let ends = kept.notices[0].expires_at.unwrap().seconds;
        assert_eq!(ends - made, 30 * 24 * 3600);
    }

    pub(super) async fn send_notices_answers_each_notice_in_order_and_keeps_the_rest<S: Store>(
        store: S,
    ) {
        let heard = Arc::new(Heard::default());
        let app = TestApp::builder(store)
            .notice_hook(heard.clone())
            .spawn()
            .await;
        let amira = register(&app, "amira").await;
        let badr = register(&app, "badr").await;
        let mut amiras_feed = feed(&app, &amira, 0).await;
        drain(&mut amiras_feed, Duration::from_millis(200)).await;
        // No such player (never was, or deleted): its own NOT_FOUND.
        let nobody = uuid::Uuid::now_v7().to_string();
        let request = batch(vec![
            ready(&amira.user_id, "r1", 600),
            cancelled(&badr.user_id, "c1", "cup"),
            cancelled(&nobody, "c1", "cup"),
            cancelled("not-a-user", "c1", "cup"),
            ready(&amira.user_id, "r1", 600),
            ready(&badr.user_id, "late", -5),
        ]);
        let send_all = || {
            let client = app.client();
            let request = authed(request.clone(), &app.service_token());
            async move {
                client
                    .await
                    .send_notices(request)
                    .await
                    .expect("SendNotices")
                    .into_inner()
                    .results
            }
        };
        let results = send_all().await;
        assert_eq!(results.len(), 6, "one result per notice");
        let answers: Vec<Result<(pb::Notice, bool), Code>> = results.iter().map(outcome).collect();
        let (hers, dup) = answers[0].clone().expect("amira's kept");
        assert!(!dup);
        let (his, dup) = answers[1].clone().expect("badr's kept");
        assert!(!dup);
        assert_eq!(answers[2], Err(Code::NotFound));
        assert_eq!(answers[3], Err(Code::InvalidArgument));
        assert_eq!(
            answers[4],
            Ok((hers.clone(), true)),
            "the same key later in the batch answers the first"
        );
        assert_eq!(answers[5], Err(Code::InvalidArgument), "a deadline past");
        assert!(hers.id < his.id, "kept in the batch's order");
        assert!(matches!(hers.body, Some(Body::EventMatchReady(_))));

        // Each kept notice: on the open feed once, in the inbox, heard by the hook once.
        let events = drain(&mut amiras_feed, Duration::from_millis(500)).await;
        let on_feed: Vec<u64> = notices_on(&events).iter().map(|(_, id)| *id).collect();
        assert_eq!(on_feed, [hers.id]);
        let badrs = list(&app, &badr, pb::ListNoticesRequest::default()).await;
        assert_eq!(badrs.notices, std::slice::from_ref(&his));
        assert_eq!(heard.0.lock().unwrap().len(), 2);

        // Sent again (a retried call): nothing new anywhere, the same notices answered.
        let again: Vec<_> = send_all().await.iter().map(outcome).collect();
        assert_eq!(again[0], Ok((hers.clone(), true)));
        assert_eq!(again[1], Ok((his, true)));
        assert_eq!(again[2], Err(Code::NotFound));
        assert_eq!(again[4], Ok((hers, true)));
        let events = drain(&mut amiras_feed, Duration::from_millis(300)).await;
        assert!(notices_on(&events).is_empty(), "{events:?}");
        assert_eq!(heard.0.lock().unwrap().len(), 2, "duplicates are not heard");
        let hers_listed = list(&app, &amira, pb::ListNoticesRequest::default()).await;
        assert_eq!(hers_listed.notices.len(), 1);
    }

    pub(super) async fn send_notices_answers_its_documented_statuses<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let service = app.service_token();
        let amira = register(&app, "amira").await;
        let one = || batch(vec![cancelled(&amira.user_id, "k", "x")]);
        let by_player = client
            .send_notices(authed(one(), &amira.access_token))
            .await;
        assert_eq!(code(by_player), Code::PermissionDenied);
        assert_eq!(
            code(client.send_notices(one()).await),
            Code::Unauthenticated
        );
        let none = client.send_notices(authed(batch(vec![]), &service)).await;
        assert_eq!(code(none), Code::InvalidArgument);
        let key = |i: usize| format!("k{i}");
        let too_many: Vec<_> = (0..501)
            .map(|i| cancelled(&amira.user_id, &key(i), "x"))
            .collect();
        let answer = client.send_notices(authed(batch(too_many), &service)).await;
        assert_eq!(code(answer), Code::InvalidArgument);
        // 500 notices of the longest fields: larger than accounts' largest request.
        let long = "x".repeat(128);
        let huge: Vec<_> = (0..500)
            .map(|i| pb::SendNoticeRequest {
                dedupe_key: format!("{i}{long}")[..128].to_owned(),
                ..ready(&amira.user_id, "k", 600)
            })
            .map(|mut notice| {
                if let Some(pb::send_notice_request::Body::EventMatchReady(ready)) =
                    &mut notice.body
                {
                    ready.event_id = long.clone();
                    ready.event_name = long.clone();
                    ready.room_id = long.clone();
                    ready.opponent_name = long.clone();
                }
                notice
            })
            .collect();
        let answer = client.send_notices(authed(batch(huge), &service)).await;
        assert_eq!(code(answer), Code::ResourceExhausted);
        let hers = list(&app, &amira, pb::ListNoticesRequest::default()).await;
        assert!(hers.notices.is_empty(), "no refused call kept anything");
        // The largest batch whole: 500 notices, one call.
        let most: Vec<_> = (0..500)
            .map(|i| cancelled(&amira.user_id, &key(i), "x"))
            .collect();
        let results = client
            .send_notices(authed(batch(most), &service))
            .await
            .expect("500 notices")
            .into_inner()
            .results;
        assert_eq!(results.len(), 500);
        assert!(results.iter().all(|r| matches!(outcome(r), Ok((_, false)))));
    }

    pub(super) async fn the_hook_hears_each_kept_notice_once<S: Store>(store: S) {
        let heard = Arc::new(Heard::default());
        let app = TestApp::builder(store)
            .notice_hook(heard.clone())
            .spawn()
            .await;
        let amira = register(&app, "amira").await;
        let sent = send(&app, ready(&amira.user_id, "r1", 600)).await;
        send(&app, ready(&amira.user_id, "r1", 600)).await;
        let heard = heard.0.lock().unwrap().clone();
        assert_eq!(heard.len(), 1, "a duplicate is not heard");
        assert_eq!(heard[0].user_id.to_string(), amira.user_id);
        assert_eq!(heard[0].kind, accounts::inbox::NoticeKind::EventMatchReady);
        assert_eq!(Some(&heard[0].notice), sent.notice.as_ref());
    }
}

fn batch(notices: Vec<pb::SendNoticeRequest>) -> pb::SendNoticesRequest {
    pb::SendNoticesRequest { notices }
}

/// A result's error code, or the kept notice and whether it was a duplicate.
fn outcome(result: &pb::SendNoticeResult) -> Result<(pb::Notice, bool), Code> {
    use pb::send_notice_result::Outcome;
    match result.outcome.as_ref().expect("an outcome") {
        Outcome::Sent(sent) => Ok((sent.notice.clone().expect("the notice"), sent.duplicate)),
        Outcome::Error(error) => {
            assert!(!error.message.is_empty(), "{error:?}");
            Err(Code::from_i32(error.code))
        }
    }
}

/// Without its database, SendNotices fails as a whole: UNAVAILABLE (nothing kept; the
/// same request may be sent again).
#[tokio::test]
async fn send_notices_without_its_database_answers_unavailable() {
    // Nothing listens on port 1: every connection attempt is refused.
    let store =
        accounts::PgStore::connect_lazy("postgres://postgres@127.0.0.1:1/postgres", 4).unwrap();
    let app = TestApp::builder(store).env(&[]).spawn().await;
    let someone = uuid::Uuid::now_v7().to_string();
    let status = app
        .client()
        .await
        .send_notices(authed(
            batch(vec![cancelled(&someone, "k", "x")]),
            &app.service_token(),
        ))
        .await
        .expect_err("no database");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
}

/// Read state is in PostgreSQL: a service started anew on the same database shows the
/// notices as they were, read or not.
#[sqlx::test(migrations = "./migrations")]
async fn read_state_survives_a_restart(pool: sqlx::PgPool) {
    let app = spawn_app(accounts::PgStore::new(pool.clone())).await;
    let amira = register(&app, "amira").await;
    let first = send(&app, cancelled(&amira.user_id, "k1", "first")).await;
    send(&app, cancelled(&amira.user_id, "k2", "second")).await;
    app.client()
        .await
        .mark_notices_read(authed(
            pb::MarkNoticesReadRequest {
                ids: vec![first.notice.unwrap().id],
                up_to_id: 0,
            },
            &amira.access_token,
        ))
        .await
        .unwrap();
    let before = list(&app, &amira, Default::default()).await;
    drop(app);

    let again = spawn_app(accounts::PgStore::new(pool)).await;
    let amira = tokens(
        again
            .client()
            .await
            .login(pb::LoginRequest {
                username: "amira".into(),
                password: "correct horse battery".into(),
            })
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    let after = list(&again, &amira, Default::default()).await;
    assert_eq!(after, before);
    let read: Vec<bool> = after.notices.iter().map(|n| n.read).collect();
    assert_eq!(read, [false, true]);
    assert_eq!(after.unread_count, 1);
}
