//! The dashboard's people: sign-up (a new account on the Standard plan and its
//! first user), invitations that let more people join an account, removing
//! users, sign-in with a password, changing and resetting passwords, sessions
//! and sign-out. Nothing here is reachable with an API key: the API still only
//! accepts keys, and the dashboard only sessions.
//!
//! Nothing here tells whether an address is registered: sign-up answers the
//! same for a known address, an invitation is made for any address (its
//! invitee learns, by opening it, whether the address is free), and sign-in
//! answers the same for an unknown address and a wrong password.

use std::sync::{Arc, OnceLock};

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use chrono::Duration;
use rand::RngCore;
use sha2::{Digest, Sha256};

use super::live::{Ending, StreamEnd};
use super::stream_guard::CredentialChanges;
use super::throttle::{ClientKeys, Throttle};
use crate::clock::Clock;
use crate::domain::account::{Account, PlanKind, StopSettings};
use crate::domain::ids::{AccountId, UserId};
use crate::domain::password_link::{
    INVITATION_LIFETIME, LINK_PATH, LinkPurpose, PasswordLink, RESET_LIFETIME,
};
use crate::domain::user::{SESSION_LIFETIME, Session, User};
use crate::storage::{Storage, StorageError, UserInsert};
use crate::unavailable::Unavailable;

/// A sign-up, checked at the boundary (the dashboard's form).
pub struct Registration {
    pub company: String,
    /// Lower-case (`domain::user::parse_email`).
    pub email: String,
    /// Checked with `domain::user::check_new_password`.
    pub password: String,
}

/// A new session and the one copy of its token, for the browser's cookie.
pub struct SignedIn {
    pub token: String,
    pub session: Session,
}

#[derive(Debug, thiserror::Error)]
pub enum UserError {
    #[error("an account already uses this email address")]
    EmailTaken,
    /// The same answer for an unknown address and a wrong password.
    #[error("the email address or password is not right")]
    BadCredentials,
    #[error("too many attempts; try again in {retry_after} seconds")]
    Throttled { retry_after: u64 },
    /// The account's last user cannot be removed: nobody could sign in.
    #[error("an account keeps at least one user")]
    LastUser,
    #[error("no such user in this account")]
    UnknownUser,
    /// Used, withdrawn, expired, or never made: the same answer for each.
    #[error("this link does not work: it was used already, withdrawn, or has expired")]
    LinkUnusable,
    #[error("the current password is not right")]
    WrongPassword,
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
}

/// A new one-time link and the one copy of its token.
pub struct IssuedLink {
    pub token: String,
    pub link: PasswordLink,
}

impl IssuedLink {
    /// The link's path and query (`/dashboard/password?token=…`).
    pub fn path(&self) -> String {
        format!("{LINK_PATH}?token={}", self.token)
    }
}

/// Invitations one account may make in an hour: enough for onboarding a team,
/// too few to probe many addresses (an invitee's page says whether the
/// address is free).
pub const INVITATIONS_PER_HOUR: usize = 20;

pub struct UserService {
    storage: Arc<dyn Storage>,
    clock: Clock,
    /// Failed sign-ins per (email, client address): guessing one account's
    /// password from one place. Never per email alone, or anyone could lock
    /// a user out by failing on purpose.
    failures_per_pair: Throttle,
    /// Sign-in attempts per client address (an IPv6 /64): whether an address
    /// has been failing, which makes it answer to its network's limit.
    attempts_per_address: Throttle,
    /// Sign-in attempts per client network (IPv4 /24, IPv6 /64): guessing at
    /// many accounts, or from many addresses of one network. Refuses only
    /// addresses that have been failing themselves.
    attempts_per_network: Throttle,
    /// Sign-ups per client address.
    sign_ups_per_client: Throttle,
    /// Invitations per account.
    invitations_per_account: Throttle,
    /// Serialises removals: two users removing each other at once must not
    /// both pass the last-user check (on this instance; see docs/design.md).
    removals: tokio::sync::Mutex<()>,
    /// Tells the open dashboard streams that a session ended.
    announced: CredentialChanges,
}

/// Wrong passwords for one address from one client before it must wait.
pub const FAILURES_PER_PAIR: usize = 5;
/// Failed sign-ins of one client network before its failing addresses wait.
pub const FAILURES_PER_NETWORK: usize = 20;
/// The window both sign-in limits count in.
pub const SIGN_IN_WINDOW: Duration = Duration::minutes(15);

