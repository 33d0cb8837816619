//! Dashboard users (unique by email, see `users_by_email` in
//! `cql/003_idempotency_dashboard.cql`), their sessions, and password links
//! (`cql/006_password_links.cql`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::statements::LoggedBatch;
use super::{ScyllaStore, decode, encode, keys};
use crate::domain::account::Account;
use crate::domain::ids::{AccountId, UserId};
use crate::domain::password_link::{LinkPurpose, PasswordLink};
use crate::domain::user::{Session, User};
use crate::storage::{DashboardStore, StorageError, StorageResult, UserInsert};

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

    /// The record in both of the user's rows (the email claim's copy is only
    /// read to finish a user whose rows are missing, which this one's are not).
    async fn put_user(&self, user: &User) -> StorageResult<()> {
        let record = encode(user)?;
        let mut batch = LoggedBatch::new();
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
        self.logged(batch).await
    }

    /// The email claim first: while it stands, a reader that finds the user
    /// row gone would write the user back from it (`find_user_by_email`).
    /// Conditional on the claim still being this user's, so a later user of
    /// the address keeps theirs. A removal cut short is finished by running
    /// it again.
    async fn delete_user(&self, user: &User) -> StorageResult<()> {
        self.applied(
            &self.st.release_email,
            (user.email.as_str(), user.id.as_str()),
        )
        .await?;
        self.delete_user_sessions(&user.id, None).await?;
        let mut batch = LoggedBatch::new();
        batch.add(
            &self.st.delete_user_of_account,
            (
                user.account_id.as_str().to_owned(),
                user.id.as_str().to_owned(),
            ),
        );
        batch.add(&self.st.delete_user, (user.id.as_str().to_owned(),));
        self.logged(batch).await
    }

    /// The link row by LWT (every write to it is one), then the account's
    /// listing of an invitation.
    async fn put_password_link(&self, link: &PasswordLink) -> StorageResult<()> {
        let record = encode(link)?;
        let inserted = self
            .applied(
                &self.st.put_password_link,
                (link.token_sha256.as_str(), record.as_str()),
            )
            .await?;
        if !inserted {
            return Err(StorageError::corrupt(
                "a new password link's token hash is taken (256 random bits collided?)",
            ));
        }
        if let LinkPurpose::Invitation { account_id, .. } = &link.purpose {
            self.exec(
                &self.st.put_invitation_of_account,
                (account_id.as_str(), link.token_sha256.as_str(), record),
            )
            .await?;
        }
        Ok(())
    }

    async fn get_password_link(&self, token_sha256: &str) -> StorageResult<Option<PasswordLink>> {
        self.record(&self.st.get_password_link, (token_sha256,))
            .await
    }

    /// Read, then `DELETE ... IF EXISTS`: of callers racing for the link,
    /// the one whose delete applied has it. Records never change, so the one
    /// read is the one deleted.
    async fn take_password_link(&self, token_sha256: &str) -> StorageResult<Option<PasswordLink>> {
        let Some(link) = self.get_password_link(token_sha256).await? else {
            return Ok(None);
        };
        if !self
            .applied(&self.st.take_password_link, (token_sha256,))
            .await?
        {
            return Ok(None);
        }
        self.exec(
            &self.st.delete_invitation_of_account,
            (link.account_id().as_str(), token_sha256),
        )
        .await?;
        Ok(Some(link))
    }

    async fn list_invitations(&self, account: &AccountId) -> StorageResult<Vec<PasswordLink>> {
        self.records(&self.st.invitations_of_account, (account.as_str(),))
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
