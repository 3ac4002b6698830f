#!/usr/bin/env bash
# A single-node Apache Kafka broker (KRaft, broker+controller in one JVM) for tests and demos,
# on 127.0.0.1 only. Jars come from Maven Central through Maven (pom.xml beside this file).
#
#   deploy/kafka/kafka.sh fetch     download the broker jars (idempotent)
#   deploy/kafka/kafka.sh start     format fresh storage, start, wait until it answers
#   deploy/kafka/kafka.sh stop      stop the broker by its PID (SIGTERM, then SIGKILL)
#   deploy/kafka/kafka.sh restart   stop, then start again on the same storage (data kept)
#   deploy/kafka/kafka.sh resume    start a stopped broker again on the same storage
#   deploy/kafka/kafka.sh status    exit 0 when it answers
#
# Settings (environment): RAILTRACE_KAFKA_HOME (default .kafka-run/ under the repo),
# RAILTRACE_KAFKA_PORT (9092), RAILTRACE_KAFKA_CONTROLLER_PORT (9093), JAVA (java),
# RAILTRACE_KAFKA_START_S (180: how long start, restart and resume wait for the broker to answer).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
home=${RAILTRACE_KAFKA_HOME:-$root/.kafka-run}
port=${RAILTRACE_KAFKA_PORT:-9092}
cport=${RAILTRACE_KAFKA_CONTROLLER_PORT:-9093}
java=${JAVA:-java}
# On two cores busy with a test suite a JVM may need more than a minute to answer; a restart
# that gave up sooner would leave the broker down behind a test that then waits on it.
start_s=${RAILTRACE_KAFKA_START_S:-180}
libs=$home/libs
pidfile=$home/broker.pid

answers() {
  # A TCP connect is not enough (the socket opens before the broker is ready); ask for metadata.
  "$root/.venv/bin/python" - "$port" <<'PY' >/dev/null 2>&1
import socket, struct, sys
port = int(sys.argv[1])
with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
    client = b"probe"
    body = struct.pack(">hhih", 18, 0, 1, len(client)) + client  # ApiVersions v0
    s.sendall(struct.pack(">i", len(body)) + body)
    size = struct.unpack(">i", s.recv(4))[0]
    data = b""
    while len(data) < size:
        data += s.recv(size - len(data))
    assert struct.unpack(">h", data[4:6])[0] == 0  # error_code NONE
PY
}

fetch() {
  mkdir -p "$libs"
  if [ ! -f "$libs/.complete" ]; then
    mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$libs"
    touch "$libs/.complete"
  fi
}

start() {
  fetch
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "kafka already running (pid $(cat "$pidfile"))"; return 0
  fi
  refuse_foreign
  rm -rf "$home/data" "$home/server.properties"
  mkdir -p "$home/data"
  configure
  local cp="$libs/*"
  "$java" -cp "$cp" kafka.tools.StorageTool format -t "$("$java" -cp "$cp" kafka.tools.StorageTool random-uuid)" \
    -c "$home/server.properties" >"$home/format.log" 2>&1 || { cat "$home/format.log"; exit 1; }
  launch
}

restart() {
  stop
  resume
}

resume() {
  [ -f "$home/server.properties" ] || { echo "no broker was started here"; exit 1; }
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "kafka already running (pid $(cat "$pidfile"))"; return 0
  fi
  refuse_foreign
  launch
}

refuse_foreign() {
  # Another checkout's broker on our port would take our tests' traffic, and our `stop` could
  # not stop it: the tests that stop the broker would then fail for a reason they cannot name.
  if answers; then
    echo "a broker not started from $root already answers on 127.0.0.1:$port;" \
      "stop it (its checkout's deploy/kafka/kafka.sh stop) or set RAILTRACE_KAFKA_PORT" >&2
    exit 1
  fi
}

configure() {
  cat > "$home/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$home/data
num.partitions=4
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
PROPS
  cat > "$home/log4j2.yaml" <<'LOG'
Configuration:
  Appenders:
    Console: {name: STDOUT, PatternLayout: {pattern: "[%d] %p %m (%c)%n"}}
  Loggers:
    Root: {level: WARN, AppenderRef: [{ref: STDOUT}]}
    Logger: [{name: kafka.server.KafkaRaftServer, level: INFO}]
LOG
}

launch() {
  local cp="$libs/*"
  nohup "$java" -Xms256m -Xmx1g -XX:+UseG1GC -Dlog4j2.configurationFile="$home/log4j2.yaml" \
    -cp "$cp" kafka.Kafka "$home/server.properties" >"$home/broker.log" 2>&1 &
  echo $! > "$pidfile"
  local tries=$(( start_s * 2 ))
  for _ in $(seq 1 "$tries"); do
    if answers; then echo "kafka up on 127.0.0.1:$port (pid $(cat "$pidfile"))"; return 0; fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "kafka exited while starting:"; tail -30 "$home/broker.log"; exit 1
    fi
    sleep 0.5
  done
  echo "kafka did not answer on 127.0.0.1:$port within $start_s s:"; tail -30 "$home/broker.log"; exit 1
}

stop() {
  [ -f "$pidfile" ] || { echo "kafka not running"; return 0; }
  local pid; pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$pidfile"
  echo "kafka stopped"
}

case "${1:-}" in
  fetch) fetch ;;
  start) start ;;
  stop) stop ;;
  restart) restart ;;
  resume) resume ;;
  status) answers ;;
  *) echo "usage: $0 fetch|start|stop|restart|resume|status" >&2; exit 2 ;;
esac
