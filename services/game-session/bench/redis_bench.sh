#!/usr/bin/env bash
# The "comparable EVALSHA" of the game-session load benchmark (docs/performance.md, "Game-session"):
# redis-benchmark runs the real scripts with their early returns taken out (version
# mismatch, move already applied) so that every call writes, over 1000 rooms of one shard:
#
# - `play`: plain plays (src/store/lua/play.lua), 47 plays of a round's 48, BATCH rooms'
#   (8) a call as the replica sends them flat out: for each, the version bumped and the
#   two compact events appended; then the deadlines and one SPUBLISH; the compact forms'
#   sizes (card_played 16 bytes and a 36-character client move id, turn_started 14);
# - `snapshot`: the commit that writes the whole room (src/store/lua/commit.lua), the
#   round's last play and every other change: the room state (DATA bytes, ~2.4 KB of JSON on
#   average over a match; ~340 in binary), a card_played and a turn_started event (223
#   and 92 bytes of JSON) and one action (89 bytes).
#
# Prints calls per second and Redis's CPU per call of each. Deletes its keys afterwards. Single Redis only.
#
#   REDIS_URL=redis://127.0.0.1:6379 [BATCH=8] services/game-session/bench/redis_bench.sh [requests] [clients]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
url=${REDIS_URL:-redis://127.0.0.1:6379}
requests=${1:-100000}
clients=${2:-50}
batch=${BATCH:-8}
data_bytes=${DATA:-2450}
pad() { head -c "$1" /dev/zero | tr '\0' "$2"; }
# The script $1 with each line $2 replaced by $3, $4 by $5, ... (its early returns made
# never to return; what they call still runs).
loaded() {
  local real="$here/../src/store/lua/$1" script
  script=$(cat "$real")
  shift
  while [ $# -gt 0 ]; do
    grep -qxF "$1" "$real" || { echo "redis_bench: $real changed: update this script" >&2; exit 1; }
    script=${script//"$1"/"$2"}
    shift 2
  done
  redis-cli -u "$url" script load "$script"
}
cpu() { redis-cli -u "$url" info cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/ { t += $2 } END { printf "%.6f", t }'; }
# Calls per second and Redis's CPU per call (used_cpu_sys + used_cpu_user over the run).
bench() {
  local before rate
  before=$(cpu)
  rate=$(redis-benchmark -u "$url" -q -n "$requests" -c "$clients" -r 1000 "$@" \
    | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1)
  awk -v a="$before" -v b="$(cpu)" -v n="$requests" -v r="$rate" \
    'BEGIN { printf "%s calls/s, %.1f µs of Redis CPU a call", r, (b - a) / n * 1e6 }'
}
p="rb-$$"
t="$p:{gs:1}"
sha=$(loaded play.lua "  if v ~= version + 1 then" "  if false then")
plays=() rooms=()
for _ in $(seq "$batch"); do
  rooms+=("$t:room:__rand_int__:")
  plays+=(0 1795951866515 2 "$(pad 16 c)$(pad 24 m)-__rand_int__" "$(pad 14 t)")
done
echo "play ($batch plays a call): $(bench evalsha "$sha" "$batch" "${rooms[@]}" '' "${plays[@]}")"
sha=$(loaded commit.lua "if cur ~= tonumber(ARGV[1]) then return {0, 0} end" "" \
  "  if done then return {2, tonumber(done)} end" "")
echo "snapshot: $(bench evalsha "$sha" 8 \
  "$t:room:__rand_int__:state" "$t:room:__rand_int__:log" "$t:room:__rand_int__:moves" \
  "$t:deadlines" "$t:rooms" "$t:outbox" "$t:room:__rand_int__:actions" "$t:notify" \
  0 "$(pad "$data_bytes" x)" '0:__rand_int__' 7 '' 1795951866515 room-id 1795951866000 '' \
  '' '7 room-id' '' 2 1 '' 7 "$(pad 223 e)" "$(pad 92 t)" "$(pad 89 a)")"
redis-cli -u "$url" --scan --pattern "$p:*" | xargs -r -n 500 redis-cli -u "$url" unlink >/dev/null
