#!/usr/bin/env bash
# Bring up Leadline's local infrastructure without Docker:
#   - Kafka 3.9 broker, single node, KRaft (broker+controller in one JVM)  127.0.0.1:9092
#   - Apicurio Registry (Confluent-compatible API), schemas in PostgreSQL     127.0.0.1:8081
#     3.3.3 when a Java >= 21 is available, else 3.0.9 (runs on Java 17; see lib.sh)
# PostgreSQL itself is expected to be running already (127.0.0.1:5432, user postgres).
#
# Idempotent: whatever is already running is left alone, whatever is missing is
# fetched/started. Stop with scripts/infra/down.sh, inspect with status.sh.
#
# LEADLINE_KAFKA_NODES=3 starts a cluster of three KRaft nodes instead (kafka-cluster.sh).
#
# Env overrides: KAFKA_PORT (9092), KAFKA_CONTROLLER_PORT (9093),
# SCHEMA_REGISTRY_PORT (8081), SCHEMA_REGISTRY_MGMT_PORT (port+1000),
# REGISTRY_PG_HOST/PORT/USER/PASSWORD/DB, SCHEMA_REGISTRY_DEFAULT_COMPATIBILITY
# (BACKWARD), LEADLINE_INFRA_CACHE (~/.cache/leadline-infra),
# LEADLINE_INFRA_JAVA_HEAP (512m), LEADLINE_REGISTRY_JAVA (the java binary to run
# the registry with), LEADLINE_APICURIO_VERSION (force a registry version).
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=kafka-cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/kafka-cluster.sh"

KAFKA_READY_TIMEOUT=60
REGISTRY_READY_TIMEOUT=120

