//! `simulate`'s fast mode against a real accounts service on PostgreSQL: every match goes
//! through `RecordMatches` batches with a service token, the players are guests signed in
//! once, and a bad token is refused.

use std::time::Duration;

use accounts::{AccountsApi, PgStore};
use basra::simulate::{SimulateOptions, simulate};
use basra_platform::auth::SigningKey;
use chrono::{DateTime, TimeZone, Utc};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

/// The end of the simulated span.
fn until() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 0, 0, 0).unwrap()
}

pub(crate) struct Running {
    pub(crate) url: String,
    pub(crate) token: String,
    pub(crate) shutdown: CancellationToken,
}

pub(crate) async fn accounts_service(pool: PgPool) -> Running {
    let settings = accounts::Settings::from_env(
        [
            ("BASRA_PASSWORDS__MEMORY_KIB", "1024"),
            ("BASRA_PASSWORDS__ITERATIONS", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    )
    .unwrap();
    let mut config = accounts::service_config(&settings, SigningKey::generate()).unwrap();
    // The simulation's service key, trusted for that role alone (as in production).
    let service_issuer = basra_platform::auth::TokenIssuer::new(
        SigningKey::generate(),
        &settings.auth.issuer,
        &settings.auth.audience,
    );
    config.trusted_keys.push(basra_platform::auth::TrustedKey {
        kid: service_issuer.kid().to_owned(),
        public_pem: service_issuer.public_pem().to_owned(),
        roles: vec![basra_platform::auth::Role::Service],
    });
    let service = AccountsApi::new(PgStore::new(pool), config);
    let token = accounts::issue_service_token(
        &service_issuer,
        uuid::Uuid::now_v7(),
        Duration::from_secs(300),
    )
    .unwrap()
    .token;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    tokio::spawn(accounts::serve(
        listener,
        service,
        shutdown.clone(),
        Duration::from_secs(1),
    ));
    Running {
        url,
        token,
        shutdown,
    }
}

pub(crate) fn options(running: &Running, matches: u64) -> SimulateOptions {
    SimulateOptions {
        server: running.url.clone(),
        matches,
        players: 12,
        days: 7,
        until: until(),
        seed: 42,
        concurrency: 4,
        batch: 16,
        service_token: running.token.clone(),
        progress: false,
    }
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn simulate_records_every_match_through_record_matches(pool: PgPool) {
    let running = accounts_service(pool.clone()).await;

    let summary = simulate(&options(&running, 120)).await.unwrap();
    assert_eq!(summary.recorded, 120);
    assert!(summary.rated > 0);
    let (matches, ranked, with_bots, four, days): (i64, i64, i64, i64, i64) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE ranked), count(*) FILTER (WHERE bots_involved),
                count(*) FILTER (WHERE seats = 4), count(DISTINCT day)
         FROM analyst.matches",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(matches, 120);
    assert!(ranked > 0 && with_bots > 0 && four > 0, "a mix of matches");
    assert!(days >= 5, "spread over the days: {days}");
    let rated: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT match_id) FROM match_players WHERE rating_after IS NOT NULL",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(rated as u64, summary.rated);
    let guests: i64 = sqlx::query_scalar("SELECT count(*) FROM users WHERE is_guest")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(guests, 12);

    // Again with the same seed: the same guests, new matches.
    simulate(&options(&running, 10)).await.unwrap();
    let (users, matches): (i64, i64) =
        sqlx::query_as("SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM matches)")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((users, matches), (12, 130));
    running.shutdown.cancel();
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn simulate_needs_a_service_token(pool: PgPool) {
    let running = accounts_service(pool.clone()).await;
    let err = simulate(&SimulateOptions {
        service_token: "not-a-token".into(),
        ..options(&running, 3)
    })
    .await
    .unwrap_err();
    assert!(
        format!("{err:#}").contains("Unauthenticated")
            || format!("{err:#}").contains("UNAUTHENTICATED")
            || format!("{err:#}").contains("token"),
        "{err:#}"
    );
    let matches: i64 = sqlx::query_scalar("SELECT count(*) FROM matches")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(matches, 0);
    running.shutdown.cancel();
}
