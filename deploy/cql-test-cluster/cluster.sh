#!/usr/bin/env bash
# A CQL test cluster of Apache Cassandra 5.0 nodes on 127.0.0.1 … 127.0.0.N,
# run straight from the Maven Central artifacts (pom.xml beside this script):
# the backend written for ScyllaDB is tested against it (docs/testing.md).
#
#   deploy/cql-test-cluster/cluster.sh start [N]    # N = 1 (default) or 3; prints the contact points
#   deploy/cql-test-cluster/cluster.sh kill I       # kill -9 node I (simulated node loss)
#   deploy/cql-test-cluster/cluster.sh restart I    # start node I again on its own data
#   deploy/cql-test-cluster/cluster.sh stop         # stop every node, delete the data
#   deploy/cql-test-cluster/cluster.sh status       # nodes, pids, contact points
#
# The class path is fetched once into .cache/lib (ignored by git) with
# `mvn dependency:copy-dependencies`. Nodes keep their data in a temporary
# directory named in $CQL_CLUSTER_STATE (default /tmp/freight-cql-cluster.state);
# `stop` deletes it. Every node listens on its own loopback address with the
# same ports (9042 CQL, 7000 gossip), as the driver finds peers by address:
# node I on 127.0.0.(F+I-1), F = $CQL_CLUSTER_FIRST (default 1), so that a
# second cluster (another state file, F = 4) can run beside the first.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LIB=$HERE/.cache/lib
STATE=${CQL_CLUSTER_STATE:-/tmp/freight-cql-cluster.state}
FIRST=${CQL_CLUSTER_FIRST:-1}
# Node I's token: evenly spaced on Murmur3's ring, so no node waits to
# allocate tokens (the stock yaml's allocation waits out the ring delay).
TOKENS=(x -9223372036854775808 -3074457345618258603 3074457345618258602)

die() { echo "cluster.sh: $*" >&2; exit 1; }

fetch_class_path() {
  [ -f "$LIB/.complete" ] && return
  command -v mvn >/dev/null || die "mvn is needed to fetch Cassandra from Maven Central"
  rm -rf "$LIB"
  # Maven's output goes to stderr: stdout carries only the contact points,
  # which callers capture (Maven 3.8 prints colour resets even with -B -q).
  mvn -B -q -Dstyle.color=never -f "$HERE/pom.xml" \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$LIB" >&2
  ls "$LIB"/cassandra-all-*.jar "$LIB"/jna-5*.jar "$LIB"/jamm-*.jar >/dev/null \
    || die "the class path in $LIB lacks cassandra-all, jna or jamm"
  touch "$LIB/.complete"
}

root() { [ -f "$STATE" ] && head -1 "$STATE" || die "no cluster is running (no $STATE)"; }
# The address of node $1 (the first address is kept in the state file).
ip() { local first; first=$(sed -n 2p "$STATE" 2>/dev/null); echo "127.0.0.$(( ${first:-$FIRST} + $1 - 1 ))"; }
nodes() { local r; r=$(root); ls -d "$r"/node* 2>/dev/null | sed 's#.*/node##' | sort -n; }
pid_of() { cat "$(root)/node$1/pid" 2>/dev/null || true; }
# Running, not a zombie: a killed node's process may wait to be reaped by
# whatever it was handed to when the script that started it exited.
alive() {
  local p state
  p=$(pid_of "$1"); [ -n "$p" ] || return 1
  state=$(ps -o stat= -p "$p" 2>/dev/null) || return 1
  [ -n "$state" ] && [[ $state != Z* ]]
}

