//! The dashboard as a browser uses it, over HTTPS: cookies, forms, redirects.
//! (The walk in a real browser is `tests/browser`; these check the rules.)

use std::collections::HashMap;

use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};

use crate::helpers::{TestApp, assert_error, load_body, spawn_app};

/// A cookie jar and a client that does not follow redirects.
struct Browser {
    client: reqwest::Client,
    origin: String,
    cookies: HashMap<String, String>,
    /// Every `Set-Cookie` seen, for checking flags.
    set_cookies: Vec<String>,
}

struct Page {
    status: StatusCode,
    location: Option<String>,
    body: String,
}

impl Page {
    /// The value of the hidden input `name` in the page's first form that has one.
    fn hidden(&self, name: &str) -> String {
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
    fn new(app: &TestApp) -> Self {
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
        }
    }

    async fn send(&mut self, request: reqwest::RequestBuilder) -> Page {
        let jar: Vec<String> = self
            .cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let response = request.header(COOKIE, jar.join("; ")).send().await.unwrap();
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

    async fn get(&mut self, path: &str) -> Page {
        let request = self.client.get(format!("{}{path}", self.origin));
        self.send(request).await
    }

    async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let body = serde_urlencoded::to_string(fields).unwrap();
        let request = self
            .client
            .post(format!("{}{path}", self.origin))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        self.send(request).await
    }

    /// Registers a new account and is signed in afterwards.
    async fn register(&mut self, email: &str) -> Page {
        let form = self.get("/dashboard/register").await;
        let token = form.hidden("form_token");
        self.post(
            "/dashboard/register",
            &[
                ("form_token", &token),
                ("company", "Acme Logistics"),
                ("email", email),
                ("password", "correct horse battery"),
                ("password_confirmation", "correct horse battery"),
            ],
        )
        .await
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
    for field in [
        "origin.state",
        "destination.city",
        "weight",
        "equipment_type",
    ] {
        assert!(
            bad.body.contains(&format!("<code>{field}</code>")),
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
    assert!(shown.body.contains("2030-01-02 08:00 UTC"));

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

#[actix_web::test]
async fn repeated_wrong_passwords_are_throttled() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    browser.register("locked@example.com").await;
    let mut guesser = Browser::new(&app);
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let form = guesser.get("/dashboard/login").await;
        let token = form.hidden("form_token");
        let tried = guesser
            .post(
                "/dashboard/login",
                &[
                    ("form_token", &token),
                    ("email", "locked@example.com"),
                    ("password", "wrong password 1"),
                ],
            )
            .await;
        statuses.push(tried.status);
    }
    assert_eq!(
        &statuses[..5],
        &[StatusCode::OK; 5],
        "wrong passwords re-show the form"
    );
    assert_eq!(statuses[5], StatusCode::TOO_MANY_REQUESTS);
    // The right password does not get through while the account is throttled.
    let form = guesser.get("/dashboard/login").await;
    let token = form.hidden("form_token");
    let right = guesser
        .post(
            "/dashboard/login",
            &[
                ("form_token", &token),
                ("email", "locked@example.com"),
                ("password", "correct horse battery"),
            ],
        )
        .await;
    assert_eq!(right.status, StatusCode::TOO_MANY_REQUESTS);
}

#[actix_web::test]
async fn an_account_has_several_users_and_sessions_can_be_ended_elsewhere() {
    let app = spawn_app().await;
    let mut first = Browser::new(&app);
    first.register("owner@example.com").await;
    let users = first.get("/dashboard/settings/users").await;
    let csrf = users.hidden("csrf");
    let added = first
        .post(
            "/dashboard/settings/users",
            &[
                ("csrf", &csrf),
                ("email", "Second@Example.com"),
                ("password", "another long password"),
            ],
        )
        .await;
    assert_eq!(added.status, StatusCode::SEE_OTHER);

    // The colleague signs in to the same account.
    let mut second = Browser::new(&app);
    let form = second.get("/dashboard/login").await;
    let token = form.hidden("form_token");
    let signed_in = second
        .post(
            "/dashboard/login",
            &[
                ("form_token", &token),
                ("email", "second@example.com"),
                ("password", "another long password"),
            ],
        )
        .await;
    assert_eq!(signed_in.status, StatusCode::SEE_OTHER);
    let listed = second.get("/dashboard/settings/users").await;
    assert!(
        listed.body.contains("owner@example.com")
            && listed.body.contains("second@example.com (you)")
    );

    // The owner in a second browser ends every other session of theirs.
    let mut elsewhere = Browser::new(&app);
    let form = elsewhere.get("/dashboard/login").await;
    let token = form.hidden("form_token");
    elsewhere
        .post(
            "/dashboard/login",
            &[
                ("form_token", &token),
                ("email", "owner@example.com"),
                ("password", "correct horse battery"),
            ],
        )
        .await;
    let page = elsewhere.get("/dashboard/settings/users").await;
    let ended = elsewhere
        .post(
            "/dashboard/settings/sessions/end-others",
            &[("csrf", &page.hidden("csrf"))],
        )
        .await;
    assert!(ended.body.contains("Signed out of 1 other session(s)."));
    assert_eq!(
        first.get("/dashboard/plan").await.status,
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        elsewhere.get("/dashboard/plan").await.status,
        StatusCode::OK
    );
    assert_eq!(
        second.get("/dashboard/plan").await.status,
        StatusCode::OK,
        "another user's session stays"
    );
}

#[actix_web::test]
async fn errors_are_pages_not_json() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    for (method, path, status) in [
        ("GET", "/dashboard/nowhere", StatusCode::NOT_FOUND),
        ("PUT", "/dashboard/plan", StatusCode::METHOD_NOT_ALLOWED),
        ("DELETE", "/dashboard/login", StatusCode::METHOD_NOT_ALLOWED),
    ] {
        let request = browser
            .client
            .request(method.parse().unwrap(), format!("{}{path}", browser.origin));
        let page = browser.send(request).await;
        assert_eq!(page.status, status, "{method} {path}");
        assert!(
            page.body.starts_with("<!DOCTYPE html>"),
            "{method} {path}: {}",
            page.body
        );
    }
}

#[actix_web::test]
async fn a_webhook_made_by_hand_shows_its_signing_secret_once() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    browser.register("hooks@example.com").await;
    let form = browser.get("/dashboard/webhooks").await;
    let csrf = form.hidden("csrf");
    let made = browser
        .post(
            "/dashboard/webhooks",
            &[
                ("csrf", &csrf),
                ("url", "https://93.184.216.34/hooks"),
                ("events", "load.created"),
                ("secret", ""),
            ],
        )
        .await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.body);
    let marker = "id=\"new-secret\" readonly value=\"";
    let start = made.body.find(marker).expect("the secret is shown") + marker.len();
    let secret = &made.body[start..start + made.body[start..].find('"').unwrap()];
    assert!(
        secret.starts_with("whsec_") && secret.len() > 30,
        "{secret}"
    );
    let id_marker = "Webhook <code>";
    let at = made.body.find(id_marker).unwrap() + id_marker.len();
    let id = &made.body[at..at + made.body[at..].find('<').unwrap()];
    let again = browser.get(&format!("/dashboard/webhooks/{id}")).await;
    assert_eq!(again.status, StatusCode::OK);
    assert!(!again.body.contains(secret), "shown only once");
    // Another account (the first start's key) does not see it.
    let (status, listed) = app.get(&format!("/webhooks/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another account's: {listed}");
}

