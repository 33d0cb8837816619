#!/usr/bin/env bash
# GPS ingest and latest-position reads of freight against the bare reference
# handler (benches/support/bare.rs: actix-web, the same TLS certificate, the
# same body parsed, nothing else), measured by wrk, an independent client in a
# process of its own. Rounds alternate bare, freight, bare, freight; each pair is
# printed (with each server's CPU time per request, from /proc, over all its
# threads and for its busiest thread alone: with 1 worker, the HTTP worker;
# wrk's CPU time per request; and each CPU's busy share over the run, which
# shows where the client ran), then the median of the pairs' ratios. CPU per
# request varies far less between runs than requests/s on a shared machine:
# compare builds by it first.
#
#   benches/wrk/compare.sh            # about 4 minutes; needs wrk (apt-get install wrk)
#
# Knobs (environment): ROUNDS (pairs per shape, default 3), SECONDS_PER_RUN
# (default 8), LOADS (loads the fixes spread over, default 1000), ONLY
# (`ingest`, `reads`, `bulk`, `batches` or `devices`: that comparison alone), PERF (set: record each
# freight run with `perf record -g` into target/perf/<shape>-<workers>w.data,
# and each reference run into <shape>-<workers>w-<reference>.data (bare,
# bare-store or baseline), for
# `perf report -i`; recording costs the server some throughput), FREIGHT (the
# freight binary to measure, default target/release/freight; a wrapper script
# that sets FREIGHT_* variables and execs it compares settings), BARE (the
# bare handler to measure against: default the one in benches/support/bare.rs,
# built with freight's own release profile, link-time optimisation included;
# `outside` builds and uses benches/wrk/outside_bare, a crate of its own with
# actix-web's default features and cargo's default release profile, as a
# reviewer's handler written outside this repository is; `durable`, the
# default one with its ingest route made durable (each fix appended to a file
# and answered after an fdatasync covers it, group-committed as freight's
# points are: the reference for ingest, which makes freight's promise);
# `durable-store`, the same with each fix made durable through freight's own
# store and group committer instead of a file (freight's own work, the store
# held equal; printed as bare-store); `durable-cql`, the same through
# freight's CQL store (needs SCYLLA_NODES; printed as bare-cql); or a binary's path taking the same
# `serve <address> <cert> <key> <workers>`, with BARE_DURABLE=1 for a build
# of the durable one (and BARE_SYNC_STORE=embedded for durable-store); with
# FREIGHT given too, nothing is built), BASELINE (another freight binary,
# e.g. an earlier commit's: measured in place of the bare handler, started and
# seeded as freight is, so the ratios are this build against that one; the
# device shapes are left out; BASELINE=target/release/freight with STOPS=4
# BASELINE_STOPS=2 compares loads of four stops with loads of two in one
# build), STOPS (stops per seeded load, default 2), PERF_ARGS
# (perf record's sampling options, default `-g`; e.g. `--call-graph dwarf -F 200`
# for call chains through code built without frame pointers), WRK_CPUS (run
# wrk under `taskset -c $WRK_CPUS`; SCYLLA_NODES (contact points of a CQL
# cluster, e.g. from deploy/cql-test-cluster/cluster.sh: freight runs with
# --storage scylla there, in a fresh keyspace per start, as the bare handler
# does with BARE=durable-cql; the device shapes are left out); e.g. 1 keeps it off the CPU that freight's
# one worker is pinned to, to see what the client's placement costs).
# Each run also prints wrk's own CPU time per request: client and server share
# the machine's CPUs, so a server that makes the client work harder per
# request (waking it more often) has less CPU left for itself.
# Shapes: 1 server worker with wrk -t1 -c32 (the headline), and 2 workers with
# wrk -t2 -c256; bulk (batches of 1,000 fixes over 1,000 loads) at 1 worker
# with wrk -t1 -c32, where points/s is 1,000 times the requests/s shown;
# batches (100 fixes of one load) likewise; then
# device ingest (benches/wrk/devices.sh: Traccar Client 7's request beside the
# API's single fix, Overland batches of 100 beside API batches of 100, per fix,
# in one freight). The machine is shared and noisy: compare the ratios of one run.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v wrk >/dev/null || { echo "wrk is required (apt-get install wrk)" >&2; exit 1; }

ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-8}
LOADS=${LOADS:-1000}

