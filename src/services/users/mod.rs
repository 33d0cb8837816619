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

use super::stream_guard::CredentialChanges;
use super::throttle::{ClientKeys, Throttle};
use crate::clock::Clock;
use crate::domain::account::{Account, PlanKind, StopSettings};
use crate::domain::ids::{AccountId, UserId};
use crate::domain::password_link::{LINK_PATH, PasswordLink};
use crate::domain::user::{Role, Session, User};
use crate::storage::{Storage, StorageError, UserInsert};
use crate::unavailable::Unavailable;

mod invitations;
mod sessions;

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
    /// The account's last owner cannot be removed or made a member: nobody
    /// could manage its users, keys, plan or settings.
    #[error("an account keeps at least one owner; make another user an owner first")]
    LastOwner,
    /// Managing users, keys, plan and settings is for owners.
    #[error("only the account's owners may do this")]
    OwnersOnly,
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
    /// Serialises removals and role changes: two owners removing or
    /// demoting each other at once must not both pass the last-owner check
    /// (on this instance; see docs/design.md).
    changes: tokio::sync::Mutex<()>,
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
            changes: tokio::sync::Mutex::new(()),
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
            .new_user(
                &account.id,
                registration.email,
                registration.password,
                (Role::Owner, None),
            )
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

    /// Removes a user of the account (`by` an owner of it); their sessions
    /// end at once, and the invitations they made and nobody has used yet
    /// are withdrawn (a removed user must not come back through a link they
    /// sent themselves). The last user, and the last owner, stay.
    pub async fn remove_user(&self, by: &User, id: &UserId) -> Result<User, UserError> {
        if by.role != Role::Owner {
            return Err(UserError::OwnersOnly);
        }
        let account = &by.account_id;
        let _one_at_a_time = self.changes.lock().await;
        let users = self.storage.list_users(account).await?;
        let user = users
            .iter()
            .find(|user| &user.id == id)
            .cloned()
            .ok_or(UserError::UnknownUser)?;
        if users.len() <= 1 {
            return Err(UserError::LastUser);
        }
        if user.role == Role::Owner && owners(&users) <= 1 {
            return Err(UserError::LastOwner);
        }
        self.storage.delete_user(&user).await?;
        self.announced.notify();
        let withdrawn = self.withdraw_invitations_of(&user).await?;
        tracing::info!(request_id = %crate::telemetry::request_id(), account = %account, user = %user.id, by = %by.id, withdrawn, "user removed");
        Ok(user)
    }

    /// Makes a user of the account an owner or a member (`by` an owner); the
    /// last owner cannot be made a member.
    pub async fn set_role(&self, by: &User, id: &UserId, role: Role) -> Result<User, UserError> {
        if by.role != Role::Owner {
            return Err(UserError::OwnersOnly);
        }
        let _one_at_a_time = self.changes.lock().await;
        let users = self.storage.list_users(&by.account_id).await?;
        let user = users
            .iter()
            .find(|user| &user.id == id)
            .cloned()
            .ok_or(UserError::UnknownUser)?;
        if user.role == role {
            return Ok(user);
        }
        if user.role == Role::Owner && owners(&users) <= 1 {
            return Err(UserError::LastOwner);
        }
        let user = User { role, ..user };
        self.storage.put_user(&user).await?;
        tracing::info!(request_id = %crate::telemetry::request_id(), account = %by.account_id, user = %user.id, by = %by.id, role = role.as_str(), "user's role changed");
        Ok(user)
    }

    pub async fn users(&self, account: &AccountId) -> Result<Vec<User>, UserError> {
        Ok(self.storage.list_users(account).await?)
    }

    /// A new user of the account, with the role they start with and who
    /// invited them.
    async fn new_user(
        &self,
        account: &AccountId,
        email: String,
        password: String,
        (role, invited_by): (Role, Option<UserId>),
    ) -> Result<User, UserError> {
        let password_hash = blocking(move || hash(&password)).await?;
        Ok(User {
            id: UserId::generate(),
            account_id: account.clone(),
            email,
            password_hash,
            created_at: self.clock.now(),
            role,
            invited_by,
        })
    }
}

fn owners(users: &[User]) -> usize {
    users.iter().filter(|u| u.role == Role::Owner).count()
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
