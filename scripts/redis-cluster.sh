#!/usr/bin/env bash
# A local Redis Cluster for the tests and benchmarks: 3 primaries and 3 replicas on
# 127.0.0.1:7001-7006, in a temporary directory, nothing persisted.
#
#   scripts/redis-cluster.sh start    # idempotent: a healthy cluster is left alone
#   scripts/redis-cluster.sh stop
#   scripts/redis-cluster.sh status
#   scripts/redis-cluster.sh heal     # restart stopped or killed nodes; they rejoin
#
# The services and tests reach it with
#   REDIS_CLUSTER_URL=redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003
# (any node is enough to find the others). BASE_PORT moves the six ports.
set -euo pipefail
base=${BASE_PORT:-7001}
ports=$(seq "$base" $((base + 5)))
dir=${REDIS_CLUSTER_DIR:-${TMPDIR:-/tmp}/basra-redis-cluster-$base}

healthy() {
  for p in $ports; do
    redis-cli -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
  done
}

start_node() { # port
  redis-server --port "$1" --bind 127.0.0.1 --daemonize yes \
    --cluster-enabled yes --cluster-config-file "$dir/$1/nodes.conf" \
    --cluster-node-timeout 2000 --save "" --appendonly no \
    --dir "$dir/$1" --logfile "$dir/$1/redis.log" --pidfile "$dir/$1/redis.pid"
}

wait_healthy() {
  for _ in $(seq 1 150); do
    if healthy; then return 0; fi
    sleep 0.2
  done
  echo "redis-cluster: did not reach cluster_state:ok" >&2
  return 1
}

heal() {
  for p in $ports; do
    if ! redis-cli -p "$p" ping >/dev/null 2>&1; then
      echo "redis-cluster: restarting $p"
      start_node "$p"
    fi
  done
  wait_healthy
  # A restarted node comes back as a replica; wait until every primary has one again.
  for _ in $(seq 1 150); do
    [ "$(redis-cli -p "$base" cluster nodes | grep -c ' slave ')" -ge 3 ] && break
    sleep 0.2
  done
  echo "redis-cluster: healthy"
}

start() {
  if healthy; then
    echo "redis-cluster: already running on $base-$((base + 5))"
    return 0
  fi
  stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  for p in $ports; do
    mkdir -p "$dir/$p"
    start_node "$p"
  done
  for p in $ports; do
    for _ in $(seq 1 50); do
      redis-cli -p "$p" ping >/dev/null 2>&1 && break
      sleep 0.1
    done
  done
  # shellcheck disable=SC2046
  redis-cli --cluster create $(for p in $ports; do printf '127.0.0.1:%s ' "$p"; done) \
    --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 || {
    cat "$dir/create.log" >&2
    exit 1
  }
  wait_healthy
  echo "redis-cluster: 3 primaries + 3 replicas on 127.0.0.1:$base-$((base + 5)) ($dir)"
}

stop() {
  for p in $ports; do
    redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true
  done
  echo "redis-cluster: stopped"
}

status() {
  if healthy; then
    redis-cli -p "$base" cluster nodes
  else
    echo "redis-cluster: not running (or not healthy) on $base-$((base + 5))" >&2
    return 1
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  heal) heal ;;
  *) echo "usage: $0 start|stop|status|heal" >&2; exit 2 ;;
esac
