//! Pages: the board's stream, error pages, webhooks by hand, tenancy and escaping.

use super::devices::device_card;
use super::*;

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
        format!("/dashboard/loads/{load}/edit"),
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
            format!("/dashboard/loads/{load}/edit"),
            vec![
                ("csrf", csrf.as_str()),
                ("weight", "1"),
                ("equipment_type", "refrigerated"),
            ],
        ),
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

/// The fields of a load made by hand, Dallas to Atlanta.
const NEW_LOAD: [(&str, &str); 9] = [
    ("origin.city", "Dallas"),
    ("origin.state", "TX"),
    ("origin.zip", "75201"),
    ("destination.city", "Atlanta"),
    ("destination.state", "GA"),
    ("destination.zip", "30301"),
    ("weight", "42000"),
    ("equipment_type", "dry_van"),
    ("pickup_date", "2030-01-02T08:00"),
];

#[actix_web::test]
async fn a_load_is_edited_from_its_page_as_far_as_its_status_allows() {
    let app = spawn_app().await;
    let mut browser = Browser::new(&app);
    browser.register("editor@example.com").await;
    let csrf = browser.get("/dashboard/loads/new").await.hidden("csrf");
    let mut fields = vec![("csrf", csrf.as_str())];
    fields.extend(NEW_LOAD);
    let created = browser.post("/dashboard/loads", &fields).await;
    let page = created.location.expect("the load's page");
    let edit = format!("{page}/edit");
    let shown = browser.get(&page).await;
    assert!(
        shown.body.contains(&format!("href=\"{edit}\"")),
        "{}",
        shown.body
    );
    // A posted load is not on the board, so the page does not send you there.
    assert!(!shown.body.contains("See it on the board"));

    // The form comes filled in with what is stored.
    let form = browser.get(&edit).await;
    assert_eq!(form.status, StatusCode::OK);
    for stored in [
        "value=\"Dallas\"",
        "value=\"42000\"",
        "value=\"2030-01-02T08:00\"",
    ] {
        assert!(form.body.contains(stored), "{stored}: {}", form.body);
    }
    let mut change = vec![("csrf", csrf.as_str())];
    change.extend(NEW_LOAD);
    change.retain(|(name, _)| *name != "weight" && *name != "origin.city");
    change.extend([
        ("weight", "41000"),
        ("origin.city", "Fort Worth"),
        ("reference", "PO-77"),
        ("notes", "Dock 4"),
    ]);
    let saved = browser.post(&edit, &change).await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let shown = browser.get(&page).await;
    for now in ["41,000 lb", "Fort Worth", "PO-77", "Dock 4"] {
        assert!(shown.body.contains(now), "{now}: {}", shown.body);
    }

    // Refused as the API refuses it, in words: nothing changes.
    let mut backwards = change.clone();
    backwards.push(("delivery_date", "2030-01-01T08:00"));
    let refused = browser.post(&edit, &backwards).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(
        refused.body.contains("must not be before pickup date"),
        "{}",
        refused.body
    );
    assert!(
        !refused.body.contains("pickup_date must"),
        "{}",
        refused.body
    );
    // A blank optional field clears it; weight cannot be blank.
    let mut cleared = change.clone();
    cleared.retain(|(name, _)| *name != "notes" && *name != "weight");
    cleared.push(("weight", ""));
    let refused = browser.post(&edit, &cleared).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(refused.body.contains("is required"), "{}", refused.body);
    cleared.retain(|(name, _)| *name != "weight");
    cleared.push(("weight", "41000"));
    assert_eq!(
        browser.post(&edit, &cleared).await.status,
        StatusCode::SEE_OTHER
    );
    let shown = browser.get(&page).await;
    assert!(!shown.body.contains("Dock 4"));
    assert!(shown.body.contains("Fort Worth"));

    // Assigned: on the board, and its stops are fixed.
    let carrier = browser
        .post(
            "/dashboard/carriers",
            &[
                ("csrf", &csrf),
                ("name", "Lone Star Haulers"),
                ("mc_number", "424242"),
            ],
        )
        .await;
    assert_eq!(carrier.status, StatusCode::SEE_OTHER, "{}", carrier.body);
    // The load's page offers it by id.
    let offered = browser.get(&page).await.body;
    let at = offered
        .find("<option value=\"carrier_")
        .expect("a carrier offered")
        + 15;
    let carrier = &offered[at..at + offered[at..].find('"').unwrap()];
    let assigned = browser
        .post(
            &format!("{page}/status"),
            &[
                ("csrf", &csrf),
                ("status", "assigned"),
                ("carrier_id", carrier),
            ],
        )
        .await;
    assert_eq!(assigned.status, StatusCode::SEE_OTHER, "{}", assigned.body);
    assert!(
        browser
            .get(&page)
            .await
            .body
            .contains("See it on the board")
    );
    let form = browser.get(&edit).await;
    assert!(!form.body.contains("name=\"origin.city\""), "{}", form.body);
    assert!(form.body.contains("change only while a load is posted"));
    let mut later = vec![("csrf", csrf.as_str())];
    later.extend([("weight", "40000"), ("equipment_type", "refrigerated")]);
    let saved = browser.post(&edit, &later).await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let shown = browser.get(&page).await.body;
    assert!(
        shown.contains("40,000 lb") && shown.contains("Fort Worth"),
        "{shown}"
    );

    // Once cancelled, nothing can change: no Edit button, and the form says why.
    let cancelled = browser
        .post(
            &format!("{page}/status"),
            &[("csrf", &csrf), ("status", "cancelled")],
        )
        .await;
    assert_eq!(
        cancelled.status,
        StatusCode::SEE_OTHER,
        "{}",
        cancelled.body
    );
    assert!(
        !browser
            .get(&page)
            .await
            .body
            .contains(&format!("href=\"{edit}\""))
    );
    let closed = browser.get(&edit).await;
    assert_eq!(closed.status, StatusCode::CONFLICT);
    assert!(
        closed.body.contains("can no longer be changed"),
        "{}",
        closed.body
    );
    let late = browser.post(&edit, &change).await;
    assert_eq!(late.status, StatusCode::CONFLICT);
}