/// The tenancy sweep for the dashboard: another account, signed in, opens and
/// posts to every page that names a resource with this account's ids (a load,
/// a webhook and its delivery, an API key): each is a 404 that shows none of
/// them, its lists and board show none of them, and afterwards nothing of this
/// account has changed (its key still works).
#[actix_web::test]
async fn another_account_reaches_nothing_of_this_one_by_any_page() {
    use serde_json::json;

    let receiver = crate::receiver::Receiver::start(200).await;
    let app = crate::helpers::spawn_app_with_local_webhooks().await;
    let (status, hook) = app
        .post(
            "/webhooks",
            json!({"url": format!("{}/hook", receiver.base), "events": ["load.created"]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");
    let webhook = hook["data"]["id"].as_str().unwrap().to_owned();
    let carrier = app.create_carrier("515151").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let load = app.create_load(load_body("TX", "GA")).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    receiver
        .wait_for("the load's delivery", |received| !received.is_empty())
        .await;
    let delivery = crate::helpers::first_delivery(&app, &webhook).await;
    let (_, keys) = app
        .admin(
            reqwest::Method::GET,
            &format!("/accounts/{}/keys", app.account_id),
            None,
        )
        .await;
    let key = keys["data"]["keys"][0]["id"].as_str().unwrap().to_owned();
    let snapshot = || async {
        let mut seen = Vec::new();
        for path in [
            format!("/loads/{load}"),
            format!("/webhooks/{webhook}"),
            format!("/webhooks/{webhook}/deliveries"),
            format!("/carriers/{carrier}"),
        ] {
            let (status, body) = app.get(&path).await;
            assert_eq!(status, StatusCode::OK, "{path}: {body}");
            seen.push(body["data"].clone());
        }
        seen
    };
    let before = snapshot().await;
    let ours = [&load, &webhook, &delivery, &carrier, &key];

    let mut browser = Browser::new(&app);
    browser.register("intruder@example.com").await;
    let csrf = browser.get("/dashboard/loads/new").await.hidden("csrf");
    let pages = [
        format!("/dashboard/loads/{load}"),
        format!("/dashboard/webhooks/{webhook}"),
        format!("/dashboard/settings/api-keys/{key}/revoke"),
    ];
    for path in &pages {
        let page = browser.get(path).await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "GET {path}");
        for id in ours {
            assert!(!page.body.contains(id.as_str()), "GET {path} showed {id}");
        }
    }
    let forms = [
        (
            format!("/dashboard/loads/{load}/status"),
            vec![
                ("csrf", csrf.as_str()),
                ("status", "assigned"),
                ("carrier_id", carrier.as_str()),
            ],
        ),
        (
            format!("/dashboard/webhooks/{webhook}/deliveries/{delivery}/redeliver"),
            vec![("csrf", csrf.as_str())],
        ),
        (
            format!("/dashboard/settings/api-keys/{key}/revoke"),
            vec![("csrf", csrf.as_str())],
        ),
    ];
    for (path, fields) in &forms {
        let page = browser.post(path, fields).await;
        assert_eq!(
            page.status,
            StatusCode::NOT_FOUND,
            "POST {path}: {}",
            page.body
        );
        for id in ours {
            assert!(!page.body.contains(id.as_str()), "POST {path} showed {id}");
        }
    }
    for path in [
        "/dashboard/loads",
        "/dashboard/carriers",
        "/dashboard/webhooks",
        "/dashboard/board",
        "/dashboard/board/loads.json",
        "/dashboard/settings/api-keys",
    ] {
        let page = browser.get(path).await;
        assert_eq!(page.status, StatusCode::OK, "GET {path}");
        for id in ours {
            assert!(!page.body.contains(id.as_str()), "{path} listed {id}");
        }
    }

    assert_eq!(snapshot().await, before, "nothing of this account changed");
    let (status, _) = app.get("/loads").await;
    assert_eq!(status, StatusCode::OK, "this account's key still works");
}
