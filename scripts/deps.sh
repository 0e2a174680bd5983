#!/usr/bin/env bash
# `make deps`: install and start what the tests and CI need, on Debian or Ubuntu, then
# check it all (scripts/check-prereqs.sh ci). Idempotent: what is there is left alone.
# CI (.ci/run) runs it first; as a user other than root it asks sudo for the installs.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ]; then as_root() { "$@"; }; else as_root() { sudo "$@"; }; fi
updated=
apt_install() { # packages
  if [ -z "$updated" ]; then
    as_root apt-get update -qq
    updated=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
wait_for() { # name, probe command...
  local name=$1; shift
  for _ in $(seq 1 30); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  echo "deps: $name did not come up" >&2
  return 1
}

# The packages of Debian that the tests run: the web page's build and its browser tests
# (node, npm, chromium through playwright-core), Prometheus (tests/it/prometheus.rs runs the
# server, make k8s-check runs promtool), openssl (game-session's pod-cost test makes its
# cluster CA), PostgreSQL and Redis (the servers, the local Redis Cluster).
missing=()
command -v pg_ctlcluster >/dev/null 2>&1 || command -v pg_isready >/dev/null 2>&1 || missing+=(postgresql)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
{ command -v pg_dump && command -v pg_restore; } >/dev/null 2>&1 || missing+=(postgresql-client)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
  missing+=(prometheus)
fi
# The JVM client (clients/jvm/build.sh): Debian's JDK, protoc with the well-known types,
# grpc-java and what its package does not pull in (Netty, perfmark, gson, javax.annotation).
if ! jvm_missing=$(clients/jvm/build.sh --check 2>&1); then
  read -r -a jvm_packages <<<"$jvm_missing"
  missing+=("${jvm_packages[@]}")
fi
# make sdk's Python services (grpc_python_plugin).
command -v grpc_python_plugin >/dev/null 2>&1 || missing+=(protobuf-compiler-grpc)
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  apt_install "${missing[@]}"
fi

if ! pg_isready -h 127.0.0.1 -p 5432 >/dev/null 2>&1; then
  echo "deps: starting PostgreSQL"
  as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | tail -1)" main start
fi
wait_for PostgreSQL pg_isready -h 127.0.0.1 -p 5432

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "deps: starting Redis"
  as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi
wait_for Redis redis-cli -h 127.0.0.1 -p 6379 ping

# The store suites also run against a Redis Cluster (3 primaries, 3 replicas, ~3 s).
scripts/redis-cluster.sh start

# deploy/: kubectl (with its built-in kustomize) renders the manifests,
# kubernetes-validate (PyPI, schemas offline) checks every object.
if ! python3 -c "import kubernetes_validate" >/dev/null 2>&1; then
  echo "deps: installing kubernetes-validate"
  python3 -m pip install --quiet --disable-pip-version-check kubernetes-validate
fi

# The analytics tests' Python packages (PyPI): moto's standalone S3 server, which the
# object-storage export tests start on a loopback port (libs/testkit/src/moto.rs), and
# DuckDB, which runs every documented query over a fresh export (tests/it/queries.rs).
if ! python3 -c "import moto.server, flask" >/dev/null 2>&1; then
  echo "deps: installing moto[server]"
  python3 -m pip install --quiet --disable-pip-version-check 'moto[server]'
fi
# The modules make sdk's Python code imports (protobuf, grpcio), for the python3 on PATH
# (PyPI: Debian's python3-grpcio reaches only Debian's own python3).
if ! python3 -c "import google.protobuf, grpc" >/dev/null 2>&1; then
  echo "deps: installing protobuf and grpcio"
  python3 -m pip install --quiet --disable-pip-version-check protobuf grpcio
fi
if ! python3 -c "import duckdb" >/dev/null 2>&1; then
  echo "deps: installing duckdb"
  python3 -m pip install --quiet --disable-pip-version-check duckdb
fi

# The npm packages, from the committed lock files: playwright-core for the analytics
# report's browser test; buf, esbuild and playwright-core for the web client.
if [ ! -d libs/analytics/tests/browser/node_modules/playwright-core ]; then
  echo "deps: installing playwright-core"
  npm ci --prefix libs/analytics/tests/browser --no-audit --no-fund --silent
fi
if [ ! -d clients/web/node_modules/playwright-core ]; then
  echo "deps: installing the web client's packages"
  npm ci --prefix clients/web --no-audit --no-fund --silent
fi

# kubectl is not in Debian: check-prereqs names it with where to get it.
scripts/check-prereqs.sh ci
echo "deps: everything make test and CI need is here"
