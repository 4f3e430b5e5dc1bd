# shellcheck shell=bash disable=SC2034  # the variables are used by the scripts sourcing this
# Shared settings and helpers for scripts/infra/{up,down,status}.sh.
# Sourced, not executed. Every path is derived from this file's location (or
# $HOME for the download cache), so the scripts work from any checkout.

INFRA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$INFRA_DIR/../.." && pwd)"

# Runtime state (Kafka log dirs, logs, pid files, generated configs): per checkout,
# git-ignored. Deleting .infra/ (after down.sh) resets Kafka to an empty cluster.
STATE_DIR="$REPO_ROOT/.infra"
# Downloads: shared by all checkouts and kept out of git. Sub-folders carry the
# version, so a version bump simply fetches into a new folder.
CACHE_DIR="${LEADLINE_INFRA_CACHE:-$HOME/.cache/leadline-infra}"

# ---------------------------------------------------------------- versions
# Apicurio Registry 3.2+ is compiled for Java 21 (and its Quarkus build assumes a
# Java 21 runtime, e.g. virtual threads), but Debian 12 packages
# Java 17 only. up.sh therefore picks the registry version by the Java it finds:
#   a Java >= 21 available -> APICURIO_VERSION_JAVA21 (same as docker-compose.yml)
#   only Java 17..20       -> APICURIO_VERSION_JAVA17, the newest Apicurio release
#                             on Maven Central that runs on Java 17.
# LEADLINE_APICURIO_VERSION forces a version.
APICURIO_VERSION_JAVA21="3.3.3"
APICURIO_VERSION_JAVA17="3.0.9"
# maven-dependency-plugin 2.8 on purpose: 3.x reads the artifact's POM before
# copying, and apicurio-registry-app 3.0.9's parent POM was never published to
# Maven Central, so 3.x fails on it. 2.8 just copies the file (checksum-verified).
MVN_DEPENDENCY_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:2.8"
KAFKA_POM="$INFRA_DIR/kafka/pom.xml"
KAFKA_LOG4J="$INFRA_DIR/kafka/log4j.properties"

# ---------------------------------------------------------------- network
# Everything binds to loopback only: this is a developer machine, not a server.
INFRA_HOST="127.0.0.1"
KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
SCHEMA_REGISTRY_PORT="${SCHEMA_REGISTRY_PORT:-8081}"
# Quarkus serves health/metrics on a separate "management" port (9000 by
# default, a popular port). Derive it from the registry port so a second
# registry on another port does not collide on it either.
SCHEMA_REGISTRY_MGMT_PORT="${SCHEMA_REGISTRY_MGMT_PORT:-$((SCHEMA_REGISTRY_PORT + 1000))}"
SCHEMA_REGISTRY_CCOMPAT_URL="http://${INFRA_HOST}:${SCHEMA_REGISTRY_PORT}/apis/ccompat/v7"

# PostgreSQL that holds the registry's schemas (the registry is stateless itself).
REGISTRY_PG_HOST="${REGISTRY_PG_HOST:-127.0.0.1}"
REGISTRY_PG_PORT="${REGISTRY_PG_PORT:-5432}"
REGISTRY_PG_USER="${REGISTRY_PG_USER:-postgres}"
# Ignored by a trust-auth server, but must not be empty: Apicurio's config
# interpolates it into the datasource and an empty value counts as "missing".
REGISTRY_PG_PASSWORD="${REGISTRY_PG_PASSWORD:-postgres}"
REGISTRY_PG_DB="${REGISTRY_PG_DB:-leadline_registry}"

# Confluent Schema Registry enforces BACKWARD compatibility on registration by
# default; Apicurio enforces nothing unless a rule exists. We install BACKWARD as
# Apicurio's default global rule so the local registry behaves like Confluent.
# Set to NONE to turn enforcement off (per-subject PUT /config still works).
SCHEMA_REGISTRY_DEFAULT_COMPATIBILITY="${SCHEMA_REGISTRY_DEFAULT_COMPATIBILITY:-BACKWARD}"

JAVA_HEAP="${LEADLINE_INFRA_JAVA_HEAP:-512m}"

