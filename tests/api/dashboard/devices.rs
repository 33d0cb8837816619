//! Devices by hand, the operator's first user, and the tile server's origin.

use super::*;

impl Page {
    /// The id of the device a create answer shows with its token.
    pub(super) fn new_device(&self) -> String {
        let marker = "data-new-device=\"";
        let start = self.body.find(marker).expect("a new device") + marker.len();
        let end = self.body[start..].find('"').unwrap() + start;
        self.body[start..end].to_owned()
    }
}

/// The device card of a load's page.
pub(super) fn device_card(body: &str) -> &str {
    let start = body.find("id=\"device\"").expect("a device card");
    let end = body[start..].find("</section>").unwrap() + start;
    &body[start..end]
}

impl Browser {
    /// Opens `page` and posts `fields` to `path` with the page's CSRF token.
    pub(super) async fn post_from(
        &mut self,
        page: &str,
        path: &str,
        fields: &[(&str, &str)],
    ) -> Page {
        let opened = self.get(page).await;
        assert_eq!(opened.status, StatusCode::OK, "{page}: {}", opened.body);
        let csrf = opened.hidden("csrf");
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post(path, &all).await
    }

    /// Creates a device with the form of the devices page; the answer.
    pub(super) async fn create_device(&mut self, name: &str, carrier: Option<&str>) -> Page {
        let fields = [("name", name), ("carrier_id", carrier.unwrap_or(""))];
        self.post_from("/dashboard/devices", "/dashboard/devices", &fields)
            .await
    }

    /// Generates a read and write API key on the settings page; the key.
    pub(super) async fn generate_key(&mut self) -> String {
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
    pub(super) async fn create_load_by_hand(&mut self) -> String {
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
    // A test server has neither a public URL nor a certificate of its own:
    // the page says a phone cannot use its settings, and why.
    assert!(devices.body.contains("data-field=\"phone-warning\""));
    assert!(devices.body.contains("no --public-url is set"));
    assert!(devices.body.contains("--tls-cert"));
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

/// With `--public-url` set, the device's settings name it (not the address
/// the page was opened on), and the warning names only the certificate.
#[actix_web::test]
async fn device_settings_name_the_public_url() {
    let app = crate::helpers::spawn_app_with(|s| {
        s.public_url = Some("https://freight.example.com".into())
    })
    .await;
    let mut browser = Browser::new(&app);
    browser.register("phones@example.com").await;
    let page = browser.create_device("Phone 1", None).await;
    assert!(
        page.body.contains("https://freight.example.com/v1/ingest/"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("https://localhost:"), "{}", page.body);
    assert!(page.body.contains("data-field=\"phone-warning\""));
    assert!(!page.body.contains("no --public-url is set"));
}