# The node's cassandra.yaml: Cassandra's defaults but for what a test node on
# a small shared machine needs (each setting that differs says why).
write_config() {
  local n=$1 r=$2 dir=$2/node$1
  mkdir -p "$dir"/{conf,data,commitlog,saved_caches,hints,cdc_raw,logs,tmp}
  cat >"$dir/conf/cassandra.yaml" <<EOF
cluster_name: 'FreightTest'
# One token per node, given: no token allocation (which waits out the ring delay).
num_tokens: 1
initial_token: ${TOKENS[$n]}
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
# One datacenter, "datacenter1", as NetworkTopologyStrategy's default names it.
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$(ip 1):7000"
listen_address: $(ip "$n")
rpc_address: $(ip "$n")
storage_port: 7000
native_transport_port: 9042
start_native_transport: true
# Nodes join an empty ring: nothing to stream, no range-movement wait.
auto_bootstrap: false
data_file_directories: [ $dir/data ]
commitlog_directory: $dir/commitlog
saved_caches_directory: $dir/saved_caches
hints_directory: $dir/hints
cdc_raw_directory: $dir/cdc_raw
# Cassandra's default. A kill -9 keeps what is in the page cache (the commit
# log is mmapped), which is what the node-loss tests simulate.
commitlog_sync: periodic
commitlog_sync_period: 10000ms
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
role_manager: CassandraRoleManager
network_authorizer: AllowAllNetworkAuthorizer
# Two cores shared by up to three nodes, the service and its tests: the
# defaults (32 each, compactors and flushers by core count) start threads
# that only contend.
concurrent_reads: 4
concurrent_writes: 4
concurrent_counter_writes: 4
concurrent_materialized_view_writes: 2
concurrent_compactors: 1
memtable_flush_writers: 1
# Tests create and drop keyspaces by the dozen: no snapshot before each drop.
auto_snapshot: false
# Paxos in two round trips rather than four (Cassandra's own recommendation
# since 4.1); leases and claims are lightweight transactions.
paxos_variant: v2
# The loaded test machine makes contention slower than on a real cluster.
cas_contention_timeout: 3000ms
write_request_timeout: 5000ms
read_request_timeout: 10000ms
range_request_timeout: 20000ms
counter_write_request_timeout: 10000ms
# Concurrent CREATE TABLE IF NOT EXISTS from several instances gets one table id.
use_deterministic_table_id: true
# One load's change is one logged batch across its tables (the load, its
# lists, its event and the outbox), 5-15 KiB, atomic and not to be split:
# Cassandra's default warns past 5 KiB, on every change. It still refuses
# past its default 50 KiB, which the backend packs its batches under.
batch_size_warn_threshold: 64KiB
# Expirations past 2038 (the default keeps Cassandra 4's limit).
storage_compatibility_mode: NONE
# A stopped node is convicted sooner (the default 8 takes longer on a loaded box).
phi_convict_threshold: 5
EOF
  cat >"$r/logback.xml" <<EOF
<configuration>
  <appender name="SYSTEMLOG" class="ch.qos.logback.core.FileAppender">
    <file>\${cassandra.logdir}/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="SYSTEMLOG"/></root>
</configuration>
EOF
}

# Starts node $1 in the background (setsid: its own process group, so that
# nothing of it outlives `stop`).
launch() {
  local n=$1 r dir jamm
  r=$(root); dir=$r/node$n; jamm=$(ls "$LIB"/jamm-*.jar)
  local jvm=(
    # Cassandra's jvm-server.options and jvm17-server.options (5.0).
    -ea -da:net.openhft... -XX:+UseThreadPriorities -Xss256k -XX:+UseTLAB -XX:+ResizeTLAB
    -XX:+PerfDisableSharedMem -Djava.net.preferIPv4Stack=true -Dchronicle.analytics.disable=true
    -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1
    -XX:G1RSetUpdatingPauseTimePercent=5 -XX:MaxGCPauseMillis=300 -XX:InitiatingHeapOccupancyPercent=70
    -Djdk.attach.allowAttachSelf=true
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
    --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
    --add-exports java.management/com.sun.jmx.remote.security=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
    --add-exports java.sql/java.sql=ALL-UNNAMED
    --add-exports java.base/java.lang.ref=ALL-UNNAMED
    --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
    --add-opens java.base/java.lang.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
    --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
    --add-opens java.base/jdk.internal.math=ALL-UNNAMED
    --add-opens java.base/jdk.internal.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED
    --add-opens java.base/java.io=ALL-UNNAMED
    --add-opens java.base/java.lang.reflect=ALL-UNNAMED
    --add-opens java.base/java.lang=ALL-UNNAMED
    --add-opens java.base/java.util=ALL-UNNAMED
    --add-opens java.base/java.nio=ALL-UNNAMED
    --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
    --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
    --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
    -Dio.netty.tryReflectionSetAccessible=true
    -Dio.netty.allocator.useCacheForAllThreads=true -Dio.netty.allocator.maxOrder=11
    # A small fixed heap (the script's formula would take a quarter of RAM per
    # node), C1 only and single-threaded GC: start-up and warm-up on two shared
    # cores, not peak throughput.
    -Xms768m -Xmx768m -XX:TieredStopAtLevel=1 -XX:ParallelGCThreads=1 -XX:ConcGCThreads=1
    -Dcassandra.available_processors=2
    "-javaagent:$jamm" -XX:+ExitOnOutOfMemoryError
    "-Dlogback.configurationFile=$r/logback.xml" "-Dcassandra.logdir=$dir/logs"
    "-Dcassandra.storagedir=$dir" -Dcassandra-foreground=yes
    "-Dcassandra.config=file://$dir/conf/cassandra.yaml"
    # No waiting for gossip to settle and a 5 s ring delay rather than 30:
    # test speed. Not -Dcassandra.unsafesystem, which harnesses use for speed:
    # with it a node killed with -9 came back without the tables created
    # before the kill (UnknownTableException on every read and write sent to it).
    -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=5000
    -Dcassandra.superuser_setup_delay_ms=0
    "-Djava.io.tmpdir=$dir/tmp"
  )
  # For a cluster no test kills (CQL_CLUSTER_UNSAFE_SYSTEM=1): system tables
  # are not flushed on each schema change, which makes a keyspace per test
  # several times cheaper to create (see docs/testing.md).
  [ "${CQL_CLUSTER_UNSAFE_SYSTEM:-0}" = 1 ] && jvm+=(-Dcassandra.unsafesystem=true)
  setsid java "${jvm[@]}" -cp "$LIB/*" org.apache.cassandra.service.CassandraDaemon \
    >"$dir/logs/stdout.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
}

