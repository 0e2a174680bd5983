#!/usr/bin/env bash
# Builds the previous release's accounts and game-session for the rolling-upgrade
# rehearsal (the fault suite's scenario u: make chaos-short, make chaos-upgrade) and prints
# nothing when they are already built.
#
#   tests/chaos/previous-release.sh REV DIR PROFILE
#
# REV: the release's commit (make chaos-upgrade passes the commit that last recorded the
# API as released, api/released.binpb, unless PREVIOUS_RELEASE names another). DIR: where
# its sources (git archive, no worktree), its own target directory and the binaries go
# (DIR/bin/accounts, DIR/bin/game-session, DIR/bin/RELEASE). PROFILE: the cargo profile
# (dev or release). Nothing when DIR/bin/RELEASE already names REV. Otherwise its target
# directory starts as a copy of this build's ($CARGO_TARGET_DIR, when set and built with
# PROFILE), so only the workspace's own crates compile (a few minutes); without one, a
# full build (~30 minutes on two busy cores).
set -euo pipefail
rev=$(git rev-parse --verify "${1:?the release commit}^{commit}")
dir=${2:?a directory}
profile=${3:-dev}
if [ "$(cat "$dir/bin/RELEASE" 2>/dev/null || true)" = "$rev" ]; then
  exit 0
fi
out=$([ "$profile" = dev ] && echo debug || echo "$profile")
rm -rf "$dir/src" "$dir/bin"
mkdir -p "$dir/src" "$dir/bin"
git archive "$rev" | tar -x -C "$dir/src"
# The registry crates' artefacts do not depend on where the sources are: start from ours.
if [ ! -d "$dir/target/$out" ] && [ -d "${CARGO_TARGET_DIR:-}/$out/deps" ]; then
  echo "previous-release: seeding $dir/target/$out from $CARGO_TARGET_DIR/$out" >&2
  mkdir -p "$dir/target/$out"
  cp -a "$CARGO_TARGET_DIR/$out/deps" "$CARGO_TARGET_DIR/$out/build" \
    "$CARGO_TARGET_DIR/$out/.fingerprint" "$dir/target/$out/"
fi
echo "previous-release: building accounts and game-session of ${rev:0:12} in $dir (once)" >&2
(cd "$dir/src" && CARGO_TARGET_DIR="$dir/target" cargo build --quiet --locked \
  --profile "$profile" -p accounts -p game-session --bins)
cp "$dir/target/$out/accounts" "$dir/target/$out/game-session" "$dir/bin/"
echo "$rev" > "$dir/bin/RELEASE"
