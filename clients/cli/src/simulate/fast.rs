//! The fast mode of `basra simulate`: the simulated players sign in as guests (one device
//! each, so a second run reuses them), the engine plays their matches here (each player
//! arriving on a day of the span and coming back on later days less and less:
//! [`Corpus::with_returning_players`]), and the records
//! go to accounts with a service token through `AccountsInternalService.RecordMatches` — batches of up to
//! 100 records, each validated and recorded exactly as `RecordMatch` (the call
//! game-session's outbox makes) would, in one transaction per batch. A record costs
//! accounts a share of one call and one transaction instead of a whole one each, which is
//! what makes thousands of matches a second possible on one machine.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use basra_proto::basra::accounts::v1::accounts_internal_service_client::AccountsInternalServiceClient;
use basra_proto::basra::accounts::v1::accounts_service_client::AccountsServiceClient;
use basra_proto::basra::accounts::v1::{GuestLoginRequest, MatchRecord, RecordMatchesRequest};
use chrono::{DateTime, Utc};
use prost::Message as _;
use tokio::task::JoinSet;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use uuid::Uuid;

use basra_records::corpus::{Corpus, CorpusOptions, Player, policy_of};

/// What to simulate and where to record it.
#[derive(Debug, Clone)]
pub struct SimulateOptions {
    /// The accounts endpoint (`basra dev`'s address, or the accounts service).
    pub server: String,
    /// Matches to record.
    pub matches: u64,
    /// Simulated people (guest accounts), at least 4.
    pub players: usize,
    /// The span of days the matches end in, up to `until`.
    pub days: u32,
    /// The end of the span.
    pub until: DateTime<Utc>,
    /// Makes the corpus reproducible (the same seed reuses the same guests).
    pub seed: u64,
    /// RecordMatches calls in flight.
    pub concurrency: usize,
    /// Most records per RecordMatches call (1 to 100); a call also stays under
    /// [`MAX_BATCH_BYTES`].
    pub batch: usize,
    /// A service token (role `service`) accepted by accounts.
    pub service_token: String,
    /// Show a progress bar (only ever on a terminal).
    pub progress: bool,
}

/// What a run did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimulateSummary {
    /// Matches recorded.
    pub recorded: u64,
    /// Of those, matches that changed ratings.
    pub rated: u64,
    /// Wall time of the recording (players' sign-in excluded).
    pub elapsed: Duration,
}

impl SimulateSummary {
    /// One line for people.
    pub fn describe(&self) -> String {
        format!(
            "recorded {} matches ({} rated) in {:.1}s: {:.0} matches/s",
            self.recorded,
            self.rated,
            self.elapsed.as_secs_f64(),
            self.recorded as f64 / self.elapsed.as_secs_f64().max(1e-9)
        )
    }
}

/// The most bytes of records one RecordMatches call carries: under accounts' 256 KiB
/// request limit, with room for the call's framing.
pub const MAX_BATCH_BYTES: usize = 224 * 1024;

/// Signs the simulated players in (creating them the first time). A sign-up refused by
/// accounts' per-address limit (RESOURCE_EXHAUSTED) is retried when the answer says.
pub async fn sign_in_players(
    client: &mut AccountsServiceClient<Channel>,
    seed: u64,
    count: usize,
) -> anyhow::Result<Vec<Player>> {
    let mut players = Vec::with_capacity(count);
    for index in 0..count {
        let request = GuestLoginRequest {
            device_id: format!("simulate-{seed:x}-{index}"),
            display_name: format!("Sim {}", index + 1),
        };
        let response = loop {
            match client.guest_login(request.clone()).await {
                Err(status) if status.code() == tonic::Code::ResourceExhausted => {
                    let wait = retry_after(&status).unwrap_or(Duration::from_secs(1));
                    eprintln!(
                        "sign-ups are rate limited; waiting {:.1}s (player {index} of {count})",
                        wait.as_secs_f64()
                    );
                    tokio::time::sleep(wait).await;
                }
                other => {
                    break other
                        .with_context(|| format!("GuestLogin of simulated player {index}"))?
                        .into_inner();
                }
            }
        };
        let tokens = response.tokens.context("GuestLogin answered no tokens")?;
        players.push(Player {
            user_id: Uuid::parse_str(&tokens.user_id).context("GuestLogin's user id")?,
            policy: policy_of(index),
        });
    }
    Ok(players)
}

