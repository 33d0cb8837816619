//! The OpenAPI document: served without a key, lists exactly the routes the
//! server has, and real answers (successes and refusals) match it: every status
//! is documented for its operation, with its content type, and every body
//! validates against the declared schema with every object closed, so an
//! undocumented field fails too. `contract` checks an answer against the
//! document; `answers` and `answers_tracking` walk every operation.

mod answers;
mod answers_tracking;
mod contract;

use contract::{is_event_stream, schema_errors};

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_media_type, spawn_app};

pub(super) const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// Ids of the right shapes that name nothing.
pub(super) const MISSING_LOAD: &str = "load_01jd5ex0k3m2v8q4r6t9w1y3z5";
pub(super) const MISSING_CARRIER: &str = "carrier_01jd5ex0k3m2v8q4r6t9w1y3z5";
pub(super) const MISSING_WEBHOOK: &str = "wh_01jd5ex0k3m2v8q4r6t9w1y3z5";
pub(super) const MISSING_EVENT: &str = "evt_01jd5ex0k3m2v8q4r6t9w1y3z5";

pub(super) fn root(app: &TestApp) -> String {
    format!("https://localhost:{}", app.api_port)
}

pub(super) async fn fetch_document(app: &TestApp) -> Value {
    let response = app
        .client
        .get(format!("{}/v1/openapi.json", root(app)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    response.json().await.unwrap()
}

/// `(METHOD, path)` of every operation in the document.
pub(super) fn documented(doc: &Value) -> BTreeSet<(String, String)> {
    let mut operations = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            // A path item may hold more than operations (`parameters`, `summary`).
            if [
                "get", "put", "post", "delete", "options", "head", "patch", "trace",
            ]
            .contains(&method.as_str())
            {
                operations.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    operations
}

/// The path with each `{parameter}` replaced by `args`, in order.
pub(super) fn fill(template: &str, args: &[&str]) -> String {
    let mut path = String::new();
    let mut rest = template;
    let mut args = args.iter();
    while let Some(open) = rest.find('{') {
        let close = rest.find('}').unwrap();
        path.push_str(&rest[..open]);
        path.push_str(args.next().expect("an argument per parameter"));
        rest = &rest[close + 1..];
    }
    assert!(args.next().is_none(), "more arguments than parameters");
    path + rest
}

#[actix_web::test]
pub(super) async fn the_document_and_its_page_are_public() {
    let app = spawn_app().await;
    let doc = fetch_document(&app).await;
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        doc,
        serde_json::from_str::<Value>(&freight::openapi::json()).unwrap()
    );
    // Every operation is filed under one tag the document describes; the
    // account's settings under their own, not with API keys.
    let tags: BTreeSet<&str> = doc["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let mut tag_of = std::collections::BTreeMap::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            let Some(id) = op["operationId"].as_str() else {
                continue;
            };
            let tag = op["tags"][0]
                .as_str()
                .unwrap_or_else(|| panic!("{id}: no tag"));
            assert!(tags.contains(tag), "{id}: tag {tag} is not described");
            tag_of.insert(id, tag);
        }
    }
    assert_eq!(tag_of["get_account_settings"], "account");
    assert_eq!(tag_of["change_account_settings"], "account");
    assert_eq!(tag_of["verify_api_key"], "auth");

    let page = app
        .client
        .get(format!("{}/v1/docs", root(&app)))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_media_type(&page, "text/html");
    assert!(page.headers().contains_key("content-security-policy"));
    let html = page.text().await.unwrap();
    // Everything the page loads is served here: it works offline.
    for asset in [
        "/v1/docs/swagger-ui.css",
        "/v1/docs/swagger-ui-bundle.js",
        "/v1/docs/swagger-initializer.js",
    ] {
        assert!(html.contains(asset), "{asset}");
        let response = app
            .client
            .get(format!("{}{asset}", root(&app)))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{asset}");
        assert!(response.headers().contains_key("cache-control"));
        assert!(!response.bytes().await.unwrap().is_empty());
    }
    assert!(!html.contains("http://") && !html.contains("https://"));
}

/// Every schema compiles (its patterns are valid regular expressions) and every
/// example in the document, of a schema or of a request body, is valid: clients
/// copy them, and fuzzers start from them.
#[test]
pub(super) fn the_examples_in_the_document_are_valid() {
    let doc: Value = serde_json::from_str(&freight::openapi::json()).unwrap();
    let components = &doc["components"];
    let mut checked = 0;
    let mut examples = Vec::new();
    collect_examples(
        "#/components/schemas",
        &components["schemas"],
        &mut examples,
    );
    for (name, schema) in components["schemas"].as_object().unwrap() {
        schema_errors(components, schema, &json!(null))
            .unwrap_or_else(|e| panic!("{name} does not compile: {e}"));
    }
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            for (status, response) in operation["responses"].as_object().into_iter().flatten() {
                let Some(json) = response.pointer("/content/application~1json") else {
                    continue;
                };
                if !status.starts_with('2') || path == "/v1/openapi.json" {
                    continue;
                }
                let example = json
                    .get("example")
                    .unwrap_or_else(|| panic!("{method} {path} {status} has no example"));
                examples.push((
                    format!("{method} {path} {status}"),
                    json["schema"].clone(),
                    example.clone(),
                ));
            }
            let Some(content) = operation.pointer("/requestBody/content/application~1json") else {
                continue;
            };
            let mut bodies: Vec<Value> = content.get("example").cloned().into_iter().collect();
            for example in content["examples"].as_object().into_iter().flatten() {
                bodies.push(example.1["value"].clone());
            }
            assert!(!bodies.is_empty(), "{method} {path} has no body example");
            for body in bodies {
                examples.push((format!("{method} {path}"), content["schema"].clone(), body));
            }
        }
    }
    for (what, schema, example) in examples {
        let errors = schema_errors(components, &schema, &example).unwrap();
        assert!(
            errors.is_empty(),
            "{what}: example {example} is invalid: {errors:?}"
        );
        checked += 1;
    }
    assert!(checked > 20, "only {checked} examples");
}