# ---------------------------------------------------------------- state files
KAFKA_STATE="$STATE_DIR/kafka"
KAFKA_DATA="$KAFKA_STATE/data"
KAFKA_CONFIG="$KAFKA_STATE/server.properties"
KAFKA_LOG="$KAFKA_STATE/kafka.log"
KAFKA_PID_FILE="$KAFKA_STATE/kafka.pid"
KAFKA_PROBE_LOG="$KAFKA_STATE/probe.log"

REGISTRY_STATE="$STATE_DIR/schema-registry"
REGISTRY_CONFIG="$REGISTRY_STATE/config/application.properties"
REGISTRY_LOG="$REGISTRY_STATE/registry.log"
REGISTRY_PID_FILE="$REGISTRY_STATE/registry.pid"

# Every JVM we start carries this marker on its command line. A pid file alone is
# not proof: after a reboot the pid may belong to some unrelated process, and
# we must never signal that. The marker lets us verify "that pid is ours".
MARKER_PREFIX="-Dleadline.infra.component="

# ---------------------------------------------------------------- output
if [[ -t 1 ]]; then
  C_BOLD=$'\e[1m' C_RED=$'\e[31m' C_YEL=$'\e[33m' C_GRN=$'\e[32m' C_OFF=$'\e[0m'
else
  C_BOLD='' C_RED='' C_YEL='' C_GRN='' C_OFF=''
fi
info() { printf '%s[infra]%s %s\n' "$C_BOLD" "$C_OFF" "$*"; }
ok() { printf '%s[infra]%s %s%s%s\n' "$C_BOLD" "$C_OFF" "$C_GRN" "$*" "$C_OFF"; }
warn() { printf '%s[infra]%s %s%s%s\n' "$C_BOLD" "$C_OFF" "$C_YEL" "$*" "$C_OFF" >&2; }
die() {
  printf '%s[infra]%s %s%s%s\n' "$C_BOLD" "$C_OFF" "$C_RED" "$*" "$C_OFF" >&2
  exit 1
}

# Print the end of a log file to stderr (used on every failure path).
show_log_tail() {
  local file=$1 lines=${2:-40}
  if [[ -s $file ]]; then
    printf -- '----- last %s lines of %s -----\n' "$lines" "$file" >&2
    tail -n "$lines" "$file" >&2
    printf -- '-----\n' >&2
  else
    printf '(no log output in %s)\n' "$file" >&2
  fi
}

# ---------------------------------------------------------------- locking
# Serialise up.sh/down.sh runs of one checkout: `npm test` runs up.sh (and down.sh)
# on its own, possibly while someone else runs them by hand. Without flock (macOS)
# runs are simply not serialised.
lock_state_dir() {
  mkdir -p "$STATE_DIR"
  command -v flock >/dev/null 2>&1 || return 0
  exec 9>"$STATE_DIR/.lock"
  if ! flock -n 9; then
    info "another up.sh/down.sh of this checkout is running; waiting for it"
    flock -w 300 9 || die "gave up waiting for the lock on $STATE_DIR/.lock"
  fi
}

# ---------------------------------------------------------------- processes
# Command line of a pid, or nothing if it is gone. `ps` works on Linux and macOS.
cmdline_of() { ps -p "$1" -o args= 2>/dev/null || true; }

# Echo the pid recorded in $pidfile if that process is alive AND carries our
# marker for $component; return 1 otherwise.
live_pid() {
  local pidfile=$1 component=$2 pid
  [[ -f $pidfile ]] || return 1
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  [[ $(cmdline_of "$pid") == *"${MARKER_PREFIX}${component}"* ]] || return 1
  echo "$pid"
}

# Remove a pid file whose process is gone (or is no longer ours).
clear_stale_pid() {
  local pidfile=$1 component=$2
  local pid
  if [[ -f $pidfile ]] && ! live_pid "$pidfile" "$component" >/dev/null; then
    pid=$(<"$pidfile")
    if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
      warn "$component: removing stale pid file $pidfile (pid $pid now belongs to another program; not touching it)"
    else
      warn "$component: removing stale pid file $pidfile (pid $pid is not running)"
    fi
    rm -f "$pidfile"
  fi
}