# ================================================================ prerequisites
# java runs both servers, mvn fetches them from Maven Central (the artifact
# source we rely on), psql creates the registry database,
# curl probes the registry.
ensure_tools() {
  local -a missing_pkgs=()
  command -v java >/dev/null 2>&1 || missing_pkgs+=(default-jre-headless)
  command -v mvn >/dev/null 2>&1 || missing_pkgs+=(maven)
  command -v psql >/dev/null 2>&1 || missing_pkgs+=(postgresql-client)
  command -v curl >/dev/null 2>&1 || missing_pkgs+=(curl)
  if ((${#missing_pkgs[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
      info "installing missing tools: ${missing_pkgs[*]}"
      DEBIAN_FRONTEND=noninteractive apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_pkgs[@]}" >/dev/null
    else
      die "missing tools; please install the Debian packages: ${missing_pkgs[*]}
       (e.g. sudo apt-get install -y ${missing_pkgs[*]}); need java >= 17, mvn, psql, curl"
    fi
  fi
  # Kafka 3.9 and Apicurio 3.0 (Quarkus 3) both need Java 17 or newer.
  local jv
  jv=$(java_major java)
  if ! [[ $jv =~ ^[0-9]+$ ]] || ((jv < 17)); then
    die "java >= 17 required, found '${jv:-unknown}' ($(command -v java))"
  fi
}

# Pick the Apicurio version and the java that runs it (see lib.sh for why).
# Sets REGISTRY_JAVA, APICURIO_VERSION, APICURIO_HOME_CACHE, APICURIO_APP_DIR.
select_registry_runtime() {
  local candidate major
  REGISTRY_JAVA=""
  if [[ -n ${LEADLINE_REGISTRY_JAVA:-} ]]; then
    # Explicit choice: use exactly this java, whatever its version.
    [[ -x $LEADLINE_REGISTRY_JAVA ]] || die "LEADLINE_REGISTRY_JAVA=$LEADLINE_REGISTRY_JAVA is not an executable"
    REGISTRY_JAVA=$LEADLINE_REGISTRY_JAVA
  else
    # The first Java >= 21 of: $JAVA_HOME, PATH, the JVMs under /usr/lib/jvm (where Debian
    # and Temurin packages install their JDKs, e.g. a Temurin 21+ beside OpenJDK 17).
    for candidate in "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java)" /usr/lib/jvm/*/bin/java; do
      [[ -n $candidate && -x $candidate ]] || continue
      major=$(java_major "$candidate")
      if [[ $major =~ ^[0-9]+$ ]] && ((major >= 21)); then
        REGISTRY_JAVA=$candidate
        break
      fi
    done
    [[ -n $REGISTRY_JAVA ]] || REGISTRY_JAVA=$(command -v java)
  fi
  major=$(java_major "$REGISTRY_JAVA")
  if [[ $major =~ ^[0-9]+$ ]] && ((major >= 21)); then
    APICURIO_VERSION="${LEADLINE_APICURIO_VERSION:-$APICURIO_VERSION_JAVA21}"
  else
    APICURIO_VERSION="${LEADLINE_APICURIO_VERSION:-$APICURIO_VERSION_JAVA17}"
    case $APICURIO_VERSION in
      3.0.* | 3.1.*) ;;
      *) die "Apicurio Registry $APICURIO_VERSION needs Java 21+ but $REGISTRY_JAVA is Java $major.
       Point LEADLINE_REGISTRY_JAVA at a Java 21+ binary, or unset LEADLINE_APICURIO_VERSION." ;;
    esac
  fi
  APICURIO_HOME_CACHE="$CACHE_DIR/apicurio-registry-$APICURIO_VERSION"
  APICURIO_APP_DIR="$APICURIO_HOME_CACHE/app"
}

# ================================================================ fetching
# Download into a temp folder next to the final one, then rename: an interrupted
# fetch never leaves a half-filled folder that looks complete.
fetch_kafka() {
  [[ -f $KAFKA_HOME_CACHE/.complete ]] && return 0
  info "fetching Kafka $(kafka_version) jars from Maven Central into $KAFKA_HOME_CACHE"
  mkdir -p "$CACHE_DIR"
  local tmp
  tmp=$(mktemp -d "$CACHE_DIR/.tmp-kafka.XXXXXX")
  if ! mvn -B -q -f "$KAFKA_POM" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >"$tmp/mvn.log" 2>&1; then
    show_log_tail "$tmp/mvn.log"
    rm -rf "$tmp"
    die "could not resolve Kafka with Maven (see above)"
  fi
  [[ -f $(echo "$tmp"/libs/kafka_2.13-*.jar) ]] || {
    rm -rf "$tmp"
    die "Kafka jars missing after mvn dependency:copy-dependencies"
  }
  rm -f "$tmp/mvn.log"
  touch "$tmp/.complete"
  rm -rf "$KAFKA_HOME_CACHE"
  mv "$tmp" "$KAFKA_HOME_CACHE"
  info "Kafka: $(find "$KAFKA_LIBS" -name '*.jar' | wc -l | tr -d ' ') jars cached"
}

fetch_apicurio() {
  [[ -f $APICURIO_HOME_CACHE/.complete ]] && return 0
  info "fetching Apicurio Registry $APICURIO_VERSION (100-160 MB) from Maven Central into $APICURIO_HOME_CACHE"
  mkdir -p "$CACHE_DIR"
  local tmp
  tmp=$(mktemp -d "$CACHE_DIR/.tmp-apicurio.XXXXXX")
  # Run from the empty temp dir: dependency:copy needs no project.
  if ! (cd "$tmp" && mvn -B -q "$MVN_DEPENDENCY_PLUGIN:copy" \
    -Dartifact="io.apicurio:apicurio-registry-app:$APICURIO_VERSION:tar.gz:all" \
    -DoutputDirectory="$tmp/download" >"$tmp/mvn.log" 2>&1); then
    show_log_tail "$tmp/mvn.log"
    rm -rf "$tmp"
    die "could not download Apicurio Registry $APICURIO_VERSION with Maven (see above)"
  fi
  mkdir -p "$tmp/unpacked"
  tar -xzf "$tmp"/download/*.tar.gz -C "$tmp/unpacked"
  # The folder holding the launcher jar (its lib/ etc. siblings must stay next
  # to it) differs between releases, and so does the launcher: quarkus-run.jar
  # (fast-jar, 3.1+) or apicurio-registry-app-<v>-runner.jar (legacy-jar, 3.0).
  local run_jar
  run_jar=$(find "$tmp/unpacked" -type f \( -name quarkus-run.jar -o -name '*-runner.jar' \) | head -n1)
  if [[ -z $run_jar ]]; then
    rm -rf "$tmp"
    die "no quarkus-run.jar / *-runner.jar in Apicurio Registry $APICURIO_VERSION"
  fi
  mv "$(dirname "$run_jar")" "$tmp/app"
  # The tarball stays in ~/.m2 anyway; do not keep a second copy.
  rm -rf "$tmp/download" "$tmp/unpacked" "$tmp/mvn.log"
  touch "$tmp/.complete"
  rm -rf "$APICURIO_HOME_CACHE"
  mv "$tmp" "$APICURIO_HOME_CACHE"
  info "Apicurio Registry unpacked"
}

# ================================================================ PostgreSQL
ensure_registry_db() {
  local -a psql_args=(-h "$REGISTRY_PG_HOST" -p "$REGISTRY_PG_PORT" -U "$REGISTRY_PG_USER" -v ON_ERROR_STOP=1 -X -q)
  export PGPASSWORD="$REGISTRY_PG_PASSWORD" PGCONNECT_TIMEOUT=5
  if ! psql "${psql_args[@]}" -d postgres -tAc 'select 1' >/dev/null 2>&1; then
    die "PostgreSQL is not reachable at $REGISTRY_PG_HOST:$REGISTRY_PG_PORT as user $REGISTRY_PG_USER.
       The schema registry keeps its schemas there; start PostgreSQL first."
  fi
  local exists
  exists=$(psql "${psql_args[@]}" -d postgres -tAc \
    "select 1 from pg_database where datname = '$REGISTRY_PG_DB'")
  if [[ $exists != 1 ]]; then
    info "creating database $REGISTRY_PG_DB"
    createdb -h "$REGISTRY_PG_HOST" -p "$REGISTRY_PG_PORT" -U "$REGISTRY_PG_USER" "$REGISTRY_PG_DB"
  fi
}

# ================================================================ Kafka
write_kafka_config() {
  mkdir -p "$KAFKA_DATA"
  # Regenerated on every start so edits here (or port overrides) take effect.
  cat >"$KAFKA_CONFIG" <<EOF
# Generated by scripts/infra/up.sh -- edit that script, not this file.
# Single-node KRaft: this one JVM is both the broker and the (only) controller.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@${INFRA_HOST}:${KAFKA_CONTROLLER_PORT}
listeners=PLAINTEXT://${INFRA_HOST}:${KAFKA_PORT},CONTROLLER://${INFRA_HOST}:${KAFKA_CONTROLLER_PORT}
advertised.listeners=PLAINTEXT://${INFRA_HOST}:${KAFKA_PORT}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT

log.dirs=${KAFKA_DATA}

# Topics are created explicitly by the application (with the intended partition
# count and config); a typo in a topic name must fail instead of silently
# creating a new topic.
auto.create.topics.enable=false
num.partitions=1

# The event log is the source of truth of an event-sourced system: never
# delete events by age (log.retention.bytes is -1 = unlimited by default).
log.retention.ms=-1

# One broker: internal topics cannot be replicated more than once.
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1

# Don't wait 3 s for more members before the first consumer-group rebalance
# (speeds up tests and restarts of the projector).
group.initial.rebalance.delay.ms=0
EOF
}

format_kafka_storage() {
  # meta.properties is written by the format step; once it exists the log dir
  # belongs to a cluster and must not be formatted again.
  [[ -f $KAFKA_DATA/meta.properties ]] && return 0
  local cluster_id
  cluster_id=$(kafka_java kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)
  [[ -n $cluster_id ]] || die "kafka.tools.StorageTool random-uuid produced no id"
  info "formatting Kafka storage in $KAFKA_DATA (cluster id $cluster_id)"
  # Static voters (controller.quorum.voters), so no --standalone here.
  if ! kafka_java kafka.tools.StorageTool format -t "$cluster_id" -c "$KAFKA_CONFIG" --ignore-formatted \
    >"$KAFKA_STATE/format.log" 2>&1; then
    show_log_tail "$KAFKA_STATE/format.log"
    die "formatting Kafka storage failed"
  fi
}

start_kafka() {
  local pid
  clear_stale_pid "$KAFKA_PID_FILE" kafka
  if pid=$(live_pid "$KAFKA_PID_FILE" kafka); then
    # Already ours. The cheap TCP check suffices for a running broker; only a
    # broker that is still booting (port closed) gets the full readiness wait.
    if port_open "$INFRA_HOST" "$KAFKA_PORT"; then
      ok "kafka: already running (pid $pid) on $INFRA_HOST:$KAFKA_PORT"
      return 0
    fi
    info "kafka: pid $pid is running but not listening yet; waiting"
    wait_for_kafka "$pid"
    return 0
  fi

  if port_open "$INFRA_HOST" "$KAFKA_PORT"; then
    # Not started by this checkout (no pid file): maybe another checkout's
    # up.sh, maybe a Kafka from elsewhere. Use it if it really is Kafka.
    warn "kafka: $INFRA_HOST:$KAFKA_PORT is already served by a process this checkout did not start."
    if kafka_ready; then
      warn "kafka: it answers the Kafka protocol; using it as is (down.sh will not stop it)."
      return 0
    fi
    show_log_tail "$KAFKA_PROBE_LOG" 20
    die "kafka: port $KAFKA_PORT is taken by something that does not answer as a Kafka broker.
       Free the port or set KAFKA_PORT to another port."
  fi

  write_kafka_config
  format_kafka_storage
  rotate_log "$KAFKA_LOG"
  info "kafka: starting broker on $INFRA_HOST:$KAFKA_PORT (controller $INFRA_HOST:$KAFKA_CONTROLLER_PORT)"
  # Same flags the stock kafka-server-start.sh uses that matter here: G1 is the
  # JVM default; headless avoids AWT init. The marker identifies our process.
  start_detached "$KAFKA_PID_FILE" "$KAFKA_LOG" "$KAFKA_STATE" \
    java -Xmx"$JAVA_HEAP" -Xms"$JAVA_HEAP" -Djava.awt.headless=true \
    "${MARKER_PREFIX}kafka" \
    -Dlog4j.configuration="file:$KAFKA_LOG4J" \
    -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_CONFIG"
  wait_for_kafka "$(<"$KAFKA_PID_FILE")"
}

wait_for_kafka() {
  local pid=$1 start=$SECONDS
  while ((SECONDS - start < KAFKA_READY_TIMEOUT)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      show_log_tail "$KAFKA_LOG"
      rm -f "$KAFKA_PID_FILE"
      die "kafka: broker process $pid exited during startup (log: $KAFKA_LOG)"
    fi
    # Cheap TCP check first; the JVM-based protocol probe only once the port is open.
    if port_open "$INFRA_HOST" "$KAFKA_PORT" && kafka_ready; then
      ok "kafka: ready on $INFRA_HOST:$KAFKA_PORT (pid $pid, $((SECONDS - start))s)"
      return 0
    fi
    sleep 1
  done
  show_log_tail "$KAFKA_LOG"
  show_log_tail "$KAFKA_PROBE_LOG" 20
  die "kafka: not ready after ${KAFKA_READY_TIMEOUT}s (pid $pid still running; log: $KAFKA_LOG)"
}

# ================================================================ Apicurio Registry
write_registry_config() {
  mkdir -p "$(dirname "$REGISTRY_CONFIG")"
  # Quarkus reads ./config/application.properties from the working directory
  # with a higher priority (ordinal 260) than the defaults inside the jar (250).
  cat >"$REGISTRY_CONFIG" <<EOF
# Generated by scripts/infra/up.sh -- edit that script, not this file.
# Apicurio Registry ${APICURIO_VERSION} (Quarkus). Defaults: application.properties
# inside the apicurio-registry-app-${APICURIO_VERSION} jar. Property names are the
# same in 3.0.x and 3.3.x.

# --- HTTP: loopback only. Confluent-compatible API at /apis/ccompat/v7.
quarkus.http.host=${INFRA_HOST}
quarkus.http.port=${SCHEMA_REGISTRY_PORT}
# Health/metrics live on Quarkus' separate management interface (3.1+, default
# port 9000); ignored by 3.0.x, which serves /health on the main port.
quarkus.management.host=${INFRA_HOST}
quarkus.management.port=${SCHEMA_REGISTRY_MGMT_PORT}

# --- Storage: durable, in PostgreSQL (the jar's default is an in-memory H2 db,
# which would lose every schema -- and re-number ids -- on restart).
apicurio.storage.kind=sql
apicurio.storage.sql.kind=postgresql
apicurio.datasource.url=jdbc:postgresql://${REGISTRY_PG_HOST}:${REGISTRY_PG_PORT}/${REGISTRY_PG_DB}
apicurio.datasource.username=${REGISTRY_PG_USER}
apicurio.datasource.password=${REGISTRY_PG_PASSWORD}
# The jar defaults to a pool of 20..100 connections; a dev registry needs a few,
# and the app shares this PostgreSQL (default max_connections=100).
apicurio.datasource.jdbc.initial-size=2
apicurio.datasource.jdbc.min-size=2
apicurio.datasource.jdbc.max-size=10
# Create/upgrade the registry's tables on startup (the default; stated for clarity).
apicurio.sql.init=true

# --- Confluent compatibility (ccompat) API
# Schema ids handed out by POST /subjects/{s}/versions and resolved by
# GET /schemas/ids/{id} are Apicurio *contentIds* (false) rather than globalIds
# (true): identical schema content gets the same id under every subject, as in
# Confluent. Both endpoints use the same setting, so the ids round-trip, and
# they are database sequences, so they are stable across restarts.
apicurio.ccompat.legacy-id-mode.enabled=false
# Raw-content hash for de-duplication (3.3 already falls back to the canonical
# hash when looking a schema up inside a subject).
apicurio.ccompat.use-canonical-hash=false
# Default global compatibility rule (Confluent's default is BACKWARD, enforced on
# registration; Apicurio's is none). NONE disables it.
$(if [[ $SCHEMA_REGISTRY_DEFAULT_COMPATIBILITY != NONE ]]; then
    echo "apicurio.rules.global.compatibility=${SCHEMA_REGISTRY_DEFAULT_COMPATIBILITY}"
  else
    echo "# apicurio.rules.global.compatibility not set"
  fi)

# --- Local-development conveniences: allow deleting artifacts/versions/groups
# through the native v3 API too (ccompat DELETE works regardless).
apicurio.rest.deletion.group.enabled=true
apicurio.rest.deletion.artifact.enabled=true
apicurio.rest.deletion.artifact-version.enabled=true

# Keep the log readable: no per-request access log lines.
quarkus.http.access-log.enabled=false
EOF
}

start_registry() {
  local pid
  clear_stale_pid "$REGISTRY_PID_FILE" schema-registry
  if pid=$(live_pid "$REGISTRY_PID_FILE" schema-registry); then
    if registry_ready; then
      ok "schema-registry: already running (pid $pid) at $SCHEMA_REGISTRY_CCOMPAT_URL"
      return 0
    fi
    info "schema-registry: pid $pid is running but not answering yet; waiting"
    wait_for_registry "$pid"
    return 0
  fi

  if port_open "$INFRA_HOST" "$SCHEMA_REGISTRY_PORT"; then
    warn "schema-registry: $INFRA_HOST:$SCHEMA_REGISTRY_PORT is already served by a process this checkout did not start."
    if registry_ready; then
      warn "schema-registry: it answers $SCHEMA_REGISTRY_CCOMPAT_URL$REGISTRY_PROBE_PATH; using it as is (down.sh will not stop it)."
      return 0
    fi
    die "schema-registry: port $SCHEMA_REGISTRY_PORT is taken by something that is not a schema registry
       (GET $SCHEMA_REGISTRY_CCOMPAT_URL$REGISTRY_PROBE_PATH -> $(http_status "$SCHEMA_REGISTRY_CCOMPAT_URL$REGISTRY_PROBE_PATH")).
       Free the port or set SCHEMA_REGISTRY_PORT to another port."
  fi
  # Only the fast-jar builds (3.1+) have Quarkus' separate management interface.
  local run_jar
  run_jar=$(find "$APICURIO_APP_DIR" -maxdepth 1 -type f \( -name quarkus-run.jar -o -name '*-runner.jar' \) | head -n1)
  [[ -n $run_jar ]] || die "schema-registry: no launcher jar in $APICURIO_APP_DIR; delete $APICURIO_HOME_CACHE and retry"
  if [[ $run_jar == */quarkus-run.jar ]] && port_open "$INFRA_HOST" "$SCHEMA_REGISTRY_MGMT_PORT"; then
    die "schema-registry: management port $SCHEMA_REGISTRY_MGMT_PORT is taken; set SCHEMA_REGISTRY_MGMT_PORT to a free port."
  fi

  ensure_registry_db
  write_registry_config
  rotate_log "$REGISTRY_LOG"
  info "schema-registry: starting Apicurio Registry $APICURIO_VERSION (Java $(java_major "$REGISTRY_JAVA")) on $INFRA_HOST:$SCHEMA_REGISTRY_PORT, storage: postgresql/$REGISTRY_PG_DB"
  # Working directory = $REGISTRY_STATE so that Quarkus picks up ./config/application.properties.
  # The JBoss log manager flag is what the official container image passes too.
  start_detached "$REGISTRY_PID_FILE" "$REGISTRY_LOG" "$REGISTRY_STATE" \
    "$REGISTRY_JAVA" -Xmx"$JAVA_HEAP" -Djava.awt.headless=true \
    "${MARKER_PREFIX}schema-registry" \
    -Djava.util.logging.manager=org.jboss.logmanager.LogManager \
    -jar "$run_jar"
  wait_for_registry "$(<"$REGISTRY_PID_FILE")"
}