impl UserService {
    pub fn new(storage: Arc<dyn Storage>, clock: Clock, announced: CredentialChanges) -> Self {
        UserService {
            storage,
            clock,
            announced,
            failures_per_pair: Throttle::new(FAILURES_PER_PAIR, SIGN_IN_WINDOW),
            attempts_per_address: Throttle::new(FAILURES_PER_NETWORK, SIGN_IN_WINDOW),
            attempts_per_network: Throttle::new(FAILURES_PER_NETWORK, SIGN_IN_WINDOW),
            sign_ups_per_client: Throttle::new(10, Duration::hours(1)),
            invitations_per_account: Throttle::new(INVITATIONS_PER_HOUR, Duration::hours(1)),
            removals: tokio::sync::Mutex::new(()),
        }
    }

    /// Creates an account (Standard plan) with its first user. Answers the
    /// same (after the same work: the password is hashed either way) when the
    /// address is registered already, and then creates nothing: the owner of
    /// the address signs in as before, anyone else learns nothing.
    pub async fn register(
        &self,
        registration: Registration,
        client: &str,
    ) -> Result<(), UserError> {
        let now = self.clock.now();
        let from = ClientKeys::of(client);
        self.sign_ups_per_client
            .take(&from.address, now)
            .map_err(|retry_after| UserError::Throttled { retry_after })?;
        let account = Account {
            id: AccountId::generate(),
            name: registration.company,
            plan: PlanKind::Standard,
            custom_requests_per_hour: None,
            custom_max_streams: None,
            disabled: false,
            created_at: now,
            stop_settings: StopSettings::default(),
        };
        let user = self
            .new_user(&account.id, registration.email, registration.password)
            .await?;
        match self.storage.insert_user(&user, Some(&account)).await? {
            UserInsert::Inserted => {
                tracing::info!(request_id = %crate::telemetry::request_id(), account = %account.id, user = %user.id, "account registered in the dashboard");
            }
            UserInsert::EmailTaken => {
                tracing::info!(request_id = %crate::telemetry::request_id(), "a sign-up named a registered address; nothing created");
            }
        }
        Ok(())
    }

    /// Invites `email` to join the inviter's account: a one-time link, valid
    /// for `INVITATION_LIFETIME`, for the inviter to hand over. Made for any
    /// address, registered or not.
    pub async fn invite(&self, inviter: &User, email: String) -> Result<IssuedLink, UserError> {
        let now = self.clock.now();
        self.invitations_per_account
            .take(inviter.account_id.as_str(), now)
            .map_err(|retry_after| UserError::Throttled { retry_after })?;
        let purpose = LinkPurpose::Invitation {
            account_id: inviter.account_id.clone(),
            email,
            invited_by: Some(inviter.id.clone()),
        };
        let issued = self.issue_link(purpose, INVITATION_LIFETIME).await?;
        tracing::info!(request_id = %crate::telemetry::request_id(), account = %inviter.account_id, by = %inviter.id, "invitation made in the dashboard");
        Ok(issued)
    }

    /// The operator's way into an account (`freight users create`): a
    /// one-time link for `email` to join `account` as a user, choosing a
    /// password, as an invitation from a colleague does. The first start's
    /// account has no user until one is made this way.
    pub async fn invite_as_operator(
        &self,
        account: &AccountId,
        email: String,
    ) -> Result<IssuedLink, UserError> {
        let purpose = LinkPurpose::Invitation {
            account_id: account.clone(),
            email,
            invited_by: None,
        };
        let issued = self.issue_link(purpose, INVITATION_LIFETIME).await?;
        tracing::info!(%account, "invitation made by the operator");
        Ok(issued)
    }

    /// The account's invitations still open, oldest first; expired ones are
    /// removed on the way.
    pub async fn invitations(&self, account: &AccountId) -> Result<Vec<PasswordLink>, UserError> {
        let now = self.clock.now();
        let mut open = Vec::new();
        for link in self.storage.list_invitations(account).await? {
            if link.is_live(now) {
                open.push(link);
            } else {
                self.storage.take_password_link(&link.token_sha256).await?;
            }
        }
        open.sort_by_key(|link| link.created_at);
        Ok(open)
    }

    /// Withdraws an invitation of the account (by its token's hash, as the
    /// users page names it); false if there is none such.
    pub async fn withdraw_invitation(
        &self,
        account: &AccountId,
        token_sha256: &str,
    ) -> Result<bool, UserError> {
        let Some(link) = self.storage.get_password_link(token_sha256).await? else {
            return Ok(false);
        };
        if link.invited_email().is_none() || link.account_id() != account {
            return Ok(false);
        }
        Ok(self
            .storage
            .take_password_link(token_sha256)
            .await?
            .is_some())
    }

