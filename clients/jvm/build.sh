#!/usr/bin/env bash
# Builds the JVM client (clients/jvm/README.md) with javac alone, from Debian's packages:
# the API's Java code (protobuf-lite and grpc-java stubs, as an Android app has them) made by
# scripts/sdk.sh, then src/. Prints the classpath to run it with.
#
#   clients/jvm/build.sh [OUT]     # default: $CARGO_TARGET_DIR/jvm (or target/jvm)
#   clients/jvm/build.sh --check   # names the Debian packages missing (scripts/check-prereqs.sh)
#   java -cp "$(cat OUT/classpath)" online.basra.jvmclient.Main 127.0.0.1:50051
#
# The generated code is compiled again only when proto/ or scripts/sdk.sh changed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${CARGO_TARGET_DIR:-$root/target}/jvm}

# The jars, each from the Debian package named beside it (scripts/deps.sh installs them).
jars=(
  grpc-api:libgrpc-java grpc-core:libgrpc-java grpc-context:libgrpc-java grpc-stub:libgrpc-java
  grpc-protobuf-lite:libgrpc-java grpc-netty:libgrpc-java
  protobuf:libprotobuf-java guava:libguava-java gson:libgoogle-gson-java
  perfmark-api:libperfmark-java error_prone_annotations:liberror-prone-java geronimo-annotation-1.3-spec:libgeronimo-annotation-1.3-spec-java
  netty-buffer:libnetty-java netty-codec:libnetty-java netty-codec-http:libnetty-java
  netty-codec-http2:libnetty-java netty-common:libnetty-java netty-handler:libnetty-java
  netty-resolver:libnetty-java netty-transport:libnetty-java
)
classpath=
missing=()
for entry in "${jars[@]}"; do
  jar=/usr/share/java/${entry%%:*}.jar
  [ -f "$jar" ] || missing+=("${entry##*:}")
  classpath=$classpath:$jar
done
for tool in javac:default-jdk-headless java:default-jdk-headless protoc:protobuf-compiler \
    grpc_java_plugin:protobuf-compiler-grpc-java-plugin; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
done
[ -f /usr/include/google/protobuf/timestamp.proto ] || missing+=(libprotobuf-dev)
if [ ${#missing[@]} -gt 0 ]; then
  packages=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
  if [ "$out" = --check ]; then echo "$packages"; else
    echo "clients/jvm: missing, from Debian: ${packages}(make deps installs them)" >&2; fi
  exit 1
fi
[ "$out" != --check ] || exit 0
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The API's classes first: the lite well-known types they bring shadow protobuf.jar's full ones.
stamp=$( (cat "$root/scripts/sdk.sh"; find "$root/proto" -name '*.proto' | sort | xargs cat; protoc --version) | sha256sum | cut -c1-16)
if [ "$(cat "$out/api.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$out/sdk" "$out/api"
  "$root/scripts/sdk.sh" "$out/sdk" java >/dev/null
  mkdir -p "$out/api"
  find "$out/sdk/java" -name '*.java' >"$out/api.sources"
  javac -nowarn -encoding UTF-8 -d "$out/api" -cp "${classpath#:}" @"$out/api.sources"
  echo "$stamp" >"$out/api.stamp"
fi
rm -rf "$out/classes"
mkdir -p "$out/classes"
javac -Xlint:all -Werror -encoding UTF-8 -d "$out/classes" -cp "$out/api$classpath" \
  $(find "$here/src" -name '*.java' | sort)
echo "$out/classes:$out/api$classpath" >"$out/classpath"
cat "$out/classpath"
