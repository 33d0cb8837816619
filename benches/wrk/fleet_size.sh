#!/usr/bin/env bash
# Does a bigger fleet cost freight more per fix? `freight loadgen` offers one
# open-loop rate of single fixes (no duplicates, no late fixes, nobody
# reading) from each fleet size in TRUCKS in turn, each against a fresh
# freight (2 workers, 256 connections), and prints freight's CPU time per
# stored fix over the measured part once every truck has sent a fix (from
# /proc and freight's own freight_gps_points_total) beside the loadgen's rate
# and latencies. Sizes
# alternate, so a drift of the machine shows as a difference between rounds.
#
#   cargo build --profile bench --bin freight
#   benches/wrk/fleet_size.sh          # about 10 minutes (20 with BARE=also)
#
# After each fleet size freight's store says what it did over the run
# (freight_store_*: flushes and compactions of the GPS keyspace, seconds of
# write stall), which tells a stall from a slow path. With BARE=also, each
# size is then offered at the same rate to the durable bare handler
# (benches/bare_handler.rs with BARE_SYNC_DIR, made-up load ids), and the
# line gives its CPU per fix and freight's over it: at one rate on a CPU-bound
# machine, the inverse of that ratio is what the capacities' ratio tends to.
#
# Knobs: FREIGHT (default target/release/freight), TRUCKS (default
# "2000 20000 2000 20000"), RATE (fixes/s, default 8000), MEASURE_SECONDS
# (the measured part, default 40), SETTLE (seconds between the set-up and the
# measured part, default 30), BARE (`also`: the bare handler too),
# BARE_HANDLER (with BARE: one already built, instead of building it).
set -euo pipefail
cd "$(dirname "$0")/../.."
FREIGHT=${FREIGHT:-target/release/freight}
TRUCKS=${TRUCKS:-"2000 20000 2000 20000"}
RATE=${RATE:-8000}
SECONDS_MEASURED=${MEASURE_SECONDS:-40}
SETTLE=${SETTLE:-30}
LOADS=1
source benches/wrk/freight.sh
scratch_and_freight
[ "${BARE:-}" != also ] || BUILT_BARE=${BARE_HANDLER:-$(build_bare)}

cat >"$WORK/fixes-only.toml" <<EOF
trucks = 2000
fix_every_secs = 1.0
duration_secs = $SECONDS_MEASURED
duplicate_share = 0.0
out_of_order_share = 0.0
offline_share = 0.0
dashboards = 0
streams = 0
clients = 0
EOF

# loadgen_at TRUCKS PORT CERT [flags…]: offers RATE from TRUCKS trucks to the
# server on PORT (process $SERVER_PID), sampling each second its CPU ticks and
# (with STORED set) freight's stored fixes; prints the line of figures.
loadgen_at() {
  local trucks=$1 port=$2 cert=$3 every
  shift 3
  every=$(python3 -c "print($trucks / $RATE)")
  "$FREIGHT" loadgen --json --scenario "$WORK/fixes-only.toml" --trucks "$trucks" --fix-every "$every" \
    --settle "$SETTLE" --connections 256 --base-url "https://localhost:$port" \
    --cacert "$cert" "$@" >"$WORK/report.json" &
  local loadgen=$!
  # A sample a second (freight's CPU ticks, fixes stored or "-") until the
  # loadgen ends; the measured part is its last SECONDS_MEASURED of them.
  : >"$WORK/samples"
  while kill -0 "$loadgen" 2>/dev/null; do
    echo "$(awk '{print $14 + $15}' "/proc/$SERVER_PID/stat") $([ -z "${STORED:-}" ] && echo - || gps_points stored)" >>"$WORK/samples"
    sleep 1
  done
  wait "$loadgen"
  python3 - "$WORK/report.json" "$WORK/samples" "$trucks" "$SECONDS_MEASURED" "$(getconf CLK_TCK)" "$RATE" <<'PY'
import json, sys
report, samples, trucks, seconds, tck = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rows = [line.split() for line in open(samples) if len(line.split()) == 2]
# From the second after every truck has sent its first fix (a load's first fix
# starts its actor: a cost of the fleet's arrival, not of its size) to two
# seconds before the end (no shutdown).
every = trucks / float(sys.argv[6])
part = rows[-seconds + int(every) + 2:-2]
fix = next(o for o in json.load(open(report))["summary"]["operations"] if o["operation"] == "fix")
ticks = float(part[-1][0]) - float(part[0][0])
# Fixes: freight's own count of those stored, or (the bare handler) the
# loadgen's achieved rate over the part's seconds.
fixes = (float(part[-1][1]) - float(part[0][1])) if part[0][1] != "-" else fix["per_second"] * (len(part) - 1)
errors = sum(fix["errors"].values())
print(f"{ticks / tck * 1e6 / max(fixes, 1):.1f} {fix['per_second']:.0f} {fix['p50_ms']:.1f} {fix['p99_ms']:.1f} {errors}")
PY
}

echo "2 workers, 256 connections, $RATE fixes/s offered for ${SECONDS_MEASURED} s:"
for trucks in $TRUCKS; do
  start_freight 2
  read -r cpu rate p50 p99 errors < <(SERVER_PID=$FREIGHT_PID STORED=1 loadgen_at "$trucks" "$API_PORT" "$DATA/tls/cert.pem" --key "$KEY")
  printf '  %6d trucks: freight %5.1f us of CPU per stored fix; loadgen %s fixes/s, p50 %s ms, p99 %s ms, errors %s; store: %s\n' \
    "$trucks" "$cpu" "$rate" "$p50" "$p99" "$errors" "$(store_activity)"
  kill "$FREIGHT_PID"; wait "$FREIGHT_PID" 2>/dev/null || true
  if [ "${BARE:-}" = also ]; then
    sync; sleep 5
    port=$(free_port)
    BARE_SYNC_DIR=$(mktemp -d -p "$WORK") "$BUILT_BARE" serve "127.0.0.1:$port" \
      "$DATA/tls/cert.pem" "$DATA/tls/key.pem" 2 >"$WORK/bare.log" 2>&1 &
    bare=$!
    sleep 0.5
    read -r bare_cpu rate p50 p99 errors < <(SERVER_PID=$bare loadgen_at "$trucks" "$port" "$DATA/tls/cert.pem" --invent-loads)
    kill "$bare"; wait "$bare" 2>/dev/null || true
    printf '          durable bare %5.1f us of CPU per fix; loadgen %s fixes/s, p50 %s ms, p99 %s ms, errors %s; CPU per fix freight/bare %.2f\n' \
      "$bare_cpu" "$rate" "$p50" "$p99" "$errors" "$(python3 -c "print($cpu / $bare_cpu)")"
  fi
  rm -rf "$DATA"; sync
done
