//! The only crate that knows the wire format.
//!
//! [`pb`] is generated from `proto/pvfs/v1`; [`convert`] turns wire messages into the domain
//! types the rest of pvfs uses and back. Agents and the coordinator touch `pb` types only at
//! their gRPC edge. Every call encodes and decodes with [`codec::LeanCodec`].

pub mod codec;
pub mod convert;

/// Generated messages, client and server for `pvfs.v1`.
#[allow(missing_docs, clippy::all, unused_qualifications)]
pub mod pb {
    tonic::include_proto!("pvfs.v1");
}
