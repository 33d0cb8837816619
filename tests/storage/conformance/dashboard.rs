//! Dashboard users, sessions and password links.

use chrono::{Duration, Utc};
use freight::domain::ids::{AccountId, UserId};
use freight::domain::password_link::{LinkPurpose, PasswordLink};
use freight::domain::user::{Session, User};
use freight::storage::{Storage, UserInsert};

use super::account;

fn user(account: &AccountId, email: &str) -> User {
    User {
        id: UserId::generate(),
        account_id: account.clone(),
        email: email.into(),
        password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
        created_at: crate::fixtures::now(),
        role: freight::domain::user::Role::Member,
        invited_by: None,
    }
}

fn session(user: &User, token: &str, expires_in: Duration) -> Session {
    Session {
        token_sha256: token.into(),
        user_id: user.id.clone(),
        account_id: user.account_id.clone(),
        csrf_token: format!("csrf-{token}"),
        created_at: crate::fixtures::now(),
        expires_at: crate::fixtures::now() + expires_in,
    }
}

/// A first user brings its account in the same write; an email is one user's.
pub async fn users_are_unique_by_email_and_bring_their_account(store: &dyn Storage) {
    let tenant = account();
    let email = format!("{}@example.com", UserId::generate().as_str());
    let first = user(&tenant.id, &email);
    assert_eq!(
        store.insert_user(&first, Some(&tenant)).await.unwrap(),
        UserInsert::Inserted
    );
    assert_eq!(
        store.get_account(&tenant.id).await.unwrap(),
        Some(tenant.clone())
    );
    assert_eq!(
        store.get_user(&first.id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store.find_user_by_email(&email).await.unwrap(),
        Some(first.clone())
    );

    // The same address again, even for a new account: refused, nothing written.
    let other_tenant = account();
    let again = user(&other_tenant.id, &email);
    assert_eq!(
        store
            .insert_user(&again, Some(&other_tenant))
            .await
            .unwrap(),
        UserInsert::EmailTaken
    );
    assert_eq!(store.get_account(&other_tenant.id).await.unwrap(), None);
    assert_eq!(store.get_user(&again.id).await.unwrap(), None);

    // A second user of the same account.
    let colleague = user(&tenant.id, &format!("second.{email}"));
    assert_eq!(
        store.insert_user(&colleague, None).await.unwrap(),
        UserInsert::Inserted
    );
    assert_eq!(
        store.list_users(&tenant.id).await.unwrap(),
        vec![first, colleague]
    );
    assert_eq!(
        store
            .find_user_by_email("nobody@example.com")
            .await
            .unwrap(),
        None
    );
}

/// Sessions are found by token hash, end one by one or all but one, and expired
/// ones are purged.
pub async fn sessions_end_and_expire(store: &dyn Storage) {
    let tenant = account();
    let person = user(&tenant.id, &format!("{}@example.com", UserId::generate()));
    store.insert_user(&person, Some(&tenant)).await.unwrap();
    let prefix = person.id.as_str().to_owned();
    let live = |n: u32| session(&person, &format!("{prefix}-{n}"), Duration::days(1));
    let (a, b, c) = (live(1), live(2), live(3));
    for s in [&a, &b, &c] {
        store.put_session(s).await.unwrap();
    }
    assert_eq!(
        store.get_session(&a.token_sha256).await.unwrap(),
        Some(a.clone())
    );

    store.delete_session(&a.token_sha256).await.unwrap();
    assert_eq!(store.get_session(&a.token_sha256).await.unwrap(), None);
    store.delete_session(&a.token_sha256).await.unwrap();

    let ended = store
        .delete_user_sessions(&person.id, Some(&c.token_sha256))
        .await
        .unwrap();
    assert_eq!(ended, 1);
    assert_eq!(store.get_session(&b.token_sha256).await.unwrap(), None);
    assert_eq!(
        store.get_session(&c.token_sha256).await.unwrap(),
        Some(c.clone())
    );

    let stale = session(&person, &format!("{prefix}-stale"), -Duration::hours(1));
    store.put_session(&stale).await.unwrap();
    assert!(store.purge_sessions(Utc::now()).await.unwrap() >= 1);
    assert_eq!(store.get_session(&stale.token_sha256).await.unwrap(), None);
    assert_eq!(store.get_session(&c.token_sha256).await.unwrap(), Some(c));
}

fn link(token: &str, purpose: LinkPurpose, expires_in: Duration) -> PasswordLink {
    PasswordLink {
        token_sha256: token.into(),
        purpose,
        created_at: crate::fixtures::now(),
        expires_at: crate::fixtures::now() + expires_in,
    }
}

/// A removed user's address is free again, their sessions are gone, and the
/// account lists them no more; a changed record reads back changed.
pub async fn users_are_changed_and_removed_with_their_sessions(store: &dyn Storage) {
    let tenant = account();
    let email = format!("{}@example.com", UserId::generate().as_str());
    let owner = user(&tenant.id, &email);
    assert_eq!(
        store.insert_user(&owner, Some(&tenant)).await.unwrap(),
        UserInsert::Inserted
    );
    let colleague = user(&tenant.id, &format!("second.{email}"));
    store.insert_user(&colleague, None).await.unwrap();
    let token = format!("t-{}", UserId::generate().as_str());
    store
        .put_session(&session(&colleague, &token, Duration::hours(1)))
        .await
        .unwrap();

    let changed = User {
        password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$Y2hhbmdlZA".into(),
        ..colleague.clone()
    };
    store.put_user(&changed).await.unwrap();
    assert_eq!(
        store.get_user(&colleague.id).await.unwrap(),
        Some(changed.clone())
    );
    assert_eq!(
        store.find_user_by_email(&colleague.email).await.unwrap(),
        Some(changed.clone())
    );

    store.delete_user(&changed).await.unwrap();
    assert_eq!(store.get_user(&colleague.id).await.unwrap(), None);
    assert_eq!(
        store.find_user_by_email(&colleague.email).await.unwrap(),
        None
    );
    assert_eq!(store.get_session(&token).await.unwrap(), None);
    assert_eq!(
        store.list_users(&tenant.id).await.unwrap(),
        vec![owner.clone()]
    );
    // The address is anyone's again.
    let newcomer = user(&tenant.id, &colleague.email);
    assert_eq!(
        store.insert_user(&newcomer, None).await.unwrap(),
        UserInsert::Inserted
    );
    // Removing the old user again (a removal cut short, run again) leaves the
    // address with its new holder.
    store.delete_user(&changed).await.unwrap();
    assert_eq!(
        store.find_user_by_email(&colleague.email).await.unwrap(),
        Some(newcomer)
    );
}

/// A link reads back as put, is taken once, and an account lists its
/// invitations (never resets, never another account's).
pub async fn password_links_are_taken_once(store: &dyn Storage) {
    let tenant = account();
    let other = account();
    let inviter = UserId::generate();
    let token = |n: u32| format!("{}-{n}", UserId::generate().as_str());
    let invitation = link(
        &token(1),
        LinkPurpose::Invitation {
            account_id: tenant.id.clone(),
            email: "new@example.com".into(),
            invited_by: Some(inviter.clone()),
        },
        Duration::days(7),
    );
    let theirs = link(
        &token(2),
        LinkPurpose::Invitation {
            account_id: other.id.clone(),
            email: "else@example.com".into(),
            invited_by: Some(inviter.clone()),
        },
        Duration::days(7),
    );
    let reset = link(
        &token(3),
        LinkPurpose::Reset {
            user_id: UserId::generate(),
            account_id: tenant.id.clone(),
        },
        Duration::hours(24),
    );
    for link in [&invitation, &theirs, &reset] {
        store.put_password_link(link).await.unwrap();
    }
    assert_eq!(
        store.get_password_link(&reset.token_sha256).await.unwrap(),
        Some(reset.clone())
    );
    assert_eq!(
        store.list_invitations(&tenant.id).await.unwrap(),
        vec![invitation.clone()]
    );
    assert_eq!(
        store
            .take_password_link(&invitation.token_sha256)
            .await
            .unwrap(),
        Some(invitation.clone())
    );
    assert_eq!(
        store
            .take_password_link(&invitation.token_sha256)
            .await
            .unwrap(),
        None,
        "a link is taken once"
    );
    assert_eq!(
        store
            .get_password_link(&invitation.token_sha256)
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.list_invitations(&tenant.id).await.unwrap(), vec![]);
    assert_eq!(
        store.list_invitations(&other.id).await.unwrap(),
        vec![theirs.clone()]
    );
    assert_eq!(
        store.take_password_link(&reset.token_sha256).await.unwrap(),
        Some(reset)
    );
    assert_eq!(store.take_password_link("never-made").await.unwrap(), None);
}