source benches/wrk/freight.sh
scratch
if [ -n "${FREIGHT:-}" ] && { [ -n "${BASELINE:-}" ] || [ -x "${BARE:-}" ]; }; then
  # Every binary given: nothing to build.
  BUILT_BARE=""
else
  echo "building (release)..." >&2
  # One cargo invocation for both, so the library is compiled once (a bench target
  # brings dev-dependency features; two invocations would build it twice).
  BUILT_BARE=$(build_bare --bin freight)
fi
case "${BARE:-}" in
  "") BARE=$BUILT_BARE BARE_SYNC_STORE= ;;
  durable) BARE=$BUILT_BARE BARE_DURABLE=1 BARE_SYNC_STORE= ;;
  durable-store) BARE=$BUILT_BARE BARE_DURABLE=1 BARE_SYNC_STORE=embedded ;;
  durable-cql)
    [ -n "${SCYLLA_NODES:-}" ] || { echo "BARE=durable-cql needs SCYLLA_NODES" >&2; exit 1; }
    BARE=$BUILT_BARE BARE_DURABLE=1 BARE_SYNC_STORE=cql ;;
  outside)
    cargo build --release --quiet --manifest-path benches/wrk/outside_bare/Cargo.toml --target-dir target/outside_bare \
      || { echo "the outside bare handler did not build" >&2; exit 1; }
    BARE=target/outside_bare/release/outside_bare BARE_SYNC_STORE= ;;
esac
FREIGHT=${FREIGHT:-target/release/freight}
# What the ratios are against, as the rounds print it.
REFERENCE=bare
[ "${BARE_SYNC_STORE:-}" != embedded ] || REFERENCE=bare-store
[ "${BARE_SYNC_STORE:-}" != cql ] || REFERENCE=bare-cql
[ -z "${BASELINE:-}" ] || REFERENCE=baseline

# Starts freight with $1 workers on fresh storage, seeds it, and starts the bare
# handler with as many workers on the same certificate.
start() {
  local workers=$1
  if [ -n "${BASELINE:-}" ]; then
    FREIGHT=$BASELINE start_freight "$workers" baseline
    BARE_PORT=$API_PORT BARE_PID=$FREIGHT_PID BARE_KEY=$KEY
    start_freight "$workers"
    return
  fi
  start_freight "$workers"
  BARE_PORT=$(free_port)
  # The durable bare handler's journal: fresh each start, on the same disk as freight's.
  local keyspace=""
  [ "${BARE_SYNC_STORE:-}" != cql ] || keyspace=$(cql_keyspace) || exit 1
  BARE_SYNC_DIR=$([ -z "${BARE_DURABLE:-}" ] || mktemp -d -p "$WORK") BARE_SYNC_STORE=${BARE_SYNC_STORE:-} \
    BARE_SCYLLA_NODES=${SCYLLA_NODES:-} BARE_SCYLLA_KEYSPACE=$keyspace \
    "$BARE" serve "127.0.0.1:$BARE_PORT" "$DATA/tls/cert.pem" "$DATA/tls/key.pem" "$workers" &
  BARE_PID=$!
  # Until it answers (a CQL store takes a moment to connect and prepare).
  for _ in $(seq 100); do curl -sk "https://localhost:$BARE_PORT/" -o /dev/null && break; sleep 0.1; done
}

stop() { kill "$FREIGHT_PID" "$BARE_PID"; wait "$FREIGHT_PID" "$BARE_PID" 2>/dev/null || true; }