# Start "$@" fully detached and record its pid in $pidfile:
#  - setsid puts it in its own session, so Ctrl-C in (or closing) the terminal
#    that ran up.sh does not take the broker down with it;
#  - nohup ignores SIGHUP for the same reason;
#  - the inner bash writes its own pid and then `exec`s the command, so the pid
#    in the file IS the JVM's pid, whether or not setsid had to fork.
start_detached() {
  local pidfile=$1 logfile=$2 workdir=$3
  shift 3
  rm -f "$pidfile"
  local -a detach=()
  command -v setsid >/dev/null 2>&1 && detach=(setsid)
  (
    cd "$workdir" || exit 1
    # shellcheck disable=SC2016  # $$ and $@ are for the inner bash
    # 9>&-: the server must not inherit (and so hold forever) the lock of lock_state_dir.
    ${detach[@]+"${detach[@]}"} nohup bash -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" >>"$logfile" 2>&1 </dev/null 9>&- &
  )
  local i
  for ((i = 0; i < 50; i++)); do
    [[ -s $pidfile ]] && return 0
    sleep 0.1
  done
  die "process did not start (no pid file $pidfile)"
}

# Stop the process in $pidfile by pid: TERM, wait up to $timeout s, then KILL.
stop_by_pidfile() {
  local pidfile=$1 component=$2 timeout=${3:-20} pid i
  if ! pid=$(live_pid "$pidfile" "$component"); then
    clear_stale_pid "$pidfile" "$component"
    return 1
  fi
  info "$component: stopping pid $pid (SIGTERM)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < timeout * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    warn "$component: pid $pid still alive after ${timeout}s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  rm -f "$pidfile"
  ok "$component: stopped"
}

# Keep the previous run's log next to the new one ($1.prev): when a restart fails, the reason is
# often in the log of the run before. Used by up.sh and kafka-cluster.sh.
rotate_log() {
  [[ -f $1 ]] && mv -f "$1" "$1.prev"
  : >"$1"
}

# ---------------------------------------------------------------- probes
# TCP connect check using bash's /dev/tcp (no nc/node needed).
port_open() {
  local host=$1 port=$2
  timeout 2 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null
}

# HTTP status code of a GET (000 when nothing answers).
http_status() {
  curl -s -o /dev/null -m 5 -w '%{http_code}' "$1" 2>/dev/null || true
}

# The registry's global configuration: a Confluent-compatible endpoint whose cost does not grow with
# the number of subjects (Apicurio's GET /subjects gets slower with every subject ever registered).
REGISTRY_PROBE_PATH=/config

registry_ready() {
  [[ $(http_status "$SCHEMA_REGISTRY_CCOMPAT_URL$REGISTRY_PROBE_PATH") == 200 ]]
}

# ---------------------------------------------------------------- cache layout
kafka_version() {
  sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KAFKA_POM" | head -n1
}

# sha256 of a file, first 8 hex digits (sha256sum on Linux, shasum on macOS).
short_hash() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -c1-8
  else
    shasum -a 256 "$1" | cut -c1-8
  fi
}

# The jar folder is keyed by version AND by the pom's hash: any edit of the pom
# (a version bump, an extra dependency) resolves into a fresh folder.
KAFKA_HOME_CACHE="$CACHE_DIR/kafka-$(kafka_version)-$(short_hash "$KAFKA_POM")"
KAFKA_LIBS="$KAFKA_HOME_CACHE/libs"

# Major version of a java binary ("17", "21", ...), empty if it does not run.
java_major() {
  local v
  v=$("$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p' | head -n1)
  echo "${v%%.*}"
}

kafka_java() {
  java -Xmx"$JAVA_HEAP" -cp "$KAFKA_LIBS/*" -Dlog4j.configuration="file:$KAFKA_LOG4J" "$@"
}

# Real protocol check: Kafka's own admin tool sends ApiVersions + Metadata
# requests and lists the brokers that the cluster metadata knows about. Our node
# only appears there once it has registered with the (KRaft) controller, i.e.
# once it can serve clients. Output goes to $KAFKA_PROBE_LOG for diagnosis.
kafka_ready() {
  [[ -d $KAFKA_LIBS ]] || return 1
  mkdir -p "$KAFKA_STATE"
  timeout 30 java -Xmx128m -XX:TieredStopAtLevel=1 -cp "$KAFKA_LIBS/*" \
    -Dlog4j.configuration="file:$KAFKA_LOG4J" \
    kafka.admin.BrokerApiVersionsCommand --bootstrap-server "$INFRA_HOST:$KAFKA_PORT" \
    >"$KAFKA_PROBE_LOG" 2>&1 || return 1
  grep -q "(id: " "$KAFKA_PROBE_LOG"
}
