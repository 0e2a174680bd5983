//! A Play (or Watch) stream's response, with the stream's session running inside it.
//!
//! The session (the loop that reads the client's messages, commits its moves, and sends
//! the room's events) is not a task of its own: it is a future the response polls
//! whenever the HTTP/2 stream asks for its next message, queuing what it sends in an
//! [`SendQueue`] the response then hands out. A session's event thus reaches its HTTP/2
//! stream without a hop through a channel to another task (one task wake and one channel
//! operation less per event, on the hot path of every play). When the response is
//! dropped (the client went away, the connection closed), the session goes with it;
//! what it must still do then (record the disconnect) is spawned by its `Drop`.
//!
//! A message is a [`PlayResponse`] or, for an event the room's other streams send alike,
//! the bytes encoded once for them all ([`crate::replica::shared_bytes`]).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use basra_proto::basra::game::v1::PlayResponse;
use basra_proto::codec::PreEncoded;
use prost::bytes::Bytes;
use tokio_stream::Stream;
use tonic::Status;

/// How many messages a session queues before it waits for its response to take them.
pub const QUEUE_CAPACITY: usize = 64;

/// What a stream sends: an event made for it, or an event's shared bytes.
pub type Outgoing = PreEncoded<PlayResponse>;

/// A message as a `PlayResponse` (decoding shared bytes), for a consumer that needs the
/// value: tonic's generated Play route, and Watch, which wraps each one.
pub fn message_of(message: Result<Outgoing, Status>) -> Result<PlayResponse, Status> {
    message?
        .into_message()
        .map_err(|err| Status::internal(format!("cannot read back a shared event: {err}")))
}

/// One message of a stream. Boxed: a queue keeps the room it grew to for the stream's
/// life, so a slot of 8 bytes rather than 176 keeps an idle stream small.
type Message = Box<Result<Outgoing, Status>>;

/// What a session has sent and its response has not yet handed out. The session and its
/// response share it; both run on the response's task, so its lock is never contended.
#[derive(Debug, Clone, Default)]
pub struct SendQueue(Arc<Mutex<VecDeque<Message>>>);

impl SendQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Message>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `message`, first waiting while [`QUEUE_CAPACITY`] messages wait. The wait
    /// needs no waker: the response polls its session again as soon as it has handed out
    /// every queued message.
    pub async fn send(&self, message: Result<PlayResponse, Status>) {
        self.push(message.map(PreEncoded::Message)).await;
    }

    /// Queues an event's shared bytes (see [`SendQueue::send`]).
    pub async fn send_shared(&self, bytes: Bytes) {
        self.push(Ok(PreEncoded::Encoded(bytes))).await;
    }

    async fn push(&self, message: Result<Outgoing, Status>) {
        std::future::poll_fn(|_| {
            if self.lock().len() < QUEUE_CAPACITY {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        self.lock().push_back(Box::new(message));
    }

    fn pop(&self) -> Option<Result<Outgoing, Status>> {
        self.lock().pop_front().map(|message| *message)
    }
}

/// The response of a stream: hands out what its session queued, and polls the session
/// when nothing is queued. It ends after the session has ended and everything it queued
/// was handed out.
pub struct SessionStream {
    session: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    queue: SendQueue,
}

impl SessionStream {
    /// The response of `session`, which sends through `queue`.
    pub fn new(session: Pin<Box<dyn Future<Output = ()> + Send>>, queue: SendQueue) -> Self {
        SessionStream {
            session: Some(session),
            queue,
        }
    }
}

impl Stream for SessionStream {
    type Item = Result<Outgoing, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(message) = self.queue.pop() {
            return Poll::Ready(Some(message));
        }
        let Some(session) = self.session.as_mut() else {
            return Poll::Ready(None);
        };
        let ended = session.as_mut().poll(cx).is_ready();
        if ended {
            self.session = None;
        }
        match self.queue.pop() {
            Some(message) => Poll::Ready(Some(message)),
            None if ended => Poll::Ready(None),
            None => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_stream::StreamExt as _;

    /// The seq of a message the stream handed out.
    fn seq(message: Option<Result<Outgoing, Status>>) -> u64 {
        message.unwrap().unwrap().into_message().unwrap().seq
    }

    fn message(seq: u64) -> Result<PlayResponse, Status> {
        Ok(PlayResponse {
            seq,
            ..PlayResponse::default()
        })
    }

    #[tokio::test]
    async fn hands_out_what_the_session_sent_in_order_then_ends() {
        let queue = SendQueue::default();
        let sender = queue.clone();
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let session = async move {
            // More than the queue holds at once: the session waits for room.
            // Some as shared bytes: they keep their place in the order.
            for seq in 1..=QUEUE_CAPACITY as u64 * 3 {
                if seq % 3 == 0 {
                    let bytes = prost::Message::encode_to_vec(&message(seq).unwrap());
                    sender.send_shared(bytes.into()).await;
                } else {
                    sender.send(message(seq)).await;
                }
            }
            // Then it waits on something else before its last message.
            wait.await.unwrap();
            sender.send(Err(Status::unavailable("bye"))).await;
        };
        let mut stream = SessionStream::new(Box::pin(session), queue);
        let mut seqs = Vec::new();
        for _ in 0..QUEUE_CAPACITY * 3 {
            seqs.push(seq(stream.next().await));
        }
        assert_eq!(seqs, (1..=QUEUE_CAPACITY as u64 * 3).collect::<Vec<_>>());
        // Nothing is queued and the session waits: the stream waits too.
        let pending = tokio::time::timeout(std::time::Duration::from_millis(20), stream.next());
        assert!(pending.await.is_err());
        go.send(()).unwrap();
        let last = stream.next().await.unwrap().unwrap_err();
        assert_eq!(last.code(), tonic::Code::Unavailable);
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn dropping_the_stream_drops_the_session() {
        struct Flag(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Flag(Arc::clone(&dropped));
        let queue = SendQueue::default();
        let sender = queue.clone();
        let session = async move {
            let _flag = flag;
            sender.send(message(1)).await;
            std::future::pending::<()>().await;
        };
        let mut stream = SessionStream::new(Box::pin(session), queue);
        assert_eq!(seq(stream.next().await), 1);
        assert!(!dropped.load(std::sync::atomic::Ordering::SeqCst));
        drop(stream);
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
    }
}
