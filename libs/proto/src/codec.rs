//! The codec every generated client and server uses: prost's, with smaller buffers.
//!
//! tonic gives each call an encode buffer and a decode buffer of 8 KiB by default, and a
//! long stream keeps both for its whole life. Our messages are small (a game event is
//! tens of bytes, a snapshot well under 1 KiB, the largest request a few hundred bytes),
//! so on a replica holding many thousands of open Play streams those buffers were most of
//! a stream's memory. [`LeanCodec`] starts them at [`BUFFER_BYTES`]; a larger message
//! still fits (the buffers grow as needed, and the size limits are the servers' own).

use prost::bytes::BufMut as _;
use tonic::codec::{BufferSettings, Codec, EncodeBuf, Encoder};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// Each call's encode and decode buffers start at this size.
pub const BUFFER_BYTES: usize = 1024;

/// How much a stream encodes before it yields to the runtime (tonic's default).
const YIELD_THRESHOLD: usize = 32 * 1024;

/// prost's codec with [`BUFFER_BYTES`] buffers (`tonic_prost_build::codec_path`).
#[derive(Debug, Clone)]
pub struct LeanCodec<T, U>(ProstCodec<T, U>);

impl<T, U> Default for LeanCodec<T, U> {
    fn default() -> Self {
        LeanCodec(ProstCodec::new())
    }
}

fn settings() -> BufferSettings {
    BufferSettings::new(BUFFER_BYTES, YIELD_THRESHOLD)
}

impl<T, U> Codec for LeanCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(settings())
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(settings())
    }
}

/// A message to send, or its bytes already encoded: a server that sends the same message
/// to many streams encodes it once and hands each stream the bytes
/// ([`PreEncodedCodec`]).
#[derive(Debug, Clone, PartialEq)]
pub enum PreEncoded<T> {
    /// Encoded by the stream's codec when it is sent.
    Message(T),
    /// The message's protobuf encoding, made once and shared.
    Encoded(prost::bytes::Bytes),
}

impl<T: prost::Message + Default> PreEncoded<T> {
    /// The message itself (decoding shared bytes: for a consumer that needs the value).
    pub fn into_message(self) -> Result<T, prost::DecodeError> {
        match self {
            PreEncoded::Message(message) => Ok(message),
            PreEncoded::Encoded(bytes) => T::decode(bytes),
        }
    }
}

/// [`LeanCodec`] for a stream whose messages may come encoded already ([`PreEncoded`]): a
/// message is encoded as prost does, shared bytes are copied into the frame as they are.
#[derive(Debug, Clone)]
pub struct PreEncodedCodec<T, U>(std::marker::PhantomData<(T, U)>);

impl<T, U> Default for PreEncodedCodec<T, U> {
    fn default() -> Self {
        PreEncodedCodec(std::marker::PhantomData)
    }
}

impl<T, U> Codec for PreEncodedCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = PreEncoded<T>;
    type Decode = U;
    type Encoder = PreEncodedEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        PreEncodedEncoder(std::marker::PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(settings())
    }
}

/// The encoder of [`PreEncodedCodec`].
#[derive(Debug, Clone)]
pub struct PreEncodedEncoder<T>(std::marker::PhantomData<T>);

impl<T: prost::Message> Encoder for PreEncodedEncoder<T> {
    type Item = PreEncoded<T>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Self::Item, dst: &mut EncodeBuf<'_>) -> Result<(), Self::Error> {
        match item {
            // The buffer grows as needed: encoding into it cannot run out of room.
            PreEncoded::Message(message) => message
                .encode(dst)
                .map_err(|err| tonic::Status::internal(format!("encoding a message: {err}"))),
            PreEncoded::Encoded(bytes) => {
                dst.put_slice(&bytes);
                Ok(())
            }
        }
    }

    fn buffer_settings(&self) -> BufferSettings {
        settings()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::basra::game::v1::{PlayResponse, Pong, play_response::Event};
    use prost::Message as _;

    #[test]
    fn shared_bytes_read_back_as_the_message() {
        let message = PlayResponse {
            seq: 7,
            server_time: None,
            event: Some(Event::Pong(Pong { nonce: 7 })),
        };
        let encoded = PreEncoded::<PlayResponse>::Encoded(message.encode_to_vec().into());
        assert_eq!(encoded.into_message().unwrap(), message);
        let garbled = PreEncoded::<PlayResponse>::Encoded(vec![0xff, 0xff].into());
        assert!(garbled.into_message().is_err());
    }
}
