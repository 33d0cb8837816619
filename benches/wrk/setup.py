"""Seeds a running freight for the wrk comparison: a carrier and N loads
assigned to it (so they take GPS fixes), each with ten fixes from yesterday (so a
read returns a full live view: position, ETA, recent points), over one
keep-alive HTTPS connection. Prints the load ids, one a line.

    python3 setup.py <port> <cert.pem> <key> <loads>
"""

import datetime
import http.client
import json
import ssl
import sys

port, cert, key, count = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
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
for _ in range(count):
    load = call("POST", "/loads", {
        "origin": place("Dallas", "TX", "75201"),
        "destination": place("Atlanta", "GA", "30301"),
        "weight": 42000,
        "equipment_type": "dry_van",
    })["id"]
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
