"""Gives each load listed in a file a device of its own, attached to it, for
the device ingest comparison (benches/wrk/devices.sh). Prints the devices'
tokens, one a line, in the loads' order.

    python3 device_setup.py <port> <cert.pem> <key> <loads file>
"""

import http.client
import json
import ssl
import sys

port, cert, key, loads_file = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
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


for n, load in enumerate(line.strip() for line in open(loads_file) if line.strip()):
    device = call("POST", "/devices", {"name": f"Truck {n}"})
    call("PUT", f"/loads/{load}/device", {"device_id": device["id"]})
    print(device["token"])