    /// The live link of a token, and the address whose password it sets.
    pub async fn link(&self, token: &str) -> Result<(PasswordLink, String), UserError> {
        let link = self
            .storage
            .get_password_link(&sha256_hex(token))
            .await?
            .filter(|link| link.is_live(self.clock.now()))
            .ok_or(UserError::LinkUnusable)?;
        let email = match &link.purpose {
            LinkPurpose::Invitation { email, .. } => email.clone(),
            LinkPurpose::Reset { user_id, .. } => {
                let user = self.storage.get_user(user_id).await?;
                user.ok_or(UserError::LinkUnusable)?.email
            }
        };
        Ok((link, email))
    }

    /// Redeems a link with the password its holder chose (checked by the
    /// caller with `check_new_password`): the invitee becomes a user of the
    /// account, or the user's password is replaced; either way signed in.
    /// The link works once, whatever the outcome.
    pub async fn redeem(&self, token: &str, password: String) -> Result<SignedIn, UserError> {
        let link = self
            .storage
            .take_password_link(&sha256_hex(token))
            .await?
            .filter(|link| link.is_live(self.clock.now()))
            .ok_or(UserError::LinkUnusable)?;
        match link.purpose {
            LinkPurpose::Invitation {
                account_id, email, ..
            } => {
                let user = self.new_user(&account_id, email, password).await?;
                match self.storage.insert_user(&user, None).await? {
                    UserInsert::Inserted => {}
                    UserInsert::EmailTaken => return Err(UserError::EmailTaken),
                }
                tracing::info!(account = %account_id, user = %user.id, "invitation accepted");
                self.start_session(&user).await
            }
            LinkPurpose::Reset { user_id, .. } => {
                let user = self
                    .storage
                    .get_user(&user_id)
                    .await?
                    .ok_or(UserError::LinkUnusable)?;
                let user = self.with_password(user, password).await?;
                self.storage.delete_user_sessions(&user.id, None).await?;
                self.announced.notify();
                tracing::info!(account = %user.account_id, user = %user.id, "password reset");
                self.start_session(&user).await
            }
        }
    }

    /// Removes a user of the account; their sessions end at once. The last
    /// user of an account cannot be removed.
    pub async fn remove_user(&self, account: &AccountId, id: &UserId) -> Result<User, UserError> {
        let _one_at_a_time = self.removals.lock().await;
        let users = self.storage.list_users(account).await?;
        let user = users
            .iter()
            .find(|user| &user.id == id)
            .cloned()
            .ok_or(UserError::UnknownUser)?;
        if users.len() <= 1 {
            return Err(UserError::LastUser);
        }
        self.storage.delete_user(&user).await?;
        self.announced.notify();
        tracing::info!(request_id = %crate::telemetry::request_id(), account = %account, user = %user.id, "user removed");
        Ok(user)
    }

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

    async fn issue_link(
        &self,
        purpose: LinkPurpose,
        lifetime: Duration,
    ) -> Result<IssuedLink, UserError> {
        let token = random_hex();
        let now = self.clock.now();
        let link = PasswordLink {
            token_sha256: sha256_hex(&token),
            purpose,
            created_at: now,
            expires_at: now + lifetime,
        };
        self.storage.put_password_link(&link).await?;
        Ok(IssuedLink { token, link })
    }

    /// The user with a new password, stored.
    async fn with_password(&self, user: User, password: String) -> Result<User, UserError> {
        let password_hash = blocking(move || hash(&password)).await?;
        let user = User {
            password_hash,
            ..user
        };
        self.storage.put_user(&user).await?;
        Ok(user)
    }

    pub async fn users(&self, account: &AccountId) -> Result<Vec<User>, UserError> {
        Ok(self.storage.list_users(account).await?)
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

    async fn new_user(
        &self,
        account: &AccountId,
        email: String,
        password: String,
    ) -> Result<User, UserError> {
        let password_hash = blocking(move || hash(&password)).await?;
        Ok(User {
            id: UserId::generate(),
            account_id: account.clone(),
            email,
            password_hash,
            created_at: self.clock.now(),
        })
    }

    async fn start_session(&self, user: &User) -> Result<SignedIn, UserError> {
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

/// argon2 is deliberately slow (tens of milliseconds): off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Unavailable> {
    crate::cpu_placement::spawn_blocking(work)
        .await
        .map_err(Unavailable::task)
}

fn hash(password: &str) -> String {
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt).expect("16 bytes make a valid salt");
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .expect("argon2 with default parameters hashes any password")
        .to_string()
}

fn verify(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// The password of a user whose password was reset: not a PHC string, so no
/// password matches it.
const NO_PASSWORD: &str = "!reset";

/// A hash no password is known for, checked when the address is unknown.
fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash(&random_hex()))
}

fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
