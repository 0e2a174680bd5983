//! `basra analytics export` as the nightly CronJob runs it: the binary, its settings from
//! the environment (`BASRA_ANALYTICS_OUT`, `DATABASE_URL`, the `AWS_*` variables), into a
//! real S3-compatible server (moto's, on a loopback port) — over matches `simulate --fast`
//! recorded through a real accounts service, with players who come back on later days.

use std::process::Command;

use basra::simulate::simulate;
use basra_analytics::export::bucket::Bucket;
use basra_testkit::moto::Moto;
use sqlx::PgPool;

use crate::simulate_fast::{accounts_service, options};

/// The URL of the test's own database (`#[sqlx::test]` makes one per test).
fn database_url(pool: &PgPool) -> String {
    let base = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let name = pool.connect_options().get_database().unwrap().to_owned();
    let (server, _) = base.rsplit_once('/').unwrap();
    format!("{server}/{name}")
}

fn export(pool: &PgPool, moto: &Moto, out: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_basra"))
        .args(["analytics", "export", "--settle-seconds", "0"])
        .env("DATABASE_URL", database_url(pool))
        .env("BASRA_ANALYTICS_OUT", out)
        .envs(moto.env())
        .output()
        .expect("basra runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn the_export_command_writes_to_s3_with_its_settings_from_the_environment(pool: PgPool) {
    let running = accounts_service(pool.clone()).await;
    let summary = simulate(&options(&running, 80)).await.unwrap();
    assert_eq!(summary.recorded, 80);
    running.shutdown.cancel();
    // Returning players: some play on more than one day of the span.
    let returning: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT user_id FROM analyst.match_players
         WHERE user_id IS NOT NULL GROUP BY user_id HAVING count(DISTINCT day) > 1) r",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(returning > 0);

    let moto = Moto::start();
    moto.create_bucket("nightly");
    let out = "s3://nightly/basra";
    let first = export(&pool, &moto, out);
    assert!(first.contains("exported 80 matches"), "{first}");
    assert!(first.contains("12 players"), "{first}");
    let bucket = Bucket::open(out, moto.env()).unwrap();
    let watermark =
        String::from_utf8(bucket.get("_watermark.json").await.unwrap().unwrap()).unwrap();
    assert!(watermark.contains("\"recorded_before\""), "{watermark}");
    assert!(
        bucket
            .get("players/players.parquet")
            .await
            .unwrap()
            .is_some()
    );
    assert!(bucket.get("_pending.json").await.unwrap().is_none());

    // The next night: nothing new.
    let second = export(&pool, &moto, out);
    assert!(second.contains("exported 0 matches"), "{second}");
}