# Each CPU's time counters so far (/proc/stat: user nice system idle iowait ...).
cpu_times() { grep '^cpu[0-9]' /proc/stat; }

# Each thread of process $1 with the CPU time (ns, from schedstat) it has used so far.
thread_ns() { for t in /proc/"$1"/task/*; do echo "${t##*/} $(awk '{print $1}' "$t/schedstat" 2>/dev/null || echo 0)"; done | sort; }

# wrk against port $1 (served by process $5) with script $2, threads $3,
# connections $4, named $6 (for PERF): "requests/s p99-ms server-CPU-us-per-request
# busiest-thread-us client-us cpus-busy lookups", cpus-busy as each CPU's busy
# percentage over the run, slash-separated (a worker's idle polling counts as
# busy), and lookups as the store reads of duplicate checks per request ("-"
# for the bare handler, or a build without the counter).
run() {
  local before after duplicates_before="" lookups_before="-"
  [ "$5" != "$FREIGHT_PID" ] || { duplicates_before=$(gps_points duplicate); lookups_before=$(point_lookups); }
  thread_ns "$5" >"$WORK/threads.before"
  cpu_times >"$WORK/cpus.before"
  before=$(cpu_ticks "$5")
  local perf_pid=""
  if [ -n "${PERF:-}" ] && [ -n "${6:-}" ]; then
    mkdir -p target/perf
    perf record -q ${PERF_ARGS:--g} -p "$5" -o "target/perf/$6.data" -- sleep "$SECONDS_PER_RUN" 2>/dev/null &
    perf_pid=$!
  fi
  # wrk's own CPU time too (the `time` keyword's user and system seconds):
  # client and server share the machine's CPUs.
  # A baseline freight has loads and a key of its own.
  local loads="$WORK/loads" key="$KEY"
  if [ -n "${BASELINE:-}" ] && [ "$5" = "$BARE_PID" ]; then loads="$WORK/loads-baseline" key="$BARE_KEY"; fi
  { TIMEFORMAT='%U %S'; time WRK_LOADS="$loads" WRK_KEY="$key" WRK_THREADS="$3" ${WRK_CPUS:+taskset -c "$WRK_CPUS"} \
    wrk --latency -t"$3" -c"$4" -d"${SECONDS_PER_RUN}s" -s "benches/wrk/$2" "https://localhost:$1" >"$WORK/wrk.out"; } 2>"$WORK/wrk.time"
  after=$(cpu_ticks "$5")
  cpu_times >"$WORK/cpus.after"
  thread_ns "$5" >"$WORK/threads.after"
  [ -z "$perf_pid" ] || wait "$perf_pid"
  if grep -q "Non-2xx" "$WORK/wrk.out"; then
    echo "wrk saw refusals:" >&2; cat "$WORK/wrk.out" >&2; exit 1
  fi
  if [ -n "$duplicates_before" ] && [ "$(gps_points duplicate)" != "$duplicates_before" ]; then
    echo "freight answered some of $2's fixes as duplicates: the script repeats (load, timestamp)" >&2; exit 1
  fi
  local busiest
  busiest=$(join "$WORK/threads.before" "$WORK/threads.after" | awk '{d = $3 - $2; if (d > m) m = d} END {printf "%.0f", m}')
  python3 - "$(python3 benches/wrk/wrk_figures.py "$WORK/wrk.out")" "$((after - before))" "$(getconf CLK_TCK)" \
    "$busiest" "$(tail -n 1 "$WORK/wrk.time")" "$WORK/cpus.before" "$WORK/cpus.after" \
    "$lookups_before" "$([ "$lookups_before" = - ] && echo - || point_lookups)" <<'PY'
import sys
rate, requests, p99, _ = (float(f) for f in sys.argv[1].split())
cpu_us = int(sys.argv[2]) / int(sys.argv[3]) * 1e6 / max(requests, 1)
busiest_us = int(sys.argv[4]) / 1000 / max(requests, 1)
client_us = sum(float(s) for s in sys.argv[5].split()) * 1e6 / max(requests, 1)
def cpu_times(path):
    return {f[0]: [int(v) for v in f[1:]] for f in (line.split() for line in open(path))}
before, after = cpu_times(sys.argv[6]), cpu_times(sys.argv[7])
busy = []
for cpu in sorted(after, key=lambda name: int(name[3:])):
    spent = [a - b for a, b in zip(after[cpu], before[cpu])]
    idle = spent[3] + spent[4]  # idle and iowait
    busy.append(f"{100 * (1 - idle / max(sum(spent[:8]), 1)):.0f}")
lookups = "-"
if "-" not in (sys.argv[8], sys.argv[9]):
    lookups = f"{(float(sys.argv[9]) - float(sys.argv[8])) / max(requests, 1):.1f}"
print(f"{rate:.0f} {p99:.2f} {cpu_us:.1f} {busiest_us:.1f} {client_us:.1f} {'/'.join(busy)} {lookups}")
PY
}

