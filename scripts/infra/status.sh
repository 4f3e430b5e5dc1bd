#!/usr/bin/env bash
# Show whether the local Kafka and schema registry are up.
# Exit 0 when both are reachable (whoever started them), 1 otherwise.
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rc=0

# Who runs it: our pid, or (when the port answers anyway) someone else.
owner_of() {
  local pidfile=$1 component=$2 pid
  if pid=$(live_pid "$pidfile" "$component"); then
    echo "pid $pid, started by this checkout"
  elif [[ -f $pidfile ]]; then
    echo "stale pid file $pidfile"
  else
    echo "no pid file: not started by this checkout"
  fi
}

# Kafka: TCP first, then a real Kafka protocol round trip when the jars are here.
kafka_owner=$(owner_of "$KAFKA_PID_FILE" kafka)
if port_open "$INFRA_HOST" "$KAFKA_PORT"; then
  if [[ ! -d $KAFKA_LIBS ]]; then
    ok "kafka            UP    $INFRA_HOST:$KAFKA_PORT  [$kafka_owner] (TCP only; run up.sh once for the protocol check)"
  elif kafka_ready; then
    ok "kafka            UP    $INFRA_HOST:$KAFKA_PORT  [$kafka_owner]"
  else
    warn "kafka            PORT OPEN, NOT ANSWERING AS KAFKA  $INFRA_HOST:$KAFKA_PORT  [$kafka_owner] (see $KAFKA_PROBE_LOG)"
    rc=1
  fi
else
  warn "kafka            DOWN  $INFRA_HOST:$KAFKA_PORT  [$kafka_owner]"
  rc=1
fi

registry_owner=$(owner_of "$REGISTRY_PID_FILE" schema-registry)
if registry_ready; then
  # Apicurio's native system API tells which release answers (3.0.9 vs 3.3.3).
  version=$(curl -s -m 5 "http://$INFRA_HOST:$SCHEMA_REGISTRY_PORT/apis/registry/v3/system/info" |
    sed -n 's/.*"version" *: *"\([^"]*\)".*/\1/p')
  ok "schema-registry  UP    $SCHEMA_REGISTRY_CCOMPAT_URL  [$registry_owner]${version:+ (Apicurio $version)}"
else
  warn "schema-registry  DOWN  $SCHEMA_REGISTRY_CCOMPAT_URL (GET $REGISTRY_PROBE_PATH -> $(http_status "$SCHEMA_REGISTRY_CCOMPAT_URL$REGISTRY_PROBE_PATH"))  [$registry_owner]"
  rc=1
fi

exit "$rc"
