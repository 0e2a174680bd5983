#!/usr/bin/env bash
# What the tests need, checked before anything is built: one message naming every missing
# piece and how to get it. `make test` runs it first; `make deps` installs what it names.
#
#   scripts/check-prereqs.sh          # what `make test` needs
#   scripts/check-prereqs.sh ci       # and what CI's other steps need (make k8s-check, make chaos-short)
#
# DATABASE_URL and REDIS_URL (as the Makefile sets them) name the servers to reach.
set -uo pipefail
scope=${1:-test}
DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

missing=()
need() { # what is missing, how to get it
  missing+=("$(printf '  - %-48s %s' "$1" "$2")")
}
have() { command -v "$1" >/dev/null 2>&1; }

# host and port of a URL such as postgres://user@host:5432/db (the first of a comma list).
host_port() { # url, default port
  local url=${1%%,*} rest
  rest=${url#*://}
  rest=${rest#*@}
  rest=${rest%%/*}
  rest=${rest%%\?*}
  if [[ $rest == \[*\]* ]]; then # [::1]:6379
    local host=${rest%%]*}
    host=${host#[}
    local port=${rest##*]}
    port=${port#:}
    echo "$host ${port:-$2}"
  elif [[ $rest == *:* ]]; then
    echo "${rest%%:*} ${rest##*:}"
  else
    echo "${rest:-127.0.0.1} $2"
  fi
}
answers() { # host, port
  timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null
}

have cargo || need "cargo (the Rust toolchain)" "https://rustup.rs; rust-toolchain.toml pins the version"

read -r pg_host pg_port < <(host_port "$DATABASE_URL" 5432)
answers "$pg_host" "$pg_port" || need "PostgreSQL answering at $pg_host:$pg_port" \
  "apt-get install postgresql, then pg_ctlcluster <version> main start (or set DATABASE_URL)"
if [[ $REDIS_URL == memory ]]; then
  need "Redis (REDIS_URL=memory is for basra dev)" "set REDIS_URL to a real Redis: redis://127.0.0.1:6379"
else
  read -r redis_host redis_port < <(host_port "$REDIS_URL" 6379)
  answers "$redis_host" "$redis_port" || need "Redis answering at $redis_host:$redis_port" \
    "apt-get install redis-server, then redis-server --daemonize yes (or set REDIS_URL)"
fi
have redis-server || need "redis-server (the local Redis Cluster)" "apt-get install redis-server"
have redis-cli || need "redis-cli (the local Redis Cluster)" "apt-get install redis-tools"
have node || need "node (the web page's build and browser tests)" "apt-get install nodejs"
have npm || need "npm (the web page's packages)" "apt-get install npm"
[ -x "$CHROMIUM" ] || need "chromium at $CHROMIUM (browser tests)" "apt-get install chromium (or set CHROMIUM)"
have prometheus || need "prometheus (tests/it/prometheus.rs runs it)" "apt-get install prometheus"
have openssl || need "openssl (game-session's pod-cost test)" "apt-get install openssl"
jvm_missing=$("$(dirname "$0")/../clients/jvm/build.sh" --check 2>&1) ||
  need "the JVM client's JDK, protoc and jars (clients/jvm)" "apt-get install $jvm_missing"
have grpc_python_plugin || need "grpc_python_plugin (make sdk, its test)" "apt-get install protobuf-compiler-grpc"
python3 -c "import google.protobuf, grpc" >/dev/null 2>&1 ||
  need "python3 protobuf and grpcio (make sdk's test)" "python3 -m pip install protobuf grpcio"
python3 -c "import moto.server, flask" >/dev/null 2>&1 ||
  need "python3 moto[server] (the S3 server of the analytics export tests)" "python3 -m pip install 'moto[server]'"
python3 -c "import duckdb" >/dev/null 2>&1 ||
  need "python3 duckdb (the analytics docs' queries test)" "python3 -m pip install duckdb"
have pg_dump && have pg_restore || need "pg_dump and pg_restore (tests/it/backup.rs)" "apt-get install postgresql-client"

if [ "$scope" = ci ]; then
  have promtool || need "promtool (make k8s-check)" "apt-get install prometheus"
  have kubectl || need "kubectl (make k8s-check)" "https://kubernetes.io/docs/tasks/tools/ (not in Debian)"
  python3 -c "import kubernetes_validate" >/dev/null 2>&1 ||
    need "python3 kubernetes-validate (make k8s-check)" "python3 -m pip install kubernetes-validate"
  have initdb || need "initdb on PATH (make chaos)" "apt-get install postgresql; add /usr/lib/postgresql/<version>/bin to PATH"
  have pg_ctl || need "pg_ctl on PATH (make chaos)" "apt-get install postgresql; add /usr/lib/postgresql/<version>/bin to PATH"
fi

if [ ${#missing[@]} -gt 0 ]; then
  {
    echo "Missing for make ${scope/ci/test and CI} (${#missing[@]}):"
    printf '%s\n' "${missing[@]}"
    echo "make deps installs and starts all of it on Debian or Ubuntu (as .ci/run does); README.md, \"Quick start\"."
  } >&2
  exit 1
fi
