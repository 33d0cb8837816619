"""Seeds a running freight for the wrk comparison: a carrier and N loads
assigned to it (so they take GPS fixes), each with ten fixes from yesterday (so a
read returns a full live view: position, ETA, recent points), over one
keep-alive HTTPS connection. Prints the load ids, one a line. Each load has
<stops> stops (default 2: origin and destination; more are stops along the
way from Dallas to Atlanta, as the `stops` array makes them).

    python3 setup.py <port> <cert.pem> <key> <loads> [<stops>]
"""

import datetime
import http.client
import json
import ssl
import sys

port, cert, key, count = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
stop_count = int(sys.argv[5]) if len(sys.argv) > 5 else 2
context = ssl.create_default_context(cafile=cert)
connection = http.client.HTTPSConnection("localhost", port, context=context)
headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


def call(method, path, body):
    connection.request(method, f"/v1{path}", json.dumps(body), headers)
    response = connection.getresponse()
    answer = json.loads(response.read())
    if response.status >= 300:
        sys.exit(f"{method} {path}: {response.status} {answer}")
    return answer["data"]


carrier = call("POST", "/carriers", {"name": "Bench Hauling", "mc_number": "424242"})["id"]
loads = []
place = lambda city, state, zip_code: {"city": city, "state": state, "zip": zip_code}
# Along the way, in order: where the loads of more than two stops stop.
WAYPOINTS = [
    place("Shreveport", "LA", "71101"),
    place("Jackson", "MS", "39201"),
    place("Meridian", "MS", "39301"),
    place("Birmingham", "AL", "35203"),
]


def new_load():
    if stop_count == 2:
        return {
            "origin": place("Dallas", "TX", "75201"),
            "destination": place("Atlanta", "GA", "30301"),
        }
    middle = WAYPOINTS[:stop_count - 2]
    stops = [{"type": "pickup", "location": place("Dallas", "TX", "75201")}]
    stops += [{"type": "pickup" if i == 0 else "delivery", "location": p} for i, p in enumerate(middle)]
    stops.append({"type": "delivery", "location": place("Atlanta", "GA", "30301")})
    return {"stops": stops}


for _ in range(count):
    load = call("POST", "/loads", {**new_load(), "weight": 42000, "equipment_type": "dry_van"})["id"]
    call("PATCH", f"/loads/{load}/status", {"status": "assigned", "carrier_id": carrier})
    loads.append(load)
    print(load)

yesterday = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)
points = [
    {
        "load_id": load,
        "lat": 32.78 + 0.05 * n,
        "lng": -96.80 + 0.08 * n,
        "timestamp": (yesterday + datetime.timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "speed": 58.0,
        "heading": 75,
    }
    for load in loads
    for n in range(10)
]
for start in range(0, len(points), 1000):
    stored = call("POST", "/tracking/batch", {"points": points[start:start + 1000]})
    if stored["rejected"]:
        sys.exit(f"seeding fixes: {stored['rejected']} rejected")
