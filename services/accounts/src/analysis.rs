//! The analysis of players' plays (GetReplay `with_analysis`): [`Analyst`] runs
//! [`basra_engine::analysis::review`] on a small pool of threads of its own at the lowest
//! CPU priority (`[analysis]`; [`SearchThreads`]), never on the runtime's threads that
//! serve the calls, and at most once at a time per match and seat on this replica. What it
//! computes is kept in the store ([`MatchRecords::keep_match_analysis`]); the marks are
//! made from the thresholds when an analysis is read, so changing them needs no new
//! computation.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use basra_engine::analysis::{PlayReview, Thresholds, review};
use basra_engine::search::Budget;
use basra_engine::{Seat, Seed};
use basra_platform::search_threads::{SearchPriority, SearchThreads};
use basra_records::MatchRecord;
use basra_records::spectator::engine_action;
use serde::Deserialize;
use tokio::sync::oneshot;

use crate::store::MatchRecords;

/// `[analysis]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalysisSettings {
    /// Threads that compute analyses (at least 1).
    pub threads: usize,
    /// Their CPU priority: `low` (nice 19) or `normal`.
    pub priority: SearchPriority,
    /// Worlds the search deals per play (the hard bot deals 100).
    pub worlds: u32,
    /// How long a GetReplay waits for an analysis it started before answering it pending.
    pub wait_ms: u64,
    /// The expected points lost from which a play is an inaccuracy, a mistake, a blunder.
    pub inaccuracy: f64,
    /// See `inaccuracy`.
    pub mistake: f64,
    /// See `inaccuracy`.
    pub blunder: f64,
}

impl Default for AnalysisSettings {
    fn default() -> AnalysisSettings {
        let thresholds = Thresholds::default();
        AnalysisSettings {
            threads: 1,
            priority: SearchPriority::Low,
            worlds: Budget::HARD.worlds,
            wait_ms: 3000,
            inaccuracy: thresholds.inaccuracy,
            mistake: thresholds.mistake,
            blunder: thresholds.blunder,
        }
    }
}

impl AnalysisSettings {
    /// Checks the bounds.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=16).contains(&self.threads) {
            return Err(format!(
                "analysis.threads must be between 1 and 16, not {}",
                self.threads
            ));
        }
        if !(1..=10_000).contains(&self.worlds) {
            return Err(format!(
                "analysis.worlds must be between 1 and 10000, not {}",
                self.worlds
            ));
        }
        if self.wait_ms > 60_000 {
            return Err("analysis.wait_ms must be at most 60000".into());
        }
        let ordered = 0.0 < self.inaccuracy
            && self.inaccuracy <= self.mistake
            && self.mistake <= self.blunder
            && self.blunder.is_finite();
        if !ordered {
            return Err("analysis thresholds must be 0 < inaccuracy <= mistake <= blunder".into());
        }
        Ok(())
    }

    /// The thresholds.
    pub fn thresholds(&self) -> Thresholds {
        Thresholds {
            inaccuracy: self.inaccuracy,
            mistake: self.mistake,
            blunder: self.blunder,
        }
    }
}

/// Computes analyses off the runtime and keeps them.
#[derive(Debug, Clone)]
pub struct Analyst {
    threads: SearchThreads,
    budget: Budget,
    /// When a call stops waiting for an analysis it started.
    pub wait: Duration,
    /// The marks' thresholds.
    pub thresholds: Thresholds,
    /// The matches and seats being analysed on this replica.
    running: Arc<Mutex<HashSet<(String, u8)>>>,
}

/// What [`Analyst::analyse`] answers.
#[derive(Debug)]
pub enum Analysis {
    /// Ready.
    Ready(Vec<PlayReview>),
    /// Being computed (by this call or an earlier one): ask again later.
    Pending,
}

impl Analyst {
    /// Starts the threads `settings` ask for.
    pub fn new(settings: &AnalysisSettings) -> Analyst {
        Analyst {
            threads: SearchThreads::start("analysis", settings.threads, settings.priority),
            budget: Budget {
                worlds: settings.worlds,
            },
            wait: Duration::from_millis(settings.wait_ms),
            thresholds: settings.thresholds(),
            running: Arc::default(),
        }
    }

    /// The worlds per play (the key of a kept analysis).
    pub fn worlds(&self) -> u32 {
        self.budget.worlds
    }

    /// `seat`'s analysis of `record`: the one kept in `store`, else computed on the
    /// threads (unless already being computed here), kept, and answered if it is ready
    /// within [`Analyst::wait`].
    pub async fn analyse<S: MatchRecords + Clone + 'static>(
        &self,
        store: &S,
        record: &MatchRecord,
        seat: u8,
    ) -> crate::error::Result<Analysis> {
        if let Some(kept) = store
            .match_analysis(&record.match_id, seat, self.worlds())
            .await?
        {
            return Ok(Analysis::Ready(kept));
        }
        let key = (record.match_id.clone(), seat);
        if !self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone())
        {
            return Ok(Analysis::Pending);
        }
        let (done, computed) = oneshot::channel();
        let (analyst, store, record) = (self.clone(), store.clone(), record.clone());
        tokio::spawn(async move {
            let reviews = analyst.compute(record.clone(), seat).await;
            if let Some(reviews) = &reviews {
                let kept = store
                    .keep_match_analysis(
                        &record.match_id,
                        seat,
                        analyst.worlds(),
                        reviews,
                        crate::domain::now(),
                    )
                    .await;
                if let Err(err) = kept {
                    tracing::warn!(%err, match_id = %record.match_id, "an analysis was not kept");
                }
            }
            analyst
                .running
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&key);
            let _ = done.send(reviews);
        });
        match tokio::time::timeout(self.wait, computed).await {
            Ok(Ok(Some(reviews))) => Ok(Analysis::Ready(reviews)),
            Ok(Ok(None)) | Ok(Err(_)) => Err(crate::AccountsError::Internal(
                "the match's action log does not replay".into(),
            )),
            Err(_) => Ok(Analysis::Pending),
        }
    }

    /// The review of `seat`'s plays, computed on the threads; `None` when the log does
    /// not replay.
    async fn compute(&self, record: MatchRecord, seat: u8) -> Option<Vec<PlayReview>> {
        let (tx, rx) = oneshot::channel();
        let (budget, thresholds) = (self.budget, self.thresholds);
        self.threads.run(move || {
            let actions: Vec<_> = record
                .actions
                .iter()
                .map(|a| (engine_action(a), a.automatic))
                .collect();
            let reviews = review(
                record.settings,
                Seed(record.seed),
                &actions,
                Seat(seat),
                &budget,
                &thresholds,
            );
            if let Err(err) = &reviews {
                tracing::error!(%err, match_id = %record.match_id, "a stored match does not replay");
            }
            let _ = tx.send(reviews.ok());
        });
        rx.await.ok().flatten()
    }
}
