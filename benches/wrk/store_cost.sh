#!/usr/bin/env bash
# What freight's store costs a handler that does nothing else: the durable bare
# handler appending each fix to a plain file, against the same handler making
# each fix durable through freight's own store and group committer
# (BARE_SYNC_STORE=embedded), both measured by wrk in one run, rounds
# alternating file, store, file, store. Together with
# `BARE=durable-store benches/wrk/compare.sh` (freight against the second), it
# splits freight's distance from the durable bare handler into the store's
# share and the share of freight's own work.
#
#   benches/wrk/store_cost.sh     # about 2 minutes; needs wrk and openssl
#
# Knobs (environment): ROUNDS (pairs per shape, default 3), SECONDS_PER_RUN
# (default 8), LOADS (default 1000), BARE (a built bare_handler; default: build it).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v wrk >/dev/null || { echo "wrk is required (apt-get install wrk)" >&2; exit 1; }

ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-8}
LOADS=${LOADS:-1000}

source benches/wrk/freight.sh
scratch
if [ -z "${BARE:-}" ]; then
  echo "building (release)..." >&2
  BARE=$(build_bare)
fi
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=localhost -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
# Load ids shaped as freight's (`load_` and 26 Crockford characters, the first
# at most 7): the store keeps points by load; no load needs to exist.
python3 - "$LOADS" >"$WORK/loads" <<'PY'
import random, sys
alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
for _ in range(int(sys.argv[1])):
    print("load_" + random.choice("01234567") + "".join(random.choice(alphabet) for _ in range(25)))
PY

# Starts both handlers with $1 workers, each journal or store fresh on the same disk.
start() {
  FILE_PORT=$(free_port)
  BARE_SYNC_DIR=$(mktemp -d -p "$WORK") BARE_SYNC_STORE= \
    "$BARE" serve "127.0.0.1:$FILE_PORT" "$WORK/cert.pem" "$WORK/key.pem" "$1" &
  FILE_PID=$!
  STORE_PORT=$(free_port)
  BARE_SYNC_DIR=$(mktemp -d -p "$WORK") BARE_SYNC_STORE=embedded \
    "$BARE" serve "127.0.0.1:$STORE_PORT" "$WORK/cert.pem" "$WORK/key.pem" "$1" &
  STORE_PID=$!
  sleep 1
}

stop() { kill "$FILE_PID" "$STORE_PID"; wait "$FILE_PID" "$STORE_PID" 2>/dev/null || true; }

# wrk against port $1 (process $2), threads $3, connections $4:
# "requests/s p99-ms server-CPU-us-per-request".
run() {
  local before after
  before=$(cpu_ticks "$2")
  WRK_LOADS="$WORK/loads" WRK_KEY=unused WRK_THREADS="$3" \
    wrk --latency -t"$3" -c"$4" -d"${SECONDS_PER_RUN}s" -s benches/wrk/fix.lua "https://localhost:$1" >"$WORK/wrk.out"
  after=$(cpu_ticks "$2")
  if grep -q "Non-2xx" "$WORK/wrk.out"; then
    echo "wrk saw refusals:" >&2; cat "$WORK/wrk.out" >&2; exit 1
  fi
  read -r rate requests p99 _ < <(python3 benches/wrk/wrk_figures.py "$WORK/wrk.out")
  python3 -c "print(f'$rate $p99 {($after - $before) / $(getconf CLK_TCK) * 1e6 / max($requests, 1):.1f}')"
}

# One shape: workers, wrk threads, connections.
compare() {
  local ratios=()
  start "$1"
  for round in $(seq "$ROUNDS"); do
    read -r file_rate file_p99 file_cpu < <(run "$FILE_PORT" "$FILE_PID" "$2" "$3")
    read -r store_rate store_p99 store_cpu < <(run "$STORE_PORT" "$STORE_PID" "$2" "$3")
    local ratio
    ratio=$(python3 -c "print(f'{$store_rate/$file_rate:.2f}')")
    ratios+=("$ratio")
    printf '  round %d: file %6.0f/s p99 %6.2f ms %5s us cpu | store %6.0f/s p99 %6.2f ms %5s us cpu | ratio %s\n' \
      "$round" "$file_rate" "$file_p99" "$file_cpu" "$store_rate" "$store_p99" "$store_cpu" "$ratio"
  done
  stop
  printf 'store / file, %s worker(s), wrk -t%s -c%s: median ratio %s\n' "$1" "$2" "$3" \
    "$(median "${ratios[@]}")"
}

compare 1 1 32
compare 2 2 256
