//! Counting gRPC messages in a body's bytes, whatever its chunking: each message is a
//! 5-byte prefix (a compression flag and a big-endian `u32` length) and that many bytes
//! (the gRPC wire format over HTTP/2). A chunk may hold several messages, or end in the
//! middle of a prefix or of a message; this counter carries its place from one chunk to
//! the next. Pure: no I/O.

/// The length of a message's prefix.
const PREFIX: usize = 5;

/// Where a body's bytes are in their messages.
#[derive(Debug, Default, Clone)]
pub(crate) struct FrameCounter {
    /// The prefix bytes of the next message seen so far.
    prefix: [u8; PREFIX],
    /// How many of them.
    prefix_len: usize,
    /// Bytes of the current message still to skip.
    remaining: u64,
}

impl FrameCounter {
    /// Takes the next chunk of the body; answers how many messages began in it (a
    /// message counts once its prefix is whole).
    pub(crate) fn feed(&mut self, mut chunk: &[u8]) -> u64 {
        let mut began = 0;
        while !chunk.is_empty() {
            if self.remaining > 0 {
                let skip = usize::try_from(self.remaining)
                    .unwrap_or(usize::MAX)
                    .min(chunk.len());
                chunk = &chunk[skip..];
                self.remaining -= skip as u64;
                continue;
            }
            let take = (PREFIX - self.prefix_len).min(chunk.len());
            self.prefix[self.prefix_len..self.prefix_len + take].copy_from_slice(&chunk[..take]);
            self.prefix_len += take;
            chunk = &chunk[take..];
            if self.prefix_len == PREFIX {
                let length = u32::from_be_bytes([
                    self.prefix[1],
                    self.prefix[2],
                    self.prefix[3],
                    self.prefix[4],
                ]);
                self.remaining = u64::from(length);
                self.prefix_len = 0;
                began += 1;
            }
        }
        began
    }
}

impl FrameCounter {
    /// Whether the bytes fed so far end exactly after a message.
    #[cfg(test)]
    fn between_messages(&self) -> bool {
        self.prefix_len == 0 && self.remaining == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(len: u32) -> Vec<u8> {
        let mut bytes = vec![0];
        bytes.extend_from_slice(&len.to_be_bytes());
        bytes.extend(std::iter::repeat_n(7, len as usize));
        bytes
    }

    #[test]
    fn counts_messages_however_the_bytes_are_cut() {
        let body: Vec<u8> = [message(3), message(0), message(300), message(1)].concat();
        for size in 1..body.len() {
            let mut counter = FrameCounter::default();
            let counted: u64 = body.chunks(size).map(|chunk| counter.feed(chunk)).sum();
            assert_eq!(counted, 4, "chunks of {size}");
            assert!(
                counter.between_messages(),
                "ends between messages: {counter:?}"
            );
        }
    }

    #[test]
    fn a_message_counts_once_its_prefix_is_whole() {
        let mut counter = FrameCounter::default();
        let bytes = message(10);
        assert_eq!(counter.feed(&bytes[..4]), 0);
        assert_eq!(counter.feed(&bytes[4..6]), 1);
        assert_eq!(counter.feed(&bytes[6..]), 0);
    }
}
