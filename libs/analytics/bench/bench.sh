#!/usr/bin/env bash
# The analytics benchmark: `basra simulate --fast` (RecordMatches batches) into a scratch
# database through a `basra dev` backend, then `basra analytics export` (to a directory,
# and to object storage: moto's S3 server from PyPI on a loopback port, unless S3=0) and
# `basra analytics report`, each under /usr/bin/time -v (wall time and peak memory), with
# the load average before each step (the machine may be shared).
#
# Usage: libs/analytics/bench/bench.sh [MATCHES...]   (default: 10000 100000)
# The corpus grows to each size in turn (10k, then 90k more for 100k); every export is a
# full one into a fresh directory.
set -euo pipefail
cd "$(dirname "$0")/../../.."

SIZES=("${@:-10000 100000}")
read -r -a SIZES <<<"${SIZES[*]}"
PG=${PG:-postgres://postgres@127.0.0.1:5432}
# Local and trusted: no TLS handshake or encryption on the bulk reads and writes.
PGPARAMS=${PGPARAMS:-sslmode=disable}
DB=${DB:-basra_analytics_bench}   # DB=...: a database of your own on a shared server
PORT=${PORT:-50081}
WORK=${WORK:-/tmp/basra-analytics-bench}
TARGET=${CARGO_TARGET_DIR:-target}
BASRA=$TARGET/release/basra

[ -n "${SKIP_BUILD:-}" ] || cargo build --quiet --release -p basra   # SKIP_BUILD=1: use the binary as built
rm -rf "$WORK" && mkdir -p "$WORK"
openssl genpkey -algorithm ed25519 -out "$WORK/key.pem" 2>/dev/null
# accounts (in `basra dev`) signs with this key, and simulate signs its service token with it.
export BASRA_ACCOUNTS_IDENTITY__SIGNING_KEY_FILE=$WORK/key.pem BASRA_ACCOUNTS_IDENTITY__KEY_ID=bench-1
psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"

# 1,000 simulated people sign in at once: lift the sign-up limits the bench is not measuring.
BASRA_ACCOUNTS_SIGNUP_LIMITS__PER_ADDRESS_MAX=1000000000 BASRA_ACCOUNTS_SIGNUP_LIMITS__GLOBAL_MAX=1000000000 \
  RUST_LOG=warn "$BASRA" dev --listen 127.0.0.1:$PORT --database-url "$PG/$DB?$PGPARAMS" >"$WORK/dev.log" 2>&1 &
DEV=$!
trap 'kill $DEV 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do grep -q "basra dev:" "$WORK/dev.log" && break; sleep 0.5; done
grep -q "basra dev:" "$WORK/dev.log" || { cat "$WORK/dev.log"; exit 1; }

# The S3-compatible server: moto's (in memory), with a bucket per run.
S3=${S3:-1}
S3_PORT=${S3_PORT:-$((PORT + 1))}
if [ "$S3" = 1 ]; then
  python3 -m moto.server -H 127.0.0.1 -p "$S3_PORT" >"$WORK/moto.log" 2>&1 &
  MOTO=$!
  trap 'kill $DEV $MOTO 2>/dev/null || true' EXIT
  for _ in $(seq 1 120); do curl -s -o /dev/null "http://127.0.0.1:$S3_PORT/" && break; sleep 0.5; done
  curl -s -f -X PUT "http://127.0.0.1:$S3_PORT/bench" >/dev/null
  export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1 \
    AWS_ENDPOINT_URL=http://127.0.0.1:$S3_PORT
fi

measure() { # label, command...
  local label=$1; shift
  echo "  $label: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -v "$@" 2>"$WORK/time.txt" | tail -1
  awk -v l="$label" '/Elapsed \(wall/ {w=$NF} /Maximum resident/ {m=$NF} END {printf "  %s: wall %s, peak RSS %.0f MB\n", l, w, m/1024}' "$WORK/time.txt"
}

have=0
for size in "${SIZES[@]}"; do
  echo "== $size matches"
  measure simulate "$BASRA" simulate --fast --server http://127.0.0.1:$PORT \
    --matches $((size - have)) --players 1000 --days 30 --seed "$size" --concurrency "${SIM_CONCURRENCY:-4}" --batch 100
  have=$size
  rm -rf "$WORK/export-$size"
  measure export "$BASRA" analytics export --database-url "$PG/$DB?$PGPARAMS" --out "$WORK/export-$size" \
    --settle-seconds 0
  du -sh "$WORK/export-$size" | awk '{print "  export size: " $1}'
  if [ "$S3" = 1 ]; then
    measure export-s3 "$BASRA" analytics export --database-url "$PG/$DB?$PGPARAMS" \
      --out "s3://bench/export-$size" --settle-seconds 0
  fi
  measure report "$BASRA" analytics report --from "$WORK/export-$size" --out "$WORK/report-$size.html"
done
