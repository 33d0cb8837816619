"""Captures the response examples of the OpenAPI document (examples.json here)
from a real server, so that every example is an answer the service gave.

Run against a fresh `freight serve` (embedded store) with its first-start key:

    python3 src/openapi/capture_examples.py https://localhost:8443 frk_... data/tls/cert.pem

It walks a load through its life (carrier, load, assignment, fixes, history,
a batch, a webhook and its delivery log) and writes src/openapi/examples.json,
keyed by "<operationId> <status>". Times in it are shifted to the present when
the document is served (openapi::examples), so they keep their order and gaps.
"""

import datetime
import json
import ssl
import sys
import urllib.request

BASE, KEY, CA = sys.argv[1], sys.argv[2], sys.argv[3]
CONTEXT = ssl.create_default_context(cafile=CA)
CONTEXT.check_hostname = False


def call(method, path, body=None):
    request = urllib.request.Request(
        BASE + "/v1" + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, context=CONTEXT) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def at(minutes_ago):
    when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=minutes_ago)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


examples = {}


def keep(operation, answer):
    status, body = answer
    examples[f"{operation} {status}"] = body
    return body


webhook = keep("create_webhook", call("POST", "/webhooks", {
    "url": "https://93.184.216.34/freight", "events": ["load.assigned", "delivery.completed"]}))["data"]
carrier = keep("create_carrier", call("POST", "/carriers", {
    "name": "Lone Star Freight", "mc_number": "123456", "dot_number": "2345678",
    "contact": {"email": "dispatch@lonestarfreight.com", "phone": "+1-214-555-0134"},
    "equipment_types": ["dry_van", "refrigerated"], "service_areas": ["TX", "OK", "GA"]}))["data"]
load = keep("create_load", call("POST", "/loads", {
    "origin": {"city": "Dallas", "state": "TX", "zip": "75201", "address": "1500 Marilla St"},
    "destination": {"city": "Atlanta", "state": "GA", "zip": "30303"},
    "weight": 42000, "equipment_type": "dry_van", "rate": 2850.0,
    "pickup_date": at(-24 * 60), "delivery_date": at(-48 * 60),
    "notes": "Dock 4, call 30 minutes ahead"}))["data"]
path = "/loads/" + load["id"]
call("PATCH", path + "/status", {"status": "assigned", "carrier_id": carrier["id"]})
keep("change_load_status", call("PATCH", path + "/status", {
    "status": "in_transit", "location": {"lat": 32.7767, "lng": -96.797},
    "notes": "Picked up, 22 pallets"}))
keep("record_gps_fix", call("POST", path + "/tracking", {
    "lat": 32.9, "lng": -96.2, "timestamp": at(2), "speed": 62.0, "heading": 95.0}))
fix = {"lat": 32.95, "lng": -95.9, "timestamp": at(1), "speed": 64.5, "heading": 92.0}
keep("record_gps_fix", call("POST", path + "/tracking", fix))
keep("record_gps_fix", call("POST", path + "/tracking", fix))
keep("record_gps_batch", call("POST", "/tracking/batch", {"points": [
    dict(load_id=load["id"], lat=33.0, lng=-95.6, timestamp=at(0.5), speed=63.0, heading=90.0),
    dict(load_id=load["id"], **fix),
    dict(load_id=load["id"], lat=95.0, lng=-95.5, timestamp=at(0.25)),
]}))
keep("get_live_tracking", call("GET", path + "/tracking"))
keep("get_tracking_history", call("GET", path + "/tracking/history?limit=2"))
keep("get_load", call("GET", path))
keep("list_loads", call("GET", "/loads?status=in_transit&limit=1"))
keep("get_carrier", call("GET", "/carriers/" + carrier["id"]))
keep("list_carriers", call("GET", "/carriers?limit=1"))
keep("get_webhook", call("GET", "/webhooks/" + webhook["id"]))
keep("list_webhooks", call("GET", "/webhooks?limit=1"))
keep("update_webhook", call("PATCH", "/webhooks/" + webhook["id"], {"enabled": True}))
keep("verify_api_key", call("GET", "/auth/verify"))
keep("test_webhook", call("POST", "/webhooks/" + webhook["id"] + "/test"))
deliveries = keep("list_webhook_deliveries", call("GET", "/webhooks/" + webhook["id"] + "/deliveries"))
event = deliveries["data"]["deliveries"][0]["event_id"]
keep("redeliver_webhook_delivery", call(
    "POST", "/webhooks/" + webhook["id"] + "/deliveries/" + event + "/redeliver"))
spare = call("POST", "/webhooks", {"url": "https://93.184.216.34/spare", "events": ["load.created"]})
keep("delete_webhook", call("DELETE", "/webhooks/" + spare[1]["data"]["id"]))

# Receivers named here are not reachable from where this runs: the URL is shown
# as the example host, and the delivery log is the one this capture produced.
def receiver_error(value):
    """What an unreachable receiver looks like anywhere (this machine's network
    answers in its own way)."""
    if isinstance(value, dict):
        return {k: receiver_error(v) for k, v in value.items()}
    if isinstance(value, list):
        return [receiver_error(v) for v in value]
    if isinstance(value, str) and value.startswith("error sending request"):
        return "error sending request for url (https://hooks.example.com/freight): operation timed out"
    return value


text = json.dumps(receiver_error(examples), indent=1)
# The ids the document's schemas and path parameters show, for the load, the
# carrier, the webhook, the key and the account the capture made.
for prefix, made in [("load_", load["id"]), ("carrier_", carrier["id"]), ("wh_", webhook["id"])]:
    text = text.replace(made, prefix + "01jd5ex0k3m2v8q4r6t9w1y3z5").replace("https://93.184.216.34/", "https://hooks.example.com/")
with open(__file__.rsplit("/", 1)[0] + "/examples.json", "w", encoding="utf-8") as out:
    out.write(text + "\n")
print(f"{len(examples)} examples written")
