//! An answer checked against the document (`Contract`), and the calls that
//! check each answer as they make it (`Client`, `Call`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::event_stream::EventStream;
use crate::helpers::TestApp;

use super::*;

/// Checks answers against the document and remembers which operations answered.
pub(super) struct Contract {
    pub(super) doc: Value,
    /// `components` with every object schema closed (see [`close_objects`]).
    pub(super) components: Value,
    /// (METHOD, path template) → statuses seen.
    pub(super) seen: Mutex<BTreeMap<(String, String), BTreeSet<u16>>>,
}

/// Sets `additionalProperties: false` on every object schema that lists its
/// properties and says nothing of others, so a field the document does not
/// mention fails validation. (The served document leaves objects open, as
/// clients should tolerate new fields.)
pub(super) fn close_objects(schema: &mut Value) {
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
pub(super) fn schema_errors(
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
    pub(super) async fn of(app: &TestApp) -> Contract {
        let doc = fetch_document(app).await;
        let mut components = doc["components"].clone();
        close_objects(&mut components["schemas"]);
        Contract {
            doc,
            components,
            seen: Mutex::new(BTreeMap::new()),
        }
    }

    pub(super) fn resolve<'a>(&'a self, value: &'a Value) -> &'a Value {
        match value["$ref"].as_str() {
            Some(pointer) => self
                .doc
                .pointer(pointer.trim_start_matches('#'))
                .unwrap_or_else(|| panic!("unresolved {pointer}")),
            None => value,
        }
    }

    pub(super) fn validate(&self, schema: &Value, instance: &Value, what: &str) {
        let mut schema = schema.clone();
        close_objects(&mut schema);
        let errors = schema_errors(&self.components, &schema, instance)
            .unwrap_or_else(|e| panic!("{what}: schema does not compile: {e}"));
        assert!(errors.is_empty(), "{what}: {errors:#?}\nin {instance:#}");
    }

    /// Checks one answer of `method template` and returns its status and body.
    pub(super) async fn check(
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

pub(super) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// One request against an operation of the document.
pub(super) struct Call<'a> {
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
    pub(super) fn json(mut self, body: Value) -> Self {
        self.body = Some(("application/json", serde_json::to_vec(&body).unwrap()));
        self
    }

    pub(super) fn raw(mut self, content_type: &'static str, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some((content_type, body.into()));
        self
    }

    /// The query string, as written (not encoded here).
    pub(super) fn query(mut self, query: &str) -> Self {
        self.query = Some(query.to_owned());
        self
    }

    pub(super) fn key(mut self, key: &str) -> Self {
        self.key = key.to_owned();
        self
    }

    pub(super) fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }

    pub(super) async fn send(self) -> (StatusCode, Value) {
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
    pub(super) async fn expect(self, status: u16) -> Value {
        let what = format!("{} {} {:?}", self.method, self.path, self.query);
        let (got, body) = self.send().await;
        assert_eq!(got.as_u16(), status, "{what}: {body}");
        body
    }
}

pub(super) struct Client<'a> {
    pub(super) app: &'a TestApp,
    pub(super) contract: &'a Contract,
}

impl Client<'_> {
    /// `template` is a path of the document; `args` fill its parameters in order.
    /// Sent with the app's key unless [`Call::key`] replaces it.
    pub(super) fn call(
        &self,
        method: &'static str,
        template: &'static str,
        args: &[&str],
    ) -> Call<'_> {
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

pub(super) fn at(app: &TestApp, minutes_ago: i64) -> String {
    (app.clock.now() - chrono::Duration::minutes(minutes_ago))
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}