wait_for_registry() {
  local pid=$1 start=$SECONDS
  while ((SECONDS - start < REGISTRY_READY_TIMEOUT)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      show_log_tail "$REGISTRY_LOG"
      rm -f "$REGISTRY_PID_FILE"
      die "schema-registry: process $pid exited during startup (log: $REGISTRY_LOG)"
    fi
    if registry_ready; then
      ok "schema-registry: ready at $SCHEMA_REGISTRY_CCOMPAT_URL (pid $pid, $((SECONDS - start))s)"
      return 0
    fi
    sleep 1
  done
  show_log_tail "$REGISTRY_LOG"
  die "schema-registry: not ready after ${REGISTRY_READY_TIMEOUT}s (pid $pid still running; log: $REGISTRY_LOG)"
}

# ================================================================ main
main() {
  lock_state_dir
  ensure_tools
  mkdir -p "$KAFKA_STATE" "$REGISTRY_STATE"
  # Fetch only what a start will need (a running or foreign service needs nothing).
  live_pid "$KAFKA_PID_FILE" kafka >/dev/null || fetch_kafka
  select_registry_runtime
  if [[ $APICURIO_VERSION == "$APICURIO_VERSION_JAVA17" ]]; then
    info "schema-registry: no Java >= 21 found; using Apicurio Registry $APICURIO_VERSION, the newest that runs on Java 17 (docker-compose.yml runs $APICURIO_VERSION_JAVA21)"
  fi
  live_pid "$REGISTRY_PID_FILE" schema-registry >/dev/null || fetch_apicurio
  local brokers="$INFRA_HOST:$KAFKA_PORT"
  if [[ ${LEADLINE_KAFKA_NODES:-1} == 3 ]]; then
    start_kafka_cluster
    brokers=$(kafka_cluster_brokers)
  elif [[ ${LEADLINE_KAFKA_NODES:-1} == 1 ]]; then
    start_kafka
  else
    die "LEADLINE_KAFKA_NODES is 1 (the default) or 3"
  fi
  start_registry
  echo
  ok "infrastructure is up:"
  echo "  KAFKA_BROKERS=$brokers"
  [[ ${LEADLINE_KAFKA_NODES:-1} == 3 ]] && echo "  KAFKA_REPLICATION_FACTOR=3 (min.insync.replicas 2)"
  echo "  SCHEMA_REGISTRY_URL=$SCHEMA_REGISTRY_CCOMPAT_URL"
  echo "  (source scripts/infra/env.sh to export these; logs in ${STATE_DIR#"$PWD"/}/)"
}

main "$@"
