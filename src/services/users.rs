//! The dashboard's people: sign-up (a new account on the Standard plan and its
//! first user), more users for an account, sign-in with a password, sessions
//! and sign-out. Nothing here is reachable with an API key: the API still only
//! accepts keys, and the dashboard only sessions.

use std::sync::{Arc, OnceLock};

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use chrono::Duration;
use rand::RngCore;
use sha2::{Digest, Sha256};

use super::throttle::Throttle;
use crate::clock::Clock;
use crate::domain::account::{Account, PlanKind};
use crate::domain::ids::{AccountId, UserId};
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
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
}

pub struct UserService {
    storage: Arc<dyn Storage>,
    clock: Clock,
    /// Failed sign-ins per client address.
    sign_ins_per_client: Throttle,
    /// Failed sign-ins per email address (one account, guessed from many places).
    failures_per_email: Throttle,
    /// Sign-ups per client address.
    sign_ups_per_client: Throttle,
}

impl UserService {
    pub fn new(storage: Arc<dyn Storage>, clock: Clock) -> Self {
        UserService {
            storage,
            clock,
            sign_ins_per_client: Throttle::new(20, Duration::minutes(15)),
            failures_per_email: Throttle::new(5, Duration::minutes(15)),
            sign_ups_per_client: Throttle::new(10, Duration::hours(1)),
        }
    }

    /// Creates an account (Standard plan) with its first user, and signs in.
    pub async fn register(
        &self,
        registration: Registration,
        client: &str,
    ) -> Result<SignedIn, UserError> {
        let now = self.clock.now();
        self.sign_ups_per_client
            .check(client, now)
            .map_err(|retry_after| UserError::Throttled { retry_after })?;
        self.sign_ups_per_client.count(client, now);
        let account = Account {
            id: AccountId::generate(),
            name: registration.company,
            plan: PlanKind::Standard,
            custom_requests_per_hour: None,
            disabled: false,
            created_at: now,
        };
        let user = self
            .new_user(&account.id, registration.email, registration.password)
            .await?;
        match self.storage.insert_user(&user, Some(&account)).await? {
            UserInsert::Inserted => {}
            UserInsert::EmailTaken => return Err(UserError::EmailTaken),
        }
        tracing::info!(request_id = %crate::telemetry::request_id(), account = %account.id, user = %user.id, "account registered in the dashboard");
        self.start_session(&user).await
    }

    /// Adds a user to an existing account.
    pub async fn add_user(
        &self,
        account: &AccountId,
        email: String,
        password: String,
    ) -> Result<User, UserError> {
        let user = self.new_user(account, email, password).await?;
        match self.storage.insert_user(&user, None).await? {
            UserInsert::Inserted => Ok(user),
            UserInsert::EmailTaken => Err(UserError::EmailTaken),
        }
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
        // Taken before the (slow) password check and given back on success, so
        // guesses sent in parallel cannot all pass the limit.
        self.sign_ins_per_client
            .take(client, now)
            .map_err(|retry_after| UserError::Throttled { retry_after })?;
        if let Err(retry_after) = self.failures_per_email.take(email, now) {
            self.sign_ins_per_client.give_back(client);
            return Err(UserError::Throttled { retry_after });
        }
        let user = self.storage.find_user_by_email(email).await?;
        let hash = user
            .as_ref()
            .map_or_else(|| dummy_hash().to_owned(), |u| u.password_hash.clone());
        let matches = blocking(move || verify(&password, &hash)).await?;
        match (user, matches) {
            (Some(user), true) => {
                // Only failures count: an office behind one address signs in
                // many times a day.
                self.sign_ins_per_client.give_back(client);
                self.failures_per_email.clear(email);
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
        Ok(self.storage.delete_session(&session.token_sha256).await?)
    }

    /// Ends every other session of the session's user; returns how many.
    pub async fn sign_out_elsewhere(&self, session: &Session) -> Result<u64, UserError> {
        Ok(self
            .storage
            .delete_user_sessions(&session.user_id, Some(&session.token_sha256))
            .await?)
    }

    /// Forgets expired sessions and idle throttle entries (housekeeping).
    pub async fn purge(&self) -> Result<u64, StorageError> {
        let now = self.clock.now();
        for throttle in [
            &self.sign_ins_per_client,
            &self.failures_per_email,
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
