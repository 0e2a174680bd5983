//! The analyst schema against real PostgreSQL: each view returns what was recorded through
//! the accounts store, and the `basra_analyst` role reads the views and nothing else.

use std::collections::{BTreeMap, HashMap, HashSet};

use accounts::PgStore;
use accounts::store::prelude::*;
use basra_records::{ActionKind, EndReason};
use chrono::NaiveDate;
use sqlx::{PgPool, Row};
use uuid::Uuid;

use crate::helpers::{players, record_matches};

fn mode_of(ranked: bool, bots: usize) -> &'static str {
    match (ranked, bots) {
        (true, _) => "ranked",
        (false, 0) => "casual",
        _ => "with_bots",
    }
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn the_matches_view_returns_each_recorded_match(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 12).await;
    let recorded = record_matches(&store, &people, 40, 5, 1).await;

    let rows = sqlx::query("SELECT * FROM analyst.matches ORDER BY match_id")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(rows.len(), recorded.len());
    let by_id: HashMap<&str, _> = recorded
        .iter()
        .map(|(r, _)| (r.match_id.as_str(), r))
        .collect();
    let mut reasons = HashSet::new();
    let mut modes = HashSet::new();
    for row in &rows {
        let id: String = row.get("match_id");
        let r = by_id[id.as_str()];
        let bots = r.seats.iter().filter(|s| s.is_bot).count();
        let plays: Vec<_> = r
            .actions
            .iter()
            .filter(|a| matches!(a.action, ActionKind::Play { .. }))
            .collect();
        assert_eq!(row.get::<String, _>("room_id"), r.room_id);
        assert_eq!(row.get::<String, _>("mode"), mode_of(r.ranked, bots));
        assert_eq!(row.get::<bool, _>("ranked"), r.ranked);
        assert_eq!(row.get::<i16, _>("seats"), r.seats.len() as i16);
        assert_eq!(
            row.get::<String, _>("settings_preset"),
            format!("{}p-{}", r.seats.len(), r.settings.target_score)
        );
        assert_eq!(
            row.get::<i32, _>("target_score") as u32,
            r.settings.target_score
        );
        assert_eq!(
            row.get::<chrono::DateTime<chrono::Utc>, _>("started_at"),
            r.started_at
        );
        assert_eq!(
            row.get::<chrono::DateTime<chrono::Utc>, _>("ended_at"),
            r.ended_at
        );
        assert_eq!(row.get::<NaiveDate, _>("day"), r.ended_at.date_naive());
        let duration = (r.ended_at - r.started_at).num_milliseconds() as f64 / 1000.0;
        assert!((row.get::<f64, _>("duration_seconds") - duration).abs() < 1e-6);
        assert_eq!(row.get::<i32, _>("rounds") as usize, r.rounds.len());
        assert_eq!(row.get::<i32, _>("plays") as usize, plays.len());
        assert_eq!(
            row.get::<i32, _>("automatic_plays") as usize,
            plays.iter().filter(|a| a.automatic).count()
        );
        assert_eq!(
            row.get::<Option<i16>, _>("winner_side"),
            r.winner_side.map(i16::from)
        );
        assert_eq!(row.get::<String, _>("end_reason"), r.end_reason.as_str());
        assert_eq!(row.get::<i32, _>("side0_total") as u32, r.final_totals[0]);
        assert_eq!(row.get::<i32, _>("side1_total") as u32, r.final_totals[1]);
        assert_eq!(row.get::<i32, _>("bots") as usize, bots);
        assert_eq!(row.get::<i32, _>("humans") as usize, r.seats.len() - bots);
        assert_eq!(row.get::<bool, _>("bots_involved"), bots > 0);
        reasons.insert(r.end_reason.as_str());
        modes.insert(mode_of(r.ranked, bots));
    }
    // The corpus is varied enough for the checks above to mean something.
    assert!(
        reasons.contains(EndReason::TargetReached.as_str()),
        "{reasons:?}"
    );
    assert_eq!(modes.len(), 3, "{modes:?}");

    // A room with its own rules is `custom`.
    sqlx::query(
        "UPDATE matches SET settings = settings || '{\"card_points\": true}' WHERE match_id = $1",
    )
    .bind(&recorded[0].0.match_id)
    .execute(&pool)
    .await
    .unwrap();
    let preset: String =
        sqlx::query_scalar("SELECT settings_preset FROM analyst.matches WHERE match_id = $1")
            .bind(&recorded[0].0.match_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(preset, "custom");
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn the_match_players_view_has_every_seat_with_its_result_and_rating_change(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 8).await;
    let recorded = record_matches(&store, &people, 30, 3, 2).await;

    let rows = sqlx::query("SELECT * FROM analyst.match_players")
        .fetch_all(&pool)
        .await
        .unwrap();
    let seats: usize = recorded.iter().map(|(r, _)| r.seats.len()).sum();
    assert_eq!(rows.len(), seats, "one row per seat, bots included");
    let mut rated = 0;
    let mut fills = std::collections::HashMap::<Option<String>, usize>::new();
    for row in &rows {
        let id: String = row.get("match_id");
        let (r, rec) = recorded.iter().find(|(r, _)| r.match_id == id).unwrap();
        let seat = r.seats[row.get::<i16, _>("seat") as usize].clone();
        let side = usize::from(seat.side);
        assert_eq!(row.get::<i16, _>("side"), i16::from(seat.side));
        assert_eq!(row.get::<Option<Uuid>, _>("user_id"), seat.user_id);
        assert_eq!(row.get::<bool, _>("is_bot"), seat.is_bot);
        assert_eq!(row.get::<bool, _>("won"), r.winner_side == Some(seat.side));
        assert_eq!(
            row.get::<bool, _>("lost"),
            r.winner_side.is_some_and(|w| w != seat.side)
        );
        assert_eq!(row.get::<i32, _>("side_total") as u32, r.final_totals[side]);
        assert_eq!(
            row.get::<i32, _>("basras") as u32,
            r.basra_counts[side].basra
        );
        assert_eq!(
            row.get::<i32, _>("jack_basras") as u32,
            r.basra_counts[side].jack
        );
        assert_eq!(
            row.get::<i32, _>("komi_basras") as u32,
            r.basra_counts[side].komi
        );
        let change = rec.rating_changes.iter().find(|c| c.seat == seat.seat);
        assert_eq!(
            row.get::<Option<f64>, _>("rating_before"),
            change.map(|c| c.rating_before)
        );
        assert_eq!(
            row.get::<Option<f64>, _>("rating_after"),
            change.map(|c| c.rating_after)
        );
        assert_eq!(
            row.get::<Option<f64>, _>("deviation_after"),
            change.map(|c| c.deviation_after)
        );
        if let Some(c) = change {
            rated += 1;
            let delta: f64 = row.get("rating_change");
            assert!((delta - (c.rating_after - c.rating_before)).abs() < 1e-9);
        }
        assert_eq!(
            row.get::<Option<String>, _>("seat_fill").as_deref(),
            seat.fill.map(|f| f.as_str())
        );
        assert_eq!(
            row.get::<Option<f64>, _>("queue_wait_seconds"),
            seat.queue_wait_ms.map(|ms| f64::from(ms) / 1000.0)
        );
        *fills
            .entry(row.get::<Option<String>, _>("seat_fill"))
            .or_default() += 1;
    }
    assert!(rated > 0, "some matches were rated");
    // This corpus (seed 2) fills seats by the queue, as hosts, by code and after
    // invites (the export test sees bots too), and every seat says how.
    for fill in ["queue", "host", "code", "invite"] {
        assert!(
            fills.contains_key(&Some(fill.to_owned())),
            "{fill}: {fills:?}"
        );
    }
    assert!(!fills.contains_key(&None), "{fills:?}");
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn the_rounds_view_has_each_side_of_each_round(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 6).await;
    let recorded = record_matches(&store, &people, 15, 2, 3).await;

    let rows = sqlx::query("SELECT * FROM analyst.rounds ORDER BY match_id, round, side")
        .fetch_all(&pool)
        .await
        .unwrap();
    let expected: usize = recorded.iter().map(|(r, _)| r.rounds.len() * 2).sum();
    assert_eq!(rows.len(), expected);
    let mut majorities = 0;
    for row in &rows {
        let id: String = row.get("match_id");
        let (r, _) = recorded.iter().find(|(r, _)| r.match_id == id).unwrap();
        let round = &r.rounds[row.get::<i32, _>("round") as usize - 1];
        let s = &round.sides[row.get::<i16, _>("side") as usize];
        assert_eq!(row.get::<i16, _>("dealer"), i16::from(round.dealer));
        assert_eq!(row.get::<i32, _>("pile_size") as u32, s.pile_size);
        assert_eq!(row.get::<i32, _>("basras") as u32, s.basras.basra);
        assert_eq!(row.get::<i32, _>("jack_basras") as u32, s.basras.jack);
        assert_eq!(row.get::<i32, _>("komi_basras") as u32, s.basras.komi);
        assert_eq!(row.get::<i32, _>("basra_points") as u32, s.basra_points);
        assert_eq!(
            row.get::<i32, _>("majority_points") as u32,
            s.majority_points
        );
        assert_eq!(row.get::<bool, _>("majority"), s.majority_points > 0);
        assert_eq!(row.get::<i32, _>("card_points") as u32, s.card_points);
        assert_eq!(row.get::<i32, _>("round_points") as u32, s.round_points);
        assert_eq!(row.get::<i32, _>("total") as u32, s.total);
        majorities += usize::from(s.majority_points > 0);
    }
    assert!(majorities > 0);
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn daily_activity_counts_each_day(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 10).await;
    let recorded = record_matches(&store, &people, 40, 4, 4).await;

    #[derive(Default, Debug, PartialEq)]
    struct Day {
        matches: i32,
        ranked: i32,
        with_bots: i32,
        players: HashSet<Uuid>,
        rounds: i32,
        plays: i32,
        automatic: i32,
    }
    let mut expected: BTreeMap<NaiveDate, Day> = BTreeMap::new();
    for (r, _) in &recorded {
        let day = expected.entry(r.ended_at.date_naive()).or_default();
        day.matches += 1;
        day.ranked += i32::from(r.ranked);
        day.with_bots += i32::from(r.seats.iter().any(|s| s.is_bot));
        day.players.extend(r.seats.iter().filter_map(|s| s.user_id));
        day.rounds += r.rounds.len() as i32;
        for a in &r.actions {
            if matches!(a.action, ActionKind::Play { .. }) {
                day.plays += 1;
                day.automatic += i32::from(a.automatic);
            }
        }
    }
    let rows = sqlx::query("SELECT * FROM analyst.daily_activity ORDER BY day")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert!(rows.len() >= 3, "the corpus spans several days");
    assert_eq!(rows.len(), expected.len());
    for row in &rows {
        let day = &expected[&row.get::<NaiveDate, _>("day")];
        assert_eq!(row.get::<i32, _>("matches"), day.matches);
        assert_eq!(row.get::<i32, _>("ranked_matches"), day.ranked);
        assert_eq!(row.get::<i32, _>("matches_with_bots"), day.with_bots);
        assert_eq!(
            row.get::<i32, _>("active_players") as usize,
            day.players.len()
        );
        assert_eq!(row.get::<i32, _>("rounds"), day.rounds);
        assert_eq!(row.get::<i32, _>("plays"), day.plays);
        assert_eq!(row.get::<i32, _>("automatic_plays"), day.automatic);
    }
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn rating_history_follows_each_player_to_the_current_rating(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 6).await;
    let recorded = record_matches(&store, &people, 40, 3, 5).await;

    let rows =
        sqlx::query("SELECT * FROM analyst.rating_history ORDER BY user_id, rated_match_number")
            .fetch_all(&pool)
            .await
            .unwrap();
    let changes: usize = recorded
        .iter()
        .map(|(_, rec)| rec.rating_changes.len())
        .sum();
    assert!(changes > 0);
    assert_eq!(rows.len(), changes);
    let mut last: HashMap<Uuid, (i32, f64)> = HashMap::new();
    for row in &rows {
        let user: Uuid = row.get("user_id");
        let n: i32 = row.get("rated_match_number");
        let before: f64 = row.get("rating_before");
        let after: f64 = row.get("rating_after");
        match last.get(&user) {
            None => assert_eq!(n, 1),
            Some(&(previous, rating)) => {
                assert_eq!(n, previous + 1);
                assert!(
                    (before - rating).abs() < 1e-9,
                    "each match starts where the last ended"
                );
            }
        }
        assert!(
            row.get::<Option<f64>, _>("opponent_rating_before")
                .is_some()
        );
        last.insert(user, (n, after));
    }
    for (user, (n, rating)) in last {
        let profile = store
            .profile(
                user,
                accounts::LeaderboardRules {
                    min_ranked_matches: 1,
                },
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(profile.ranked_matches as i32, n);
        assert!((profile.rating.rating - rating).abs() < 1e-9);
    }
}

/// The tables holding people's secrets and identities, and the raw records.
const PRIVATE: [&str; 8] = [
    "users",
    "sign_in_clients",
    "refresh_tokens",
    "password_credentials",
    "device_identities",
    "ratings",
    "matches",
    "match_players",
];

const VIEWS: [&str; 7] = [
    "players",
    "matches",
    "match_players",
    "rounds",
    "daily_activity",
    "rating_history",
    "match_records",
];

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn the_analyst_role_reads_the_views_and_nothing_else(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 4).await;
    record_matches(&store, &people, 5, 1, 6).await;
    // A guest with a device and a refresh token, so every private table has rows.
    sqlx::query(
        "WITH u AS (INSERT INTO users (id, display_name, is_guest, created_at)
                    VALUES ($1, 'guest', TRUE, now()) RETURNING id),
              d AS (INSERT INTO device_identities (device_id, user_id, created_at)
                    SELECT 'device-1', id, now() FROM u)
         INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at)
         SELECT decode(repeat('ab', 32), 'hex'), $1, id, now(), now() + interval '1 day' FROM u",
    )
    .bind(Uuid::now_v7())
    .execute(&pool)
    .await
    .unwrap();

    let mut conn = pool.acquire().await.unwrap();
    sqlx::query("SET ROLE basra_analyst")
        .execute(&mut *conn)
        .await
        .unwrap();
    for view in VIEWS {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM analyst.{view}"
        )))
        .fetch_one(&mut *conn)
        .await
        .unwrap_or_else(|e| panic!("the analyst reads analyst.{view}: {e}"));
        assert!(n > 0, "analyst.{view} has rows");
    }
    for table in PRIVATE {
        let err = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM public.{table}")))
            .fetch_all(&mut *conn)
            .await
            .expect_err(table);
        assert_permission_denied(&err, table);
    }
    // Read-only, even where a view would be updatable.
    for statement in [
        "DELETE FROM analyst.match_records",
        "UPDATE analyst.match_records SET ranked = TRUE",
        "INSERT INTO users (id, display_name, is_guest, created_at) VALUES (gen_random_uuid(), 'x', TRUE, now())",
        "CREATE TABLE analyst.mine (x INT)",
    ] {
        let err = sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&mut *conn)
            .await
            .expect_err(statement);
        assert_permission_denied(&err, statement);
    }
    // Nothing in the views names a password, token or device.
    let columns: Vec<String> = sqlx::query_scalar(
        "SELECT column_name::TEXT FROM information_schema.columns WHERE table_schema = 'analyst'",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    for column in &columns {
        for secret in ["password", "token", "device", "username", "display_name"] {
            assert!(!column.contains(secret), "analyst column {column}");
        }
    }
    sqlx::query("RESET ROLE").execute(&mut *conn).await.unwrap();
    // The role cannot sign in.
    let can_login: bool =
        sqlx::query_scalar("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'basra_analyst'")
            .fetch_one(&mut *conn)
            .await
            .unwrap();
    assert!(!can_login);
}

