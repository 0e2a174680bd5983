//! ExportMyData through a real tonic client, on PostgreSQL and the memory store: the
//! document holds exactly the caller's data (the account, friends, matches, and the inbox,
//! push devices, reports filed, seasons and analyses), none of another player's private
//! data, and comes in pieces of at most 64 KiB when large.

use accounts::store::Store;
use basra_proto::basra::accounts::v1 as pb;
use tokio_stream::StreamExt as _;
use tonic::Code;

use crate::admin::admin;
use crate::devices::fcm;
use crate::grpc::{failure, guest_req, login_req, match_record, register, register_req};
use crate::helpers::{FriendLinks, TestApp, authed, duel, spawn_app, test_settings, tokens};

on_both_stores! {
    cases {
        the_export_holds_the_callers_data_and_no_one_elses_private_data,
        the_export_holds_the_callers_inbox_devices_reports_seasons_and_analyses_only,
        a_large_export_comes_in_pieces,
        export_needs_a_players_token,
    }
}

/// The whole document, and how many messages it came in, each checked for size.
async fn export<S: Store>(app: &TestApp<S>, token: &str) -> (serde_json::Value, usize) {
    let mut stream = app
        .client()
        .await
        .export_my_data(authed(pb::ExportMyDataRequest {}, token))
        .await
        .unwrap()
        .into_inner();
    let mut bytes = Vec::new();
    let mut pieces = 0;
    while let Some(piece) = stream.next().await {
        let piece = piece.expect("the stream ends OK");
        assert!(!piece.data.is_empty());
        assert!(piece.data.len() <= accounts::service::EXPORT_CHUNK_BYTES);
        bytes.extend_from_slice(&piece.data);
        pieces += 1;
    }
    let document = serde_json::from_slice(&bytes).expect("one JSON document");
    (document, pieces)
}

async fn friend_code<S: Store>(app: &TestApp<S>, token: &str) -> String {
    app.client()
        .await
        .get_profile(authed(pb::GetProfileRequest::default(), token))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap()
        .friend_code
}

