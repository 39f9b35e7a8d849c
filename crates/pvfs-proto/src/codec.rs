//! The gRPC codec every `pvfs.v1` call uses: prost's, with small starting buffers.
//!
//! tonic allocates a codec buffer of 8 KiB for each call, on each side, up front, and keeps it
//! for the life of a stream. A coordinator following 10,000 agents holds 10,000 `Metrics`
//! streams, and a sample is a few hundred bytes (351 on the build VM, `cargo bench -p
//! pvfs-proto`): the default costs about 80 MB that is never written (heaptrack of `pvfsctl
//! serve`). Starting at 1 KiB costs nothing for larger messages: the decoder reserves a
//! message's whole length once its 5-byte header is read, and the encoder's buffer grows as a
//! `BytesMut` does.

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::RebootRequest;
    use tonic::codec::{EncodeBody, Streaming};

    /// Messages smaller and far larger than the starting buffer, one after another on one
    /// stream, through tonic's own encoding and decoding: each arrives whole and in order.
    #[tokio::test]
    async fn messages_of_any_size_cross_a_stream_started_at_one_kilobyte() {
        let sizes = [0, 10, START - 5, START, START + 1, 5 * START, 300 * 1024, 3];
        let sent: Vec<RebootRequest> =
            sizes.iter().map(|&n| RebootRequest { kernel: "k".repeat(n) }).collect();
        let mut codec = LeanCodec::<RebootRequest, RebootRequest>::default();
        let body = EncodeBody::new_client(
            codec.encoder(),
            tokio_stream::iter(sent.clone().into_iter().map(Ok)),
            None,
            None,
        );
        let mut received = Streaming::new_request(codec.decoder(), body, None, None);
        for expected in &sent {
            let got = received.message().await.expect("decodes").expect("a message");
            assert_eq!(got.kernel.len(), expected.kernel.len());
            assert_eq!(&got, expected);
        }
        assert!(received.message().await.expect("ends cleanly").is_none());
    }
}
