#!/usr/bin/env bash
# Open-loop capacity, freight against the durable bare handler in one run.
# For each fleet size in TRUCKS, `freight loadgen` ramps single fixes
# (benches/scenarios/find-capacity.toml: +1,000/s every 10 s until a step's
# p99 passes 50 ms or a request fails) against freight (the loadgen's own
# loads, assigned and in transit), then against the bare handler made durable
# (benches/bare_handler.rs, BARE_SYNC_DIR: each fix answered once an fdatasync
# covers it) on made-up load ids (--invent-loads). Prints each capacity, the
# ratio, each ramp's top step and the loadgen's CPU; plots in target/capacity/.
#
#   cargo build --profile bench --bin freight
#   benches/wrk/capacity.sh           # 10-20 minutes
#
# Knobs: FREIGHT (default target/release/freight), TRUCKS (default
# "2000 20000"), CONNECTIONS (default 256), WORKERS (default 2), SETTLE
# (default 30 s), BARE_HANDLER (a bare handler already built, instead of
# building it). PROTOCOL=teltonika or gt06 ramps freight's tracker listener
# instead (each truck a unit on a connection of its own, packets of RECORDS
# positions, default 10; the rates are then records a second) against the
# same durable bare HTTP handler taking single fixes: the issue's "TCP ingest
# against the durable bare handler" in one run.
set -euo pipefail
cd "$(dirname "$0")/../.."
FREIGHT=${FREIGHT:-target/release/freight}
TRUCKS=${TRUCKS:-"2000 20000"}
CONNECTIONS=${CONNECTIONS:-256}
WORKERS=${WORKERS:-2}
# Seconds between a ramp's set-up (20,000 loads created, assigned and put in
# transit) and its first step: the flushes and compactions of the set-up are
# not the first steps' latency.
SETTLE=${SETTLE:-30}
PROTOCOL=${PROTOCOL:-http}
RECORDS=${RECORDS:-10}
[ "$PROTOCOL" = http ] || tracker_note=" (packets of $RECORDS records)"
LOADS=1
source benches/wrk/freight.sh
scratch_and_freight
BUILT_BARE=${BARE_HANDLER:-$(build_bare)}
mkdir -p target/capacity

# ramp NAME PORT CERT [loadgen flags…]: prints "capacity top-offered top-achieved
# top-p99 cpu-seconds" of one ramp.
ramp() {
  local name=$1 port=$2 cert=$3
  shift 3
  "$FREIGHT" loadgen --json --scenario benches/scenarios/find-capacity.toml \
    --connections "$CONNECTIONS" --base-url "https://localhost:$port" --cacert "$cert" \
    --plot "target/capacity/$name.svg" "$@" >"$WORK/$name.json" &
  local pid=$!
  # The loadgen's CPU (user + system ticks), read while it runs: whether the
  # client, on the same two cores, was the limit.
  local ticks=0
  while kill -0 "$pid" 2>/dev/null; do
    ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo "$ticks")
    sleep 1
  done
  wait "$pid"
  cp "$WORK/$name.json" "target/capacity/$name.json"
  python3 - "$WORK/$name.json" "$ticks" "$(getconf CLK_TCK)" <<'PY'
import json, sys
ramp = json.load(open(sys.argv[1]))["ramp"]
top = ramp["steps"][-1]
cpu = int(sys.argv[2]) / int(sys.argv[3])
print(ramp["capacity_per_sec"] or 0, top["offered_per_sec"], top["achieved_per_sec"], top["p99_ms"], cpu)
PY
}

echo "open-loop capacity at p99 < 50 ms, $WORKERS workers, $CONNECTIONS connections, freight over $PROTOCOL${tracker_note:-}:"
for trucks in $TRUCKS; do
  tracker=()
  if [ "$PROTOCOL" != http ]; then
    ulimit -n "$(ulimit -Hn)"
    TRACKER_PORT=$(free_port)
    export FREIGHT_TCP_INGEST="$PROTOCOL=127.0.0.1:$TRACKER_PORT"
    export FREIGHT_TCP_MAX_CONNECTIONS_PER_ADDRESS=$((trucks + 10))
    tracker=(--protocol "$PROTOCOL" --tracker-addr "127.0.0.1:$TRACKER_PORT" --records "$RECORDS")
  fi
  start_freight "$WORKERS"
  unset FREIGHT_TCP_INGEST FREIGHT_TCP_MAX_CONNECTIONS_PER_ADDRESS
  read -r cap_f off_f ach_f p99_f cpu_f < <(ramp "freight-$PROTOCOL-$trucks" "$API_PORT" "$DATA/tls/cert.pem" \
    --key "$KEY" --trucks "$trucks" --settle "$SETTLE" "${tracker[@]}")
  kill "$FREIGHT_PID"; wait "$FREIGHT_PID" 2>/dev/null || true
  # What freight left for the disk to write is not the bare handler's to wait for.
  sync; sleep 5
  API_PORT=$(free_port)
  BARE_SYNC_DIR=$(mktemp -d -p "$WORK") "$BUILT_BARE" serve "127.0.0.1:$API_PORT" \
    "$DATA/tls/cert.pem" "$DATA/tls/key.pem" "$WORKERS" >"$WORK/bare.log" 2>&1 &
  BARE_PID=$!
  sleep 0.5
  read -r cap_b off_b ach_b p99_b cpu_b < <(ramp "bare-$trucks" "$API_PORT" "$DATA/tls/cert.pem" \
    --trucks "$trucks" --invent-loads --settle "$SETTLE")
  kill "$BARE_PID"; wait "$BARE_PID" 2>/dev/null || true
  python3 - "$trucks" "$cap_f" "$cap_b" "$off_f" "$ach_f" "$p99_f" "$cpu_f" "$off_b" "$ach_b" "$p99_b" "$cpu_b" <<'PY'
import sys
t, cf, cb, of, af, pf, uf, ob, ab, pb, ub = sys.argv[1:]
ratio = float(cf) / float(cb) if float(cb) else float("nan")
print(f"  {int(t):>6} trucks: freight {float(cf):>7.0f}/s, durable bare {float(cb):>7.0f}/s, freight/bare {ratio:.2f} (positions a second)")
print(f"      last step: freight offered {float(of):.0f}/s achieved {float(af):.0f}/s p99 {float(pf):.1f} ms, loadgen CPU {float(uf):.1f} s;"
      f" bare offered {float(ob):.0f}/s achieved {float(ab):.0f}/s p99 {float(pb):.1f} ms, loadgen CPU {float(ub):.1f} s")
PY
done
echo "plots and reports: target/capacity/"
