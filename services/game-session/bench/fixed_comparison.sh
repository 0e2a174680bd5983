#!/usr/bin/env bash
# The fixed comparison of issue 14's flat-out goal (docs/performance.md, "Game-session"): redis-benchmark
# with 50 clients on an EVALSHA that GETs a 600-byte value, SETs 600 bytes and XADDs one
# 200-byte event, on random keys of 1,000 rooms. Unlike redis_bench.sh (the real commit
# script with our sizes), this does not move when our own state changes size. Prints
# calls per second and Redis's CPU per call (its used_cpu_sys + used_cpu_user over the
# run, divided by the calls: the yardstick of the load generator's "redis CPU µs/play").
# Deletes its keys afterwards. Single Redis only.
#
#   REDIS_URL=redis://127.0.0.1:6379 services/game-session/bench/fixed_comparison.sh [requests]
set -euo pipefail
url=${REDIS_URL:-redis://127.0.0.1:6379}
requests=${1:-100000}
pad() { head -c "$1" /dev/zero | tr '\0' "$2"; }
script="redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], ARGV[1]) redis.call('XADD', KEYS[2], '*', 'e', ARGV[2]) return 1"
sha=$(redis-cli -u "$url" script load "$script")
p="cmp-$$"
cpu() { redis-cli -u "$url" info cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/ { t += $2 } END { printf "%.6f", t }'; }
before=$(cpu)
rate=$(redis-benchmark -u "$url" -q -n "$requests" -c 50 -r 1000 \
  evalsha "$sha" 2 "$p:room:__rand_int__:state" "$p:room:__rand_int__:log" \
  "$(pad 600 s)" "$(pad 200 e)" | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1)
after=$(cpu)
echo "$rate calls/s, $(awk -v a="$before" -v b="$after" -v n="$requests" 'BEGIN { printf "%.1f", (b - a) / n * 1e6 }') µs of Redis CPU a call"
redis-cli -u "$url" --scan --pattern "$p:*" | xargs -r -n 500 redis-cli -u "$url" unlink >/dev/null