wait_cql() {
  local n=$1 dir
  dir=$(root)/node$n
  for _ in $(seq 1 180); do
    alive "$n" || { tail -20 "$dir/logs/stdout.log" "$dir/logs/system.log" >&2 2>/dev/null; die "node $n exited while starting"; }
    grep -q "Startup complete" "$dir/logs/system.log" 2>/dev/null \
      && (exec 3<>"/dev/tcp/$(ip "$n")/9042") 2>/dev/null && return 0
    sleep 1
  done
  die "node $n did not answer CQL within 180 s (logs in $dir/logs)"
}

# Every node sees every other one up (gossip), so that schema agreement and
# QUORUM work from the first statement.
wait_ring() {
  local r all
  r=$(root); all=$(nodes)
  for n in $all; do for x in $all; do
    [ "$n" = "$x" ] && continue
    for _ in $(seq 1 120); do
      grep -q "/$(ip "$x"):7000 is now UP" "$r/node$n/logs/system.log" 2>/dev/null && break
      sleep 1
    done
    grep -q "/$(ip "$x"):7000 is now UP" "$r/node$n/logs/system.log" || die "node $n never saw node $x up"
  done; done
}

contact_points() {
  local points=()
  for n in $(nodes); do points+=("$(ip "$n"):9042"); done
  (IFS=,; echo "${points[*]}")
}

case "${1:-}" in
  start)
    size=${2:-1}
    [[ $size == 1 || $size == 3 ]] || die "a cluster has 1 or 3 nodes, not $size"
    [ -f "$STATE" ] && die "a cluster is running already ($(head -1 "$STATE")); stop it first"
    fetch_class_path
    ulimit -n 100000 2>/dev/null || true
    { mktemp -d /tmp/freight-cql.XXXXXX; echo "$FIRST"; } >"$STATE"
    started=$(date +%s)
    for n in $(seq 1 "$size"); do write_config "$n" "$(root)"; done
    # Node 1 is the seed: the others need it up before they start.
    for n in $(seq 1 "$size"); do launch "$n"; wait_cql "$n"; done
    wait_ring
    echo "cluster.sh: $size node(s) up in $(( $(date +%s) - started )) s" >&2
    contact_points
    ;;
  kill)
    [ -n "${2:-}" ] || die "kill which node?"
    pid=$(pid_of "$2"); [ -n "$pid" ] || die "no node $2"
    kill -9 "$pid" 2>/dev/null || true
    # Gone before this returns: a restart right after must not find it alive.
    for _ in $(seq 1 100); do alive "$2" || break; sleep 0.1; done
    if alive "$2"; then die "node $2 is still running after kill -9"; fi
    ;;
  restart)
    [ -n "${2:-}" ] || die "restart which node?"
    if alive "$2"; then die "node $2 is running"; fi
    # A fresh start marker: the node logs "Startup complete" again.
    mv "$(root)/node$2/logs/system.log" "$(root)/node$2/logs/system.log.$(date +%s)" 2>/dev/null || true
    launch "$2"; wait_cql "$2"
    ;;
  stop)
    [ -f "$STATE" ] || exit 0
    r=$(head -1 "$STATE")
    for n in $(ls -d "$r"/node* 2>/dev/null | sed 's#.*/node##'); do
      pid=$(cat "$r/node$n/pid" 2>/dev/null || true)
      [ -n "$pid" ] && kill -9 -- "-$pid" 2>/dev/null; [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    done
    rm -rf "$r" "$STATE"
    ;;
  status)
    for n in $(nodes); do
      if alive "$n"; then echo "node $n: up (pid $(pid_of "$n")), $(ip "$n"):9042"; else echo "node $n: down"; fi
    done
    contact_points
    ;;
  *)
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
