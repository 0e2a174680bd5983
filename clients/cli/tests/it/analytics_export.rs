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
pub(crate) fn database_url(pool: &PgPool) -> String {
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

/// The directories under `dir`.
fn directories(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect()
}

/// Whether a Parquet file is staged anywhere under `dir`.
fn holds_parquet(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let path = e.path();
            if path.is_dir() {
                holds_parquet(&path)
            } else {
                path.extension().is_some_and(|x| x == "parquet")
            }
        })
    })
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn an_export_killed_mid_upload_leaves_nothing_staged_after_the_next_run(pool: PgPool) {
    let running = accounts_service(pool.clone()).await;
    simulate(&options(&running, 40)).await.unwrap();
    running.shutdown.cancel();
    let moto = Moto::start();
    moto.create_bucket("killed");
    let out = "s3://killed/basra";
    // The export's temporary directory, the test's own.
    let tmp = std::env::temp_dir().join(format!("basra-killed-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&tmp).unwrap();
    let command = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_basra"));
        command
            .args(["analytics", "export", "--settle-seconds", "0"])
            .env("DATABASE_URL", database_url(&pool))
            .env("BASRA_ANALYTICS_OUT", out)
            .env("TMPDIR", &tmp)
            .envs(moto.env());
        command
    };

    // Killed mid-upload: as soon as a Parquet file is staged, moto stops answering (the
    // export cannot finish nor clean up), and the process is killed.
    let mut child = command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !holds_parquet(&tmp) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the export ended first"
        );
        assert!(started.elapsed().as_secs() < 60, "nothing staged");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    moto.pause();
    child.kill().unwrap();
    child.wait().unwrap();
    moto.resume();
    assert_eq!(directories(&tmp).len(), 1, "what the killed run left");

    // The next run clears it, exports everything, and leaves nothing behind.
    let output = command().output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("exported 40 matches"), "{stdout}");
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "nothing left in TMPDIR"
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}
