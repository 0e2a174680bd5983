#!/usr/bin/env bash
# The "comparable EVALSHA" of the game-session load benchmark (docs/performance.md, "Game-session"):
# redis-benchmark runs the real commit script (src/store/lua/commit.lua) with its two
# early returns taken out (version mismatch, move already applied) so that every call
# writes: version and idempotency reads, event and action appends, state write, move
# answer, deadline, SPUBLISH. Arguments have the measured sizes: the room state (DATA
# bytes, ~2.4 KB on average over a match), a card_played and a turn_started event (223
# and 92 bytes) and one action (89 bytes), over 1000 rooms of one shard. Prints
# requests per second. Deletes its keys afterwards. Single Redis only.
#
#   REDIS_URL=redis://127.0.0.1:6379 services/game-session/bench/redis_bench.sh [requests] [clients]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
url=${REDIS_URL:-redis://127.0.0.1:6379}
requests=${1:-100000}
clients=${2:-50}
data_bytes=${DATA:-2450}
pad() { head -c "$1" /dev/zero | tr '\0' "$2"; }
real="$here/../src/store/lua/commit.lua"
version_check="if cur ~= tonumber(ARGV[1]) then return {0, 0} end"
move_check="  if done then return {2, tonumber(done)} end"
for line in "$version_check" "$move_check"; do
  grep -qxF "$line" "$real" || { echo "redis_bench: $real changed: update this script" >&2; exit 1; }
done
script=$(grep -vxF -e "$version_check" -e "$move_check" "$real")
sha=$(redis-cli -u "$url" script load "$script")
p="rb-$$"
t="$p:{gs:1}"
redis-benchmark -u "$url" -q -n "$requests" -c "$clients" -r 1000 \
  evalsha "$sha" 8 \
  "$t:room:__rand_int__:state" "$t:room:__rand_int__:log" "$t:room:__rand_int__:moves" \
  "$t:deadlines" "$t:rooms" "$t:outbox" "$t:room:__rand_int__:actions" "$t:notify" \
  0 "$(pad "$data_bytes" x)" '0:__rand_int__' 7 '' 1795951866515 room-id 1795951866000 '' \
  '' '7 room-id' '' 2 1 '' 7 "$(pad 223 e)" "$(pad 92 t)" "$(pad 89 a)" \
  | tr '\r' '\n' | grep -o '[0-9.]* requests per second.*' | tail -1
redis-cli -u "$url" --scan --pattern "$p:*" | xargs -r -n 500 redis-cli -u "$url" unlink >/dev/null
