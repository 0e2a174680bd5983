//! Recording a corpus through a deployment: the simulated players sign in as guests (one
//! device each, so a second run reuses them), and each match goes to
//! `Accounts.RecordMatch` with a service token — the call game-session's outbox makes —
//! many calls in flight at once.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use basra_proto::basra::accounts::v1::accounts_client::AccountsClient;
use basra_proto::basra::accounts::v1::{GuestLoginRequest, RecordMatchRequest};
use chrono::{DateTime, Utc};
use tokio::task::JoinSet;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};
use uuid::Uuid;

use super::corpus::{Corpus, CorpusOptions, Player, policy_of};

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
    /// RecordMatch calls in flight.
    pub concurrency: usize,
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

/// Signs the simulated players in (creating them the first time).
pub async fn sign_in_players(
    client: &mut AccountsClient<Channel>,
    seed: u64,
    count: usize,
) -> anyhow::Result<Vec<Player>> {
    let mut players = Vec::with_capacity(count);
    for index in 0..count {
        let response = client
            .guest_login(GuestLoginRequest {
                device_id: format!("simulate-{seed:x}-{index}"),
                display_name: format!("Sim {}", index + 1),
            })
            .await
            .with_context(|| format!("GuestLogin of simulated player {index}"))?
            .into_inner();
        let tokens = response.tokens.context("GuestLogin answered no tokens")?;
        players.push(Player {
            user_id: Uuid::parse_str(&tokens.user_id).context("GuestLogin's user id")?,
            policy: policy_of(index),
        });
    }
    Ok(players)
}

/// Records `options.matches` simulated matches.
pub async fn simulate(options: &SimulateOptions) -> anyhow::Result<SimulateSummary> {
    anyhow::ensure!(options.players >= 4, "--players must be at least 4");
    let channel = Endpoint::from_shared(options.server.clone())
        .context("the server address")?
        .connect()
        .await
        .with_context(|| format!("cannot connect to {}", options.server))?;
    let mut client = AccountsClient::new(channel);
    let players = sign_in_players(&mut client, options.seed, options.players).await?;
    let bearer: MetadataValue<_> = format!("Bearer {}", options.service_token)
        .parse()
        .context("the service token is not valid metadata")?;

    // A generator thread plays the matches (CPU), the runtime sends them (I/O); the
    // bounded channel keeps a few hundred records in memory at most.
    let (tx, mut rx) = tokio::sync::mpsc::channel(options.concurrency.max(1) * 4);
    let corpus_options = CorpusOptions {
        seed: options.seed,
        days: options.days,
        until: options.until,
    };
    let total = options.matches;
    let generator = tokio::task::spawn_blocking(move || {
        let mut corpus = Corpus::new(players, corpus_options);
        for _ in 0..total {
            if tx.blocking_send(corpus.next_record()).is_err() {
                break;
            }
        }
    });

    let bar = crate::progress::matches_bar(options.progress, total);
    let started = Instant::now();
    let mut in_flight = JoinSet::new();
    let (mut recorded, mut rated) = (0u64, 0u64);
    let mut finish = |result: Result<anyhow::Result<bool>, tokio::task::JoinError>| {
        let changed = result.context("a RecordMatch task panicked")??;
        recorded += 1;
        rated += u64::from(changed);
        bar.inc(1);
        anyhow::Ok(())
    };
    while let Some(record) = rx.recv().await {
        while in_flight.len() >= options.concurrency.max(1) {
            let done = in_flight.join_next().await.expect("a call is in flight");
            finish(done)?;
        }
        let mut client = client.clone();
        let bearer = bearer.clone();
        in_flight.spawn(async move {
            let match_id = record.match_id.clone();
            let mut request = tonic::Request::new(RecordMatchRequest {
                record: Some(record),
            });
            request.metadata_mut().insert("authorization", bearer);
            let response = client
                .record_match(request)
                .await
                .with_context(|| format!("RecordMatch {match_id}"))?
                .into_inner();
            Ok(!response.rating_changes.is_empty())
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
