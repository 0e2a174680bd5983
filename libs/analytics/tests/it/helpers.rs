//! Helpers of the analytics tests: players and simulated matches recorded through the
//! accounts store on a fresh PostgreSQL database (`#[sqlx::test]`, which needs
//! `DATABASE_URL` and fails when PostgreSQL is unreachable).
#![allow(dead_code)] // Not every helper is used by every build of the suites.

use accounts::PgStore;
use accounts::domain::{DisplayName, Username};
use accounts::store::prelude::*;
use accounts::store::{NewAccount, Recorded};
use basra_analytics::export::{ExportOptions, Output};
use basra_records::MatchRecord;
use basra_records::corpus::{Corpus, CorpusOptions, Player, policy_of};
use chrono::{DateTime, TimeZone, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// The end of the simulated span.
pub(crate) fn until() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 0, 0, 0).unwrap()
}

/// `n` registered players with the corpus's mix of policies.
pub(crate) async fn players(store: &PgStore, n: usize) -> Vec<Player> {
    let mut players = Vec::with_capacity(n);
    for i in 0..n {
        let id = Uuid::now_v7();
        store
            .create_account(NewAccount {
                id,
                username: Username::parse(&format!("player{i}")).unwrap(),
                password_hash: "$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2g".into(),
                display_name: DisplayName::parse(&format!("Sim {i}")).unwrap(),
                now: until() - chrono::Duration::days(60),
            })
            .await
            .unwrap();
        players.push(Player {
            user_id: id,
            policy: policy_of(i),
        });
    }
    players
}

/// `n` simulated matches over `days` days, recorded in order; each with what the store
/// answered.
pub(crate) async fn record_matches(
    store: &PgStore,
    players: &[Player],
    n: usize,
    days: u32,
    seed: u64,
) -> Vec<(MatchRecord, Recorded)> {
    record(store, corpus(players, days, seed), n).await
}

/// As [`record_matches`], with players who come and go (`simulate --fast`'s corpus:
/// [`Corpus::with_returning_players`]).
pub(crate) async fn record_returning_matches(
    store: &PgStore,
    players: &[Player],
    n: usize,
    days: u32,
    seed: u64,
) -> Vec<(MatchRecord, Recorded)> {
    let corpus = corpus(players, days, seed).with_returning_players();
    record(store, corpus, n).await
}

fn corpus(players: &[Player], days: u32, seed: u64) -> Corpus {
    Corpus::new(
        players.to_vec(),
        CorpusOptions {
            seed,
            days,
            until: until(),
        },
    )
}

/// Export options for everything recorded so far, into `out`.
pub(crate) fn export_options(out: impl Into<Output>) -> ExportOptions {
    ExportOptions {
        out: out.into(),
        since: None,
        until: None,
        settle: std::time::Duration::ZERO,
        progress: false,
    }
}

/// A query's one number (NULL is 0).
pub(crate) async fn scalar(pool: &PgPool, sql: &'static str) -> i64 {
    sqlx::query_scalar::<_, Option<i64>>(sql)
        .fetch_one(pool)
        .await
        .unwrap()
        .unwrap_or(0)
}

/// Moves each account's sign-up to an hour before its first recorded match, as if the
/// players had signed up on the day they first played (the corpus backdates matches).
pub(crate) async fn sign_up_before_first_match(pool: &sqlx::PgPool) {
    sqlx::query(
        "UPDATE users u SET created_at = f.first - INTERVAL '1 hour'
         FROM (SELECT user_id, min(ended_at) AS first FROM match_players GROUP BY user_id) f
         WHERE f.user_id = u.id",
    )
    .execute(pool)
    .await
    .unwrap();
}

async fn record(store: &PgStore, mut corpus: Corpus, n: usize) -> Vec<(MatchRecord, Recorded)> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let record = MatchRecord::from_proto(corpus.next_record()).expect("a valid record");
        let recorded = store.record_match(&record, Utc::now()).await.unwrap();
        assert!(!recorded.already_recorded);
        out.push((record, recorded));
    }
    out
}
