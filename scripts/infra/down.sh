#!/usr/bin/env bash
# Stop the local infrastructure that scripts/infra/up.sh started from THIS
# checkout. Processes are identified only by the pids up.sh recorded (and
# verified by the marker on their command line), never by name, so nothing
# else on the machine -- e.g. another checkout's Kafka -- is touched.
# Idempotent: running it when nothing is up is a no-op.
#
# Data is kept: Kafka's log dirs in .infra/kafka/data, the registry's schemas in
# PostgreSQL. To reset Kafka completely: down.sh && rm -rf .infra/kafka/data
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=kafka-cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/kafka-cluster.sh"

STOP_TIMEOUT=20

stop_one() {
  local pidfile=$1 component=$2 host=$3 port=$4
  if stop_by_pidfile "$pidfile" "$component" "$STOP_TIMEOUT"; then
    return 0
  fi
  if port_open "$host" "$port"; then
    info "$component: not started by this checkout; $host:$port is served by another process, leaving it alone"
  else
    info "$component: not running"
  fi
}

lock_state_dir

# Registry first: it is the one that depends on something (PostgreSQL), and
# stopping Kafka last gives any still-running app the longest time to flush.
stop_one "$REGISTRY_PID_FILE" schema-registry "$INFRA_HOST" "$SCHEMA_REGISTRY_PORT"
stop_one "$KAFKA_PID_FILE" kafka "$INFRA_HOST" "$KAFKA_PORT"
# The three nodes LEADLINE_KAFKA_NODES=3 started, if any.
stop_kafka_cluster
