#!/usr/bin/env bash
# `make sdk`: client code for the app platforms from proto/ (docs/clients.md, "Code generation").
#
#   scripts/sdk.sh [OUT] [LANGUAGE...]    # default: dist/sdk, every language
#
#   java        protobuf-lite messages (with the lite well-known types) and grpc-java stubs,
#               as an Android app uses them: clients/jvm compiles exactly this
#   kotlin      protoc's Kotlin DSL over the java output (lite)
#   csharp      protoc's C# messages, one folder per namespace below Basra (Game/V1/Admin.cs);
#               the gRPC services too where grpc_csharp_plugin is on PATH (Debian has none:
#               the Grpc.Tools NuGet package brings it)
#   objc        protoc's Objective-C messages; the services where grpc_objective_c_plugin is
#   python      messages, type stubs (.pyi) and the services (grpc_python_plugin, Debian's
#               protobuf-compiler-grpc)
#   typescript  what the web client uses: protoc-gen-es (clients/web's npm packages, by buf)
#
# Each language keeps the .proto folders or the packages apart; CI runs this for every
# language and checks each output (clients/cli/tests/it/sdk.rs, in make test).
#
# Swift and Dart have no generator installable here: docs/clients.md gives the buf template.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist/sdk}
shift || true
mkdir -p "$out"
out=$(cd "$out" && pwd)
languages=("$@")
[ ${#languages[@]} -gt 0 ] || languages=(java kotlin csharp objc python typescript)

cd "$root/proto"
# The client API only: internal.proto holds the service-to-service calls, which no app makes.
protos=$(find basra -name '*.proto' ! -name internal.proto | sort)
internal=$(find basra -name internal.proto | sort)
# Where Debian's libprotobuf-dev keeps the well-known types (google/protobuf/*.proto).
wkt=/usr/include
[ -f "$wkt/google/protobuf/timestamp.proto" ] || { echo "sdk: $wkt/google/protobuf is missing: apt-get install libprotobuf-dev" >&2; exit 1; }

# A gRPC plugin's protoc flags, or nothing (with a note) when it is not installed.
grpc_plugin() { # plugin binary, language
  if command -v "$1" >/dev/null; then
    echo "--plugin=protoc-gen-grpc-$2=$(command -v "$1") --grpc-$2_out=$out/$2"
  else
    echo "sdk: $1 is not on PATH: $2 messages only, no service stubs" >&2
  fi
}

java() {
  protoc -I . -I "$wkt" --plugin=protoc-gen-grpc-java="$(command -v grpc_java_plugin)" \
    --java_out=lite:"$out/java" --grpc-java_out=lite:"$out/java" \
    $protos google/protobuf/timestamp.proto google/protobuf/duration.proto
}
kotlin() {
  protoc -I . -I "$wkt" --kotlin_out=lite:"$out/kotlin" $protos
}
csharp() {
  # One folder per namespace below `Basra` (Accounts/V1/Admin.cs, Game/V1/Admin.cs): C#
  # names a file after its .proto alone, so two admin.proto files would write one Admin.cs.
  # shellcheck disable=SC2046 # the plugin's flags are words
  protoc -I . -I "$wkt" --csharp_out="$out/csharp" --csharp_opt=base_namespace=Basra \
    $(grpc_plugin grpc_csharp_plugin csharp) $protos
}
objc() {
  # shellcheck disable=SC2046
  protoc -I . -I "$wkt" --objc_out="$out/objc" $(grpc_plugin grpc_objective_c_plugin objc) $protos
}
python() {
  # shellcheck disable=SC2046
  protoc -I . -I "$wkt" --python_out="$out/python" --pyi_out="$out/python" \
    $(grpc_plugin grpc_python_plugin python) $protos
}
typescript() {
  local web=$root/clients/web
  [ -x "$web/node_modules/.bin/protoc-gen-es" ] || npm ci --prefix "$web" --no-audit --no-fund --silent
  # shellcheck disable=SC2046 # one flag per internal.proto
  "$web/node_modules/.bin/buf" generate "$root/proto" $(printf -- '--exclude-path %s ' $internal) --template \
    '{"version":"v2","plugins":[{"local":"'"$web"'/node_modules/.bin/protoc-gen-es","out":"'"$out"'/typescript","opt":"target=ts"}]}'
}

for language in "${languages[@]}"; do
  case $language in
    java | kotlin | csharp | objc | python | typescript)
      rm -rf "${out:?}/$language"
      mkdir -p "$out/$language"
      $language
      ;;
    *) echo "sdk: unknown language $language" >&2; exit 2 ;;
  esac
  echo "sdk: $language in $out/$language"
done
