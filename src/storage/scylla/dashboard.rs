//! Dashboard users (unique by email, see `users_by_email` in
//! `cql/003_idempotency_dashboard.cql`) and their sessions.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::statements::LoggedBatch;
use super::{ScyllaStore, decode, encode, keys};
use crate::domain::account::Account;
use crate::domain::ids::{AccountId, UserId};
use crate::domain::user::{Session, User};
use crate::storage::{DashboardStore, StorageResult, UserInsert};

impl ScyllaStore {
    /// Writes the rows of a user (and of its new account) claimed by email.
    async fn write_user(
        &self,
        record: String,
        account_record: Option<String>,
    ) -> StorageResult<User> {
        let user: User = decode(&record)?;
        let mut batch = LoggedBatch::new();
        if let Some(account_record) = account_record {
            let account: Account = decode(&account_record)?;
            batch.add(
                &self.st.put_account,
                (account.id.as_str().to_owned(), account_record),
            );
        }
        batch.add(
            &self.st.put_user,
            (user.id.as_str().to_owned(), record.clone()),
        );
        batch.add(
            &self.st.put_user_by_account,
            (
                user.account_id.as_str().to_owned(),
                user.id.as_str().to_owned(),
                record,
            ),
        );
        self.logged(batch).await?;
        Ok(user)
    }
}

#[async_trait]
impl DashboardStore for ScyllaStore {
    async fn insert_user(
        &self,
        user: &User,
        new_account: Option<&Account>,
    ) -> StorageResult<UserInsert> {
        let record = encode(user)?;
        let account_record = new_account.map(encode).transpose()?;
        let claimed = self
            .applied(
                &self.st.claim_email,
                (
                    user.email.as_str(),
                    user.id.as_str(),
                    &record,
                    &account_record,
                ),
            )
            .await?;
        if !claimed {
            // Finishes the holder's rows if its writer died after claiming.
            self.find_user_by_email(&user.email).await?;
            return Ok(UserInsert::EmailTaken);
        }
        self.write_user(record, account_record).await?;
        Ok(UserInsert::Inserted)
    }

    async fn get_user(&self, id: &UserId) -> StorageResult<Option<User>> {
        self.record(&self.st.get_user, (id.as_str(),)).await
    }

    async fn find_user_by_email(&self, email: &str) -> StorageResult<Option<User>> {
        let Some((Some(record), account_record)) = self
            .first::<(Option<String>, Option<String>)>(&self.st.email_claim, (email,))
            .await?
        else {
            return Ok(None);
        };
        let claimed: User = decode(&record)?;
        match self.get_user(&claimed.id).await? {
            Some(user) => Ok(Some(user)),
            None => self.write_user(record, account_record).await.map(Some),
        }
    }

    /// Clustered by user id ascending: oldest first.
    async fn list_users(&self, account: &AccountId) -> StorageResult<Vec<User>> {
        self.records(&self.st.users_of_account, (account.as_str(),))
            .await
    }

    async fn put_session(&self, session: &Session) -> StorageResult<()> {
        let record = encode(session)?;
        let mut batch = LoggedBatch::new();
        batch.add(
            &self.st.put_session,
            (
                session.token_sha256.clone(),
                session.user_id.as_str().to_owned(),
                keys::micros(&session.expires_at),
                record,
            ),
        );
        batch.add(
            &self.st.put_session_of_user,
            (
                session.user_id.as_str().to_owned(),
                session.token_sha256.clone(),
            ),
        );
        self.logged(batch).await
    }

    async fn get_session(&self, token_sha256: &str) -> StorageResult<Option<Session>> {
        self.record(&self.st.get_session, (token_sha256,)).await
    }

    async fn delete_session(&self, token_sha256: &str) -> StorageResult<()> {
        let user = self
            .first::<(Option<String>,)>(&self.st.get_session_user, (token_sha256,))
            .await?
            .and_then(|(user,)| user);
        match user {
            Some(user) => {
                self.end_sessions(vec![(user, token_sha256.to_owned())])
                    .await
            }
            None => Ok(()),
        }
    }

    async fn delete_user_sessions(&self, user: &UserId, keep: Option<&str>) -> StorageResult<u64> {
        let tokens = self
            .rows(
                &self.st.sessions_of_user,
                (user.as_str(),),
                |(token,): (String,)| Ok(token),
            )
            .await?;
        let ending: Vec<(String, String)> = tokens
            .into_iter()
            .filter(|token| Some(token.as_str()) != keep)
            .map(|token| (user.as_str().to_owned(), token))
            .collect();
        let ended = ending.len() as u64;
        self.end_sessions(ending).await?;
        Ok(ended)
    }

    /// A paged scan of the sessions table (one row per signed-in browser).
    async fn purge_sessions(&self, before: DateTime<Utc>) -> StorageResult<u64> {
        let before = keys::micros(&before);
        let expired = self
            .rows(
                &self.st.all_sessions,
                (),
                |(token, user, expires): (String, Option<String>, Option<i64>)| {
                    Ok(match (user, expires) {
                        (Some(user), Some(at)) if at < before => Some((user, token)),
                        _ => None,
                    })
                },
            )
            .await?;
        let expired: Vec<(String, String)> = expired.into_iter().flatten().collect();
        let purged = expired.len() as u64;
        self.end_sessions(expired).await?;
        Ok(purged)
    }
}

impl ScyllaStore {
    /// Deletes sessions, each `(user id, token hash)`, from both tables.
    async fn end_sessions(&self, sessions: Vec<(String, String)>) -> StorageResult<()> {
        for (user, token) in sessions {
            let mut batch = LoggedBatch::new();
            batch.add(&self.st.delete_session, (token.clone(),));
            batch.add(&self.st.delete_session_of_user, (user, token));
            self.logged(batch).await?;
        }
        Ok(())
    }
}
