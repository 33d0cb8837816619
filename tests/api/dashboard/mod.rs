//! The dashboard as a browser uses it, over HTTPS: cookies, forms, redirects.
//! (The walk in a real browser is `tests/browser`; these check the rules.)

use std::collections::HashMap;

use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};

use crate::helpers::{TestApp, assert_error, load_body, spawn_app};

/// A cookie jar and a client that does not follow redirects.
pub(crate) struct Browser {
    client: reqwest::Client,
    origin: String,
    cookies: HashMap<String, String>,
    /// Every `Set-Cookie` seen, for checking flags.
    set_cookies: Vec<String>,
    /// Behind a TLS proxy: the client address the proxy reports.
    forwarded_for: Option<String>,
}

pub(crate) struct Page {
    pub(crate) status: StatusCode,
    pub(crate) location: Option<String>,
    pub(crate) body: String,
}

impl Page {
    /// The value of the hidden input `name` in the page's first form that has one.
    pub(crate) fn hidden(&self, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self
            .body
            .find(&marker)
            .unwrap_or_else(|| panic!("no {name} in page"))
            + marker.len();
        let end = self.body[start..].find('"').unwrap() + start;
        self.body[start..end].to_owned()
    }
}

impl Browser {
    pub(crate) fn new(app: &TestApp) -> Self {
        let pem = std::fs::read(app.data_dir.path().join("tls/cert.pem")).unwrap();
        let client = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()])
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Browser {
            client,
            origin: format!("https://localhost:{}", app.api_port),
            cookies: HashMap::new(),
            set_cookies: Vec::new(),
            forwarded_for: None,
        }
    }

    /// A browser at `address`, reaching a server that runs behind a TLS proxy
    /// (`ApiTransport::BehindTlsProxy`) through that proxy.
    pub(super) fn at(app: &TestApp, address: &str) -> Self {
        Browser {
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            origin: format!("http://127.0.0.1:{}", app.api_port),
            cookies: HashMap::new(),
            set_cookies: Vec::new(),
            forwarded_for: Some(address.to_owned()),
        }
    }

    pub(super) async fn send(&mut self, request: reqwest::RequestBuilder) -> Page {
        let jar: Vec<String> = self
            .cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut request = request.header(COOKIE, jar.join("; "));
        if let Some(address) = &self.forwarded_for {
            request = request
                .header("x-forwarded-proto", "https")
                .header("x-forwarded-for", address);
        }
        let response = request.send().await.unwrap();
        for header in response.headers().get_all(SET_COOKIE) {
            let text = header.to_str().unwrap().to_owned();
            let (pair, _) = text.split_once(';').unwrap_or((&text, ""));
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
            self.set_cookies.push(text);
        }
        Page {
            status: response.status(),
            location: response
                .headers()
                .get(LOCATION)
                .map(|l| l.to_str().unwrap().to_owned()),
            body: response.text().await.unwrap(),
        }
    }

    pub(crate) async fn get(&mut self, path: &str) -> Page {
        let request = self.client.get(format!("{}{path}", self.origin));
        self.send(request).await
    }

    pub(crate) async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let body = serde_urlencoded::to_string(fields).unwrap();
        let request = self
            .client
            .post(format!("{}{path}", self.origin))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        self.send(request).await
    }

    /// Registers (the answer, which signs nobody in).
    pub(super) async fn sign_up(&mut self, email: &str, password: &str) -> Page {
        let form = self.get("/dashboard/register").await;
        let token = form.hidden("form_token");
        self.post(
            "/dashboard/register",
            &[
                ("form_token", &token),
                ("company", "Acme Logistics"),
                ("email", email),
                ("password", password),
                ("password_confirmation", password),
            ],
        )
        .await
    }

    /// Registers a new account, then logs in to it; the log-in's answer.
    pub(crate) async fn register(&mut self, email: &str) -> Page {
        let registered = self.sign_up(email, "correct horse battery").await;
        assert_eq!(
            registered.status,
            StatusCode::SEE_OTHER,
            "{}",
            registered.body
        );
        let login = self.get(registered.location.as_deref().unwrap()).await;
        let fields = [
            ("form_token", login.hidden("form_token")),
            ("email", email.to_owned()),
            ("password", "correct horse battery".to_owned()),
            ("next", login.hidden("next")),
        ];
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.post("/dashboard/login", &fields).await
    }
}

