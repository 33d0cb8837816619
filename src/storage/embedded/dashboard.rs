//! Dashboard users and sessions: JSON records, with an email index (unique) and
//! listings of an account's users and of a user's sessions; password links,
//! with a listing of an account's invitations.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{EmbeddedStore, encode, keys, unavailable};
use crate::domain::account::Account;
use crate::domain::ids::{AccountId, UserId};
use crate::domain::password_link::{LinkPurpose, PasswordLink};
use crate::domain::user::{Session, User};
use crate::storage::{DashboardStore, StorageResult, UserInsert};

#[async_trait]
impl DashboardStore for EmbeddedStore {
    async fn insert_user(
        &self,
        user: &User,
        new_account: Option<&Account>,
    ) -> StorageResult<UserInsert> {
        let value = encode(user)?;
        let account = match new_account {
            Some(account) => Some((account.id.as_str().as_bytes().to_vec(), encode(account)?)),
            None => None,
        };
        let id = user.id.as_str().as_bytes().to_vec();
        let email = user.email.as_bytes().to_vec();
        let listing = keys::owned(&user.account_id, user.id.as_str());
        self.run(move |s| {
            let _serialised = s.user_insert.lock().unwrap_or_else(|p| p.into_inner());
            if s.user_emails.get(&email).map_err(unavailable)?.is_some() {
                return Ok(UserInsert::EmailTaken);
            }
            let mut batch = s.durable_batch();
            if let Some((key, record)) = account {
                batch.insert(&s.accounts, key, record);
            }
            batch.insert(&s.user_emails, email, id.clone());
            batch.insert(&s.account_users, listing, Vec::<u8>::new());
            batch.insert(&s.users, id, value);
            s.commit_durably(batch)?;
            Ok(UserInsert::Inserted)
        })
        .await
    }

    async fn get_user(&self, id: &UserId) -> StorageResult<Option<User>> {
        let key = id.as_str().as_bytes().to_vec();
        self.run(move |s| s.get_json(&s.users, &key)).await
    }

    async fn find_user_by_email(&self, email: &str) -> StorageResult<Option<User>> {
        let email = email.as_bytes().to_vec();
        self.run(
            move |s| match s.user_emails.get(&email).map_err(unavailable)? {
                Some(id) => s.get_json(&s.users, &id),
                None => Ok(None),
            },
        )
        .await
    }

