//! `basra analytics export`, `basra analytics report` and `basra simulate`: the command
//! lines of the `basra-analytics` crate and of [`crate::simulate`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use basra_analytics::export::{ExportOptions, Output, export};
use basra_analytics::report::report;
use basra_platform::auth::TokenIssuer;
use chrono::{DateTime, NaiveDate, Utc};
use clap::{Args, Subcommand};

use crate::session::Endpoints;
use crate::simulate::{ServicesOptions, SimulateOptions, simulate, simulate_services};

/// `basra analytics …`.
#[derive(Subcommand)]
pub enum AnalyticsCommand {
    /// Export match records to Parquet, partitioned by day (incremental by default).
    Export(ExportArgs),
    /// Write a self-contained HTML report with plots from an export.
    Report(ReportArgs),
}

/// `basra analytics report`.
#[derive(Args)]
pub struct ReportArgs {
    /// An export directory (`basra analytics export --out`).
    #[arg(long)]
    from: PathBuf,
    /// The HTML file to write.
    #[arg(long, default_value = "report.html")]
    out: PathBuf,
}

/// `basra analytics export`.
#[derive(Args)]
pub struct ExportArgs {
    /// PostgreSQL holding the accounts database (a role in `basra_analyst` is enough).
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Where to export: a directory, or object storage as `s3://bucket/prefix`
    /// (credentials, region and endpoint from the AWS_* variables: AWS_ACCESS_KEY_ID,
    /// AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL for an S3-compatible server,
    /// AWS_ALLOW_HTTP). Either holds `<table>/date=YYYY-MM-DD/part-….parquet` and
    /// `_watermark.json`.
    #[arg(long, env = "BASRA_ANALYTICS_OUT")]
    out: String,
    /// Only matches that ended at or after this (RFC 3339 or YYYY-MM-DD, UTC). With
    /// --since or --until the run is a slice: the watermark is neither read nor moved.
    #[arg(long, value_parser = parse_time)]
    since: Option<DateTime<Utc>>,
    /// Only matches that ended before this (RFC 3339 or YYYY-MM-DD, UTC).
    #[arg(long, value_parser = parse_time)]
    until: Option<DateTime<Utc>>,
    /// Leave records younger than this many seconds to the next run (a recording that
    /// commits late is then never skipped by the watermark).
    #[arg(long, default_value_t = 60)]
    settle_seconds: u64,
}

/// `basra simulate`.
#[derive(Args)]
pub struct SimulateArgs {
    /// The backend's endpoint (`basra dev`, or the one client endpoint of a deployment).
    #[arg(long, env = "BASRA_SERVER", default_value = "http://127.0.0.1:50051")]
    server: String,
    /// Matches to play.
    #[arg(long, default_value_t = 1_000)]
    matches: u64,
    /// Simulated people (guest accounts, reused by a run with the same --seed). Each run
    /// signs them all in: accounts allows 300 sign-ups a minute per address by default.
    #[arg(long, default_value_t = 200)]
    players: usize,
    /// Makes the run reproducible.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Matches played at once (services), or RecordMatches calls in flight (--fast).
    #[arg(long)]
    concurrency: Option<usize>,
    /// Fast mode: the engine plays the matches here, and the records go to accounts
    /// through RecordMatches with a service token, instead of bots playing through
    /// matchmaking and game-session. For large --matches.
    #[arg(long)]
    fast: bool,
    /// (--fast) Matches end over this many days, up to now. Through the services they
    /// end now.
    #[arg(long, default_value_t = 30)]
    days: u32,
    /// (--fast) Records per RecordMatches call (1 to 100).
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// (--fast) A service token for RecordMatches. Without it, one is signed with the
    /// accounts key named by BASRA_ACCOUNTS_IDENTITY__SIGNING_KEY_FILE and
    /// BASRA_ACCOUNTS_IDENTITY__KEY_ID (accounts' settings as `basra dev` reads them).
    #[arg(long, env = "BASRA_SERVICE_TOKEN", hide_env_values = true)]
    service_token: Option<String>,
    /// How long to wait, after the last match, for every record to reach accounts
    /// through game-session's outbox.
    #[arg(long, default_value_t = 60)]
    record_timeout_seconds: u64,
}

fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map(|d| d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc())
        .map_err(|_| format!("{text:?} is neither RFC 3339 nor YYYY-MM-DD"))
}

/// Runs `basra analytics …`.
pub async fn run(command: AnalyticsCommand) -> anyhow::Result<()> {
    match command {
        AnalyticsCommand::Export(args) => {
            // The export is one long streamed query: JIT compiling it costs more than it
            // saves (measured), so the session runs without.
            let connect = args
                .database_url
                .parse::<sqlx::postgres::PgConnectOptions>()
                .context("the database URL")?
                .options([("jit", "off")]);
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(2)
                .connect_with(connect)
                .await
                .context("cannot connect to PostgreSQL")?;
            let summary = export(
                &pool,
                &ExportOptions {
                    out: Output::parse(&args.out, std::env::vars())?,
                    since: args.since,
                    until: args.until,
                    settle: Duration::from_secs(args.settle_seconds),
                    progress: true,
                },
            )
            .await?;
            for failure in &summary.failures {
                eprintln!("skipped {}: {}", failure.match_id, failure.error);
            }
            println!("{}", summary.describe());
            Ok(())
        }
        AnalyticsCommand::Report(args) => {
            let summary = report(&args.from, &args.out)?;
            println!(
                "wrote {} ({} plots from {} matches and {} plays) in {:.1}s",
                args.out.display(),
                summary.plots,
                summary.matches,
                summary.plays,
                summary.elapsed.as_secs_f64()
            );
            Ok(())
        }
    }
}

/// Runs `basra simulate`.
pub async fn run_simulate(args: SimulateArgs) -> anyhow::Result<()> {
    if !args.fast {
        let summary = simulate_services(&ServicesOptions {
            endpoints: Endpoints::single(&args.server),
            matches: args.matches,
            players: args.players,
            seed: args.seed,
            concurrency: args.concurrency.unwrap_or(16),
            record_timeout: Duration::from_secs(args.record_timeout_seconds),
            queue_bots: true,
            progress: true,
        })
        .await?;
        println!("{}", summary.describe());
        anyhow::ensure!(
            summary.recorded == summary.match_ids.len() as u64,
            "{} of the matches played were not recorded within {}s",
            summary.match_ids.len() as u64 - summary.recorded,
            args.record_timeout_seconds
        );
        return Ok(());
    }
    let service_token = match args.service_token {
        Some(token) => token,
        None => mint_service_token()?,
    };
    let summary = simulate(&SimulateOptions {
        server: args.server,
        matches: args.matches,
        players: args.players,
        days: args.days,
        until: Utc::now(),
        seed: args.seed,
        concurrency: args.concurrency.unwrap_or(4),
        batch: args.batch,
        service_token,
        progress: true,
    })
    .await?;
    println!("{}", summary.describe());
    Ok(())
}

/// A one-hour service token signed with the accounts key of the accounts settings, read
/// as `basra dev` reads them (`BASRA_ACCOUNTS_…` variables), so one exported key serves
/// both.
fn mint_service_token() -> anyhow::Result<String> {
    let vars = std::env::vars().filter_map(|(key, value)| {
        let rest = key.strip_prefix("BASRA_ACCOUNTS_")?;
        Some((format!("BASRA_{rest}"), value))
    });
    let settings = accounts::Settings::from_env(vars)?;
    anyhow::ensure!(
        settings.identity.signing_key_file().is_some(),
        "give --service-token, or BASRA_ACCOUNTS_IDENTITY__SIGNING_KEY_FILE and \
         BASRA_ACCOUNTS_IDENTITY__KEY_ID naming the accounts signing key"
    );
    let key = accounts::signing_key(&settings)?;
    let issuer = TokenIssuer::new(key, &settings.auth.issuer, &settings.auth.audience);
    Ok(
        accounts::issue_service_token(&issuer, uuid::Uuid::now_v7(), Duration::from_secs(3600))?
            .token,
    )
}
