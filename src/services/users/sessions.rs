//! Signing in and out, sessions and passwords.

use std::sync::Arc;

use super::{
    IssuedLink, NO_PASSWORD, SignedIn, UserError, UserService, blocking, dummy_hash, hash,
    random_hex, sha256_hex, verify,
};
use crate::domain::password_link::{LinkPurpose, RESET_LIFETIME};
use crate::domain::user::{SESSION_LIFETIME, Session, User};
use crate::services::live::{Ending, StreamEnd};
use crate::services::throttle::ClientKeys;
use crate::storage::StorageError;

impl UserService {
    /// Changes the signed-in user's password (the current one must be
    /// right) and ends their other sessions; returns how many ended.
    pub async fn change_password(
        &self,
        session: &Session,
        current: String,
        new: String,
    ) -> Result<u64, UserError> {
        let now = self.clock.now();
        let attempt = format!("{}\u{0}change", session.user_id);
        self.failures_per_pair
            .take(&attempt, now)
            .map_err(|retry_after| UserError::Throttled { retry_after })?;
        let user = self
            .storage
            .get_user(&session.user_id)
            .await?
            .ok_or(UserError::UnknownUser)?;
        let hash = user.password_hash.clone();
        if !blocking(move || verify(&current, &hash)).await? {
            return Err(UserError::WrongPassword);
        }
        self.failures_per_pair.clear(&attempt);
        let user = self.with_password(user, new).await?;
        let ended = self
            .storage
            .delete_user_sessions(&user.id, Some(&session.token_sha256))
            .await?;
        self.announced.notify();
        tracing::info!(request_id = %crate::telemetry::request_id(), user = %user.id, ended, "password changed");
        Ok(ended)
    }

    /// The operator's reset: the user's password stops working, every
    /// session of theirs ends, and a one-time link (valid for
    /// `RESET_LIFETIME`) lets them choose a new one.
    pub async fn reset_password(&self, email: &str) -> Result<(User, IssuedLink), UserError> {
        let user = self
            .storage
            .find_user_by_email(email)
            .await?
            .ok_or(UserError::UnknownUser)?;
        let user = User {
            password_hash: NO_PASSWORD.to_owned(),
            ..user
        };
        self.storage.put_user(&user).await?;
        self.storage.delete_user_sessions(&user.id, None).await?;
        self.announced.notify();
        let purpose = LinkPurpose::Reset {
            user_id: user.id.clone(),
            account_id: user.account_id.clone(),
        };
        let issued = self.issue_link(purpose, RESET_LIFETIME).await?;
        tracing::info!(account = %user.account_id, user = %user.id, "password reset by the operator");
        Ok((user, issued))
    }

    /// The user with a new password, stored.
    pub(super) async fn with_password(
        &self,
        user: User,
        password: String,
    ) -> Result<User, UserError> {
        let password_hash = blocking(move || hash(&password)).await?;
        let user = User {
            password_hash,
            ..user
        };
        self.storage.put_user(&user).await?;
        Ok(user)
    }

    /// Checks a password and starts a session. Unknown addresses cost the same
    /// hash check as wrong passwords, so timing tells nothing about who exists.
    pub async fn sign_in(
        &self,
        email: &str,
        password: String,
        client: &str,
    ) -> Result<SignedIn, UserError> {
        let now = self.clock.now();
        let from = ClientKeys::of(client);
        let pair = format!("{email}\u{0}{}", from.address);
        // Taken before the (slow) password check and given back on success, so
        // guesses sent in parallel cannot all pass the limits.
        self.failures_per_pair
            .take(&pair, now)
            .map_err(|retry_after| UserError::Throttled { retry_after })?;
        // A network over its limit refuses only its addresses that have been
        // trying (in flight or failed): a colleague behind the same /24 who
        // has not failed still signs in.
        let has_tried = self.attempts_per_address.recent(&from.address, now) > 0;
        if let Err(retry_after) = self
            .attempts_per_network
            .take_if(&from.network, now, has_tried)
        {
            self.failures_per_pair.give_back(&pair);
            return Err(UserError::Throttled { retry_after });
        }
        self.attempts_per_address
            .take_if(&from.address, now, false)
            .expect("never refused when not enforced");
        let user = self.storage.find_user_by_email(email).await?;
        let hash = user
            .as_ref()
            .map_or_else(|| dummy_hash().to_owned(), |u| u.password_hash.clone());
        let matches = blocking(move || verify(&password, &hash)).await?;
        match (user, matches) {
            (Some(user), true) => {
                // Only failures count: an office behind one address signs in
                // many times a day.
                self.failures_per_pair.clear(&pair);
                self.attempts_per_address.give_back(&from.address);
                self.attempts_per_network.give_back(&from.network);
                self.start_session(&user).await
            }
            _ => Err(UserError::BadCredentials),
        }
    }

