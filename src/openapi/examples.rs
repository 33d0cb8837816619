//! The answers the document shows: real ones, captured from a running server
//! by `capture_examples.py` (a carrier, a load walked to in transit, its fixes
//! and history, a batch, a webhook and its delivery log) into `examples.json`,
//! keyed by `"<operationId> <status>"`. Generated examples (from bare schemas)
//! read `"state": "AL"` next to `"city": "Dallas"`; these are consistent: one
//! load, one carrier, one webhook throughout. `tests/api/openapi.rs` checks
//! each against its schema.
//!
//! Times matter: a fix older than 30 days is refused, so a request example with
//! a fixed date stops working a month after it was written. [`to_the_present`]
//! moves every time in the served document by the same amount, so that the
//! capture's latest times read as a minute ago: order and gaps are kept, and a
//! request example's fix is accepted today.

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use utoipa::Modify;
use utoipa::openapi::OpenApi;

use crate::domain::timestamp;

/// The captured answers.
const EXAMPLES: &str = include_str!("examples.json");

/// When the capture ran: the latest fix in it was taken a little before. Times
/// in request examples (`routes::tracking`) are written in the same minutes.
pub const CAPTURED_AT: &str = "2026-11-24T16:05:46Z";

/// Sets each operation's captured answer as its `example`.
pub struct Examples;

impl Modify for Examples {
    fn modify(&self, doc: &mut OpenApi) {
        let examples: serde_json::Map<String, Value> =
            serde_json::from_str(EXAMPLES).expect("examples.json is a JSON object");
        for item in doc.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ];
            for operation in operations.into_iter().flatten() {
                let Some(id) = operation.operation_id.clone() else {
                    continue;
                };
                for (status, response) in operation.responses.responses.iter_mut() {
                    let (utoipa::openapi::RefOr::T(response), Some(example)) =
                        (response, examples.get(&format!("{id} {status}")))
                    else {
                        continue;
                    };
                    if let Some(json) = response.content.get_mut("application/json") {
                        json.example = Some(example.clone());
                    }
                }
            }
        }
    }
}

/// `document`, with every time in it moved so that [`CAPTURED_AT`] reads as
/// one minute before `now`.
pub fn to_the_present(document: &mut Value, now: DateTime<Utc>) {
    let captured = timestamp::parse_utc(CAPTURED_AT).expect("CAPTURED_AT is a UTC time");
    shift(document, now - Duration::minutes(1) - captured);
}

fn shift(value: &mut Value, by: Duration) {
    match value {
        Value::String(text) => {
            // Whole strings that are times; descriptions that mention one are prose.
            if text.len() >= 20
                && text.as_bytes()[4] == b'-'
                && let Ok(at) = timestamp::parse_utc(text)
            {
                *text = timestamp::format(&(at + by));
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| shift(v, by)),
        Value::Object(map) => map.values_mut().for_each(|v| shift(v, by)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_move_together_and_prose_stays() {
        let captured = timestamp::parse_utc(CAPTURED_AT).unwrap();
        let earlier = timestamp::format(&(captured - Duration::minutes(1)));
        let later = timestamp::format(&(captured + Duration::milliseconds(250)));
        let prose = format!("fixes after {earlier} are kept");
        let mut doc = serde_json::json!({"a": earlier, "b": [later], "c": prose, "d": "Dallas"});
        let now = timestamp::parse_utc("2027-02-01T10:00:00Z").unwrap();
        to_the_present(&mut doc, now);
        assert_eq!(doc["a"], "2027-02-01T09:58:00Z");
        assert_eq!(doc["b"][0], "2027-02-01T09:59:00.250Z");
        assert_eq!(doc["c"], prose.as_str());
        assert_eq!(doc["d"], "Dallas");
    }
}