fn assert_permission_denied(err: &sqlx::Error, what: &str) {
    let code = err
        .as_database_error()
        .and_then(|e| e.code())
        .map(|c| c.into_owned());
    assert_eq!(code.as_deref(), Some("42501"), "{what}: {err}");
}

/// One row per account: sign-up, kind, first and last match and the count from the
/// match records, the current rating, the first and last sign-in's client app; a deleted
/// account as its anonymous key with its matches; and nothing personal (no username,
/// display name, friend code or device).
#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn the_players_view_has_each_account_without_personal_data(pool: PgPool) {
    use basra_platform::client_info::ClientInfo;
    let store = PgStore::new(pool.clone());
    let people = players(&store, 6).await;
    record_matches(&store, &people, 20, 3, 5).await;
    let guest = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO users (id, display_name, is_guest, created_at)
         VALUES ($1, 'a guest', TRUE, '2026-11-19T10:00:00Z')",
    )
    .bind(guest)
    .execute(&pool)
    .await
    .unwrap();
    // An account made by Sign in with Apple: registered, no username.
    let provider = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO users (id, display_name, is_guest, created_at)
         VALUES ($1, 'an apple player', FALSE, '2026-11-20T10:00:00Z')",
    )
    .bind(provider)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO provider_identities (provider, subject, user_id, created_at)
         VALUES ('apple', '001234.abcd', $1, '2026-11-20T10:00:00Z')",
    )
    .bind(provider)
    .execute(&pool)
    .await
    .unwrap();
    let first = people[0].user_id;
    let anonymous = Uuid::now_v7();
    store
        .delete_account(people[1].user_id, anonymous, chrono::Utc::now())
        .await
        .unwrap();
    let at = crate::helpers::until();
    for (client, minutes) in [("web/1.2.0", 1), ("android/2.0.3", 2)] {
        store
            .note_sign_in_client(
                first,
                &ClientInfo::parse(client).unwrap(),
                at + chrono::Duration::minutes(minutes),
            )
            .await
            .unwrap();
    }

    let columns: Vec<String> = sqlx::query_scalar(
        "SELECT column_name::TEXT FROM information_schema.columns
         WHERE table_schema = 'analyst' AND table_name = 'players' ORDER BY ordinal_position",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        columns,
        [
            "user_id",
            "signed_up_at",
            "signup_day",
            "kind",
            "upgraded_at",
            "first_match_at",
            "last_match_at",
            "first_match_day",
            "last_match_day",
            "matches_played",
            "rating",
            "rating_deviation",
            "ranked_matches",
            "signup_platform",
            "signup_app_version",
            "last_platform",
            "last_app_version",
            "deleted",
        ]
    );

    let rows = sqlx::query("SELECT * FROM analyst.players")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(rows.len(), people.len() + 2, "one row per account");
    assert!(
        !rows
            .iter()
            .any(|r| r.get::<Uuid, _>("user_id") == people[1].user_id)
    );
    for row in &rows {
        let id: Uuid = row.get("user_id");
        let deleted: bool = row.get("deleted");
        assert_eq!(deleted, id == anonymous, "{id}");
        let kind: Option<String> = row.get("kind");
        let played: i32 = row.get("matches_played");
        let (matches, first_at, last_at): (
            i64,
            Option<chrono::DateTime<chrono::Utc>>,
            Option<chrono::DateTime<chrono::Utc>>,
        ) = sqlx::query_as(
            "SELECT count(*), min(ended_at), max(ended_at) FROM analyst.match_players
                 WHERE user_id = $1",
        )
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(i64::from(played), matches, "{id}");
        assert_eq!(
            row.get::<Option<chrono::DateTime<chrono::Utc>>, _>("first_match_at"),
            first_at
        );
        assert_eq!(
            row.get::<Option<chrono::DateTime<chrono::Utc>>, _>("last_match_at"),
            last_at
        );
        let rating: Option<f64> =
            sqlx::query_scalar("SELECT rating FROM ratings WHERE user_id = $1")
                .bind(id)
                .fetch_optional(&pool)
                .await
                .unwrap();
        assert_eq!(row.get::<Option<f64>, _>("rating"), rating);
        if id == anonymous {
            assert_eq!(kind, None);
            assert!(played > 0, "its matches stay");
            assert_eq!(
                row.get::<Option<chrono::DateTime<chrono::Utc>>, _>("signed_up_at"),
                None
            );
        } else if id == provider {
            assert_eq!(kind.as_deref(), Some("provider"));
            assert_eq!(played, 0);
        } else if id == guest {
            assert_eq!(kind.as_deref(), Some("guest"));
            assert_eq!(played, 0);
            assert_eq!(
                row.get::<NaiveDate, _>("signup_day"),
                NaiveDate::from_ymd_opt(2026, 11, 19).unwrap()
            );
        } else {
            assert_eq!(kind.as_deref(), Some("username"));
            assert!(played > 0, "every simulated player played");
        }
        let platforms: (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        ) = (
            row.get("signup_platform"),
            row.get("signup_app_version"),
            row.get("last_platform"),
            row.get("last_app_version"),
        );
        if id == first {
            assert_eq!(
                platforms,
                (
                    Some("web".into()),
                    Some("1.2.0".into()),
                    Some("android".into()),
                    Some("2.0.3".into())
                )
            );
        } else {
            assert_eq!(platforms, (None, None, None, None));
        }
    }
}

