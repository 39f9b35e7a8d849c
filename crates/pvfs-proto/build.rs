//! Compiles proto/pvfs/v1/*.proto with protox (pure Rust), so building needs cargo alone and no
//! `protoc` on the machine.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let files = ["pvfs/v1/agent.proto", "pvfs/v1/bench.proto", "pvfs/v1/steps.proto"];
    for file in files {
        println!("cargo:rerun-if-changed={}", root.join(file).display());
    }
    let descriptors = protox::compile(files, [&root])?;
    // Prost's codec with small starting buffers (see src/codec.rs).
    tonic_prost_build::configure().codec_path("crate::codec::LeanCodec").compile_fds(descriptors)?;
    Ok(())
}
