//! The outbox's delivery loop, one per accounts replica: it claims due pushes by lease
//! (at most `push.in_flight` unfinished at once), sends each through `basra-push`, and
//! acts on the answer:
//!
//! | [`Outcome`] | the push | the device |
//! |---|---|---|
//! | accepted | removed (the delivery time is observed) | kept |
//! | dead token | removed with the device | its token removed (UNREGISTERED, 410, `BadDeviceToken`) |
//! | retry later, misconfigured | due again after [`Backoff::delay`] (never before `Retry-After`), removed if that is past its expiry | kept |
//! | rejected, expired | removed | kept |
//!
//! A replica that dies holding claims leaves them to lapse (`push.lease_seconds`); any
//! replica's worker then claims those pushes again. A worker finishes or retries a push
//! only under its own claim, so a push taken over by another replica is never finished
//! twice. Delivery is at least once: a push in flight when its replica dies may reach the
//! provider again, and its collapse id makes the device show it once.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use basra_push::{Backoff, Outcome, Push, Pusher};
use chrono::Utc;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{PushDeliverySettings, PushMetrics, notice_of};
use crate::store::Store;
use crate::store::pushes::ClaimedPush;

/// How long a stopping worker lets its sends finish before it leaves them to lapse.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// One replica's worker on the outbox of `store`.
#[derive(Debug)]
pub struct Worker<S> {
    store: S,
    pusher: Arc<Pusher>,
    backoff: Backoff,
    lease: Duration,
    in_flight: usize,
    poll: Duration,
    metrics: PushMetrics,
}

impl<S: Store> Worker<S> {
    /// A worker sending through `pusher` as `settings` say.
    pub fn new(
        store: S,
        pusher: Arc<Pusher>,
        settings: &PushDeliverySettings,
        metrics: PushMetrics,
    ) -> Worker<S> {
        Worker {
            store,
            pusher,
            backoff: settings.backoff(),
            lease: Duration::from_secs(settings.lease_seconds),
            in_flight: settings.in_flight,
            poll: Duration::from_millis(settings.poll_ms),
            metrics,
        }
    }

    /// Runs until `shutdown`, in a task of its own.
    pub fn spawn(self, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run(shutdown))
    }

    /// Claims, sends and settles pushes until `shutdown`.
    pub async fn run(self, shutdown: CancellationToken) {
        let this = Arc::new(self);
        let slots = Arc::new(Semaphore::new(this.in_flight));
        let mut sends = JoinSet::new();
        while !shutdown.is_cancelled() {
            while sends.try_join_next().is_some() {}
            let free = slots.available_permits();
            if free == 0 {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    _ = sends.join_next() => continue,
                }
            }
            let claim = Uuid::now_v7();
            let claimed = match this
                .store
                .claim_pushes(claim, Utc::now(), this.lease, free)
                .await
            {
                Ok(claimed) => claimed,
                Err(err) => {
                    tracing::warn!(error = %err, "cannot claim pushes from the outbox; trying again");
                    Vec::new()
                }
            };
            let full = claimed.len() == free;
            for push in claimed {
                let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                    break;
                };
                let worker = Arc::clone(&this);
                sends.spawn(async move {
                    worker.deliver(claim, push).await;
                    drop(slot);
                });
            }
            if !full {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(this.poll) => {}
                }
            }
        }
        // What is in flight gets a moment; what is left lapses and another replica sends it.
        let _ = tokio::time::timeout(STOP_GRACE, sends.join_all()).await;
    }

    /// Sends one claimed push and settles it.
    async fn deliver(&self, claim: Uuid, claimed: ClaimedPush) {
        let queued = &claimed.push;
        let push = Push {
            platform: claimed.platform,
            device_token: queued.token.clone(),
            app_id: claimed.app_id.clone(),
            locale: claimed.locale.clone(),
            notice: notice_of(queued.kind, queued.param.clone()),
            data: queued.data.clone(),
            collapse_id: Some(queued.collapse_id.clone()),
            expires_at: Some(SystemTime::from(queued.expires_at)),
        };
        let outcome = self.pusher.push(&push).await;
        self.metrics.count(outcome.name());
        let settled = match outcome {
            Outcome::Accepted { .. } => {
                let took = (Utc::now() - queued.noticed_at)
                    .to_std()
                    .unwrap_or_default();
                self.metrics.delivery_seconds.observe(took.as_secs_f64());
                self.store.finish_push(queued.id, claim).await
            }
            Outcome::DeadToken { reason } => {
                tracing::info!(kind = queued.kind.as_str(), %reason, user_id = %claimed.user_id, "a device's push token is dead: removed");
                self.store.forget_push_token(&queued.token).await
            }
            Outcome::Rejected { reason } => {
                tracing::warn!(kind = queued.kind.as_str(), %reason, "a push was refused by its provider: dropped");
                self.store.finish_push(queued.id, claim).await
            }
            Outcome::Expired => self.store.finish_push(queued.id, claim).await,
            Outcome::RetryLater { after, reason } => {
                tracing::debug!(kind = queued.kind.as_str(), %reason, attempts = claimed.attempts, "a push will be tried again");
                self.again(claim, &claimed, after).await
            }
            Outcome::Misconfigured { reason } => {
                tracing::error!(kind = queued.kind.as_str(), %reason, "push credentials or settings are wrong: every push fails alike until they are fixed");
                self.again(claim, &claimed, None).await
            }
        };
        if let Err(err) = settled {
            // The claim lapses and the push is claimed again.
            tracing::warn!(error = %err, "cannot settle a push in the outbox");
        }
    }

    /// Makes the push due again after the backoff, or drops it when that is past its
    /// expiry.
    async fn again(
        &self,
        claim: Uuid,
        claimed: &ClaimedPush,
        after: Option<Duration>,
    ) -> crate::error::Result<bool> {
        let delay = self.backoff.delay(claimed.attempts, after);
        let due = Utc::now() + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX);
        if due >= claimed.push.expires_at {
            self.metrics.count("expired");
            return self.store.finish_push(claimed.push.id, claim).await;
        }
        self.store.retry_push(claimed.push.id, claim, due).await
    }
}
