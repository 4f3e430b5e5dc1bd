#!/usr/bin/env bash
# A three-node KRaft cluster owned by one test: the nodes of kafka-cluster.sh (the same generated
# configuration: replication factor 3, min.insync.replicas 2, leaders rebalanced back to a node that
# rejoins), on ports and in a state directory of the caller's, so a test can kill and restart its
# nodes without touching the shared broker or a cluster started by up.sh.
#
#   scripts/infra/test-kafka-cluster.sh STATE_DIR BASE_PORT start       # start every node not running, wait until each serves
#   scripts/infra/test-kafka-cluster.sh STATE_DIR BASE_PORT kill-node N # SIGKILL node N (1-3), as a crash would
#   scripts/infra/test-kafka-cluster.sh STATE_DIR BASE_PORT destroy     # SIGKILL every node, remove their state
#
# Node N listens on BASE_PORT + 2(N-1), its controller one above: six ports from BASE_PORT must be free.
# A killed node is started again by `start` (on its own data, so it rejoins as itself).
# Runs from the jars up.sh cached. Each node's heap is LEADLINE_TEST_KAFKA_HEAP (384m).
set -euo pipefail

if (($# < 3)); then
  echo "usage: $0 STATE_DIR BASE_PORT start|kill-node N|destroy" >&2
  exit 2
fi
state_dir=$1 base_port=$2 command=$3

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=kafka-cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/kafka-cluster.sh"

# kafka-cluster.sh's functions read these when called: the caller's ports and state, not the checkout's.
KAFKA_PORT=$base_port
KAFKA_CLUSTER_STATE=$state_dir
# The readiness probe's log (kafka_ready), beside the nodes rather than in the checkout's .infra.
KAFKA_STATE=$state_dir/probe
KAFKA_PROBE_LOG=$KAFKA_STATE/probe.log
JAVA_HEAP=${LEADLINE_TEST_KAFKA_HEAP:-384m}
# Three JVMs starting at once on a loaded 2-core machine take a while.
KAFKA_READY_TIMEOUT=120

[[ -d $KAFKA_LIBS ]] || die "no Kafka jars in $KAFKA_LIBS: run scripts/infra/up.sh once first"

kill_node() {
  local node=$1 state pid i
  state=$(kafka_node_state "$node")
  pid=$(live_pid "$state/kafka.pid" "kafka-$node") || return 0
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  rm -f "$state/kafka.pid"
}

case $command in
  start)
    mkdir -p "$KAFKA_STATE"
    start_kafka_cluster
    ;;
  kill-node)
    [[ ${4:-} =~ ^[1-3]$ ]] || die "kill-node takes a node number, 1 to 3"
    kill_node "$4"
    ;;
  destroy)
    for ((node = 1; node <= KAFKA_CLUSTER_NODES; node++)); do
      kill_node "$node"
      rm -rf "$(kafka_node_state "$node")"
    done
    rm -rf "$KAFKA_STATE"
    # Only what this script made is removed; the directory itself goes if nothing else is in it.
    rmdir "$state_dir" 2>/dev/null || true
    ;;
  *) die "unknown command '$command' (start, kill-node N, destroy)" ;;
esac
