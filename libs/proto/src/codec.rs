//! The codec every generated client and server uses: prost's, with smaller buffers.
//!
//! tonic gives each call an encode buffer and a decode buffer of 8 KiB by default, and a
//! long stream keeps both for its whole life. Our messages are small (a game event is
//! tens of bytes, a snapshot well under 1 KiB, the largest request a few hundred bytes),
//! so on a replica holding many thousands of open Play streams those buffers were most of
//! a stream's memory. [`LeanCodec`] starts them at [`BUFFER_BYTES`]; a larger message
//! still fits (the buffers grow as needed, and the size limits are the servers' own).

use tonic::codec::{BufferSettings, Codec};
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