    /// The live session of a cookie's token, with its user.
    pub async fn session(&self, token: &str) -> Result<Option<(Session, User)>, UserError> {
        let Some(session) = self.storage.get_session(&sha256_hex(token)).await? else {
            return Ok(None);
        };
        if !session.is_live(self.clock.now()) {
            return Ok(None);
        }
        Ok(self
            .storage
            .get_user(&session.user_id)
            .await?
            .map(|user| (session, user)))
    }

    pub async fn sign_out(&self, session: &Session) -> Result<(), UserError> {
        self.storage.delete_session(&session.token_sha256).await?;
        self.announced.notify();
        Ok(())
    }

    /// Ends every other session of the session's user; returns how many.
    pub async fn sign_out_elsewhere(&self, session: &Session) -> Result<u64, UserError> {
        let ended = self
            .storage
            .delete_user_sessions(&session.user_id, Some(&session.token_sha256))
            .await?;
        self.announced.notify();
        Ok(ended)
    }

    /// Resolves when the session (by its token's hash) no longer holds:
    /// signed out, expired, its user removed, its account disabled (see
    /// `stream_guard` for how soon).
    pub fn watch_session(self: &Arc<Self>, token_sha256: String) -> Ending {
        let users = self.clone();
        self.announced.guard(move || {
            let (users, token) = (users.clone(), token_sha256.clone());
            async move { users.session_standing(&token).await }
        })
    }

    /// Why the session no longer holds, if it does not.
    async fn session_standing(&self, token_sha256: &str) -> Option<StreamEnd> {
        let read = async {
            let Some(session) = self.storage.get_session(token_sha256).await? else {
                return Ok(Some(StreamEnd::SessionEnded));
            };
            if !session.is_live(self.clock.now()) {
                return Ok(Some(StreamEnd::SessionExpired));
            }
            if self.storage.get_user(&session.user_id).await?.is_none() {
                return Ok(Some(StreamEnd::SessionEnded));
            }
            let account = self.storage.get_account(&session.account_id).await?;
            Ok::<_, StorageError>(
                account
                    .is_none_or(|a| a.disabled)
                    .then_some(StreamEnd::AccountDisabled),
            )
        };
        read.await.unwrap_or_else(|error| {
            tracing::warn!(error = %crate::telemetry::error_chain(&error), "could not check a streaming session; its stream goes on until the next check");
            None
        })
    }

    /// Forgets expired sessions and idle throttle entries (housekeeping).
    pub async fn purge(&self) -> Result<u64, StorageError> {
        let now = self.clock.now();
        for throttle in [
            &self.failures_per_pair,
            &self.attempts_per_address,
            &self.attempts_per_network,
            &self.sign_ups_per_client,
        ] {
            throttle.forget_idle(now);
        }
        self.storage.purge_sessions(now).await
    }

    pub(super) async fn start_session(&self, user: &User) -> Result<SignedIn, UserError> {
        let token = random_hex();
        let now = self.clock.now();
        let session = Session {
            token_sha256: sha256_hex(&token),
            user_id: user.id.clone(),
            account_id: user.account_id.clone(),
            csrf_token: random_hex(),
            created_at: now,
            expires_at: now + SESSION_LIFETIME,
        };
        self.storage.put_session(&session).await?;
        Ok(SignedIn { token, session })
    }
}
