//! Owners and members: the first user owns the account, invitees join as
//! members, only owners manage users, keys, plan and settings, the last owner
//! stays, and a removed user's open invitations are withdrawn with them.

use reqwest::StatusCode;

use crate::dashboard::Browser;
use crate::helpers::spawn_app;

/// Each user's id on the users page, in the page's order (oldest first).
fn user_ids(body: &str) -> Vec<String> {
    let marker = "/dashboard/settings/user-roles/";
    body.match_indices(marker)
        .map(|(at, _)| {
            body[at + marker.len()..]
                .split('"')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[actix_web::test]
async fn members_cannot_manage_and_the_last_owner_stays() {
    let app = spawn_app().await;
    let mut owner = Browser::new(&app);
    owner.register("owner@example.com").await;
    let link = owner.invite("member@example.com").await;
    let mut member = Browser::new(&app);
    let joined = member
        .choose_password(&link, "another long passphrase")
        .await;
    assert_eq!(joined.status, StatusCode::SEE_OTHER, "{}", joined.body);

    // Settings → Users says who is what and who invited whom.
    let page = owner.get("/dashboard/settings/users").await;
    let row = |email: &str| {
        let at = page.body.find(&format!("data-user=\"{email}\"")).unwrap();
        page.body[at..at + page.body[at..].find("</tr>").unwrap()].to_owned()
    };
    assert!(
        row("owner@example.com").contains(">owner<"),
        "{}",
        page.body
    );
    let member_row = row("member@example.com");
    assert!(member_row.contains(">member<"), "{member_row}");
    assert!(
        member_row.contains("owner@example.com"),
        "invited by: {member_row}"
    );
    let ids = user_ids(&page.body);
    let (owner_id, member_id) = (ids[0].clone(), ids[1].clone());

    // A member is refused what owners do: invitations, keys, plan, settings,
    // roles, removals.
    for (path, fields) in [
        (
            "/dashboard/settings/users",
            vec![("email", "x@example.com")],
        ),
        (
            "/dashboard/settings/api-keys",
            vec![("permissions", "read")],
        ),
        ("/dashboard/plan", vec![("plan", "pro")]),
        (
            "/dashboard/settings/stops",
            vec![("late_after_minutes", "30")],
        ),
    ] {
        let refused = member.on_users_page(path, &fields).await;
        assert_eq!(
            refused.status,
            StatusCode::FORBIDDEN,
            "{path}: {}",
            refused.body
        );
    }
    let refused = member
        .on_users_page(
            &format!("/dashboard/settings/user-roles/{member_id}"),
            &[("role", "owner")],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let refused = member
        .on_users_page(&format!("/dashboard/settings/users/{owner_id}/remove"), &[])
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);

    // The only owner can be neither made a member nor removed.
    let kept = owner
        .on_users_page(
            &format!("/dashboard/settings/user-roles/{owner_id}"),
            &[("role", "member")],
        )
        .await;
    assert_eq!(kept.status, StatusCode::CONFLICT, "{}", kept.body);
    let kept = owner
        .on_users_page(&format!("/dashboard/settings/users/{owner_id}/remove"), &[])
        .await;
    assert_eq!(kept.status, StatusCode::CONFLICT, "{}", kept.body);

    // Made an owner, the colleague may invite; then the first owner may step down.
    let made = owner
        .on_users_page(
            &format!("/dashboard/settings/user-roles/{member_id}"),
            &[("role", "owner")],
        )
        .await;
    assert!(
        made.body.contains("member@example.com is now an owner"),
        "{}",
        made.body
    );
    member.invite("third@example.com").await;
    let stepped = owner
        .on_users_page(
            &format!("/dashboard/settings/user-roles/{owner_id}"),
            &[("role", "member")],
        )
        .await;
    assert_eq!(stepped.status, StatusCode::OK, "{}", stepped.body);
    let refused = owner
        .on_users_page("/dashboard/plan", &[("plan", "pro")])
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
}

/// A removed user's open invitations stop working: they cannot come back
/// through a link they sent themselves.
#[actix_web::test]
async fn a_removed_users_invitations_are_withdrawn() {
    let app = spawn_app().await;
    let mut owner = Browser::new(&app);
    owner.register("boss@example.com").await;
    let link = owner.invite("leaver@example.com").await;
    let mut leaver = Browser::new(&app);
    leaver
        .choose_password(&link, "another long passphrase")
        .await;
    let page = owner.get("/dashboard/settings/users").await;
    let leaver_id = user_ids(&page.body)[1].clone();
    let made = owner
        .on_users_page(
            &format!("/dashboard/settings/user-roles/{leaver_id}"),
            &[("role", "owner")],
        )
        .await;
    assert_eq!(made.status, StatusCode::OK);
    // Before leaving, the leaver invites a second address of their own.
    let back_door = leaver.invite("leaver+again@example.com").await;
    let kept = owner.invite("colleague@example.com").await;

    let removed = owner
        .on_users_page(
            &format!("/dashboard/settings/users/{leaver_id}/remove"),
            &[],
        )
        .await;
    assert!(
        removed.body.contains("Removed leaver@example.com"),
        "{}",
        removed.body
    );
    assert_eq!(
        Browser::new(&app).get(&back_door).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        Browser::new(&app).get(&kept).await.status,
        StatusCode::OK,
        "the owner's own stays"
    );
}
