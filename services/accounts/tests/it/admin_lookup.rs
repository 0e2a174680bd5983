//! AccountsAdminService's lookups through real tonic clients, on PostgreSQL and the memory
//! store: FindPlayers by id, username, friend code and part of a display name; GetPlayer
//! with the ban, friends, matches, sessions and audit; ExportPlayerData answering the
//! player's own ExportMyData document; the audit of `show` and `export`; and every
//! documented status.

use accounts::store::Store;
use basra_proto::basra::accounts::v1 as pb;
use tokio_stream::StreamExt as _;
use tonic::Code;
use uuid::Uuid;

use crate::admin::{admin, operator_token};
use crate::grpc::{failure, register};
use crate::helpers::{FriendLinks, authed, duel, spawn_app};

on_both_stores! {
    cases {
        find_show_and_export_a_player,
        lookup_statuses,
    }
}

async fn collect<T>(
    mut stream: tonic::Streaming<T>,
    data: impl Fn(T) -> Vec<u8>,
) -> serde_json::Value {
    let mut bytes = Vec::new();
    while let Some(piece) = stream.next().await {
        bytes.extend(data(piece.unwrap()));
    }
    serde_json::from_slice(&bytes).unwrap()
}

async fn find_show_and_export_a_player<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut admin = admin(&app).await;
    let operator = Uuid::now_v7();
    let op = operator_token(&app, operator);
    let mut client = app.client().await;
    let layla = register(&app, "layla_b").await;
    let other = register(&app, "omar").await;
    client
        .set_display_name(authed(
            pb::SetDisplayNameRequest {
                display_name: "Layla the Great".into(),
            },
            &layla.access_token,
        ))
        .await
        .unwrap();
    FriendLinks::new()
        .request(&layla, &other)
        .make(&mut client)
        .await;
    let (l, o) = (
        Uuid::parse_str(&layla.user_id).unwrap(),
        Uuid::parse_str(&other.user_id).unwrap(),
    );
    app.service
        .store()
        .record_match(&duel("m-1", l, o, 0, true, 5), chrono::Utc::now())
        .await
        .unwrap();
    let own = client
        .get_profile(authed(
            pb::GetProfileRequest::default(),
            &layla.access_token,
        ))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap();

    // Found by each of the four.
    let find = |query: &str| {
        authed(
            pb::FindPlayersRequest {
                query: query.into(),
                limit: 0,
            },
            &op,
        )
    };
    for (query, matched_by) in [
        (layla.user_id.as_str(), "user_id"),
        ("LAYLA_B", "username"),
        (own.friend_code.as_str(), "friend_code"),
        ("the great", "display_name"),
    ] {
        let players = admin
            .find_players(find(query))
            .await
            .unwrap()
            .into_inner()
            .players;
        assert_eq!(players.len(), 1, "{query}: {players:?}");
        assert_eq!(players[0].user_id, layla.user_id, "{query}");
        assert_eq!(players[0].matched_by, matched_by, "{query}");
        assert_eq!(players[0].username, "layla_b");
    }
    assert!(
        admin
            .find_players(find("nobody-like-this"))
            .await
            .unwrap()
            .into_inner()
            .players
            .is_empty()
    );

    // Shown: profile, counts, the match, a live sign-in, the ban, and the audit.
    admin
        .ban_player(authed(
            pb::BanPlayerRequest {
                user_id: layla.user_id.clone(),
                reason: "spam".into(),
                expires_at: None,
            },
            &op,
        ))
        .await
        .unwrap();
    let shown = admin
        .get_player(authed(
            pb::GetPlayerRequest {
                user_id: layla.user_id.clone(),
                reason: "ticket 42".into(),
            },
            &op,
        ))
        .await
        .unwrap()
        .into_inner();
    let profile = shown.profile.unwrap();
    assert_eq!(profile.username, "layla_b");
    assert_eq!(profile.friend_code, own.friend_code);
    assert_eq!(profile.matches_played, 1);
    assert_eq!(shown.ban.unwrap().reason, "spam");
    assert_eq!(
        (
            shown.friends,
            shown.outgoing_requests,
            shown.incoming_requests
        ),
        (0, 1, 0)
    );
    assert_eq!(shown.recent_matches.len(), 1);
    assert_eq!(shown.recent_matches[0].match_id, "m-1");
    assert_eq!(shown.sessions.len(), 1);
    assert!(shown.sessions[0].active);
    let actions: Vec<&str> = shown.audit.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(actions, ["ban", "show"]);

    // Exported: the document the player gets themselves (up to its export time).
    admin
        .unban_player(authed(
            pb::UnbanPlayerRequest {
                user_id: layla.user_id.clone(),
                reason: "lifted".into(),
            },
            &op,
        ))
        .await
        .unwrap();
    let by_operator = collect(
        admin
            .export_player_data(authed(
                pb::ExportPlayerDataRequest {
                    user_id: layla.user_id.clone(),
                    reason: "the player asked support (ticket 43)".into(),
                },
                &op,
            ))
            .await
            .unwrap()
            .into_inner(),
        |p| p.data,
    )
    .await;
    let by_player = collect(
        client
            .export_my_data(authed(pb::ExportMyDataRequest {}, &layla.access_token))
            .await
            .unwrap()
            .into_inner(),
        |p| p.data,
    )
    .await;
    let without_time = |mut v: serde_json::Value| {
        v.as_object_mut().unwrap().remove("exported_at");
        v
    };
    assert_eq!(without_time(by_operator), without_time(by_player));

    let audit = app.store().audit_of(l).await.unwrap();
    let actions: Vec<(&str, &str)> = audit
        .iter()
        .map(|e| (e.action.as_str(), e.reason.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("ban", "spam"),
            ("show", "ticket 42"),
            ("unban", "lifted"),
            ("export", "the player asked support (ticket 43)"),
        ]
    );
    assert!(audit.iter().all(|e| e.operator_id == operator));
}

