//! Rating seasons through the service (both stores): ListSeasons, a finished season's
//! leaderboard kept and listed (Leaderboard's season_id and its statuses), and the
//! profile's tier and best season finish.

use crate::grpc::{failure, register};
use crate::helpers::{TestApp, authed, duel, test_settings};
use accounts::seasons::{Calendar, Season, Tier};
use accounts::store::Store;
use basra_proto::basra::accounts::v1 as pb;
use chrono::Utc;
use tonic::Code;
use uuid::Uuid;

on_both_stores! {
    cases {
        seasons_are_listed_and_a_finished_seasons_leaderboard_is_kept,
        leaderboard_season_statuses,
    }
}

/// `s1` ended a day ago, `s2` is current, `s3` starts in a month; three tiers.
pub(crate) fn calendar() -> Calendar {
    let now = Utc::now();
    let season = |id: &str, days: i64| Season {
        id: id.into(),
        name: format!("Season {id}"),
        start: now + chrono::Duration::days(days),
    };
    let tier = |name: &str, min_rating: f64| Tier {
        name: name.into(),
        min_rating,
    };
    Calendar {
        reset_factor: 0.5,
        deviation_growth: 150.0,
        list: vec![season("s1", -30), season("s2", -1), season("s3", 30)],
        tiers: vec![
            tier("Bronze", 0.0),
            tier("Silver", 1400.0),
            tier("Gold", 1550.0),
        ],
    }
}

async fn app_with_seasons<S: Store>(store: S) -> TestApp<S> {
    let mut settings = test_settings(&[]);
    settings.seasons = calendar();
    TestApp::builder(store).settings(settings).spawn().await
}

async fn seasons_are_listed_and_a_finished_seasons_leaderboard_is_kept<S: Store>(store: S) {
    let app = app_with_seasons(store).await;
    let mut client = app.client().await;
    let alice = register(&app, "alice").await;
    let bob = register(&app, "bob").await;
    let (a, b) = (
        Uuid::parse_str(&alice.user_id).unwrap(),
        Uuid::parse_str(&bob.user_id).unwrap(),
    );
    // Three wins for alice in s1.
    for i in 0..3 {
        app.store()
            .record_match(
                &duel(&format!("s1-{i}"), a, b, 0, true, 1),
                Utc::now() - chrono::Duration::days(10),
            )
            .await
            .unwrap();
    }

    let seasons = client
        .list_seasons(authed(pb::ListSeasonsRequest {}, &alice.access_token))
        .await
        .unwrap()
        .into_inner();
    let ids: Vec<(&str, bool)> = seasons
        .seasons
        .iter()
        .map(|s| (s.id.as_str(), s.current))
        .collect();
    assert_eq!(ids, [("s2", true), ("s1", false)]);
    assert_eq!(seasons.seasons[1].ends_at, seasons.seasons[0].starts_at);
    assert_eq!(seasons.next.as_ref().unwrap().id, "s3");
    assert_eq!(seasons.seasons[1].name, "Season s1");

    // s1's final leaderboard; the current one (s2) lists nobody yet.
    let board = |season: &str| pb::LeaderboardRequest {
        season_id: season.into(),
        ..Default::default()
    };
    let s1 = client
        .leaderboard(authed(board("s1"), &bob.access_token))
        .await
        .unwrap()
        .into_inner();
    let listed: Vec<(&str, u32)> = s1
        .entries
        .iter()
        .map(|e| (e.user_id.as_str(), e.ranked_matches))
        .collect();
    assert_eq!(
        listed,
        [(alice.user_id.as_str(), 3), (bob.user_id.as_str(), 3)]
    );
    assert_eq!(s1.entries[0].tier, "Gold", "{s1:?}");
    assert_eq!(s1.caller.as_ref().unwrap().rank, 2);
    assert_eq!(s1.season.as_ref().unwrap().id, "s1");
    assert!(!s1.season.as_ref().unwrap().current);
    let s1_rating = s1.entries[0].rating;
    let current = client
        .leaderboard(authed(board(""), &bob.access_token))
        .await
        .unwrap()
        .into_inner();
    assert!(current.entries.is_empty() && current.caller.is_none());
    assert_eq!(current.season.as_ref().unwrap().id, "s2");
    assert_eq!(
        client
            .leaderboard(authed(board("s2"), &bob.access_token))
            .await
            .unwrap()
            .into_inner(),
        current
    );

    // Alice's profile: her rating softly reset into s2, its tier, her best finish.
    let profile = client
        .get_profile(authed(
            pb::GetProfileRequest::default(),
            &alice.access_token,
        ))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap();
    assert!((profile.rating - (1500.0 + 0.5 * (s1_rating - 1500.0))).abs() < 1e-9);
    assert_eq!(profile.season_id, "s2");
    assert_eq!(
        profile.tier,
        Calendar::tier_name(&calendar(), profile.rating)
    );
    let best = profile.best_season_finish.unwrap();
    assert_eq!(
        (
            best.season_id.as_str(),
            best.season_name.as_str(),
            best.rank
        ),
        ("s1", "Season s1", 1)
    );
    assert_eq!((best.rating, best.tier.as_str()), (s1_rating, "Gold"));
    // Another player sees it too.
    let seen = client
        .get_profile(authed(
            pb::GetProfileRequest {
                user_id: alice.user_id.clone(),
            },
            &bob.access_token,
        ))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap();
    assert_eq!(seen.best_season_finish.unwrap().rank, 1);
}

async fn leaderboard_season_statuses<S: Store>(store: S) {
    let app = app_with_seasons(store).await;
    let mut client = app.client().await;
    let alice = register(&app, "alice").await;
    for (season, code) in [
        ("s3", Code::NotFound),
        ("nope", Code::NotFound),
        (&*"x".repeat(65), Code::InvalidArgument),
    ] {
        let (got, message) = failure(
            client
                .leaderboard(authed(
                    pb::LeaderboardRequest {
                        season_id: season.into(),
                        ..Default::default()
                    },
                    &alice.access_token,
                ))
                .await,
        );
        assert_eq!(got, code, "{season}: {message}");
    }
    let (code, _) = failure(
        client
            .list_seasons(authed(pb::ListSeasonsRequest {}, &app.service_token()))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);
    let (code, _) = failure(client.list_seasons(pb::ListSeasonsRequest {}).await);
    assert_eq!(code, Code::Unauthenticated);
}
