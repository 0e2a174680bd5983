//! ExportMyData through a real tonic client, on PostgreSQL and the memory store: the
//! document holds exactly the caller's data, none of another player's private data, and
//! comes in pieces of at most 64 KiB when large.

use accounts::store::Store;
use basra_proto::basra::accounts::v1 as pb;
use tokio_stream::StreamExt as _;
use tonic::Code;

use crate::grpc::{failure, guest_req, login_req, match_record, register, register_req};
use crate::helpers::{FriendLinks, TestApp, authed, spawn_app, tokens};

on_both_stores! {
    cases {
        the_export_holds_the_callers_data_and_no_one_elses_private_data,
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
    // The stranger appears only as the caller's opponent in mine-2 (their id), never
    // as the friend's outgoing request.
    assert_eq!(text.matches(&stranger.user_id).count(), 1, "{text}");
    // The asker appears as the caller's incoming request only, not as blocked by the
    // friend.
    assert_eq!(text.matches(&asker.user_id).count(), 1, "{text}");
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