/// When to retry a refusal: its `google.rpc.RetryInfo`.
fn retry_after(status: &tonic::Status) -> Option<Duration> {
    basra_platform::error::retry_after_of(status)
}

/// Records `options.matches` simulated matches.
pub async fn simulate(options: &SimulateOptions) -> anyhow::Result<SimulateSummary> {
    anyhow::ensure!(options.players >= 4, "--players must be at least 4");
    anyhow::ensure!(
        (1..=100).contains(&options.batch),
        "--batch must be 1 to 100 records"
    );
    let channel = crate::tls::endpoint(&options.server)?
        .tcp_nodelay(true)
        .connect()
        .await
        .with_context(|| format!("cannot connect to {}", options.server))?;
    let players = sign_in_players(
        &mut AccountsServiceClient::new(channel.clone()),
        options.seed,
        options.players,
    )
    .await?;
    let client = AccountsInternalServiceClient::new(channel);
    let bearer: MetadataValue<_> = format!("Bearer {}", options.service_token)
        .parse()
        .context("the service token is not valid metadata")?;

    // A generator thread plays the matches and packs them into batches (CPU), the
    // runtime sends them (I/O); the bounded channel keeps a few batches in memory at most.
    let (tx, mut rx) =
        tokio::sync::mpsc::channel::<Vec<MatchRecord>>(options.concurrency.max(1) * 2);
    let corpus_options = CorpusOptions {
        seed: options.seed,
        days: options.days,
        until: options.until,
    };
    let total = options.matches;
    let batch_max = options.batch;
    let generator = tokio::task::spawn_blocking(move || {
        // People who come and go: retention by sign-up cohort has something to show.
        let mut corpus = Corpus::new(players, corpus_options).with_returning_players();
        let mut batch = Vec::with_capacity(batch_max);
        let mut bytes = 0;
        for _ in 0..total {
            let record = corpus.next_record();
            let size = record.encoded_len() + 8;
            if !batch.is_empty() && (batch.len() == batch_max || bytes + size > MAX_BATCH_BYTES) {
                if tx.blocking_send(std::mem::take(&mut batch)).is_err() {
                    return;
                }
                bytes = 0;
            }
            bytes += size;
            batch.push(record);
        }
        if !batch.is_empty() {
            let _ = tx.blocking_send(batch);
        }
    });

    let bar = basra_analytics::progress::matches_bar(options.progress, total);
    let started = Instant::now();
    let mut in_flight = JoinSet::new();
    let (mut recorded, mut rated) = (0u64, 0u64);
    let mut finish = |result: Result<anyhow::Result<(u64, u64)>, tokio::task::JoinError>| {
        let (done, changed) = result.context("a RecordMatches task panicked")??;
        recorded += done;
        rated += changed;
        bar.inc(done);
        anyhow::Ok(())
    };
    while let Some(batch) = rx.recv().await {
        while in_flight.len() >= options.concurrency.max(1) {
            let done = in_flight.join_next().await.expect("a call is in flight");
            finish(done)?;
        }
        let mut client = client.clone();
        let bearer = bearer.clone();
        in_flight.spawn(async move {
            let count = batch.len() as u64;
            let first = batch
                .first()
                .map(|r| r.match_id.clone())
                .unwrap_or_default();
            let mut request = tonic::Request::new(RecordMatchesRequest { records: batch });
            request.metadata_mut().insert("authorization", bearer);
            let response = client
                .record_matches(request)
                .await
                .with_context(|| format!("RecordMatches of {count} records from {first}"))?
                .into_inner();
            anyhow::ensure!(
                response.results.len() as u64 == count,
                "RecordMatches answered {} results for {count} records",
                response.results.len()
            );
            let rated = response
                .results
                .iter()
                .filter(|r| !r.rating_changes.is_empty())
                .count() as u64;
            Ok((count, rated))
        });
    }
    while let Some(done) = in_flight.join_next().await {
        finish(done)?;
    }
    generator.await.context("the match generator panicked")?;
    bar.finish_and_clear();
    Ok(SimulateSummary {
        recorded,
        rated,
        elapsed: started.elapsed(),
    })
}
