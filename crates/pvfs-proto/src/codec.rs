//! The gRPC codec every `pvfs.v1` call uses: prost's, with small starting buffers.
//!
//! tonic allocates a codec buffer of 8 KiB for each call, on each side, up front, and keeps it
//! for the life of a stream. A coordinator following 10,000 agents holds 10,000 `Metrics`
//! streams, and a sample is a kilobyte or two: the default costs about 80 MB that is never
//! written (heaptrack of `pvfsctl serve`). Starting at 1 KiB costs nothing for larger
//! messages: the decoder reserves a message's whole length once its 5-byte header is read,
//! and the encoder's buffer grows as a `BytesMut` does.

use tonic::codec::{BufferSettings, Codec};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// Where each call's encode and decode buffers start.
const START: usize = 1024;
/// tonic's default: how much a stream encodes before yielding to the runtime.
const YIELD_THRESHOLD: usize = 32 * 1024;

/// [`ProstCodec`] with [`START`]-byte buffers. The generated clients and servers name it
/// (`build.rs`).
#[derive(Debug)]
pub struct LeanCodec<T, U>(std::marker::PhantomData<(T, U)>);

impl<T, U> Default for LeanCodec<T, U> {
    fn default() -> Self {
        LeanCodec(std::marker::PhantomData)
    }
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
        ProstCodec::<T, U>::raw_encoder(BufferSettings::new(START, YIELD_THRESHOLD))
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(BufferSettings::new(START, YIELD_THRESHOLD))
    }
}
