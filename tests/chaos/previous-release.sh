#!/usr/bin/env bash
# Builds the previous release's game-session for the rolling-upgrade rehearsal
# (make chaos-upgrade, the fault suite's scenario u) and prints nothing on success.
#
#   tests/chaos/previous-release.sh REV DIR PROFILE
#
# REV: the release's commit (make chaos-upgrade passes the commit that last recorded the
# API as released, api/released.binpb, unless PREVIOUS_RELEASE names another). DIR: where
# its sources (git archive, no worktree), its own target directory and the binary go
# (DIR/bin/game-session, DIR/bin/RELEASE). PROFILE: the cargo profile (dev or release).
# A full build the first time (~30 minutes on two busy cores); nothing when DIR/bin/RELEASE
# already names REV.
set -euo pipefail
rev=$(git rev-parse --verify "${1:?the release commit}^{commit}")
dir=${2:?a directory}
profile=${3:-dev}
if [ "$(cat "$dir/bin/RELEASE" 2>/dev/null || true)" = "$rev" ]; then
  exit 0
fi
rm -rf "$dir/src" "$dir/bin"
mkdir -p "$dir/src" "$dir/bin"
git archive "$rev" | tar -x -C "$dir/src"
echo "previous-release: building game-session of ${rev:0:12} in $dir (once)" >&2
(cd "$dir/src" && CARGO_TARGET_DIR="$dir/target" cargo build --quiet --locked \
  --profile "$profile" -p game-session --bins)
out=$([ "$profile" = dev ] && echo debug || echo "$profile")
cp "$dir/target/$out/game-session" "$dir/bin/game-session"
echo "$rev" > "$dir/bin/RELEASE"