/// Each human seat carries its player's client app as of the match's end (the latest
/// sign-in at or before it that named one), appended as the view's last two columns;
/// bot seats and players who never named a client have NULL.
#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn the_match_players_view_has_each_seats_client_app(pool: PgPool) {
    use basra_platform::client_info::ClientInfo;
    let store = PgStore::new(pool.clone());
    let people = players(&store, 6).await;
    // Before every match of the corpus (it ends at `until`, over 4 days): people[0] on
    // the web, people[1] on Android; the others never named a client.
    let before = crate::helpers::until() - chrono::Duration::days(30);
    for (person, client) in [(0, "web/1.2.3"), (1, "android/2.0.3")] {
        store
            .note_sign_in_client(
                people[person].user_id,
                &ClientInfo::parse(client).unwrap(),
                before,
            )
            .await
            .unwrap();
    }
    // A later sign-in from the terminal, after every match: no seat takes it.
    store
        .note_sign_in_client(
            people[0].user_id,
            &ClientInfo::parse("cli/0.1.0").unwrap(),
            crate::helpers::until() + chrono::Duration::days(1),
        )
        .await
        .unwrap();
    let recorded = record_matches(&store, &people, 30, 4, 7).await;

    let columns: Vec<String> = sqlx::query_scalar(
        "SELECT column_name::TEXT FROM information_schema.columns
         WHERE table_schema = 'analyst' AND table_name = 'match_players'
         ORDER BY ordinal_position",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        columns[columns.len() - 4..],
        [
            "seat_fill",
            "queue_wait_seconds",
            "client_platform",
            "client_app_version"
        ]
    );

    let expected = |user: Option<Uuid>| -> (Option<String>, Option<String>) {
        match user {
            Some(id) if id == people[0].user_id => (Some("web".into()), Some("1.2.3".into())),
            Some(id) if id == people[1].user_id => (Some("android".into()), Some("2.0.3".into())),
            _ => (None, None),
        }
    };
    let rows = sqlx::query("SELECT * FROM analyst.match_players")
        .fetch_all(&pool)
        .await
        .unwrap();
    let seats: usize = recorded.iter().map(|(r, _)| r.seats.len()).sum();
    assert_eq!(rows.len(), seats);
    let mut seen: HashMap<(Option<String>, bool), usize> = HashMap::new();
    for row in &rows {
        let user: Option<Uuid> = row.get("user_id");
        let client: (Option<String>, Option<String>) =
            (row.get("client_platform"), row.get("client_app_version"));
        assert_eq!(client, expected(user), "{user:?}");
        *seen
            .entry((client.0, row.get::<bool, _>("is_bot")))
            .or_default() += 1;
    }
    // The corpus has each case: web, Android, a person without a client, a bot.
    for case in [
        (Some("web".to_owned()), false),
        (Some("android".to_owned()), false),
        (None, false),
        (None, true),
    ] {
        assert!(seen.contains_key(&case), "{case:?} in {seen:?}");
    }
}