# One shape: workers, wrk threads, connections, script, what.
compare() {
  local workers=$1 threads=$2 connections=$3 script=$4 what=$5
  if [ -n "${ONLY:-}" ] && [ "$ONLY" != "$what" ]; then return; fi
  local ratios=()
  for round in $(seq "$ROUNDS"); do
    read -r bare_rate bare_p99 bare_cpu bare_busiest bare_client bare_cpus _ < <(run "$BARE_PORT" "$script" "$threads" "$connections" "$BARE_PID" "$what-${workers}w-$REFERENCE")
    read -r freight_rate freight_p99 freight_cpu freight_busiest freight_client freight_cpus freight_lookups < <(run "$API_PORT" "$script" "$threads" "$connections" "$FREIGHT_PID" "$what-${workers}w")
    local ratio
    ratio=$(python3 -c "print(f'{$freight_rate/$bare_rate:.2f}')")
    ratios+=("$ratio")
    printf '  %s round %d: %s %6s/s p99 %6s ms %5s us cpu (%s busiest thread, wrk %s; CPUs busy %s%%) | freight %6s/s p99 %6s ms %5s us cpu (%s busiest thread, wrk %s; CPUs busy %s%%; store lookups %s/request) | ratio %s\n' \
      "$what" "$round" "$REFERENCE" "$bare_rate" "$bare_p99" "$bare_cpu" "$bare_busiest" "$bare_client" "$bare_cpus" "$freight_rate" "$freight_p99" "$freight_cpu" "$freight_busiest" "$freight_client" "$freight_cpus" "$freight_lookups" "$ratio"
  done
  printf '%s, %s worker(s), wrk -t%s -c%s: median ratio %s\n' "$what" "$workers" "$threads" "$connections" \
    "$(median "${ratios[@]}")"
}

start 1
compare 1 1 32 fix.lua "ingest"
compare 1 1 32 read.lua "reads"
stop
# Bulk: 1,000 fixes over 1,000 loads per request; points/s is 1,000 x requests/s.
start 1
compare 1 1 32 batch.lua "bulk"
# Batches of 100 fixes of one load (a truck's buffered positions), per request.
compare 1 1 32 batch100.lua "batches"
stop
start 2
compare 2 2 256 fix.lua "ingest"
compare 2 2 256 read.lua "reads"
stop
# Devices: the device protocols against the API's own ingest, in one freight
# (a bare handler speaks neither protocol, so the API is the reference here).
if [ -z "${BASELINE:-}" ] && [ -z "${SCYLLA_NODES:-}" ] && { [ -z "${ONLY:-}" ] || [ "$ONLY" = devices ]; }; then
  FREIGHT=$FREIGHT ROUNDS=$ROUNDS SECONDS_PER_RUN=$SECONDS_PER_RUN LOADS=$LOADS benches/wrk/devices.sh
fi
