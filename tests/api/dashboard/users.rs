//! People: sign-in throttling, invitations, removals, password changes and resets.

use super::*;

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
            "--json",
        ],
    )
    .await;
    let reset = crate::operator::json_out(&output);
    assert_eq!(reset["user"]["email"], "forgetful@example.com");
    // Without --public-url (here or on the server), the link is whole: it
    // starts with the API listener's address.
    let link = reset["link"].as_str().unwrap();
    let path = link
        .strip_prefix(&format!("https://127.0.0.1:{}", app.api_port))
        .unwrap_or_else(|| panic!("{link}: the API listener's address first"));

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
