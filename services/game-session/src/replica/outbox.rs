//! The outbox forwarder: hands finished matches to `AccountsInternalService.RecordMatch` until each
//! lands. Records wait in the store's durable outbox (a Redis stream with a consumer
//! group); an entry is removed only after accounts answered OK (RecordMatch is
//! idempotent by match id, so a retry after a lost answer is harmless). A failed entry
//! stays pending and is claimed again after the current backoff, by this replica or any
//! other (so a crashed replica's entries are not lost).
//!
//! The backoff doubles from `retry_min` up to `retry_max` (2 s by default), and a round
//! stops at the first record that finds accounts unreachable (UNAVAILABLE, or no answer
//! within the call's deadline): while accounts or its database is down each replica makes
//! one call every `retry_max`, and every record held lands within about `retry_max` of
//! accounts answering again (a longer cap, as 30 s once was, let the backoff grow to
//! 6.4 s over a 30 s outage: the last record landed 12.9 s after recovery).
//!
//! Each delivery is a span (`outbox.record_match`) whose parent is the trace context
//! stored with the record — the action that finished the match — and the call carries
//! it on to accounts, so the match's record lands in the trace of its last play.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use basra_platform::telemetry::{continue_trace, traced};
use basra_proto::basra::accounts::v1::{
    MatchRecord, RecordMatchRequest,
    accounts_internal_service_client::AccountsInternalServiceClient,
};
use prost::Message as _;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::accounts::AccountsLink;
use crate::metrics::GameMetrics;
use crate::store::RoomStore;

use super::walks::Walks;

/// Forwards outbox records until `shutdown`.
pub async fn run(
    store: Arc<dyn RoomStore>,
    walks: Arc<Walks>,
    link: AccountsLink,
    consumer: String,
    metrics: Arc<GameMetrics>,
    shutdown: CancellationToken,
) {
    // When each record still held was first seen undelivered.
    let mut undelivered: HashMap<String, Instant> = HashMap::new();
    let mut client = AccountsInternalServiceClient::new(traced(link.channel.clone()));
    let mut backoff = link.retry_min;
    loop {
        // Only the shards this replica walks (see `walks`): the others' forwarders
        // deliver theirs, and take these over if this replica dies.
        let shards = walks.shards();
        let entries = match store
            .outbox_fetch(&shards, &consumer, backoff.as_millis() as u64, 16)
            .await
        {
            Ok(entries) => entries,
            Err(err) => {
                tracing::warn!(error = %err, "outbox: cannot read");
                Vec::new()
            }
        };
        let idle = entries.is_empty();
        let mut failed = false;
        let mut failed_ids = Vec::new();
        for entry in entries {
            let record = match MatchRecord::decode(entry.record.payload.as_slice()) {
                Ok(record) => record,
                Err(err) => {
                    tracing::error!(id = entry.id, error = %err, "outbox: undecodable record dropped");
                    let _ = store.outbox_ack(&entry.id).await;
                    continue;
                }
            };
            let match_id = record.match_id.clone();
            let mut request = tonic::Request::new(RecordMatchRequest {
                record: Some(record),
            });
            if let Some(token) = link.credentials.token()
                && let Ok(value) = format!("Bearer {token}").parse()
            {
                request.metadata_mut().insert("authorization", value);
            }
            let span = tracing::info_span!("outbox.record_match", match_id, otel.kind = "client");
            continue_trace(&span, &entry.record.trace_context);
            match client.record_match(request).instrument(span).await {
                Ok(response) => {
                    let already_recorded = response.get_ref().already_recorded;
                    tracing::info!(match_id, already_recorded, "match recorded");
                    metrics.outbox_delivered.inc();
                    if already_recorded {
                        // Delivered before (by a forwarder that was slow to ack, or whose
                        // answer was lost): at least once, never recorded twice.
                        metrics.outbox_redelivered.inc();
                    }
                    if let Err(err) = store.outbox_ack(&entry.id).await {
                        tracing::warn!(match_id, error = %err, "outbox: cannot ack");
                    }
                }
                Err(status) => {
                    tracing::warn!(match_id, code = ?status.code(), message = status.message(), retry_in = ?backoff, "outbox: RecordMatch failed; will retry");
                    failed = true;
                    failed_ids.push(entry.id.clone());
                    if unreachable(status.code()) {
                        // The rest of the round would fail alike: one call probes, the
                        // entries not tried stay pending and are claimed again.
                        break;
                    }
                }
            }
        }
        // Held now: this round's failures, aged from when each first failed. A round
        // that fetched nothing holds nothing.
        let now = Instant::now();
        undelivered.retain(|id, _| failed_ids.contains(id));
        for id in failed_ids {
            undelivered.entry(id).or_insert(now);
        }
        track_undelivered(&metrics, &undelivered, now);
        backoff = if failed {
            (backoff * 2).min(link.retry_max)
        } else if idle {
            backoff
        } else {
            link.retry_min
        };
        let wait = if failed {
            backoff
        } else if idle {
            link.poll
        } else {
            Duration::ZERO
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Whether a failed call says accounts (or its database) cannot be reached, rather than
/// that this one record was refused.
fn unreachable(code: tonic::Code) -> bool {
    matches!(
        code,
        tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
    )
}

/// Publishes what the forwarder holds undelivered: how many records and the oldest's age.
fn track_undelivered(metrics: &GameMetrics, undelivered: &HashMap<String, Instant>, now: Instant) {
    metrics
        .outbox_pending
        .set(i64::try_from(undelivered.len()).unwrap_or(i64::MAX));
    let oldest = undelivered
        .values()
        .map(|since| now.duration_since(*since).as_secs())
        .max()
        .unwrap_or(0);
    metrics
        .outbox_oldest_age_seconds
        .set(i64::try_from(oldest).unwrap_or(i64::MAX));
}
