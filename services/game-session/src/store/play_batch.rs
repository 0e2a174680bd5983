//! Plain plays sent to Redis together (group commit): one call of `lua/play.lua` carries
//! the plain plays of a shard's rooms that wait while that shard's previous call is out.
//! At a few plays a second a call carries one play, sent at once; flat out at 1,000
//! matches, about eight: Redis parses, looks up and starts one script and sends one
//! notification for them all, the replica makes one request, and the script's hash and
//! header are sent once. Each play is still its room's own atomic step, answered on its
//! own. The queues are unbounded: a play waits in them only while its stream (or unary
//! call) waits for it, so they hold no more plays than there are such callers.

use std::sync::Arc;

use basra_platform::redis::{Redis, Script, run_script, script_call};
use tokio::sync::{mpsc, oneshot};

use super::SHARDS;
use super::redis_store::ReplicaWait;
use crate::error::{GameError, Result};

/// The most plays one call carries.
const MAX_BATCH: usize = 64;

/// A plain play waiting for its shard's call.
#[derive(Debug)]
pub(super) struct QueuedPlay {
    /// Its room's key prefix (`P:{gs:S}:room:ID:`: its keys but for the last word).
    pub key: String,
    /// Its room's id (for the replica-wait log).
    pub room_id: String,
    /// Its arguments: expected version, next deadline, the number of events and the
    /// events (see `lua/play.lua`).
    pub args: Vec<Vec<u8>>,
}

/// What the script answered for one play: status and value (see `lua/play.lua`).
type Answer = (u64, u64);

struct Queued {
    play: QueuedPlay,
    answer: oneshot::Sender<Result<Answer>>,
}

/// One sender a shard, each to the task that makes that shard's calls.
#[derive(Debug)]
pub(super) struct PlayBatches {
    shards: Vec<mpsc::UnboundedSender<Queued>>,
}

impl std::fmt::Debug for Queued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.play.fmt(f)
    }
}

impl PlayBatches {
    /// Starts a task a shard; they end when this is dropped.
    pub(super) fn start(redis: Redis, script: Script, wait: ReplicaWait) -> PlayBatches {
        let script = Arc::new(script);
        let wait = Arc::new(wait);
        let shards = (0..SHARDS)
            .map(|_| {
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(run(
                    rx,
                    redis.clone(),
                    Arc::clone(&script),
                    Arc::clone(&wait),
                ));
                tx
            })
            .collect();
        PlayBatches { shards }
    }

    /// Commits `play` with the next call of `shard`.
    pub(super) async fn commit(&self, shard: u32, play: QueuedPlay) -> Result<Answer> {
        let (answer, answered) = oneshot::channel();
        let stopped = || GameError::Unavailable("the store is shutting down".into());
        self.shards[shard as usize]
            .send(Queued { play, answer })
            .map_err(|_| stopped())?;
        answered.await.map_err(|_| stopped())?
    }
}

/// A shard's calls: whatever waits when the previous call is back goes in the next one.
async fn run(
    mut queue: mpsc::UnboundedReceiver<Queued>,
    redis: Redis,
    script: Arc<Script>,
    wait: Arc<ReplicaWait>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while queue.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let (plays, answers): (Vec<_>, Vec<_>) =
            batch.drain(..).map(|q| (q.play, q.answer)).unzip();
        match call(&plays, &redis, &script, &wait).await {
            Ok(answered) => {
                for (answer, value) in answers.into_iter().zip(answered) {
                    let _ = answer.send(Ok(value));
                }
            }
            Err(err) => {
                for answer in answers {
                    let _ = answer.send(Err(copy(&err)));
                }
            }
        }
    }
}

/// One call for `plays`: their answers, in order.
async fn call(
    plays: &[QueuedPlay],
    redis: &Redis,
    script: &Script,
    wait: &ReplicaWait,
) -> Result<Vec<Answer>> {
    let args: usize = plays.iter().map(|p| p.args.len()).sum();
    let bytes: usize = plays
        .iter()
        .map(|p| p.key.len() + p.args.iter().map(|a| a.len() + 16).sum::<usize>())
        .sum();
    let mut cmd = script_call(script, plays.len(), plays.len() + 1 + args, bytes + 64);
    for play in plays {
        cmd.arg(&play.key);
    }
    cmd.arg(if wait.replicas > 0 { "1" } else { "" });
    for play in plays {
        for arg in &play.args {
            cmd.arg(arg);
        }
    }
    let mut conn = redis.conn();
    let out: Vec<u64> = run_script(script, &cmd, &mut conn).await?;
    if out.len() < 2 * plays.len() {
        return Err(GameError::Corrupt("plain plays: a malformed answer".into()));
    }
    let answers: Vec<Answer> = out.chunks_exact(2).map(|a| (a[0], a[1])).collect();
    if let Some(first) = plays.iter().zip(&answers).find(|(_, a)| a.0 == 1) {
        let connected = out.get(2 * plays.len()).copied().unwrap_or(0);
        wait.after_commit(&mut conn, &first.0.key, &first.0.room_id, connected)
            .await?;
    }
    Ok(answers)
}

/// The same error again, for each play of a failed call.
fn copy(err: &GameError) -> GameError {
    match err {
        GameError::Redis(err) => GameError::Redis(redis::RedisError::from((
            err.kind(),
            "a call of plain plays failed",
            err.to_string(),
        ))),
        other => GameError::Unavailable(other.to_string()),
    }
}