/// `(where, schema, example)` of every schema below `value` that has `examples`;
/// `at` is where `value` is, as a JSON pointer.
pub(super) fn collect_examples(at: &str, value: &Value, out: &mut Vec<(String, Value, Value)>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(examples)) = map.get("examples") {
                for example in examples {
                    out.push((at.to_owned(), value.clone(), example.clone()));
                }
            }
            for (key, value) in map {
                collect_examples(&format!("{at}/{key}"), value, out);
            }
        }
        Value::Array(items) => {
            for (i, value) in items.iter().enumerate() {
                collect_examples(&format!("{at}/{i}"), value, out);
            }
        }
        _ => {}
    }
}

/// Every route the server registers is in the document and vice versa; and the
/// route table is what the server really routes: each documented operation is
/// routed, every other method of its path is 405 with the right `Allow`.
#[actix_web::test]
pub(super) async fn the_document_lists_exactly_the_routes_served() {
    let app = spawn_app().await;
    let doc = fetch_document(&app).await;
    let documented = documented(&doc);
    let served: BTreeSet<(String, String)> = freight::routes::all_routes()
        .into_iter()
        // The reference page's static files are not operations of the API.
        .filter(|(_, path)| !path.starts_with(freight::routes::docs::ASSET_PREFIX))
        .map(|(method, path)| (method.to_owned(), path))
        .collect();
    let undocumented: Vec<_> = served.difference(&documented).collect();
    let unserved: Vec<_> = documented.difference(&served).collect();
    assert!(
        undocumented.is_empty(),
        "routes missing from the document: {undocumented:?}"
    );
    assert!(
        unserved.is_empty(),
        "documented but not served: {unserved:?}"
    );

    let paths: BTreeSet<&String> = documented.iter().map(|(_, path)| path).collect();
    for template in paths {
        let path = template
            .replace("{load_id}", MISSING_LOAD)
            .replace("{carrier_id}", MISSING_CARRIER)
            .replace("{delivery_id}", MISSING_EVENT)
            .replace("{id}", MISSING_WEBHOOK);
        let allowed: Vec<&str> = METHODS
            .into_iter()
            .filter(|m| documented.contains(&(m.to_string(), template.clone())))
            .collect();
        for method in METHODS {
            let response = app
                .client
                .request(
                    Method::from_bytes(method.as_bytes()).unwrap(),
                    format!("{}{path}", root(&app)),
                )
                .bearer_auth(&app.key)
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            let status = response.status();
            let allow = response
                .headers()
                .get("allow")
                .map(|v| v.to_str().unwrap().to_owned());
            // A stream never ends by itself: its headers say enough here.
            let body: Value = match is_event_stream(&response) {
                true => Value::Null,
                false => response.json().await.unwrap_or(Value::Null),
            };
            if allowed.contains(&method) {
                assert_ne!(
                    body["error"]["code"], "NOT_FOUND",
                    "{method} {template} is not routed"
                );
                assert_ne!(
                    status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {template}"
                );
            } else {
                assert_eq!(
                    status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {template}: {body}"
                );
                let mut allow: Vec<String> =
                    allow.unwrap().split(", ").map(str::to_owned).collect();
                allow.sort();
                let mut expected: Vec<String> = allowed.iter().map(|m| m.to_string()).collect();
                expected.sort();
                assert_eq!(allow, expected, "Allow of {template}");
            }
        }
    }
}

/// "Try it out" works today: the served request examples, sent as they are
/// (a carrier, a load, its assignment and a fix whose time was moved to the
/// present), are accepted.
#[actix_web::test]
async fn the_served_request_examples_are_accepted_today() {
    let app = spawn_app().await;
    let doc = fetch_document(&app).await;
    // The one example, or the first of several.
    let example = |path: &str, method: &str| -> Value {
        let content = format!(
            "/paths/{}/{method}/requestBody/content/application~1json",
            path.replace('~', "~0").replace('/', "~1")
        );
        let content = doc.pointer(&content).unwrap();
        let first = content["examples"]
            .as_object()
            .and_then(|all| all.values().next())
            .map(|named| named["value"].clone());
        content
            .get("example")
            .cloned()
            .or(first)
            .unwrap_or_else(|| panic!("no example for {method} {path}"))
    };
    let (status, carrier) = app.post("/carriers", example("/v1/carriers", "post")).await;
    assert_eq!(status, StatusCode::CREATED, "{carrier}");
    let (status, load) = app.post("/loads", example("/v1/loads", "post")).await;
    assert_eq!(status, StatusCode::CREATED, "{load}");
    let id = load["data"]["id"].as_str().unwrap();
    let mut assign = example("/v1/loads/{load_id}/status", "patch");
    if assign.get("carrier_id").is_some() {
        assign["carrier_id"] = carrier["data"]["id"].clone();
    }
    let (status, assigned) = app.patch(&format!("/loads/{id}/status"), assign).await;
    assert_eq!(status, StatusCode::OK, "{assigned}");
    let fix = example("/v1/loads/{load_id}/tracking", "post");
    let (status, stored) = app.post(&format!("/loads/{id}/tracking"), fix).await;
    assert_eq!(status, StatusCode::CREATED, "{stored}");
    let mut batch = example("/v1/tracking/batch", "post");
    for point in batch["points"].as_array_mut().unwrap() {
        point["load_id"] = json!(id);
    }
    let (status, answer) = app.post("/tracking/batch", batch).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["data"]["rejected"], 0, "{answer}");
}
