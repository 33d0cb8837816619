"""Verifies captured webhook deliveries with the Standard Webhooks library, as
a receiver written in Python would (tests/api/webhooks.rs runs this).

Usage: verify_webhooks.py DELIVERIES.json, a list of objects with the
subscription's `signing_secret` (as the create answer gave it) and one
delivery: `id`, `timestamp`, `signature` (the three webhook-* headers) and
`body` (the raw body as text). Each must verify with its secret and fail with
another one; exits non-zero at the first that does not.
"""

import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

WRONG = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"  # a valid key, but not theirs


def main(path):
    with open(path, encoding="utf-8") as file:
        deliveries = json.load(file)
    for delivery in deliveries:
        headers = {
            "webhook-id": delivery["id"],
            "webhook-timestamp": delivery["timestamp"],
            "webhook-signature": delivery["signature"],
        }
        payload = Webhook(delivery["signing_secret"]).verify(delivery["body"], headers)
        if payload["id"] != delivery["id"]:
            sys.exit(f"payload id {payload['id']} is not webhook-id {delivery['id']}")
        try:
            Webhook(WRONG).verify(delivery["body"], headers)
        except WebhookVerificationError:
            pass
        else:
            sys.exit(f"{delivery['id']} verified with the wrong secret")
    print(f"verified {len(deliveries)} deliveries")


if __name__ == "__main__":
    main(sys.argv[1])