async fn lookup_statuses<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut admin = admin(&app).await;
    let op = operator_token(&app, Uuid::now_v7());
    let player = register(&app, "salma").await;
    let find = |query: &str, limit: u32| pb::FindPlayersRequest {
        query: query.into(),
        limit,
    };
    // Who may call: an operator only.
    let (code, _) = failure(admin.find_players(find("salma", 0)).await);
    assert_eq!(code, Code::Unauthenticated);
    let (code, _) = failure(
        admin
            .find_players(authed(find("salma", 0), &player.access_token))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);
    let (code, _) = failure(
        admin
            .get_player(authed(
                pb::GetPlayerRequest {
                    user_id: player.user_id.clone(),
                    reason: String::new(),
                },
                &player.access_token,
            ))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);
    let (code, _) = failure(
        admin
            .export_player_data(authed(
                pb::ExportPlayerDataRequest {
                    user_id: player.user_id.clone(),
                    reason: "x".into(),
                },
                &player.access_token,
            ))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);

    // Input.
    for (case, request) in [
        ("empty query", find("  ", 0)),
        ("long query", find(&"a".repeat(101), 0)),
        ("limit above 100", find("salma", 101)),
    ] {
        let (code, message) = failure(admin.find_players(authed(request, &op)).await);
        assert_eq!(code, Code::InvalidArgument, "{case}: {message}");
    }
    let show = |user_id: &str, reason: &str| {
        authed(
            pb::GetPlayerRequest {
                user_id: user_id.into(),
                reason: reason.into(),
            },
            &op,
        )
    };
    let (code, _) = failure(admin.get_player(show("not-an-id", "")).await);
    assert_eq!(code, Code::InvalidArgument);
    let (code, _) = failure(
        admin
            .get_player(show(&player.user_id, &"r".repeat(501)))
            .await,
    );
    assert_eq!(code, Code::InvalidArgument);
    let (code, _) = failure(
        admin
            .get_player(show(&Uuid::now_v7().to_string(), ""))
            .await,
    );
    assert_eq!(code, Code::NotFound);
    let export = |user_id: &str, reason: &str| {
        authed(
            pb::ExportPlayerDataRequest {
                user_id: user_id.into(),
                reason: reason.into(),
            },
            &op,
        )
    };
    let (code, _) = failure(admin.export_player_data(export(&player.user_id, " ")).await);
    assert_eq!(code, Code::InvalidArgument, "an export says why");
    let (code, _) = failure(admin.export_player_data(export("nope", "why")).await);
    assert_eq!(code, Code::InvalidArgument);
    let (code, _) = failure(
        admin
            .export_player_data(export(&Uuid::now_v7().to_string(), "why"))
            .await,
    );
    assert_eq!(code, Code::NotFound);
    // A refused lookup is not audited; an empty-reason show is.
    let id = Uuid::parse_str(&player.user_id).unwrap();
    assert!(app.store().audit_of(id).await.unwrap().is_empty());
    admin.get_player(show(&player.user_id, "")).await.unwrap();
    assert_eq!(app.store().audit_of(id).await.unwrap().len(), 1);
}
