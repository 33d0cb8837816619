//! The OpenAPI document: served without a key, lists exactly the routes the
//! server has, and real answers (successes and refusals) match it: every status
//! is documented for its operation, with its content type, and every body
//! validates against the declared schema with every object closed, so an
//! undocumented field fails too.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use freight::domain::webhook::UrlPolicy;
use freight::webhooks::dispatcher::DispatchSettings;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::event_stream::EventStream;
use crate::helpers::{
    TestApp, assert_media_type, carrier_body, eventually, load_body, spawn_app, spawn_app_with,
};
use crate::receiver::Receiver;

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// Ids of the right shapes that name nothing.
const MISSING_LOAD: &str = "load_01jd5ex0k3m2v8q4r6t9w1y3z5";
const MISSING_CARRIER: &str = "carrier_01jd5ex0k3m2v8q4r6t9w1y3z5";
const MISSING_WEBHOOK: &str = "wh_01jd5ex0k3m2v8q4r6t9w1y3z5";
const MISSING_EVENT: &str = "evt_01jd5ex0k3m2v8q4r6t9w1y3z5";

fn root(app: &TestApp) -> String {
    format!("https://localhost:{}", app.api_port)
}

async fn fetch_document(app: &TestApp) -> Value {
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
fn documented(doc: &Value) -> BTreeSet<(String, String)> {
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
fn fill(template: &str, args: &[&str]) -> String {
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
async fn the_document_and_its_page_are_public() {
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
fn the_examples_in_the_document_are_valid() {
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
fn collect_examples(at: &str, value: &Value, out: &mut Vec<(String, Value, Value)>) {
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
async fn the_document_lists_exactly_the_routes_served() {
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

/// Checks answers against the document and remembers which operations answered.
struct Contract {
    doc: Value,
    /// `components` with every object schema closed (see [`close_objects`]).
    components: Value,
    /// (METHOD, path template) → statuses seen.
    seen: Mutex<BTreeMap<(String, String), BTreeSet<u16>>>,
}

/// Sets `additionalProperties: false` on every object schema that lists its
/// properties and says nothing of others, so a field the document does not
/// mention fails validation. (The served document leaves objects open, as
/// clients should tolerate new fields.)
fn close_objects(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            map.values_mut().for_each(close_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

/// What is wrong with `instance` under `schema`, whose `$ref`s point into
/// `#/components`; `Err` if the schema does not compile.
fn schema_errors(
    components: &Value,
    schema: &Value,
    instance: &Value,
) -> Result<Vec<String>, String> {
    let root = json!({"components": components, "allOf": [schema]});
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&root)
        .map_err(|e| e.to_string())?;
    Ok(validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect())
}

impl Contract {
    async fn of(app: &TestApp) -> Contract {
        let doc = fetch_document(app).await;
        let mut components = doc["components"].clone();
        close_objects(&mut components["schemas"]);
        Contract {
            doc,
            components,
            seen: Mutex::new(BTreeMap::new()),
        }
    }

    fn resolve<'a>(&'a self, value: &'a Value) -> &'a Value {
        match value["$ref"].as_str() {
            Some(pointer) => self
                .doc
                .pointer(pointer.trim_start_matches('#'))
                .unwrap_or_else(|| panic!("unresolved {pointer}")),
            None => value,
        }
    }

    fn validate(&self, schema: &Value, instance: &Value, what: &str) {
        let mut schema = schema.clone();
        close_objects(&mut schema);
        let errors = schema_errors(&self.components, &schema, instance)
            .unwrap_or_else(|e| panic!("{what}: schema does not compile: {e}"));
        assert!(errors.is_empty(), "{what}: {errors:#?}\nin {instance:#}");
    }

    /// Checks one answer of `method template` and returns its status and body.
    async fn check(
        &self,
        method: &str,
        template: &str,
        response: reqwest::Response,
    ) -> (StatusCode, Value) {
        let status = response.status();
        let what = format!("{method} {template} → {}", status.as_u16());
        let operation = &self.doc["paths"][template][method.to_lowercase()];
        assert!(
            operation.is_object(),
            "{what}: no such operation in the document"
        );
        let declared = operation["responses"]
            .get(status.as_u16().to_string())
            .unwrap_or_else(|| panic!("{what}: status not documented"));
        let declared = self.resolve(declared);
        for (name, header) in declared["headers"].as_object().into_iter().flatten() {
            if let Some(value) = response.headers().get(name.as_str()) {
                let value = value.to_str().unwrap();
                let schema = &header["schema"];
                let value = match schema["type"].as_str() {
                    Some("integer") => json!(value.parse::<i64>().unwrap_or_else(|_| {
                        panic!("{what}: header {name}: {value} is not an integer")
                    })),
                    _ => json!(value),
                };
                self.validate(schema, &value, &format!("{what} header {name}"));
            }
        }
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| {
                v.to_str()
                    .unwrap()
                    .split(';')
                    .next()
                    .unwrap()
                    .trim()
                    .to_owned()
            })
            .unwrap_or_default();
        let content = declared["content"]
            .get(&content_type)
            .unwrap_or_else(|| panic!("{what}: content type {content_type:?} not documented"));
        let text = if content_type == "text/event-stream" {
            // A stream goes on until the client closes it: its start is checked
            // (`EventStream::open`) and the rest left unread.
            EventStream::open(response).await;
            String::new()
        } else {
            response.text().await.unwrap()
        };
        let body = if content_type == "application/json" {
            let body: Value =
                serde_json::from_str(&text).unwrap_or_else(|_| panic!("{what}: not JSON: {text}"));
            self.validate(&content["schema"], &body, &what);
            body
        } else {
            Value::String(text)
        };
        self.seen
            .lock()
            .unwrap()
            .entry((method.to_owned(), template.to_owned()))
            .or_default()
            .insert(status.as_u16());
        (status, body)
    }
}

fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// One request against an operation of the document.
struct Call<'a> {
    client: &'a Client<'a>,
    method: &'static str,
    template: &'static str,
    path: String,
    query: Option<String>,
    key: String,
    headers: Vec<(&'static str, String)>,
    body: Option<(&'static str, Vec<u8>)>,
}

impl Call<'_> {
    fn json(mut self, body: Value) -> Self {
        self.body = Some(("application/json", serde_json::to_vec(&body).unwrap()));
        self
    }

    fn raw(mut self, content_type: &'static str, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some((content_type, body.into()));
        self
    }

    /// The query string, as written (not encoded here).
    fn query(mut self, query: &str) -> Self {
        self.query = Some(query.to_owned());
        self
    }

    fn key(mut self, key: &str) -> Self {
        self.key = key.to_owned();
        self
    }

    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }

    async fn send(self) -> (StatusCode, Value) {
        let app = self.client.app;
        let mut url = format!("{}{}", root(app), self.path);
        if let Some(query) = &self.query {
            url = format!("{url}?{query}");
        }
        let mut request = app
            .client
            .request(Method::from_bytes(self.method.as_bytes()).unwrap(), url);
        // A call that brings its own Authorization (OwnTracks' Basic) sends
        // only that one: a second would be refused as a duplicate header.
        if !self
            .headers
            .iter()
            .any(|(name, _)| *name == "authorization")
        {
            request = request.header("authorization", format!("Bearer {}", self.key));
        }
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        if let Some((content_type, body)) = self.body {
            request = request.header("content-type", content_type).body(body);
        }
        let response = request.send().await.unwrap();
        self.client
            .contract
            .check(self.method, self.template, response)
            .await
    }

    /// Sends and asserts the status.
    async fn expect(self, status: u16) -> Value {
        let what = format!("{} {} {:?}", self.method, self.path, self.query);
        let (got, body) = self.send().await;
        assert_eq!(got.as_u16(), status, "{what}: {body}");
        body
    }
}

struct Client<'a> {
    app: &'a TestApp,
    contract: &'a Contract,
}

impl Client<'_> {
    /// `template` is a path of the document; `args` fill its parameters in order.
    /// Sent with the app's key unless [`Call::key`] replaces it.
    fn call(&self, method: &'static str, template: &'static str, args: &[&str]) -> Call<'_> {
        Call {
            client: self,
            method,
            template,
            path: fill(template, args),
            query: None,
            key: self.app.key.clone(),
            headers: Vec::new(),
            body: None,
        }
    }
}

fn at(app: &TestApp, minutes_ago: i64) -> String {
    (app.clock.now() - chrono::Duration::minutes(minutes_ago))
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// A realistic run through every operation, successes and refusals, each answer
/// checked against the document.
#[actix_web::test]
async fn real_answers_match_the_document() {
    let app = spawn_app_with(|s| {
        s.webhooks = DispatchSettings {
            url_policy: UrlPolicy {
                allow_http: true,
                allow_private: true,
            },
            tick: Duration::from_millis(20),
            ..DispatchSettings::default()
        }
    })
    .await;
    let contract = Contract::of(&app).await;
    let api = Client {
        app: &app,
        contract: &contract,
    };
    api.call("GET", "/v1/openapi.json", &[]).expect(200).await;
    api.call("GET", "/v1/docs", &[]).expect(200).await;
    keys(&api).await;
    let (load_id, idle_id) = loads(&api).await;
    idempotency(&api).await;
    let carrier_id = carriers(&api).await;
    // Subscribed before the load moves, so that there are deliveries to list.
    let receiver = Receiver::start(200).await;
    let hook_id = webhooks(&api, &receiver).await;
    tracking_and_lifecycle(&api, &load_id, &idle_id, &carrier_id).await;
    delivery_log(&api, &receiver, &hook_id).await;
    devices(&api).await;
    share_links(&api, &load_id).await;
    account_settings(&api).await;
    corrections(&api).await;
    quota(&api).await;
    outside_operations(&api).await;
    the_checker_bites(&api, &load_id).await;

    // Every operation was exercised, its success answer included.
    let seen = contract.seen.lock().unwrap();
    for (method, path) in documented(&contract.doc) {
        let statuses = seen.get(&(method.clone(), path.clone()));
        assert!(
            statuses.is_some_and(|s| s.iter().any(|s| (200..300).contains(s))),
            "{method} {path} was not exercised with success: {statuses:?}"
        );
    }
}

/// Loads and carriers corrected, a carrier deleted.
async fn corrections(api: &Client<'_>) {
    let created = api
        .call("POST", "/v1/loads", &[])
        .json(crate::helpers::load_body("TX", "GA"))
        .expect(201)
        .await;
    let load = created["data"]["id"].as_str().unwrap().to_owned();
    api.call("PATCH", "/v1/loads/{load_id}", &[&load])
        .json(json!({"weight": 40500, "reference": "PO-CONTRACT", "notes": null}))
        .expect(200)
        .await;
    api.call("PATCH", "/v1/loads/{load_id}", &[&load])
        .json(json!({"weight": -1}))
        .expect(400)
        .await;
    api.call("PATCH", "/v1/loads/{load_id}", &["load_nope"])
        .json(json!({"weight": 1}))
        .expect(404)
        .await;
    let carrier = api
        .call("POST", "/v1/carriers", &[])
        .json(carrier_body("818181"))
        .expect(201)
        .await;
    let carrier = carrier["data"]["id"].as_str().unwrap().to_owned();
    api.call("PATCH", "/v1/carriers/{carrier_id}", &[&carrier])
        .json(json!({"contact": {"phone": "+1 214-555-0199"}}))
        .expect(200)
        .await;
    api.call("PATCH", "/v1/carriers/{carrier_id}", &[&carrier])
        .json(json!({"mc_number": "1"}))
        .expect(400)
        .await;
    api.call("DELETE", "/v1/carriers/{carrier_id}", &[&carrier])
        .expect(200)
        .await;
    api.call("DELETE", "/v1/carriers/{carrier_id}", &[&carrier])
        .expect(404)
        .await;
}

/// The account's stop settings: read, changed, refused.
async fn account_settings(api: &Client<'_>) {
    let path = "/v1/account/settings";
    api.call("GET", path, &[]).expect(200).await;
    api.call("PATCH", path, &[])
        .json(json!({"late_after_minutes": 20}))
        .expect(200)
        .await;
    api.call("PATCH", path, &[])
        .json(json!({"early_before_minutes": 1441}))
        .expect(400)
        .await;
}

/// Share links of a load: made, refused, listed, revoked.
async fn share_links(api: &Client<'_>, load: &str) {
    let path = "/v1/loads/{load_id}/share-links";
    let created = api
        .call("POST", path, &[load])
        .json(json!({}))
        .expect(201)
        .await;
    let id = created["data"]["id"].as_str().unwrap().to_owned();
    api.call("POST", path, &[load])
        .json(json!({"expires_at": "2020-01-01T00:00:00Z"}))
        .expect(400)
        .await;
    api.call("POST", path, &["load_nope"])
        .json(json!({}))
        .expect(404)
        .await;
    api.call("GET", path, &[load]).expect(200).await;
    api.call(
        "DELETE",
        "/v1/loads/{load_id}/share-links/{link_id}",
        &[load, &id],
    )
    .expect(200)
    .await;
    api.call(
        "DELETE",
        "/v1/loads/{load_id}/share-links/{link_id}",
        &[load, "shl_nope"],
    )
    .expect(404)
    .await;
}

/// Devices, their loads, and what they post in each protocol.
async fn devices(api: &Client<'_>) {
    let created = api
        .call("POST", "/v1/devices", &[])
        .json(json!({"name": "Truck 12"}))
        .expect(201)
        .await;
    let id = created["data"]["id"].as_str().unwrap().to_owned();
    let token = created["data"]["token"].as_str().unwrap().to_owned();
    api.call("POST", "/v1/devices", &[])
        .json(json!({"name": ""}))
        .expect(400)
        .await;
    api.call("GET", "/v1/devices", &[]).expect(200).await;
    api.call("GET", "/v1/devices/{device_id}", &[&id])
        .expect(200)
        .await;
    api.call("GET", "/v1/devices/{device_id}", &["dev_nope"])
        .expect(404)
        .await;
    let (load, _) = {
        let body = api
            .call("POST", "/v1/loads", &[])
            .json(crate::helpers::load_body("TX", "GA"))
            .expect(201)
            .await;
        (body["data"]["id"].as_str().unwrap().to_owned(), ())
    };
    let device_of = "/v1/loads/{load_id}/device";
    api.call("PUT", device_of, &[&load])
        .json(json!({"device_id": id}))
        .expect(200)
        .await;
    api.call("PUT", device_of, &[&load])
        .json(json!({"device_id": "dev_nope"}))
        .expect(400)
        .await;

    // What devices post (the load is posted: taken, not stored).
    let now = api.app.clock.now().timestamp();
    let query = format!("id={token}&lat=32.7&lon=-96.8&timestamp={now}&speed=20");
    api.call("GET", "/v1/ingest/osmand", &[])
        .query(&query)
        .expect(200)
        .await;
    api.call("POST", "/v1/ingest/osmand", &[])
        .query(&query)
        .expect(200)
        .await;
    api.call("POST", "/v1/ingest/osmand", &[])
        .query("id=frd_nope&lat=32.7&lon=-96.8")
        .expect(401)
        .await;
    api.call("GET", "/v1/ingest/osmand", &[])
        .query(&format!("id={token}&lat=99&lon=-96.8"))
        .expect(400)
        .await;
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("driver:{token}")
        )
    );
    api.call("POST", "/v1/ingest/owntracks", &[])
        .header("authorization", &basic)
        .json(json!({"_type": "location", "lat": 32.7, "lon": -96.8, "tst": now, "vel": 80}))
        .expect(200)
        .await;
    api.call("POST", "/v1/ingest/overland", &[])
        .key(&token)
        .json(json!({"locations": [{"type": "Feature",
            "geometry": {"type": "Point", "coordinates": [-96.8, 32.7]},
            "properties": {"timestamp": at(api.app, 1), "speed": 10}}]}))
        .expect(200)
        .await;
    api.call("POST", "/v1/ingest/overland", &[])
        .key(&token)
        .raw("application/json", "not json")
        .expect(400)
        .await;

    api.call("DELETE", device_of, &[&load]).expect(200).await;
    api.call("DELETE", "/v1/devices/{device_id}", &[&id])
        .expect(200)
        .await;
    api.call("POST", "/v1/ingest/overland", &[])
        .key(&token)
        .json(json!({"locations": []}))
        .expect(401)
        .await;
}

/// Keys: working, missing, malformed, without the permission.
async fn keys(api: &Client<'_>) {
    api.call("GET", "/v1/auth/verify", &[]).expect(200).await;
    api.call("GET", "/v1/auth/verify", &[])
        .key("")
        .expect(401)
        .await;
    api.call("GET", "/v1/auth/verify", &[])
        .key("frk_nonsense")
        .expect(401)
        .await;
    let (account, _) = api.app.new_account().await;
    let reader = api.app.new_key(&account, &["read"], None).await;
    api.call("GET", "/v1/auth/verify", &[])
        .key(&reader)
        .expect(200)
        .await;
    api.call("POST", "/v1/loads", &[])
        .key(&reader)
        .json(load_body("TX", "GA"))
        .expect(403)
        .await;
    api.call("GET", "/v1/auth/verify", &[])
        .query("x=1")
        .expect(400)
        .await;
}

/// Loads: created (a full one and a bare one), refused, listed, read; returns
/// the ids of the two.
async fn loads(api: &Client<'_>) -> (String, String) {
    let mut full = load_body("TX", "GA");
    full["origin"]["address"] = json!("1200 Main St");
    full["pickup_date"] = json!("2026-03-02T08:00:00Z");
    full["delivery_date"] = json!("2026-03-03T17:00:00.250Z");
    full["rate"] = json!(1850.5);
    full["notes"] = json!("Dock 4");
    let load = api
        .call("POST", "/v1/loads", &[])
        .json(full)
        .expect(201)
        .await;
    let load_id = load["data"]["id"].as_str().unwrap().to_owned();
    let idle = api
        .call("POST", "/v1/loads", &[])
        .json(load_body("tx", "ok"))
        .expect(201)
        .await;
    let idle_id = idle["data"]["id"].as_str().unwrap().to_owned();
    api.call("POST", "/v1/loads", &[])
        .json(json!({"weight": -1, "bogus": 1}))
        .expect(400)
        .await;
    api.call("POST", "/v1/loads", &[])
        .raw("application/json", "{nope")
        .expect(400)
        .await;
    api.call("POST", "/v1/loads", &[])
        .raw("text/plain", "hello")
        .expect(415)
        .await;
    api.call("POST", "/v1/loads", &[])
        .raw("application/json", vec![b' '; 70 * 1024])
        .expect(413)
        .await;
    api.call("GET", "/v1/loads", &[]).expect(200).await;
    api.call("GET", "/v1/loads", &[])
        .query("page=1&limit=1&status=posted&origin_state=tx&destination_state=GA")
        .expect(200)
        .await;
    api.call("GET", "/v1/loads", &[])
        .query("staus=posted")
        .expect(400)
        .await;
    api.call("GET", "/v1/loads", &[])
        .query("limit=101")
        .expect(400)
        .await;
    api.call("GET", "/v1/loads/{load_id}", &[&load_id])
        .expect(200)
        .await;
    api.call("GET", "/v1/loads/{load_id}", &[MISSING_LOAD])
        .expect(404)
        .await;
    api.call("GET", "/v1/loads/{load_id}", &["nonsense"])
        .expect(404)
        .await;
    (load_id, idle_id)
}

/// A replayed answer, a reused key and a malformed key.
async fn idempotency(api: &Client<'_>) {
    let (first_status, first) = api
        .call("POST", "/v1/loads", &[])
        .header("idempotency-key", "conformance-1")
        .json(load_body("CA", "NV"))
        .send()
        .await;
    assert_eq!(first_status, StatusCode::CREATED);
    let replay = api
        .call("POST", "/v1/loads", &[])
        .header("idempotency-key", "conformance-1")
        .json(load_body("CA", "NV"))
        .expect(201)
        .await;
    assert_eq!(replay, first);
    api.call("POST", "/v1/loads", &[])
        .header("idempotency-key", "conformance-1")
        .json(load_body("CA", "AZ"))
        .expect(422)
        .await;
    api.call("POST", "/v1/loads", &[])
        .header("idempotency-key", "has space")
        .json(load_body("CA", "AZ"))
        .expect(400)
        .await;
}

/// Carriers: created, a duplicate, refused, listed, read; returns one's id.
async fn carriers(api: &Client<'_>) -> String {
    let carrier = api
        .call("POST", "/v1/carriers", &[])
        .json(carrier_body("0424242"))
        .expect(201)
        .await;
    let carrier_id = carrier["data"]["id"].as_str().unwrap().to_owned();
    api.call("POST", "/v1/carriers", &[])
        .json(json!({"name": "Bare Minimum", "mc_number": "77"}))
        .expect(201)
        .await;
    api.call("POST", "/v1/carriers", &[])
        .json(carrier_body("424242"))
        .expect(409)
        .await;
    api.call("POST", "/v1/carriers", &[])
        .json(json!({"name": " ", "mc_number": "MC-", "equipment_types": ["spaceship"]}))
        .expect(400)
        .await;
    api.call("GET", "/v1/carriers", &[]).expect(200).await;
    api.call("GET", "/v1/carriers", &[])
        .query("page=2&limit=1")
        .expect(200)
        .await;
    api.call("GET", "/v1/carriers/{carrier_id}", &[&carrier_id])
        .expect(200)
        .await;
    api.call("GET", "/v1/carriers/{carrier_id}", &[MISSING_CARRIER])
        .expect(404)
        .await;

    carrier_id
}

/// Subscriptions: created, refused, listed, read, changed, tested; returns the
/// id of one that sends to `receiver`.
async fn webhooks(api: &Client<'_>, receiver: &Receiver) -> String {
    let hook = api
        .call("POST", "/v1/webhooks", &[])
        .json(json!({
            "url": format!("{}/hook", receiver.base),
            "events": ["load.assigned", "load.status_changed", "tracking.updated", "delivery.completed"],
            "secret": "a-very-secret-shared-key"
        }))
        .expect(201)
        .await;
    let hook_id = hook["data"]["id"].as_str().unwrap().to_owned();
    api.call("POST", "/v1/webhooks", &[])
        .json(json!({"url": "ftp://x", "events": [], "secret": "short"}))
        .expect(400)
        .await;
    api.call("GET", "/v1/webhooks", &[]).expect(200).await;
    api.call("GET", "/v1/webhooks/{id}", &[&hook_id])
        .expect(200)
        .await;
    api.call("GET", "/v1/webhooks/{id}", &[MISSING_WEBHOOK])
        .expect(404)
        .await;
    api.call("PATCH", "/v1/webhooks/{id}", &[&hook_id])
        .json(json!({"events": ["load.assigned", "load.status_changed", "tracking.updated", "delivery.completed", "load.created"]}))
        .expect(200)
        .await;
    api.call("PATCH", "/v1/webhooks/{id}", &[&hook_id])
        .json(json!({"secret": "x"}))
        .expect(400)
        .await;
    api.call("POST", "/v1/webhooks/{id}/test", &[&hook_id])
        .expect(200)
        .await;
    receiver.answer(500);
    api.call("POST", "/v1/webhooks/{id}/test", &[&hook_id])
        .expect(200)
        .await;
    receiver.answer(200);
    api.call("POST", "/v1/webhooks/{id}/test", &[MISSING_WEBHOOK])
        .expect(404)
        .await;

    hook_id
}

/// Fixes, batches, the live view and history, through the whole status lifecycle.
async fn tracking_and_lifecycle(api: &Client<'_>, load_id: &str, idle_id: &str, carrier_id: &str) {
    let fix = json!({"lat": 32.7767, "lng": -96.797, "timestamp": at(api.app, 3), "speed": 55.5, "heading": 90});
    api.call("POST", "/v1/loads/{load_id}/tracking", &[load_id])
        .json(fix.clone())
        .expect(409)
        .await;
    let status = "/v1/loads/{load_id}/status";
    api.call("PATCH", status, &[load_id])
        .json(json!({"status": "delivered"}))
        .expect(409)
        .await;
    api.call("PATCH", status, &[load_id])
        .json(json!({"status": "assigned"}))
        .expect(400)
        .await;
    api.call("PATCH", status, &[load_id])
        .json(json!({"status": "assigned", "carrier_id": MISSING_CARRIER}))
        .expect(400)
        .await;
    api.call("PATCH", status, &[MISSING_LOAD])
        .json(json!({"status": "posted"}))
        .expect(404)
        .await;
    api.call("PATCH", status, &[load_id])
        .json(json!({"status": "assigned", "carrier_id": carrier_id}))
        .expect(200)
        .await;
    let tracking = "/v1/loads/{load_id}/tracking";
    let history = "/v1/loads/{load_id}/tracking/history";
    let mut stream = streams(api, load_id).await;
    api.call("POST", tracking, &[load_id])
        .json(fix.clone())
        .expect(201)
        .await;
    let update = stream.event().await;
    assert_eq!(update.event.as_deref(), Some("tracking.updated"));
    let schema = json!({"$ref": "#/components/schemas/TrackingUpdate"});
    api.contract
        .validate(&schema, &update.json(), "a tracking.updated event's data");
    api.call("POST", tracking, &[load_id])
        .json(fix)
        .expect(200)
        .await;
    api.call("POST", tracking, &[load_id])
        .json(json!({"lat": 95, "lng": -96.8, "timestamp": "2020-01-01T00:00:00Z", "load_id": load_id}))
        .expect(400)
        .await;
    api.call("POST", tracking, &[MISSING_LOAD])
        .json(json!({"lat": 32.8, "lng": -96.8, "timestamp": at(api.app, 1)}))
        .expect(404)
        .await;
    api.call("PATCH", status, &[load_id])
        .json(json!({"status": "in_transit", "location": {"lat": 32.78, "lng": -96.8}, "notes": "Picked up"}))
        .expect(200)
        .await;
    let batch = api
        .call("POST", "/v1/tracking/batch", &[])
        .json(json!({"points": [
            {"load_id": load_id, "lat": 32.9, "lng": -96.5, "timestamp": at(api.app, 2)},
            {"load_id": load_id, "lat": 32.9, "lng": -96.5, "timestamp": at(api.app, 2)},
            {"load_id": load_id, "lat": 33.0, "lng": -96.0, "timestamp": at(api.app, 1), "speed": 61, "heading": 75.5},
            {"load_id": idle_id, "lat": 33.0, "lng": -96.0, "timestamp": at(api.app, 1)},
            {"load_id": MISSING_LOAD, "lat": 33.0, "lng": -96.0, "timestamp": at(api.app, 1)},
            {"lat": "north", "extra": true},
            {"load_id": load_id, "lat": 91, "lng": 0, "timestamp": "yesterday"}
        ]}))
        .expect(200)
        .await;
    assert_eq!(batch["data"]["rejected"], 4, "{batch}");
    api.call("POST", "/v1/tracking/batch", &[])
        .json(json!({"points": []}))
        .expect(400)
        .await;
    api.call("POST", "/v1/tracking/batch", &[])
        .json(json!([]))
        .expect(400)
        .await;
    api.call("GET", tracking, &[load_id]).expect(200).await;
    api.call("GET", tracking, &[idle_id]).expect(200).await;
    api.call("GET", tracking, &[load_id])
        .query("points=1")
        .expect(200)
        .await;
    api.call("GET", tracking, &[load_id])
        .query("points=11")
        .expect(400)
        .await;
    api.call("GET", tracking, &[MISSING_LOAD]).expect(404).await;
    api.call("GET", "/v1/loads/{load_id}", &[load_id])
        .expect(200)
        .await;
    let page = api
        .call("GET", history, &[load_id])
        .query("limit=2")
        .expect(200)
        .await;
    let cursor = page["pagination"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let last = api
        .call("GET", history, &[load_id])
        .query(&format!("limit=2&cursor={cursor}"))
        .expect(200)
        .await;
    assert!(last["pagination"]["next_cursor"].is_null(), "{last}");
    api.call("GET", history, &[load_id]).expect(200).await;
    api.call("GET", history, &[idle_id]).expect(200).await;
    api.call("GET", history, &[load_id])
        .query("from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z")
        .expect(400)
        .await;
    api.call("GET", history, &[MISSING_LOAD]).expect(404).await;
    api.call("PATCH", status, &[load_id])
        .json(json!({"status": "delivered"}))
        .expect(200)
        .await;
    api.call("GET", "/v1/loads/{load_id}", &[load_id])
        .expect(200)
        .await;
    api.call("GET", "/v1/loads", &[])
        .query("status=delivered")
        .expect(200)
        .await;
}

/// The live streams: opened, refused; returns an open stream of the load.
async fn streams(api: &Client<'_>, load_id: &str) -> EventStream {
    let account = "/v1/tracking/stream";
    let load = "/v1/loads/{load_id}/tracking/stream";
    api.call("GET", account, &[]).expect(200).await;
    api.call("GET", load, &[load_id]).expect(200).await;
    api.call("GET", account, &[])
        .query("last_event_id=nope")
        .expect(400)
        .await;
    api.call("GET", load, &[MISSING_LOAD]).expect(404).await;
    api.call("GET", load, &[load_id]).key("").expect(401).await;
    let writer = api.app.new_key(&api.app.account_id, &["write"], None).await;
    api.call("GET", account, &[]).key(&writer).expect(403).await;
    let path = fill(load, &[load_id]);
    let response = api.app.get_response(&path["/v1".len()..]).await;
    EventStream::open(response).await
}

/// The delivery log once the events have gone out, a redelivery, and deletion.
async fn delivery_log(api: &Client<'_>, receiver: &Receiver, hook_id: &str) {
    receiver.wait_for("events", |r| r.len() >= 5).await;
    let deliveries = "/v1/webhooks/{id}/deliveries";
    let log = eventually(
        Duration::from_secs(20),
        "every delivery delivered",
        || async {
            let log = api.call("GET", deliveries, &[hook_id]).expect(200).await;
            let entries = log["data"]["deliveries"].as_array().unwrap();
            match !entries.is_empty() && entries.iter().all(|d| d["status"] == "delivered") {
                true => Ok(log),
                false => Err(log.to_string()),
            }
        },
    )
    .await;
    api.call("GET", deliveries, &[hook_id])
        .query("limit=1")
        .expect(200)
        .await;
    api.call("GET", deliveries, &[MISSING_WEBHOOK])
        .expect(404)
        .await;
    let event = log["data"]["deliveries"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let redeliver = "/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver";
    api.call("POST", redeliver, &[hook_id, &event])
        .expect(202)
        .await;
    api.call("POST", redeliver, &[hook_id, MISSING_EVENT])
        .expect(404)
        .await;
    api.call("POST", redeliver, &[MISSING_WEBHOOK, &event])
        .expect(404)
        .await;
    api.call("PATCH", "/v1/webhooks/{id}", &[hook_id])
        .json(json!({"enabled": false}))
        .expect(200)
        .await;
    api.call("DELETE", "/v1/webhooks/{id}", &[hook_id])
        .expect(200)
        .await;
    api.call("DELETE", "/v1/webhooks/{id}", &[hook_id])
        .expect(404)
        .await;
}

/// A quota of one request an hour: the second is refused.
async fn quota(api: &Client<'_>) {
    let (status, tiny) = api
        .app
        .admin(
            Method::POST,
            "/accounts",
            Some(json!({"name": "Tiny", "plan": "enterprise", "requests_per_hour": 1})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{tiny}");
    let tiny_key = api
        .app
        .new_key(
            tiny["data"]["id"].as_str().unwrap(),
            &["read", "write"],
            None,
        )
        .await;
    api.call("GET", "/v1/loads", &[])
        .key(&tiny_key)
        .expect(200)
        .await;
    api.call("GET", "/v1/loads", &[])
        .key(&tiny_key)
        .expect(429)
        .await;
}

/// Refusals outside any operation (405, an unknown path) still use the error
/// envelope.
async fn outside_operations(api: &Client<'_>) {
    let error = api.contract.resolve(&api.contract.doc["components"]["responses"]["BadRequest"])["content"]
        ["application/json"]["schema"]
        .clone();
    for (method, path, status) in [
        (Method::PUT, "/v1/loads", 405),
        (Method::DELETE, "/v1/openapi.json", 405),
        (Method::GET, "/v1/nowhere", 404),
    ] {
        let response = api
            .app
            .client
            .request(method.clone(), format!("{}{path}", root(api.app)))
            .bearer_auth(&api.app.key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), status, "{method} {path}");
        let body: Value = response.json().await.unwrap();
        api.contract
            .validate(&error, &body, &format!("{method} {path}"));
    }
}

/// The checker itself bites: an undocumented or a missing field fails.
async fn the_checker_bites(api: &Client<'_>, load_id: &str) {
    let loaded = api
        .call("GET", "/v1/loads/{load_id}", &[load_id])
        .expect(200)
        .await;
    let envelope = &api.contract.doc["paths"]["/v1/loads/{load_id}"]["get"]["responses"]["200"]["content"]
        ["application/json"]["schema"];
    let mut extra = loaded.clone();
    extra["data"]["surprise"] = json!(1);
    let mut missing = loaded.clone();
    missing["data"].as_object_mut().unwrap().remove("currency");
    for wrong in [extra, missing] {
        let mut schema = envelope.clone();
        close_objects(&mut schema);
        assert!(
            !schema_errors(&api.contract.components, &schema, &wrong)
                .unwrap()
                .is_empty()
        );
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
