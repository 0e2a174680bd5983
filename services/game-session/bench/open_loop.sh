#!/usr/bin/env bash
# Latency at a fixed offered load (docs/performance.md, "Latency at a fixed offered load"):
# the load generator flat out at 1,000 matches, then open loops at 25, 50 and 75 % of the
# plays/s it measured, in the same minutes.
#
#   services/game-session/bench/open_loop.sh path/to/examples/load [seconds]
set -euo pipefail
load=$1
seconds=${2:-10}
flat=$("$load" --matches 1000 --seconds "$seconds" --warmup 3)
echo "$flat"
rate=$(echo "$flat" | grep -oP 'plays/s \K[0-9]+' | head -1)
for pct in 25 50 75; do
  echo "== open loop at $pct % of $rate plays/s"
  "$load" --matches 1000 --seconds "$seconds" --warmup 3 --rate $((rate * pct / 100))
done