#[actix_web::test]
async fn register_choose_pro_generate_a_key_and_use_it() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    assert_eq!(
        browser.get("/").await.location.as_deref(),
        Some("/dashboard")
    );
    let signed_out = browser.get("/dashboard/loads").await;
    assert_eq!(signed_out.status, StatusCode::SEE_OTHER);
    assert!(signed_out.location.unwrap().starts_with("/dashboard/login"));

    let registered = browser.register("Dispatch@Acme.example").await;
    assert_eq!(registered.status, StatusCode::SEE_OTHER);
    assert_eq!(
        registered.location.as_deref(),
        Some("/dashboard/plan?welcome=1"),
        "registering, then logging in, leads to the plans"
    );
    let session = browser
        .set_cookies
        .iter()
        .find(|c| c.starts_with("__Host-freight_session="))
        .expect("a session cookie");
    for flag in ["Secure", "HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(session.contains(flag), "{flag} missing from {session}");
    }

    let plan = browser.get("/dashboard/plan").await;
    assert!(
        plan.body.contains("id=\"current-plan\">standard<"),
        "{}",
        plan.body
    );
    let csrf = plan.hidden("csrf");
    let chosen = browser
        .post("/dashboard/plan", &[("csrf", &csrf), ("plan", "pro")])
        .await;
    assert_eq!(chosen.status, StatusCode::SEE_OTHER);
    let plan = browser.get("/dashboard/plan").await;
    assert!(plan.body.contains("id=\"current-plan\">pro<"));

    let generated = browser
        .post(
            "/dashboard/settings/api-keys",
            &[
                ("csrf", &csrf),
                ("permissions", "read"),
                ("permissions", "write"),
                ("description", "dispatch board"),
            ],
        )
        .await;
    assert_eq!(generated.status, StatusCode::OK);
    let key = generated
        .body
        .split("id=\"new-key\" readonly value=\"")
        .nth(1)
        .unwrap();
    let key = &key[..key.find('"').unwrap()];
    assert!(key.starts_with("frk_"));

    let (status, body) = app.get_as(key, "/auth/verify").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let response = app
        .client
        .get(app.url("/loads"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["x-ratelimit-limit"],
        "10000",
        "the Pro quota"
    );
    // The API does not take the session cookie instead of a key.
    let cookie_only = app
        .client
        .get(app.url("/loads"))
        .header(
            COOKIE,
            format!(
                "__Host-freight_session={}",
                browser.cookies["__Host-freight_session"]
            ),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(cookie_only.status(), StatusCode::UNAUTHORIZED);

    // Revoked in the dashboard, refused by the API.
    let keys = browser.get("/dashboard/settings/api-keys").await;
    let key_id = keys.body.split("data-key-id=\"").nth(1).unwrap();
    let key_id = &key_id[..key_id.find('"').unwrap()];
    let revoked = browser
        .post(
            &format!("/dashboard/settings/api-keys/{key_id}/revoke"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(revoked.status, StatusCode::SEE_OTHER);
    let (status, body) = app.get_as(key, "/auth/verify").await;
    assert_error(status, &body, 401, "REVOKED_API_KEY");

    // Signed out, the pages are closed again, and the old cookie opens nothing.
    let old = browser.cookies["__Host-freight_session"].clone();
    let out = browser.post("/dashboard/logout", &[("csrf", &csrf)]).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert!(!browser.cookies.contains_key("__Host-freight_session"));
    browser.cookies.insert("__Host-freight_session".into(), old);
    let closed = browser.get("/dashboard/plan").await;
    assert_eq!(closed.status, StatusCode::SEE_OTHER);
}

#[actix_web::test]
async fn forms_without_their_token_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    // Sign-up without the form token (a cross-site post): refused.
    let refused = browser
        .post(
            "/dashboard/register",
            &[
                ("company", "X"),
                ("email", "x@example.com"),
                ("password", "correct horse battery"),
                ("password_confirmation", "correct horse battery"),
            ],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(refused.body.contains("This form has expired"));

    browser.register("ops@example.com").await;
    let plan = browser.get("/dashboard/plan").await;
    let wrong = browser
        .post(
            "/dashboard/plan",
            &[("csrf", "not-the-token"), ("plan", "pro")],
        )
        .await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    let missing = browser.post("/dashboard/plan", &[("plan", "pro")]).await;
    assert_eq!(missing.status, StatusCode::FORBIDDEN);
    let after = browser.get("/dashboard/plan").await;
    assert!(after.body.contains("id=\"current-plan\">standard<"));
    assert_eq!(plan.status, StatusCode::OK);
}

#[actix_web::test]
async fn loads_by_hand_follow_the_api_rules_and_stay_in_their_account() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    browser.register("planner@example.com").await;
    let form = browser.get("/dashboard/loads/new").await;
    let csrf = form.hidden("csrf");
    // The API's rules and words: every problem at once, named by field.
    let bad = browser
        .post(
            "/dashboard/loads",
            &[("csrf", &csrf), ("origin.city", "Dallas"), ("weight", "-5")],
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    // The summary names each field as people read it, linked to its input.
    for (field, id) in [
        ("Origin state", "f-origin-state"),
        ("Destination city", "f-destination-city"),
        ("Weight", "f-weight"),
        ("Equipment type", "f-equipment_type"),
    ] {
        assert!(
            bad.body.contains(&format!("<a href=\"#{id}\">{field}</a>")),
            "{field}: {}",
            bad.body
        );
    }
    let created = browser
        .post(
            "/dashboard/loads",
            &[
                ("csrf", &csrf),
                ("origin.city", "Dallas"),
                ("origin.state", "TX"),
                ("origin.zip", "75201"),
                ("destination.city", "Atlanta"),
                ("destination.state", "GA"),
                ("destination.zip", "30301"),
                ("weight", "42000"),
                ("equipment_type", "dry_van"),
                ("pickup_date", "2030-01-02T08:00"),
            ],
        )
        .await;
    assert_eq!(created.status, StatusCode::SEE_OTHER);
    let page = created.location.unwrap();
    let shown = browser.get(&page).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert!(shown.body.contains("2 Jan 2030, 08:00 UTC"));
    // A load with no GPS yet says so, not "the latest 0 GPS points".
    assert!(shown.body.contains("No GPS points yet"), "{}", shown.body);
    assert!(!shown.body.contains("latest 0 GPS"));

    // Another account's load, and the first start's loads, are not found here.
    let (_, other) = app.post("/loads", load_body("TX", "OK")).await;
    let foreign = other["data"]["id"].as_str().unwrap();
    let hidden = browser.get(&format!("/dashboard/loads/{foreign}")).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    assert!(hidden.body.contains("belongs to another account"));
    assert_eq!(
        browser.get("/dashboard/loads/nonsense").await.status,
        StatusCode::NOT_FOUND
    );
}

impl Browser {
    /// Opens an event stream at `path` with this browser's cookies.
    pub(super) async fn stream(&self, path: &str) -> crate::event_stream::EventStream {
        let jar: Vec<String> = self
            .cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let response = self
            .client
            .get(format!("{}{path}", self.origin))
            .header(COOKIE, jar.join("; "))
            .send()
            .await
            .unwrap();
        crate::event_stream::EventStream::open(response).await
    }

    /// Tries to sign in; the answer's status (303 signed in, 200 the form
    /// again, 429 throttled).
    pub(crate) async fn sign_in(&mut self, email: &str, password: &str) -> StatusCode {
        let form = self.get("/dashboard/login").await;
        let token = form.hidden("form_token");
        let fields = [
            ("form_token", token.as_str()),
            ("email", email),
            ("password", password),
        ];
        self.post("/dashboard/login", &fields).await.status
    }
}

mod devices;
mod pages;
mod stops;
mod tracker_setup;
mod users;