    async fn list_users(&self, account: &AccountId) -> StorageResult<Vec<User>> {
        let prefix = account.as_str().as_bytes().to_vec();
        self.run(move |s| {
            let mut out = Vec::new();
            for guard in s.account_users.prefix(&prefix) {
                let listing = guard.key().map_err(unavailable)?;
                if let Some(user) = s.get_json(&s.users, &listing[prefix.len()..])? {
                    out.push(user);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn put_user(&self, user: &User) -> StorageResult<()> {
        let value = encode(user)?;
        let id = user.id.as_str().as_bytes().to_vec();
        self.put_one(|s| &s.users, id, value).await
    }

    async fn delete_user(&self, user: &User) -> StorageResult<()> {
        let id = user.id.as_str().as_bytes().to_vec();
        let email = user.email.as_bytes().to_vec();
        let listing = keys::owned(&user.account_id, user.id.as_str());
        self.run(move |s| {
            let _serialised = s.user_insert.lock().unwrap_or_else(|p| p.into_inner());
            let mut batch = s.durable_batch();
            // The address is freed only if it is still this user's.
            if s.user_emails.get(&email).map_err(unavailable)?.as_deref() == Some(&id[..]) {
                batch.remove(&s.user_emails, email);
            }
            batch.remove(&s.account_users, listing);
            for guard in s.user_sessions.prefix(&id) {
                let session = guard.key().map_err(unavailable)?;
                batch.remove(&s.sessions, session[id.len()..].to_vec());
                batch.remove(&s.user_sessions, session.to_vec());
            }
            batch.remove(&s.users, id);
            s.commit_durably(batch)
        })
        .await
    }

    async fn put_password_link(&self, link: &PasswordLink) -> StorageResult<()> {
        let value = encode(link)?;
        let key = link.token_sha256.as_bytes().to_vec();
        let listing = match &link.purpose {
            LinkPurpose::Invitation { account_id, .. } => {
                Some(keys::owned(account_id, &link.token_sha256))
            }
            LinkPurpose::Reset { .. } => None,
        };
        self.run(move |s| {
            let mut batch = s.durable_batch();
            batch.insert(&s.password_links, key, value);
            if let Some(listing) = listing {
                batch.insert(&s.account_invitations, listing, Vec::<u8>::new());
            }
            s.commit_durably(batch)
        })
        .await
    }

    async fn get_password_link(&self, token_sha256: &str) -> StorageResult<Option<PasswordLink>> {
        let key = token_sha256.as_bytes().to_vec();
        self.run(move |s| s.get_json(&s.password_links, &key)).await
    }

    async fn take_password_link(&self, token_sha256: &str) -> StorageResult<Option<PasswordLink>> {
        let key = token_sha256.as_bytes().to_vec();
        self.run(move |s| {
            // Read and removal under one lock: two takers cannot both get it.
            let _serialised = s.user_insert.lock().unwrap_or_else(|p| p.into_inner());
            let Some(link) = s.get_json::<PasswordLink>(&s.password_links, &key)? else {
                return Ok(None);
            };
            let mut batch = s.durable_batch();
            batch.remove(&s.password_links, key);
            batch.remove(
                &s.account_invitations,
                keys::owned(link.account_id(), &link.token_sha256),
            );
            s.commit_durably(batch)?;
            Ok(Some(link))
        })
        .await
    }

    async fn list_invitations(&self, account: &AccountId) -> StorageResult<Vec<PasswordLink>> {
        let prefix = account.as_str().as_bytes().to_vec();
        self.run(move |s| {
            let mut out = Vec::new();
            for guard in s.account_invitations.prefix(&prefix) {
                let listing = guard.key().map_err(unavailable)?;
                if let Some(link) = s.get_json(&s.password_links, &listing[prefix.len()..])? {
                    out.push(link);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn put_session(&self, session: &Session) -> StorageResult<()> {
        let value = encode(session)?;
        let key = session.token_sha256.as_bytes().to_vec();
        let listing = user_session(&session.user_id, &session.token_sha256);
        self.run(move |s| {
            let mut batch = s.durable_batch();
            batch.insert(&s.sessions, key, value);
            batch.insert(&s.user_sessions, listing, Vec::<u8>::new());
            s.commit_durably(batch)
        })
        .await
    }

    async fn get_session(&self, token_sha256: &str) -> StorageResult<Option<Session>> {
        let key = token_sha256.as_bytes().to_vec();
        self.run(move |s| s.get_json(&s.sessions, &key)).await
    }

    async fn delete_session(&self, token_sha256: &str) -> StorageResult<()> {
        let key = token_sha256.as_bytes().to_vec();
        self.run(move |s| {
            let Some(session) = s.get_json::<Session>(&s.sessions, &key)? else {
                return Ok(());
            };
            let mut batch = s.durable_batch();
            batch.remove(&s.sessions, key);
            batch.remove(
                &s.user_sessions,
                user_session(&session.user_id, &session.token_sha256),
            );
            s.commit_durably(batch)
        })
        .await
    }

    async fn delete_user_sessions(&self, user: &UserId, keep: Option<&str>) -> StorageResult<u64> {
        let prefix = user.as_str().as_bytes().to_vec();
        let keep = keep.map(|k| k.as_bytes().to_vec());
        self.run(move |s| {
            let mut batch = s.durable_batch();
            let mut ended = 0;
            for guard in s.user_sessions.prefix(&prefix) {
                let listing = guard.key().map_err(unavailable)?;
                let token = listing[prefix.len()..].to_vec();
                if keep.as_ref() == Some(&token) {
                    continue;
                }
                batch.remove(&s.sessions, token);
                batch.remove(&s.user_sessions, listing.to_vec());
                ended += 1;
            }
            s.commit_durably(batch)?;
            Ok(ended)
        })
        .await
    }

    async fn purge_sessions(&self, before: DateTime<Utc>) -> StorageResult<u64> {
        self.run(move |s| {
            let mut batch = s.durable_batch();
            let mut purged = 0;
            for guard in s.sessions.iter() {
                let (key, value) = guard.into_inner().map_err(unavailable)?;
                let session: Session = super::decode(&value)?;
                if session.expires_at < before {
                    batch.remove(&s.sessions, key.to_vec());
                    batch.remove(
                        &s.user_sessions,
                        user_session(&session.user_id, &session.token_sha256),
                    );
                    purged += 1;
                }
            }
            if purged > 0 {
                s.commit_durably(batch)?;
            }
            Ok(purged)
        })
        .await
    }
}

fn user_session(user: &UserId, token_sha256: &str) -> Vec<u8> {
    let mut key = user.as_str().as_bytes().to_vec();
    key.extend_from_slice(token_sha256.as_bytes());
    key
}
