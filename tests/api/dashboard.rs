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
    fn at(app: &TestApp, address: &str) -> Self {
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

    async fn send(&mut self, request: reqwest::RequestBuilder) -> Page {
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
    async fn sign_up(&mut self, email: &str, password: &str) -> Page {
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
    async fn stream(&self, path: &str) -> crate::helpers::EventStream {
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
        crate::helpers::EventStream::open(response).await
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

/// Wrong passwords are throttled per (email, client address) and per client
/// network, never per email alone: failing on purpose from anywhere cannot
/// lock the owner out.
#[actix_web::test]
async fn repeated_wrong_passwords_are_throttled_but_lock_nobody_out() {
    let app = crate::helpers::spawn_app_with(|s| {
        s.transport = freight::server::settings::ApiTransport::BehindTlsProxy
    })
    .await;
    let (owner, right, wrong) = (
        "locked@example.com",
        "correct horse battery",
        "wrong password 1",
    );
    Browser::at(&app, "192.0.2.10").register(owner).await;

    // One guesser at one address: five wrong passwords, then it waits, even
    // with the right one.
    let mut guesser = Browser::at(&app, "198.51.100.7");
    for n in 0..5 {
        assert_eq!(
            guesser.sign_in(owner, wrong).await,
            StatusCode::OK,
            "try {n}"
        );
    }
    assert_eq!(
        guesser.sign_in(owner, wrong).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        guesser.sign_in(owner, right).await,
        StatusCode::TOO_MANY_REQUESTS
    );

    // Five more wrong passwords from five places elsewhere: the owner, at an
    // address that has not failed, still signs in.
    for n in 1..=5 {
        let mut elsewhere = Browser::at(&app, &format!("203.0.{n}.9"));
        assert_eq!(elsewhere.sign_in(owner, wrong).await, StatusCode::OK);
    }
    assert_eq!(
        Browser::at(&app, "192.0.2.10").sign_in(owner, right).await,
        StatusCode::SEE_OTHER
    );

    // One network failing at many accounts: its failing addresses wait once
    // it has failed 20 times, for any account; an address of it that has not
    // failed is not refused.
    for n in 0..20 {
        let mut member = Browser::at(&app, &format!("198.18.7.{}", n % 4 + 1));
        let status = member
            .sign_in(&format!("nobody{n}@example.com"), wrong)
            .await;
        assert_eq!(status, StatusCode::OK, "failure {n}");
    }
    let mut failing = Browser::at(&app, "198.18.7.1");
    assert_eq!(
        failing.sign_in("someone-else@example.com", wrong).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        Browser::at(&app, "198.18.7.200")
            .sign_in(owner, right)
            .await,
        StatusCode::SEE_OTHER
    );

    // IPv6: one /64 is one address.
    for n in 1..=5 {
        let mut v6 = Browser::at(&app, &format!("2001:db8:5:6::{n}"));
        assert_eq!(v6.sign_in(owner, wrong).await, StatusCode::OK);
    }
    let mut same_64 = Browser::at(&app, "2001:db8:5:6:ffff::1");
    assert_eq!(
        same_64.sign_in(owner, right).await,
        StatusCode::TOO_MANY_REQUESTS
    );
    let mut other_64 = Browser::at(&app, "2001:db8:5:7::1");
    assert_eq!(other_64.sign_in(owner, right).await, StatusCode::SEE_OTHER);
}

impl Page {
    /// The value of the input with `id`.
    pub(crate) fn input(&self, id: &str) -> String {
        let marker = format!("id=\"{id}\" readonly value=\"");
        let start = self
            .body
            .find(&marker)
            .unwrap_or_else(|| panic!("no {id} in page: {}", self.body))
            + marker.len();
        let end = self.body[start..].find('"').unwrap() + start;
        self.body[start..end].replace("&amp;", "&")
    }
}

impl Browser {
    /// Invites `email` from the users page; the link's path and query.
    pub(crate) async fn invite(&mut self, email: &str) -> String {
        let users = self.get("/dashboard/settings/users").await;
        let made = self
            .post(
                "/dashboard/settings/users",
                &[("csrf", &users.hidden("csrf")), ("email", email)],
            )
            .await;
        assert_eq!(made.status, StatusCode::OK, "{}", made.body);
        let url = made.input("invitation-link");
        let path = url
            .strip_prefix(&self.origin)
            .unwrap_or_else(|| panic!("{url} is a link to this server"));
        assert!(path.starts_with("/dashboard/password?token="), "{path}");
        path.to_owned()
    }

    /// Opens a password link and chooses `password`; the answer.
    pub(crate) async fn choose_password(&mut self, link: &str, password: &str) -> Page {
        let form = self.get(link).await;
        assert_eq!(form.status, StatusCode::OK, "{}", form.body);
        let fields = [
            ("form_token", form.hidden("form_token")),
            ("token", form.hidden("token")),
            ("password", password.to_owned()),
            ("password_confirmation", password.to_owned()),
        ];
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.post("/dashboard/password", &fields).await
    }

    /// Posts a form of the users page (its CSRF token added).
    pub(crate) async fn on_users_page(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let users = self.get("/dashboard/settings/users").await;
        let csrf = users.hidden("csrf");
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post(path, &all).await
    }
}

/// More people join an account by a one-time invitation link; a user can be
/// removed (their sessions end at once, the last one cannot be) and can change
/// their password (their other sessions end).
#[actix_web::test]
async fn users_are_invited_removed_and_change_their_passwords() {
    let app = spawn_app().await;
    let owner_password = "correct horse battery";
    let mut owner = Browser::new(&app);
    owner.register("owner@example.com").await;
    let link = owner.invite("Second@Example.com").await;

    // The invitee opens the link: a refused password does not use it up.
    let mut second = Browser::new(&app);
    let page = second.get(&link).await;
    assert!(page.body.contains("second@example.com"), "{}", page.body);
    let refused = second.choose_password(&link, "short").await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    let joined = second
        .choose_password(&link, "another long passphrase")
        .await;
    assert_eq!(joined.status, StatusCode::SEE_OTHER, "{}", joined.body);
    assert_eq!(joined.location.as_deref(), Some("/dashboard/board"));
    let listed = second.get("/dashboard/settings/users").await;
    assert!(
        listed.body.contains("owner@example.com")
            && listed.body.contains("second@example.com (you)"),
        "{}",
        listed.body
    );
    // Once only.
    assert_eq!(
        Browser::new(&app).get(&link).await.status,
        StatusCode::NOT_FOUND
    );

    // The owner in a second browser ends every other session of theirs.
    let mut elsewhere = Browser::new(&app);
    assert_eq!(
        elsewhere.sign_in("owner@example.com", owner_password).await,
        StatusCode::SEE_OTHER
    );
    let ended = elsewhere
        .on_users_page("/dashboard/settings/sessions/end-others", &[])
        .await;
    assert!(ended.body.contains("Signed out of 1 other session(s)."));
    assert_eq!(
        owner.get("/dashboard/plan").await.status,
        StatusCode::SEE_OTHER
    );
    assert_eq!(second.get("/dashboard/plan").await.status, StatusCode::OK);

    // A password change: the current one must be right; other sessions end.
    let mut third_browser = Browser::new(&app);
    third_browser
        .sign_in("owner@example.com", owner_password)
        .await;
    let new_password = "a new and longer passphrase";
    let wrong = elsewhere
        .on_users_page(
            "/dashboard/settings/password",
            &[
                ("current_password", "not the password"),
                ("password", new_password),
                ("password_confirmation", new_password),
            ],
        )
        .await;
    assert_eq!(wrong.status, StatusCode::BAD_REQUEST);
    assert!(wrong.body.contains("is not right"));
    let changed = elsewhere
        .on_users_page(
            "/dashboard/settings/password",
            &[
                ("current_password", owner_password),
                ("password", new_password),
                ("password_confirmation", new_password),
            ],
        )
        .await;
    assert!(
        changed
            .body
            .contains("Password changed; 1 other session(s) ended."),
        "{}",
        changed.body
    );
    assert_eq!(
        third_browser.get("/dashboard/plan").await.status,
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        elsewhere.get("/dashboard/plan").await.status,
        StatusCode::OK
    );
    let mut later = Browser::new(&app);
    assert_eq!(
        later.sign_in("owner@example.com", owner_password).await,
        StatusCode::OK
    );
    assert_eq!(
        later.sign_in("owner@example.com", new_password).await,
        StatusCode::SEE_OTHER
    );

    // The owner removes the colleague: their session ends at once, their
    // password no longer signs in.
    let listed = elsewhere.get("/dashboard/settings/users").await;
    let marker = "/dashboard/settings/users/";
    let ids: Vec<&str> = listed
        .body
        .match_indices(marker)
        .map(|(at, _)| &listed.body[at + marker.len()..at + marker.len() + 60])
        .map(|rest| rest.split('/').next().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "a remove button per user: {}", listed.body);
    // Oldest first: the owner, then the colleague.
    let (owner_id, second_id) = (ids[0].to_owned(), ids[1].to_owned());
    let removed = elsewhere
        .on_users_page(
            &format!("/dashboard/settings/users/{second_id}/remove"),
            &[],
        )
        .await;
    assert!(
        removed.body.contains("Removed second@example.com"),
        "{}",
        removed.body
    );
    assert_eq!(
        second.get("/dashboard/plan").await.status,
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        Browser::new(&app)
            .sign_in("second@example.com", "another long passphrase")
            .await,
        StatusCode::OK
    );

    // The last user stays.
    let alone = elsewhere.get("/dashboard/settings/users").await;
    assert!(
        !alone.body.contains(marker),
        "no remove button for the last user"
    );
    let refused = elsewhere
        .on_users_page(&format!("/dashboard/settings/users/{owner_id}/remove"), &[])
        .await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert_eq!(
        elsewhere.get("/dashboard/plan").await.status,
        StatusCode::OK
    );
}

/// Registering and inviting answer the same whether or not an address is
/// registered, and change nothing for the address's owner.
#[actix_web::test]
async fn nothing_tells_whether_an_address_is_registered() {
    let app = spawn_app().await;
    let mut owner = Browser::new(&app);
    owner.register("taken@example.com").await;

    let set_cookies = |browser: &Browser| -> Vec<String> {
        let mut names: Vec<String> = browser
            .set_cookies
            .iter()
            .map(|c| c.split('=').next().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    let (mut again, mut fresh) = (Browser::new(&app), Browser::new(&app));
    let known = again
        .sign_up("taken@example.com", "somebody else's password")
        .await;
    let unknown = fresh
        .sign_up("fresh@example.com", "a brand new password")
        .await;
    assert_eq!(
        (known.status, known.location.clone(), known.body.clone()),
        (
            unknown.status,
            unknown.location.clone(),
            unknown.body.clone()
        )
    );
    assert_eq!(set_cookies(&again), set_cookies(&fresh));
    // The new address's account exists; the known address's owner is unchanged.
    assert_eq!(
        fresh
            .sign_in("fresh@example.com", "a brand new password")
            .await,
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        again
            .sign_in("taken@example.com", "somebody else's password")
            .await,
        StatusCode::OK
    );
    assert_eq!(
        Browser::new(&app)
            .sign_in("taken@example.com", "correct horse battery")
            .await,
        StatusCode::SEE_OTHER
    );

    // Another account invites the known address and an unknown one alike.
    let mut inviter = Browser::new(&app);
    inviter.register("inviter@example.com").await;
    let to_known = inviter.invite("taken@example.com").await;
    let to_unknown = inviter.invite("nobody-yet@example.com").await;
    let page = inviter.get("/dashboard/settings/users").await;
    assert!(
        page.body.contains("taken@example.com") && page.body.contains("nobody-yet@example.com"),
        "both are open invitations"
    );
    // Only the link's holder learns the address has an account; nothing changes.
    let taken = Browser::new(&app)
        .choose_password(&to_known, "yet another password")
        .await;
    assert_eq!(taken.status, StatusCode::CONFLICT, "{}", taken.body);
    assert_eq!(
        Browser::new(&app)
            .sign_in("taken@example.com", "correct horse battery")
            .await,
        StatusCode::SEE_OTHER
    );

    // An invitation works for 7 days.
    app.clock.advance(chrono::Duration::days(8));
    assert_eq!(
        Browser::new(&app).get(&to_unknown).await.status,
        StatusCode::NOT_FOUND
    );
    let page = inviter.get("/dashboard/settings/users").await;
    assert!(
        !page.body.contains("nobody-yet@example.com"),
        "expired invitations leave the list"
    );
}

/// The operator resets a password: it stops working, every session of the
/// user ends (and their board stream), and the printed one-time link lets
/// them choose a new one.
#[actix_web::test]
async fn the_operator_resets_a_password() {
    let app = spawn_app().await;
    let mut user = Browser::new(&app);
    user.register("forgetful@example.com").await;
    let mut stream = user.stream("/dashboard/stream").await;
    let output = crate::operator::freight(
        &app,
        &[
            "users",
            "reset-password",
            "--email",
            "Forgetful@example.com",
            "--public-url",
            &user.origin,
            "--json",
        ],
    )
    .await;
    let reset = crate::operator::json_out(&output);
    assert_eq!(reset["user"]["email"], "forgetful@example.com");
    let link = reset["link"].as_str().unwrap();
    let path = link
        .strip_prefix(&user.origin)
        .expect("the public URL first");

    let ended = stream.event().await;
    assert_eq!(ended.event.as_deref(), Some("revoked"), "{ended:?}");
    assert_eq!(
        user.get("/dashboard/plan").await.status,
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        Browser::new(&app)
            .sign_in("forgetful@example.com", "correct horse battery")
            .await,
        StatusCode::OK,
        "the old password stops working"
    );
    let chosen = Browser::new(&app)
        .choose_password(path, "remembered this time")
        .await;
    assert_eq!(chosen.status, StatusCode::SEE_OTHER, "{}", chosen.body);
    assert_eq!(
        Browser::new(&app)
            .sign_in("forgetful@example.com", "remembered this time")
            .await,
        StatusCode::SEE_OTHER
    );

    let listed = crate::operator::json_out(
        &crate::operator::freight(
            &app,
            &[
                "users",
                "list",
                "--account",
                reset["user"]["account_id"].as_str().unwrap(),
                "--json",
            ],
        )
        .await,
    );
    assert_eq!(listed["users"][0]["email"], "forgetful@example.com");
    let unknown = crate::operator::freight(
        &app,
        &["users", "reset-password", "--email", "nobody@example.com"],
    )
    .await;
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("USER_NOT_FOUND"));
}

/// The board's stream ends when its session does (log out, log out
/// everywhere else), with a last `revoked` frame, within seconds.
#[actix_web::test]
async fn the_boards_stream_ends_with_its_session() {
    let app = spawn_app().await;
    let mut first = Browser::new(&app);
    first.register("streams@example.com").await;
    let mut second = Browser::new(&app);
    assert_eq!(
        second
            .sign_in("streams@example.com", "correct horse battery")
            .await,
        StatusCode::SEE_OTHER
    );
    let mut first_stream = first.stream("/dashboard/stream").await;
    let mut second_stream = second.stream("/dashboard/stream").await;

    let page = second.get("/dashboard/settings/users").await;
    second
        .post(
            "/dashboard/settings/sessions/end-others",
            &[("csrf", &page.hidden("csrf"))],
        )
        .await;
    let ended = first_stream.event().await;
    assert_eq!(ended.event.as_deref(), Some("revoked"), "{ended:?}");
    assert_eq!(ended.json()["reason"], "session_ended");
    assert!(first_stream.frame().await.is_none());

    let page = second.get("/dashboard/settings/users").await;
    let out = second
        .post("/dashboard/logout", &[("csrf", &page.hidden("csrf"))])
        .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    let ended = second_stream.event().await;
    assert_eq!(ended.event.as_deref(), Some("revoked"), "{ended:?}");
    assert!(second_stream.frame().await.is_none());
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

/// Markup typed into any field a user controls is shown as text on every page
/// that shows it, never run: the outside review's XSS sweep, kept in CI.
#[actix_web::test]
async fn markup_in_every_field_is_shown_as_text() {
    const PAYLOAD: &str = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>";
    let app = crate::helpers::spawn_app_with_local_webhooks().await;
    let mut browser = Browser::new(&app);
    let form = browser.get("/dashboard/register").await;
    let registered = browser
        .post(
            "/dashboard/register",
            &[
                ("form_token", &form.hidden("form_token")),
                ("company", PAYLOAD),
                ("email", "xss@example.com"),
                ("password", "correct horse battery"),
                ("password_confirmation", "correct horse battery"),
            ],
        )
        .await;
    assert_eq!(registered.status, StatusCode::SEE_OTHER);
    assert_eq!(
        browser
            .sign_in("xss@example.com", "correct horse battery")
            .await,
        StatusCode::SEE_OTHER
    );
    let keys = browser.get("/dashboard/settings/api-keys").await;
    let made = browser
        .post(
            "/dashboard/settings/api-keys",
            &[
                ("csrf", &keys.hidden("csrf")),
                ("permissions", "read"),
                ("permissions", "write"),
                ("description", PAYLOAD),
            ],
        )
        .await;
    assert!(made.status.is_success() || made.status.is_redirection());
    let key = made.input("new-key");

    // Through the API with that key: a carrier, a load and a webhook whose
    // every free-text field holds the markup.
    let mut carrier = crate::helpers::carrier_body("778812");
    carrier["name"] = PAYLOAD.into();
    let (status, carrier) = app.post_as(&key, "/carriers", carrier).await;
    assert_eq!(status, StatusCode::CREATED, "{carrier}");
    let mut load = load_body("TX", "GA");
    load["notes"] = PAYLOAD.into();
    load["origin"]["city"] = PAYLOAD.into();
    load["origin"]["address"] = PAYLOAD.into();
    let (status, load) = app.post_as(&key, "/loads", load).await;
    assert_eq!(status, StatusCode::CREATED, "{load}");
    let load_id = load["data"]["id"].as_str().unwrap();
    let (status, assigned) = app
        .patch_as(
            &key,
            &format!("/loads/{load_id}/status"),
            serde_json::json!({"status": "assigned", "carrier_id": carrier["data"]["id"], "notes": PAYLOAD}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{assigned}");
    // A webhook (to a port nothing listens on: only new loads would be sent,
    // and none is made after it) whose URL carries the markup.
    let url = format!("http://127.0.0.1:9/in?x={PAYLOAD}");
    let (status, hook) = app
        .post_as(
            &key,
            "/webhooks",
            serde_json::json!({"url": url, "events": ["load.created"]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");
    let hook_id = hook["data"]["id"].as_str().map(str::to_owned);
    // A device named with the markup, made with the form (whose answer shows
    // the name) and attached to the load on the load's page.
    let made = browser.create_device(PAYLOAD, None).await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.body);
    for raw in ["<script>alert(1)", "<img src=x", "onerror=alert(2)>"] {
        assert!(!made.body.contains(raw), "the new device shows {raw:?}");
    }
    let device = made.new_device();
    let attached = browser
        .post_from(
            &format!("/dashboard/loads/{load_id}"),
            &format!("/dashboard/loads/{load_id}/device"),
            &[("device_id", &device)],
        )
        .await;
    assert_eq!(attached.status, StatusCode::SEE_OTHER, "{}", attached.body);
    let load_page = browser.get(&format!("/dashboard/loads/{load_id}")).await;
    assert!(
        device_card(&load_page.body).contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "the load's device, escaped: {}",
        device_card(&load_page.body)
    );

    let mut pages = vec![
        "/dashboard/plan".to_owned(),
        "/dashboard/board".to_owned(),
        "/dashboard/loads".to_owned(),
        format!("/dashboard/loads/{load_id}"),
        "/dashboard/carriers".to_owned(),
        "/dashboard/devices".to_owned(),
        format!("/dashboard/devices/{device}/revoke"),
        "/dashboard/settings/api-keys".to_owned(),
        "/dashboard/settings/users".to_owned(),
        "/dashboard/webhooks".to_owned(),
    ];
    pages.extend(hook_id.map(|id| format!("/dashboard/webhooks/{id}")));
    // Pages that show one of the fields: the markup is there, as text.
    let showing = [
        "/dashboard/loads".to_owned(),
        format!("/dashboard/loads/{load_id}"),
        "/dashboard/carriers".to_owned(),
        "/dashboard/devices".to_owned(),
        format!("/dashboard/devices/{device}/revoke"),
        "/dashboard/settings/api-keys".to_owned(),
    ];
    for path in &pages {
        let page = browser.get(path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        for raw in ["<script>alert(1)", "<img src=x", "onerror=alert(2)>"] {
            assert!(!page.body.contains(raw), "{path} shows {raw:?} as markup");
        }
        if showing.contains(path) {
            assert!(
                page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
                "{path} shows the field, escaped"
            );
        }
    }
}

impl Page {
    /// The id of the device a create answer shows with its token.
    fn new_device(&self) -> String {
        let marker = "data-new-device=\"";
        let start = self.body.find(marker).expect("a new device") + marker.len();
        let end = self.body[start..].find('"').unwrap() + start;
        self.body[start..end].to_owned()
    }
}

/// The device card of a load's page.
fn device_card(body: &str) -> &str {
    let start = body.find("id=\"device\"").expect("a device card");
    let end = body[start..].find("</section>").unwrap() + start;
    &body[start..end]
}

impl Browser {
    /// Opens `page` and posts `fields` to `path` with the page's CSRF token.
    async fn post_from(&mut self, page: &str, path: &str, fields: &[(&str, &str)]) -> Page {
        let opened = self.get(page).await;
        assert_eq!(opened.status, StatusCode::OK, "{page}: {}", opened.body);
        let csrf = opened.hidden("csrf");
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post(path, &all).await
    }

    /// Creates a device with the form of the devices page; the answer.
    async fn create_device(&mut self, name: &str, carrier: Option<&str>) -> Page {
        let fields = [("name", name), ("carrier_id", carrier.unwrap_or(""))];
        self.post_from("/dashboard/devices", "/dashboard/devices", &fields)
            .await
    }

    /// Generates a read and write API key on the settings page; the key.
    async fn generate_key(&mut self) -> String {
        let made = self
            .post_from(
                "/dashboard/settings/api-keys",
                "/dashboard/settings/api-keys",
                &[("permissions", "read"), ("permissions", "write")],
            )
            .await;
        assert_eq!(made.status, StatusCode::OK, "{}", made.body);
        made.input("new-key")
    }

    /// Creates a load with the form; its id.
    async fn create_load_by_hand(&mut self) -> String {
        let fields = [
            ("origin.city", "Dallas"),
            ("origin.state", "TX"),
            ("origin.zip", "75201"),
            ("destination.city", "Atlanta"),
            ("destination.state", "GA"),
            ("destination.zip", "30301"),
            ("weight", "42000"),
            ("equipment_type", "dry_van"),
        ];
        let created = self
            .post_from("/dashboard/loads/new", "/dashboard/loads", &fields)
            .await;
        assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.body);
        let location = created.location.unwrap();
        location
            .strip_prefix("/dashboard/loads/")
            .expect("the load's page")
            .to_owned()
    }
}

/// A position posted the way GPSLogger and the OsmAnd app do; the status.
async fn osmand_position(app: &TestApp, token: &str) -> StatusCode {
    let url = format!(
        "https://localhost:{}/v1/ingest/osmand?id={token}&lat=1&lon=1",
        app.api_port
    );
    app.client.get(url).send().await.unwrap().status()
}

/// A device made on the Devices page shows its token and each app's settings
/// once, is listed, is attached to a load on the load's page (seen there, on
/// the board and through the API), detached, and revoked after a
/// confirmation, after which its token is refused.
#[actix_web::test]
async fn a_device_is_made_attached_detached_and_revoked_by_hand() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    browser.register("fleet@example.com").await;
    let key = browser.generate_key().await;
    let mut carrier = crate::helpers::carrier_body("313131");
    carrier["name"] = "Red River Hauling".into();
    let (status, carrier) = app.post_as(&key, "/carriers", carrier).await;
    assert_eq!(status, StatusCode::CREATED, "{carrier}");
    let carrier = carrier["data"]["id"].as_str().unwrap().to_owned();

    let devices = browser.get("/dashboard/devices").await;
    assert_eq!(devices.status, StatusCode::OK);
    assert!(
        devices
            .body
            .contains("href=\"/dashboard/devices\" aria-current=\"page\""),
        "in the navigation, current"
    );
    assert!(devices.body.contains("No devices yet."));
    assert!(devices.body.contains("Red River Hauling (MC 313131)"));

    let unnamed = browser.create_device("", None).await;
    assert_eq!(unnamed.status, StatusCode::BAD_REQUEST);
    assert!(
        unnamed.body.contains("<a href=\"#f-name\">Name</a>"),
        "{}",
        unnamed.body
    );

    let made = browser.create_device("Truck 12", Some(&carrier)).await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.body);
    let device = made.new_device();
    let token = made.input("device-token");
    assert!(token.starts_with("frd_"), "{token}");
    let origin = &browser.origin;
    let osmand = format!("{origin}/v1/ingest/osmand");
    assert_eq!(made.input("traccar-url"), osmand);
    assert_eq!(made.input("traccar-identifier"), token);
    assert!(
        made.input("osmand-url")
            .starts_with(&format!("{osmand}?id={token}&lat={{0}}&lon={{1}}"))
    );
    assert!(
        made.input("gpslogger-url")
            .starts_with(&format!("{osmand}?id={token}&lat=%LAT&lon=%LON"))
    );
    assert_eq!(
        made.input("owntracks-url"),
        format!("{origin}/v1/ingest/owntracks")
    );
    assert_eq!(made.input("owntracks-password"), token);
    assert!(!made.input("owntracks-username").is_empty());
    assert_eq!(
        made.input("overland-url"),
        format!("{origin}/v1/ingest/overland?token={token}")
    );
    assert!(
        made.body.contains("data-copy=\"#overland-url\""),
        "copy buttons"
    );
    assert!(made.body.contains("Carrier: Red River Hauling"));

    let listed = browser.get("/dashboard/devices").await;
    assert!(
        listed
            .body
            .contains(&format!("data-device-id=\"{device}\""))
    );
    assert!(listed.body.contains("Truck 12"));
    assert!(
        !listed.body.contains(&token),
        "the token is shown only once"
    );

    // Attached on the load's page.
    let load = browser.create_load_by_hand().await;
    let load_page = format!("/dashboard/loads/{load}");
    let before = browser.get(&load_page).await;
    assert!(device_card(&before.body).contains("No device attached"));
    let attached = browser
        .post_from(
            &load_page,
            &format!("{load_page}/device"),
            &[("device_id", &device)],
        )
        .await;
    assert_eq!(attached.status, StatusCode::SEE_OTHER, "{}", attached.body);
    assert_eq!(attached.location.as_deref(), Some(load_page.as_str()));
    let shown = browser.get(&load_page).await;
    let card = device_card(&shown.body);
    assert!(
        card.contains("Truck 12") && card.contains("Detach"),
        "{card}"
    );
    let (status, api) = app.get_as(&key, &format!("/loads/{load}")).await;
    assert_eq!(status, StatusCode::OK, "{api}");
    assert_eq!(api["data"]["device"]["id"], device.as_str());
    assert_eq!(api["data"]["device"]["name"], "Truck 12");
    let listed = browser.get("/dashboard/devices").await;
    assert!(
        listed.body.contains(&format!("href=\"{load_page}\"")),
        "the load it feeds, linked"
    );

    // Its position shows it seen; assigned, the board names it.
    assert_eq!(osmand_position(&app, &token).await, StatusCode::OK);
    let seen = browser.get(&load_page).await;
    assert!(
        device_card(&seen.body).contains("<time"),
        "last seen: {}",
        device_card(&seen.body)
    );
    let (status, body) = app
        .patch_as(
            &key,
            &format!("/loads/{load}/status"),
            serde_json::json!({"status": "assigned", "carrier_id": carrier}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let board = browser.get("/dashboard/board/loads.json").await;
    let board: serde_json::Value = serde_json::from_str(&board.body).unwrap();
    assert_eq!(board["loads"][0]["id"], load.as_str());
    assert_eq!(board["loads"][0]["device"]["name"], "Truck 12");
    assert_eq!(board["loads"][0]["at_stop"], serde_json::Value::Null);
    assert_eq!(board["loads"][0]["late_risk"], false);

    // Stopped at the pickup (its ZIP's centre): the board marks the truck there.
    let at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let (status, body) = app
        .post_as(
            &key,
            &format!("/loads/{load}/tracking"),
            serde_json::json!({"lat": 32.7876, "lng": -96.7994, "timestamp": at, "speed": 0}),
        )
        .await;
    assert!(status.is_success(), "{body}");
    let board = browser.get("/dashboard/board/loads.json").await;
    let board: serde_json::Value = serde_json::from_str(&board.body).unwrap();
    assert_eq!(board["loads"][0]["at_stop"], "pickup", "{board}");

    // Detached.
    let detached = browser
        .post_from(&load_page, &format!("{load_page}/device/detach"), &[])
        .await;
    assert_eq!(detached.status, StatusCode::SEE_OTHER, "{}", detached.body);
    assert!(device_card(&browser.get(&load_page).await.body).contains("No device attached"));
    let (_, api) = app.get_as(&key, &format!("/loads/{load}")).await;
    assert!(api["data"]["device"].is_null(), "{api}");
    let board = browser.get("/dashboard/board/loads.json").await;
    let board: serde_json::Value = serde_json::from_str(&board.body).unwrap();
    assert!(board["loads"][0]["device"].is_null(), "{board}");

    // Revoked after a confirmation: the token is refused at once.
    let revoke = format!("/dashboard/devices/{device}/revoke");
    let confirm = browser.get(&revoke).await;
    assert_eq!(confirm.status, StatusCode::OK);
    assert!(confirm.body.contains("Revoke device") && confirm.body.contains("Truck 12"));
    assert_eq!(
        osmand_position(&app, &token).await,
        StatusCode::OK,
        "not revoked by looking"
    );
    let revoked = browser.post_from(&revoke, &revoke, &[]).await;
    assert_eq!(revoked.status, StatusCode::SEE_OTHER, "{}", revoked.body);
    assert_eq!(revoked.location.as_deref(), Some("/dashboard/devices"));
    assert_eq!(
        osmand_position(&app, &token).await,
        StatusCode::UNAUTHORIZED
    );
    let listed = browser.get("/dashboard/devices").await;
    assert!(!listed.body.contains(&device), "no longer listed");
}

/// The device forms need the session's CSRF token, and another account's
/// device is a 404 page that changes nothing, whatever is posted to it.
#[actix_web::test]
async fn device_forms_need_their_token_and_stay_in_their_account() {
    let app = spawn_app().await;
    let mut owner = Browser::new(&app);
    owner.register("owner@example.com").await;
    let made = owner.create_device("Truck 7", None).await;
    let device = made.new_device();
    let token = made.input("device-token");
    let load = owner.create_load_by_hand().await;

    // Without the token (a cross-site post), or with a wrong one: refused.
    let attach = format!("/dashboard/loads/{load}/device");
    let revoke = format!("/dashboard/devices/{device}/revoke");
    for (path, fields) in [
        ("/dashboard/devices", vec![("name", "Forged")]),
        (attach.as_str(), vec![("device_id", device.as_str())]),
        (revoke.as_str(), vec![]),
    ] {
        let missing = owner.post(path, &fields).await;
        assert_eq!(missing.status, StatusCode::FORBIDDEN, "{path}");
        let mut wrong = vec![("csrf", "not-the-token")];
        wrong.extend_from_slice(&fields);
        assert_eq!(
            owner.post(path, &wrong).await.status,
            StatusCode::FORBIDDEN,
            "{path}"
        );
    }
    let listed = owner.get("/dashboard/devices").await;
    assert!(!listed.body.contains("Forged"));
    assert!(
        device_card(&owner.get(&format!("/dashboard/loads/{load}")).await.body)
            .contains("No device attached")
    );
    owner
        .post_from(
            &format!("/dashboard/loads/{load}"),
            &attach,
            &[("device_id", &device)],
        )
        .await;
    let detach = format!("/dashboard/loads/{load}/device/detach");
    assert_eq!(owner.post(&detach, &[]).await.status, StatusCode::FORBIDDEN);
    assert!(
        device_card(&owner.get(&format!("/dashboard/loads/{load}")).await.body).contains("Truck 7")
    );

    // Another account: the device's pages and forms are not found, its
    // devices list does not show it, its loads cannot take the device.
    let mut other = Browser::new(&app);
    other.register("other@example.com").await;
    let theirs = other.create_load_by_hand().await;
    let hidden = other.get(&revoke).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    assert!(hidden.body.contains("belongs to another account"));
    assert!(!hidden.body.contains("Truck 7"));
    let posted = other.post_from("/dashboard/devices", &revoke, &[]).await;
    assert_eq!(posted.status, StatusCode::NOT_FOUND, "{}", posted.body);
    let taken = other
        .post_from(
            &format!("/dashboard/loads/{theirs}"),
            &format!("/dashboard/loads/{theirs}/device"),
            &[("device_id", &device)],
        )
        .await;
    assert_eq!(taken.status, StatusCode::NOT_FOUND, "{}", taken.body);
    for path in [
        format!("/dashboard/loads/{load}/device"),
        format!("/dashboard/loads/{load}/device/detach"),
    ] {
        let fields: &[(&str, &str)] = &[("device_id", &device)];
        let page = other.post_from("/dashboard/devices", &path, fields).await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{path}");
    }
    let their_list = other.get("/dashboard/devices").await;
    assert!(!their_list.body.contains(&device) && !their_list.body.contains("Truck 7"));
    assert!(
        device_card(&other.get(&format!("/dashboard/loads/{theirs}")).await.body)
            .contains("No device attached")
    );

    // Nothing of the owner's changed: still attached, its token still works.
    assert!(
        device_card(&owner.get(&format!("/dashboard/loads/{load}")).await.body).contains("Truck 7")
    );
    assert_eq!(osmand_position(&app, &token).await, StatusCode::OK);
}

/// The first start's account has no user; the operator makes one with
/// `freight users create`, whose one-time link lets them choose a password
/// and then see that account's loads (not an empty account of their own).
#[actix_web::test]
async fn the_operator_opens_the_first_account_to_a_dashboard_user() {
    let app = spawn_app().await;
    let load = app.create_load(crate::helpers::load_body("TX", "GA")).await;
    let origin = Browser::new(&app).origin.clone();
    let output = crate::operator::freight(
        &app,
        &[
            "users",
            "create",
            "--account",
            &app.account_id,
            "--email",
            "Owner@example.com",
            "--public-url",
            &origin,
            "--json",
        ],
    )
    .await;
    let created = crate::operator::json_out(&output);
    assert_eq!(created["account_id"], app.account_id.as_str());
    assert_eq!(created["email"], "owner@example.com");
    let path = created["link"]
        .as_str()
        .unwrap()
        .strip_prefix(&origin)
        .expect("the public URL first")
        .to_owned();
    let chosen = Browser::new(&app)
        .choose_password(&path, "correct horse battery staple")
        .await;
    assert_eq!(chosen.status, StatusCode::SEE_OTHER, "{}", chosen.body);
    let mut owner = Browser::new(&app);
    assert_eq!(
        owner
            .sign_in("owner@example.com", "correct horse battery staple")
            .await,
        StatusCode::SEE_OTHER
    );
    let loads = owner.get("/dashboard/loads").await;
    assert!(
        loads.body.contains(load["id"].as_str().unwrap()),
        "the first account's load is listed"
    );

    // A bad address or an unknown account says what is wrong.
    for args in [
        vec![
            "users",
            "create",
            "--account",
            &app.account_id,
            "--email",
            "nope",
        ],
        vec![
            "users",
            "create",
            "--account",
            "acct_nope",
            "--email",
            "a@example.com",
        ],
    ] {
        let refused = crate::operator::freight(&app, &args).await;
        assert!(!refused.status.success());
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains("VALIDATION_FAILED") || said.contains("ACCOUNT_NOT_FOUND"),
            "{said}"
        );
    }
}

/// With `--map-tiles`, dashboard pages let images (and only images) come from
/// the tile server, and the board names the template; without it they allow
/// this origin only, and the board draws the outline.
#[actix_web::test]
async fn the_tile_servers_origin_is_allowed_for_images_only_when_configured() {
    let csp_of = |response: &reqwest::Response| {
        response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned()
    };
    let plain = crate::helpers::spawn_app().await;
    let page = plain
        .client
        .get(format!(
            "https://localhost:{}/dashboard/login",
            plain.api_port
        ))
        .send()
        .await
        .unwrap();
    assert!(
        csp_of(&page).contains("img-src 'self' data:;"),
        "{}",
        csp_of(&page)
    );

    let tiles = freight::dashboard::map_tiles::MapTiles::parse(
        "https://{s}.tiles.example.net/{z}/{x}/{y}.png",
        "&copy; Example",
    )
    .unwrap();
    let app = crate::helpers::spawn_app_with(|settings| {
        settings.map = freight::dashboard::MapSource(Some(tiles));
    })
    .await;
    for path in ["/dashboard/login", "/dashboard/nowhere"] {
        let page = app
            .client
            .get(format!("https://localhost:{}{path}", app.api_port))
            .send()
            .await
            .unwrap();
        let csp = csp_of(&page);
        assert!(
            csp.contains("img-src 'self' data: https://*.tiles.example.net;"),
            "{path}: {csp}"
        );
        assert!(csp.contains("script-src 'self';"), "{path}: {csp}");
        assert!(csp.contains("connect-src 'self';"), "{path}: {csp}");
    }
}
