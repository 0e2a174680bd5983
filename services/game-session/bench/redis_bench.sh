#!/usr/bin/env bash
# The "comparable EVALSHA" of the game-session load benchmark (README, "Performance"):
# redis-benchmark runs commit_like.lua, which does the work of one play's commit, with
# arguments of the measured sizes: the room state (DATA bytes, ~2.4 KB on average over
# a match), a card_played and a turn_started event (223 and 92 bytes) and one action
# (89 bytes), over 1000 rooms. Prints requests per second. Deletes its keys afterwards.
#
#   REDIS_URL=redis://127.0.0.1:6379 services/game-session/bench/redis_bench.sh [requests] [clients]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
url=${REDIS_URL:-redis://127.0.0.1:6379}
requests=${1:-100000}
clients=${2:-50}
data_bytes=${DATA:-2450}
pad() { head -c "$1" /dev/zero | tr '\0' "$2"; }
sha=$(redis-cli -u "$url" script load "$(cat "$here/commit_like.lua")")
p="rb-$$"
redis-benchmark -u "$url" -q -n "$requests" -c "$clients" -r 1000 \
  evalsha "$sha" 7 \
  "$p:{room:__rand_int__}:state" "$p:{room:__rand_int__}:log" "$p:{room:__rand_int__}:moves" \
  "$p:deadlines" "$p:rooms" "$p:outbox" "$p:{room:__rand_int__}:actions" \
  0 "$(pad "$data_bytes" x)" '0:__rand_int__' 7 '' 1795951866515 room-id 1795951866000 '' \
  "$p:notify" '7 room-id' '' 2 1 '' 7 "$(pad 223 e)" "$(pad 92 t)" "$(pad 89 a)" \
  | tr '\r' '\n' | grep -o '[0-9.]* requests per second.*' | tail -1
redis-cli -u "$url" --scan --pattern "$p:*" | xargs -r -n 500 redis-cli -u "$url" unlink >/dev/null
