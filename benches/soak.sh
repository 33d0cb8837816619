#!/usr/bin/env bash
# Soak: mixed load for a bounded time against one freight, checking that memory
# stays flat, idle load actors are reclaimed and the webhook outbox drains. Run by
# hand (not in CI); prints a sample every INTERVAL seconds, then the state after
# the load stops and the actors' idle time has passed.
#
#   benches/soak.sh                 # 20 minutes; needs wrk (apt-get install wrk)
#
# Knobs: DURATION (seconds of load, default 1200), INTERVAL (default 60), LOADS
# (default 2000), FREIGHT (binary, default target/release/freight; build it first).
# Load: wrk posts fresh GPS fixes on 4 connections and reads latest positions on 4,
# over LOADS loads; a webhook subscription to tracking.updated and
# load.status_changed sends every fix's event to a local receiver answering 200.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "wrk is required (apt-get install wrk)" >&2; exit 1; }
DURATION=${DURATION:-1200}
INTERVAL=${INTERVAL:-60}
LOADS=${LOADS:-2000}
FREIGHT=${FREIGHT:-target/release/freight}
IDLE=30
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
API=$(port); ADMIN=$(port); HOOK=$(port)
DATA="$WORK/data"

# The receiver: 200 to every POST, counting them.
python3 - "$HOOK" "$WORK/received" <<'PY' &
import http.server, sys
port, counter = int(sys.argv[1]), sys.argv[2]
count = 0
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200); self.end_headers()
        count += 1
        if count % 100 == 0:
            open(counter, "w").write(str(count))
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), Hook).serve_forever()
PY

"$FREIGHT" serve --data-dir "$DATA" --listen "127.0.0.1:$API" --admin-listen "127.0.0.1:$ADMIN" \
  --no-bootstrap-key --actor-idle-secs "$IDLE" --webhooks-allow-http --webhooks-allow-private \
  >"$WORK/freight.log" 2>&1 &
PID=$!
for _ in $(seq 100); do [ -f "$DATA/admin.token" ] && curl -sk "https://localhost:$API/v1" -o /dev/null && break; sleep 0.1; done
admin=(--data-dir "$DATA" --admin-url "http://127.0.0.1:$ADMIN" --json)
account=$("$FREIGHT" accounts create --name soak --plan enterprise --requests-per-hour 4000000000 "${admin[@]}" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
KEY=$("$FREIGHT" keys create --account "$account" --permissions read,write "${admin[@]}" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
curl -sk "https://localhost:$API/v1/webhooks" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d "{\"url\":\"http://127.0.0.1:$HOOK/hook\",\"events\":[\"tracking.updated\",\"load.status_changed\"],\"secret\":\"soak-secret-0123456789\"}" >/dev/null
python3 benches/wrk/setup.py "$API" "$DATA/tls/cert.pem" "$KEY" "$LOADS" >"$WORK/loads"

metric() { curl -s "http://127.0.0.1:$ADMIN/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
sample() {
  printf '%6ss  rss %6s MiB  resident actors %6s  webhook backlog %6s  points stored %9s  deliveries received %8s\n' \
    "$1" "$(( $(awk '/VmRSS/ {print $2}' "/proc/$PID/status") / 1024 ))" \
    "$(metric freight_resident_load_actors)" "$(metric freight_webhook_backlog)" \
    "$(metric 'freight_gps_points_total{outcome="stored"}')" "$(cat "$WORK/received" 2>/dev/null || echo 0)"
}

echo "soak: $DURATION s of load over $LOADS loads (actors idle out after $IDLE s)"
WRK_LOADS="$WORK/loads" WRK_KEY="$KEY" wrk -t1 -c4 -d"${DURATION}s" -s benches/wrk/fix.lua "https://localhost:$API" >"$WORK/wrk-fix" &
WRK_LOADS="$WORK/loads" WRK_KEY="$KEY" wrk -t1 -c4 -d"${DURATION}s" -s benches/wrk/read.lua "https://localhost:$API" >"$WORK/wrk-read" &
start=$(date +%s)
while [ $(( $(date +%s) - start )) -lt "$DURATION" ]; do
  sleep "$INTERVAL"
  sample $(( $(date +%s) - start ))
done
wait %3 %4 2>/dev/null || true
grep -h "Requests/sec" "$WORK/wrk-fix" "$WORK/wrk-read" | sed 's/^/  wrk (fixes, reads): /'
if grep -q "Non-2xx" "$WORK/wrk-fix" "$WORK/wrk-read"; then echo "  refusals:"; grep -h "Non-2xx" "$WORK"/wrk-*; fi
echo "after the load: the actors' idle time, then until the receiver gets no more deliveries:"
sleep $(( IDLE + 30 ))
sample "end+$(( IDLE + 30 ))"
stopped=$(date +%s)
last=-1
while [ "$(cat "$WORK/received" 2>/dev/null || echo 0)" != "$last" ] && [ $(( $(date +%s) - stopped )) -lt 900 ]; do
  last=$(cat "$WORK/received" 2>/dev/null || echo 0)
  sleep 10
done
sample "end+$(( $(date +%s) - stopped + IDLE + 30 ))"
