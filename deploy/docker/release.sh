#!/bin/sh
# The release build: the one command the image build runs (deploy/docker/Dockerfile) and
# `make release` runs, so what ships is what CI builds. Usage: release.sh [OUT_DIR]
# Copies the four binaries (accounts, matchmaking, game-session, basra) into OUT_DIR
# (default: dist/).
set -eu

out=${1:-dist}
# `--locked`: the build fails rather than resolve versions other than Cargo.lock's.
cargo build --release --locked --bins -p accounts -p matchmaking -p game-session -p basra
mkdir -p "$out"
for bin in accounts matchmaking game-session basra; do
  cp "${CARGO_TARGET_DIR:-target}/release/$bin" "$out/$bin"
done
echo "release binaries in $out: accounts matchmaking game-session basra"
