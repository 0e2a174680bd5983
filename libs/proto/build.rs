//! Compiles `proto/basra/**.proto` with protox (pure Rust: no system `protoc`),
//! writes the descriptor set for gRPC reflection, and generates the prost
//! messages and tonic clients/servers from it.

use std::{
    env,
    error::Error,
    fs,
    path::{Path, PathBuf},
};

use prost::Message as _;

/// The proto root, relative to this crate: imports are written `basra/...`.
const PROTO_ROOT: &str = "../../proto";

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-changed={PROTO_ROOT}");

    let mut files = Vec::new();
    collect_protos(Path::new(PROTO_ROOT), &mut files)?;
    // A stable order keeps the descriptor set (and so the build) reproducible.
    files.sort();

    let fds = protox::compile(&files, [PROTO_ROOT])?;

    let out_dir = PathBuf::from(env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    fs::write(out_dir.join("basra_descriptor.bin"), fds.encode_to_vec())?;

    tonic_prost_build::configure()
        // A snapshot (the whole game view) is many times larger than any other
        // event; boxing it keeps every `PlayResponse` small on the hot path.
        .boxed(".basra.game.v1.PlayResponse.event.snapshot")
        // A kept notice (its whole body) beside a short error: boxed, the two are alike.
        .boxed(".basra.accounts.v1.SendNoticeResult.outcome.sent")
        // Small per-call buffers: a replica holds thousands of long streams (codec.rs).
        .codec_path("crate::codec::LeanCodec")
        .compile_fds(fds)?;
    Ok(())
}

/// Every `.proto` file under `dir`, recursively. (Cargo rescans a directory
/// given to `rerun-if-changed` recursively, so added files are picked up.)
fn collect_protos(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), Box<dyn Error>> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_protos(&path, files)?;
        } else if path.extension().is_some_and(|ext| ext == "proto") {
            files.push(path);
        }
    }
    Ok(())
}
