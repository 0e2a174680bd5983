//! The way a notice becomes pushes: [`AccountsApi::enqueue_pushes`], called once per
//! stored notice. It decides nothing itself beyond presence: the rules are
//! [`crate::push::plan`]'s, the limit the store's, the delivery the worker's.

use uuid::Uuid;

use super::AccountsApi;
use crate::error::Result;
use crate::push::{PushNotice, plan};
use crate::store::Store;
use crate::store::pushes::Enqueued;

impl<S: Store> AccountsApi<S> {
    /// Puts one push per device of `player` into the outbox for `notice`, when pushing is
    /// on, its kind is pushed, the player holds no WatchFriends stream (their "online"
    /// report is not live) and is within the per-player limit; answers how many pushes
    /// went in. A store that fails is an error: the notice itself stands.
    pub async fn enqueue_pushes(&self, player: Uuid, notice: &PushNotice) -> Result<usize> {
        let Some(pushing) = &self.inner.config.push else {
            return Ok(0);
        };
        let rules = &pushing.rules;
        if !rules.kinds.contains(&notice.notice.kind()) {
            return Ok(0);
        }
        let metrics = &self.inner.metrics.pushes;
        let presence = self.inner.social.store().presence(&[player]).await?;
        if presence.first().is_some_and(|reported| reported.online) {
            metrics.count("online");
            return Ok(0);
        }
        let store = &self.inner.store;
        let devices = store.push_devices(player).await?;
        let now = crate::domain::now();
        let pushes = plan::plan(rules, notice, &devices, now);
        if pushes.is_empty() {
            return Ok(0);
        }
        match store
            .enqueue_pushes(player, pushes, rules.limit, now)
            .await?
        {
            Enqueued::Queued(queued) => {
                metrics.count("queued");
                Ok(queued)
            }
            Enqueued::OverLimit => {
                metrics.count("over_limit");
                Ok(0)
            }
        }
    }

    /// [`enqueue_pushes`](Self::enqueue_pushes) for a notice whose cause stands whatever
    /// happens here (a friend request, an invite): a failure is logged.
    pub(super) async fn push_notice(&self, player: Uuid, notice: PushNotice) {
        if let Err(err) = self.enqueue_pushes(player, &notice).await {
            let kind = notice.notice.kind().as_str();
            tracing::warn!(error = %err, kind, "a notice's pushes were not queued");
        }
    }

    /// Makes the pushes of every notice the inbox's hook queued (at most
    /// [`FORWARDING`] at once), until `shutdown` or the queue closes.
    pub(crate) async fn forward_notices(
        self,
        mut queue: tokio::sync::mpsc::Receiver<crate::inbox::KeptNotice>,
        shutdown: tokio_util::sync::CancellationToken,
    ) {
        let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(FORWARDING));
        loop {
            let kept = tokio::select! {
                () = shutdown.cancelled() => return,
                kept = queue.recv() => match kept {
                    Some(kept) => kept,
                    None => return,
                },
            };
            let Some(notice) = crate::push::hook::push_notice(&kept.notice) else {
                continue;
            };
            let Ok(slot) = std::sync::Arc::clone(&slots).acquire_owned().await else {
                return;
            };
            let api = self.clone();
            tokio::spawn(async move {
                api.push_notice(kept.user_id, notice).await;
                drop(slot);
            });
        }
    }
}

/// Notices whose pushes are being made at once.
const FORWARDING: usize = 64;
