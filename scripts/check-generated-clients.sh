#!/usr/bin/env bash
# Generates clients from the OpenAPI document the API serves, as partners would, and fails when one is
# incomplete or does not compile: openapi-generator's `typescript-fetch` and `java` (native library)
# clients and openapi-typescript's types on its default flags. Every operationId must be a method of
# both generated clients, every model they write must be a schema of the document (no invented name),
# the TypeScript compiles with `tsc --strict` and the Java with `javac` against its own pom's
# dependencies.
#
# The generator's jar and the Java client's dependencies come from Maven Central once and are cached
# under ~/.cache/leadline-infra (LEADLINE_INFRA_CACHE), like the infrastructure's jars. The clients are
# written to .generated-clients/ (git-ignored), where the Java scenario test finds the compiled client;
# a run whose document and tools are unchanged since the last good run reuses them.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
source scripts/node.sh
GENERATOR_VERSION="7.25.0"
MVN_DEPENDENCY_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
cache="${LEADLINE_INFRA_CACHE:-$HOME/.cache/leadline-infra}"
out="$root/.generated-clients"
jar="$cache/openapi-generator-cli-$GENERATOR_VERSION/openapi-generator-cli-$GENERATOR_VERSION.jar"

say() { printf '[generated clients] %s\n' "$*"; }
fail() {
  printf '[generated clients] %s\n' "$*" >&2
  exit 1
}

# A JDK (javac, not only the JRE the infrastructure needs) and Maven, installed as scripts/infra does.
if ! command -v javac >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    say "installing a JDK and Maven (default-jdk-headless, maven)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless maven >/dev/null
  else
    fail "javac or mvn is missing: install a JDK 17+ and Maven (apt-get install default-jdk-headless maven)."
  fi
fi

if [[ ! -s $jar ]]; then
  say "fetching openapi-generator-cli $GENERATOR_VERSION from Maven Central into $(dirname "$jar")"
  mkdir -p "$cache"
  tmp="$(mktemp -d "$cache/.tmp-openapi-generator.XXXXXX")"
  if ! (cd "$tmp" && mvn -B -q "$MVN_DEPENDENCY_PLUGIN:copy" \
    -Dartifact="org.openapitools:openapi-generator-cli:$GENERATOR_VERSION" -DoutputDirectory="$tmp" >"$tmp/mvn.log" 2>&1); then
    tail -n 40 "$tmp/mvn.log" >&2
    rm -rf "$tmp"
    fail "could not download openapi-generator-cli with Maven (see above)"
  fi
  mkdir -p "$(dirname "$jar")"
  mv "$tmp/openapi-generator-cli-$GENERATOR_VERSION.jar" "$jar"
  rm -rf "$tmp"
fi

mkdir -p "$out"
document="$out/openapi.json"
npx tsx services/command-api/src/openapi-cli.ts "$document.new"
# The same document, this script, the checker and the generator: the last good run still holds.
stamp="$(cat "$document.new" "$0" scripts/generated-clients/*.ts scripts/generated-clients/*.json | sha256sum | cut -c1-64)-$GENERATOR_VERSION"
if [[ -f $out/stamp && "$(cat "$out/stamp")" == "$stamp" && -d $out/java/classes ]]; then
  rm -f "$document.new"
  say "up to date (the document and the tools are unchanged since the last good run)"
  exit 0
fi
mv "$document.new" "$document"
rm -rf "$out/stamp" "$out/typescript-fetch" "$out/java" "$out/openapi-typescript"

say "generating typescript-fetch and java clients with openapi-generator $GENERATOR_VERSION"
sed -e "s|@DOCUMENT@|$document|" -e "s|@OUT@|$out|" scripts/generated-clients/typescript-fetch.json >"$out/typescript-fetch.config.json"
sed -e "s|@DOCUMENT@|$document|" -e "s|@OUT@|$out|" scripts/generated-clients/java.json >"$out/java.config.json"
if ! java -jar "$jar" batch --fail-fast --threads 2 "$out/typescript-fetch.config.json" "$out/java.config.json" >"$out/generator.log" 2>&1; then
  tail -n 40 "$out/generator.log" >&2
  fail "openapi-generator failed (log: $out/generator.log)"
fi

say "generating types with openapi-typescript on its default flags"
mkdir -p "$out/openapi-typescript"
npx openapi-typescript "$document" --output "$out/openapi-typescript/leadline-api.d.ts" >/dev/null

# Every operation present, every model named by the document.
npx tsx scripts/generated-clients/check.ts "$document" "$out"

say "compiling the TypeScript clients (tsc --strict)"
npx tsc -p scripts/generated-clients/tsconfig.json --noEmit

say "compiling the Java client (javac)"
# The dependencies the generated pom.xml names, resolved once per distinct pom.
deps="$cache/java-client-deps-$(sha256sum "$out/java/pom.xml" | cut -c1-12)"
if [[ ! -d $deps ]]; then
  tmp="$(mktemp -d "$cache/.tmp-java-client-deps.XXXXXX")"
  if ! mvn -B -q -f "$out/java/pom.xml" "$MVN_DEPENDENCY_PLUGIN:copy-dependencies" \
    -DincludeScope=compile -DoutputDirectory="$tmp" >"$out/mvn.log" 2>&1; then
    tail -n 40 "$out/mvn.log" >&2
    rm -rf "$tmp"
    fail "could not resolve the Java client's dependencies with Maven (log: $out/mvn.log)"
  fi
  mv "$tmp" "$deps"
fi
ln -sfn "$deps" "$out/java/dependencies"
mkdir -p "$out/java/classes"
find "$out/java/src/main/java" -name '*.java' >"$out/java/sources.txt"
if ! javac -nowarn -Xlint:none -encoding UTF-8 -d "$out/java/classes" -cp "$deps/*" @"$out/java/sources.txt" >"$out/javac.log" 2>&1; then
  head -n 60 "$out/javac.log" >&2
  fail "the generated Java client does not compile (log: $out/javac.log)"
fi

echo "$stamp" >"$out/stamp"
say "both clients have every operation, only the document's names, and compile"