async fn the_export_holds_the_callers_data_and_no_one_elses_private_data<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut client = app.client().await;
    // The caller began as a guest on a device, in the web client, and registered.
    let mut guest_login = tonic::Request::new(guest_req("device-export"));
    guest_login
        .metadata_mut()
        .insert("basra-client", "web/1.2.3".parse().unwrap());
    let guest = tokens(
        client
            .guest_login(guest_login)
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    let me = tokens(
        client
            .register(authed(
                register_req("samira", "correct horse battery"),
                &guest.access_token,
            ))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    let friend = register(&app, "tarek").await;
    let asker = register(&app, "umar").await;
    let blocked = register(&app, "wael").await;
    let stranger = register(&app, "yara").await;
    let my_code = friend_code(&app, &me.access_token).await;
    let their_codes = [
        friend_code(&app, &friend.access_token).await,
        friend_code(&app, &asker.access_token).await,
        friend_code(&app, &stranger.access_token).await,
    ];
    FriendLinks::new()
        .friends(&me, &friend)
        .request(&asker, &me)
        .block(&me, &blocked)
        // Private data of others: the friend's own request to a stranger, and the friend
        // blocking someone.
        .request(&friend, &stranger)
        .block(&friend, &asker)
        .make(&mut client)
        .await;
    client
        .set_display_name(authed(
            pb::SetDisplayNameRequest {
                display_name: "Samira K".into(),
            },
            &me.access_token,
        ))
        .await
        .unwrap();
    // The friend signs in again from Android: their app is theirs, not in the export.
    let mut login = tonic::Request::new(login_req("tarek", "correct horse battery"));
    login
        .metadata_mut()
        .insert("basra-client", "android/9.8.7".parse().unwrap());
    client.login(login).await.unwrap();
    let service = app.service_token();
    for (id, a, b) in [
        ("mine-1", &me.user_id, &friend.user_id),
        ("mine-2", &stranger.user_id, &me.user_id),
        ("theirs", &friend.user_id, &stranger.user_id),
    ] {
        client
            .record_match(authed(
                pb::RecordMatchRequest {
                    record: Some(match_record(id, a, b, true)),
                },
                &service,
            ))
            .await
            .unwrap();
    }

    let (doc, _) = export(&app, &me.access_token).await;
    assert_eq!(doc["format"], "basra-account-export/1");
    let account = &doc["account"];
    assert_eq!(account["user_id"], me.user_id.as_str());
    assert_eq!(account["username"], "samira");
    assert_eq!(account["display_name"], "Samira K");
    assert_eq!(account["is_guest"], false);
    assert_eq!(account["friend_code"], my_code.as_str());
    assert_eq!(account["devices"][0]["device_id"], "device-export");
    assert!(account["password_set_at"].is_string());
    assert_eq!(account["display_name_changes"].as_array().unwrap().len(), 1);
    // Two sign-ins: the guest's (revoked by the upgrade) and the registered one.
    let sessions = account["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{sessions:#?}");
    assert!(sessions.iter().any(|s| s["revoked_at"].is_string()));
    let clients = account["sign_in_clients"].as_array().unwrap();
    assert_eq!(clients.len(), 1, "{clients:#?}");
    assert_eq!(
        (&clients[0]["platform"], &clients[0]["version"]),
        (&"web".into(), &"1.2.3".into())
    );
    assert!(clients[0]["signed_in_at"].is_string());
    assert_eq!(account["statistics"]["matches_played"], 2);
    assert_eq!(account["rating"]["ranked_matches"], 2);

    let ids = |list: &serde_json::Value| -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|f| f["user_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let friends = &doc["friends"];
    assert_eq!(ids(&friends["friends"]), [friend.user_id.as_str()]);
    assert_eq!(ids(&friends["incoming_requests"]), [asker.user_id.as_str()]);
    assert!(ids(&friends["outgoing_requests"]).is_empty());
    assert_eq!(ids(&friends["blocked"]), [blocked.user_id.as_str()]);

    let matches = doc["matches"].as_array().unwrap();
    let match_ids: Vec<&str> = matches
        .iter()
        .map(|m| m["match_id"].as_str().unwrap())
        .collect();
    assert_eq!(match_ids.len(), 2);
    assert!(match_ids.contains(&"mine-1") && match_ids.contains(&"mine-2"));
    for m in matches {
        assert_eq!(m["actions"].as_array().unwrap().len(), 2, "every move: {m}");
        assert_eq!(m["seed"].as_str().unwrap().len(), 64);
        let seat = m["your_seat"].as_u64().unwrap() as usize;
        assert_eq!(m["seats"][seat]["user_id"], me.user_id.as_str());
        assert!(m["your_rating_change"]["rating_after"].is_number());
        // The seat kept the app of the caller's sign-in before the match ended.
        assert_eq!(
            m["your_client"],
            serde_json::json!({"platform": "web", "version": "1.2.3"}),
            "{m}"
        );
    }
    assert_eq!(doc["rating_history"].as_array().unwrap().len(), 2);

    // No other player's private data: no friend code of theirs, nothing of the friend's
    // own request or block, no match the caller did not play.
    let text = doc.to_string();
    for code in &their_codes {
        assert!(
            !text.contains(&code.replace('-', "")),
            "another player's friend code"
        );
        assert!(
            !text.contains(code.as_str()),
            "another player's friend code"
        );
    }
    assert!(!text.contains("theirs"), "a match the caller did not play");
    assert!(!text.contains("9.8.7"), "another player's client app");
    // The stranger appears only as the caller's opponent in mine-2 (their id; again in
    // the caller's notice of that match's result), never as the friend's outgoing
    // request.
    let mut outside_inbox = doc.clone();
    let inbox = outside_inbox
        .as_object_mut()
        .unwrap()
        .remove("inbox")
        .unwrap();
    let outside_inbox = outside_inbox.to_string();
    assert_eq!(
        outside_inbox.matches(&stranger.user_id).count(),
        1,
        "{text}"
    );
    let results: Vec<&serde_json::Value> = inbox["notices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "match_result")
        .collect();
    assert_eq!(results.len(), 2, "{inbox}");
    assert_eq!(
        inbox.to_string().matches(&stranger.user_id).count(),
        1,
        "in mine-2's result only: {inbox}"
    );
    // The asker appears as the caller's incoming request (and its notice) only, not as
    // blocked by the friend.
    assert_eq!(outside_inbox.matches(&asker.user_id).count(), 1, "{text}");
    assert_eq!(
        inbox.to_string().matches(&asker.user_id).count(),
        1,
        "{inbox}"
    );
}

async fn the_export_holds_the_callers_inbox_devices_reports_seasons_and_analyses_only<S: Store>(
    store: S,
) {
    use basra_engine::Card;
    use basra_engine::analysis::{PlayReview, Quality};
    use chrono::{Duration, Utc};
    use uuid::Uuid;
    let mut settings = test_settings(&[]);
    settings.seasons = crate::seasons::calendar();
    let app = TestApp::builder(store).settings(settings).spawn().await;
    let mut client = app.client().await;
    let me = register(&app, "nadia").await;
    let other = register(&app, "omar").await;
    let third = register(&app, "pavel").await;
    let id = |t: &pb::AuthTokens| Uuid::parse_str(&t.user_id).unwrap();

    // The inbox: omar asks nadia (her notice); nadia asks pavel (his notice, not hers).
    FriendLinks::new()
        .request(&other, &me)
        .request(&me, &third)
        .make(&mut client)
        .await;
    // Push devices: one of hers, one of omar's.
    for (token, who) in [
        ("nadia-secret-device-token-XYZ789", &me),
        ("omar-secret-device-token-QQQ111", &other),
    ] {
        client
            .register_push_token(authed(fcm(token, "ar-EG"), &who.access_token))
            .await
            .unwrap();
    }
    // Reports: two by nadia (one handled), one about her, one between the others.
    let report = |target: &pb::AuthTokens, reason: pb::ReportReason, comment: &str| {
        pb::ReportPlayerRequest {
            user_id: target.user_id.clone(),
            reason: reason as i32,
            match_id: String::new(),
            comment: comment.into(),
        }
    };
    for (by, req) in [
        (
            &me,
            report(&third, pb::ReportReason::Cheating, "nadia-on-pavel"),
        ),
        (
            &me,
            report(&other, pb::ReportReason::OffensiveName, "nadia-on-omar"),
        ),
        (
            &other,
            report(&me, pb::ReportReason::Other, "omar-on-nadia"),
        ),
        (
            &other,
            report(&third, pb::ReportReason::ChatAbuse, "omar-on-pavel"),
        ),
    ] {
        client
            .report_player(authed(req, &by.access_token))
            .await
            .unwrap();
    }
    admin(&app)
        .await
        .resolve_reports(authed(
            pb::ResolveReportsRequest {
                user_id: other.user_id.clone(),
                action: pb::ReportAction::Dismiss as i32,
                reason: "moderators-own-words".into(),
                ..Default::default()
            },
            &app.named_operator_token(Uuid::now_v7(), "ops-export"),
        ))
        .await
        .unwrap();
    // Seasons: nadia wins twice in s1 (finished), loses once in s2 (current); omar and
    // pavel play in s1 without her.
    let in_s1 = Utc::now() - Duration::days(10);
    for (match_id, a, b, when) in [
        ("s1-0", id(&me), id(&third), in_s1),
        ("s1-1", id(&me), id(&third), in_s1),
        ("s1-theirs", id(&other), id(&third), in_s1),
        ("s2-0", id(&other), id(&me), Utc::now()),
    ] {
        app.store()
            .record_match(&duel(match_id, a, b, 0, true, 1), when)
            .await
            .unwrap();
    }
    // Analyses kept of both seats of s2-0: nadia's (seat 1) and omar's (seat 0).
    let review = |loss: f64| PlayReview {
        action: 1,
        played: Card::from_index(5).unwrap(),
        best: Card::from_index(9).unwrap(),
        loss,
        quality: Quality::Good,
    };
    app.store()
        .keep_match_analysis("s2-0", 1, 100, &[review(9.5)], Utc::now())
        .await
        .unwrap();
    app.store()
        .keep_match_analysis(
            "s2-0",
            0,
            100,
            &[review(0.123456789), review(0.5)],
            Utc::now(),
        )
        .await
        .unwrap();

    let (doc, _) = export(&app, &me.access_token).await;
    let text = doc.to_string();

    // The inbox: omar's request and the "report handled" notice, both unread.
    let inbox = &doc["inbox"];
    let notices = inbox["notices"].as_array().unwrap();
    let kinds: Vec<&str> = notices
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["report_handled", "friend_request"], "{inbox:#}");
    assert_eq!(inbox["unread"], 2);
    assert_eq!(
        notices[1]["friend_request"]["user_id"],
        other.user_id.as_str()
    );
    assert_eq!(notices[1]["read"], false);
    assert!(notices[1]["id"].as_u64().unwrap() > 0);
    assert!(notices[1]["created_at"].is_string() && notices[1]["expires_at"].is_string());
    assert_eq!(
        notices[0]["report_handled"]["target_user_id"],
        other.user_id.as_str()
    );

    // Her push device, without its token.
    let devices = doc["push_devices"].as_array().unwrap();
    assert_eq!(devices.len(), 1, "{devices:#?}");
    assert_eq!(devices[0]["platform"], "fcm");
    assert_eq!(devices[0]["token_ends_with"], "XYZ789");
    assert_eq!(devices[0]["locale"], "ar-EG");
    assert_eq!(devices[0]["app_id"], "online.basra.app");
    assert!(devices[0]["registered_at"].is_string());
    assert!(
        !text.contains("secret-device-token"),
        "a push token in full"
    );
    assert!(!text.contains("QQQ111"), "another player's device");

    // The reports she filed: target, reason, comment, time, state; not what was done.
    let filed = doc["reports_filed"].as_array().unwrap();
    let seen: Vec<(&str, &str, &str, &str)> = filed
        .iter()
        .map(|r| {
            (
                r["target_user_id"].as_str().unwrap(),
                r["reason"].as_str().unwrap(),
                r["comment"].as_str().unwrap(),
                r["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                other.user_id.as_str(),
                "offensive_name",
                "nadia-on-omar",
                "handled"
            ),
            (third.user_id.as_str(), "cheating", "nadia-on-pavel", "open"),
        ],
        "newest first"
    );
    assert!(filed.iter().all(|r| r["reported_at"].is_string()));
    assert!(filed[0]["handled_at"].is_string() && filed[1]["handled_at"].is_null());
    assert!(!text.contains("omar-on-"), "a report someone else filed");
    assert!(
        !text.contains("dismiss") && !text.contains("moderators-own-words"),
        "how it was handled"
    );

    // Seasons: s2 now with one rated match; s1 finished, her rating, tier and rank.
    let seasons = &doc["seasons"];
    assert_eq!(seasons["current"]["season_id"], "s2");
    assert_eq!(seasons["current"]["name"], "Season s2");
    assert_eq!(seasons["current"]["ranked_matches"], 1);
    let finished = seasons["finished"].as_array().unwrap();
    assert_eq!(finished.len(), 1, "{seasons:#}");
    assert_eq!(finished[0]["season_id"], "s1");
    assert_eq!(finished[0]["ranked_matches"], 2);
    assert_eq!(finished[0]["rank"], 1);
    assert_eq!(finished[0]["tier"], "Gold");
    assert!(finished[0]["rating"].as_f64().unwrap() > 1500.0);
    assert!(finished[0]["deviation"].is_number() && finished[0]["volatility"].is_number());

    // The analysis of her plays, marked as GetReplay marks them; not omar's.
    let matches = doc["matches"].as_array().unwrap();
    let s2 = matches.iter().find(|m| m["match_id"] == "s2-0").unwrap();
    let analysis = &s2["your_analysis"];
    assert_eq!(analysis["worlds"], 100);
    let plays = analysis["plays"].as_array().unwrap();
    assert_eq!(plays.len(), 1, "{analysis:#}");
    assert_eq!(plays[0]["expected_loss"], 9.5);
    assert_eq!(plays[0]["mark"], "blunder");
    assert!(
        matches
            .iter()
            .filter(|m| m["match_id"] != "s2-0")
            .all(|m| m["your_analysis"].is_null())
    );
    assert!(!text.contains("0.123456789"), "another player's analysis");
    assert!(
        !text.contains("s1-theirs"),
        "a match the caller did not play"
    );

    // Omar's export holds his own: his device, his two reports, the report about him
    // never, nadia's request to pavel never.
    let (theirs, _) = export(&app, &other.access_token).await;
    assert_eq!(theirs["push_devices"][0]["token_ends_with"], "QQQ111");
    assert_eq!(theirs["reports_filed"].as_array().unwrap().len(), 2);
    assert!(!theirs.to_string().contains("nadia-on-omar"));
    assert_eq!(theirs["inbox"]["notices"].as_array().unwrap().len(), 0);
    assert_eq!(theirs["seasons"]["finished"][0]["ranked_matches"], 1);
}

async fn a_large_export_comes_in_pieces<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut client = app.client().await;
    let me = register(&app, "vera").await;
    let other = register(&app, "xavi").await;
    let service = app.service_token();
    let records: Vec<pb::MatchRecord> = (0..250)
        .map(|i| match_record(&format!("m-{i:03}"), &me.user_id, &other.user_id, false))
        .collect();
    for batch in records.chunks(100) {
        client
            .record_matches(authed(
                pb::RecordMatchesRequest {
                    records: batch.to_vec(),
                },
                &service,
            ))
            .await
            .unwrap();
    }
    let (doc, pieces) = export(&app, &me.access_token).await;
    assert!(pieces >= 3, "{pieces} pieces");
    let matches = doc["matches"].as_array().unwrap();
    assert_eq!(matches.len(), 250, "every match across the store's pages");
    let mut ids: Vec<&str> = matches
        .iter()
        .map(|m| m["match_id"].as_str().unwrap())
        .collect();
    ids.dedup();
    assert_eq!(ids.len(), 250, "none twice");
}

async fn export_needs_a_players_token<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut client = app.client().await;
    let (code, _) = failure(client.export_my_data(pb::ExportMyDataRequest {}).await);
    assert_eq!(code, Code::Unauthenticated);
    let (code, text) = failure(
        client
            .export_my_data(authed(pb::ExportMyDataRequest {}, &app.service_token()))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied, "{text}");
    // A valid token of an account that does not exist.
    let ghost = app
        .service
        .issuer()
        .issue(
            &basra_platform::auth::Caller {
                user_id: uuid::Uuid::now_v7(),
                role: basra_platform::auth::Role::Player,
                guest: false,
            },
            std::time::Duration::from_secs(60),
        )
        .unwrap()
        .token;
    let (code, _) = failure(
        client
            .export_my_data(authed(pb::ExportMyDataRequest {}, &ghost))
            .await,
    );
    assert_eq!(code, Code::NotFound);
    for (code, text) in [
        failure(
            client
                .change_password(authed(
                    pb::ChangePasswordRequest {
                        current_password: "correct horse battery".into(),
                        new_password: "another long password".into(),
                    },
                    &ghost,
                ))
                .await,
        ),
        failure(
            client
                .delete_account(authed(
                    pb::DeleteAccountRequest {
                        proof: Some(pb::delete_account_request::Proof::DeviceId("d".into())),
                    },
                    &ghost,
                ))
                .await,
        ),
    ] {
        assert_eq!(code, Code::NotFound, "{text}");
    }
    // A token whose account is gone (deleted, and refused by the revoked list).
    let gone = register(&app, "zaki").await;
    client
        .delete_account(authed(
            pb::DeleteAccountRequest {
                proof: Some(pb::delete_account_request::Proof::Password(
                    "correct horse battery".into(),
                )),
            },
            &gone.access_token,
        ))
        .await
        .unwrap();
    let (code, _) = failure(
        client
            .export_my_data(authed(pb::ExportMyDataRequest {}, &gone.access_token))
            .await,
    );
    assert_eq!(code, Code::Unauthenticated);
}
