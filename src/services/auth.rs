//! Turns a bearer token into the account and permissions it speaks for.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::domain::account::Account;
use crate::domain::api_key::{ApiKey, KeyRejection, Permission, parse_token};
use crate::domain::ids::{AccountId, KeyId};
use crate::services::live::{Ending, StreamEnd};
use crate::services::stream_guard::CredentialChanges;
use crate::shared_map::SharedMap;
use crate::storage::{Storage, StorageError};

/// How long a key and its account are trusted from memory before being re-read.
/// Changes made through this process update the cache at once; the expiry only
/// bounds staleness when several service instances share one ScyllaDB cluster.
const CACHE_TTL: Duration = Duration::from_secs(30);

/// The authenticated caller of one request. Built once per cached key: cloning
/// it for a request copies two pointers and an id.
#[derive(Debug, Clone)]
pub struct Principal {
    pub account: Arc<Account>,
    pub key_id: KeyId,
    pub permissions: Arc<[Permission]>,
    /// When the key stops working (`None`: never).
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl Principal {
    pub fn account_id(&self) -> &AccountId {
        &self.account.id
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error(transparent)]
    Rejected(#[from] KeyRejection),
    #[error("the key does not grant the {0:?} permission")]
    Forbidden(Permission),
    #[error("the key's account is disabled")]
    AccountDisabled,
    #[error(transparent)]
    Storage(#[from] StorageError),
}

struct Cached {
    key: ApiKey,
    principal: Principal,
    fetched: Instant,
}

/// What one connection's last authenticated request found (see
/// [`Authenticator::authenticate_on`]). A connection is served by one worker
/// thread, so this is neither shared nor locked.
#[derive(Default)]
pub struct ConnectionAuth(RefCell<Option<Remembered>>);

struct Remembered {
    /// The `Authorization` value, as sent.
    header: Box<[u8]>,
    /// [`Authenticator::changes`] before the key was looked up.
    generation: u64,
    /// When the key's use was last noted (Unix seconds).
    noted_at: i64,
    cached: Arc<Cached>,
}

pub struct Authenticator {
    storage: Arc<dyn Storage>,
    clock: Clock,
    cache: SharedMap<KeyId, Arc<Cached>>,
    /// Bumped on every key or account change. A record read from storage is cached
    /// only if no change happened meanwhile, so a lookup that raced a revocation
    /// cannot put the pre-revocation record back into the cache.
    changes: AtomicU64,
    /// When each key last authenticated a request (Unix seconds), as this
    /// process saw it: shown in the dashboard's key list. In memory only, so it
    /// starts empty after a restart; one relaxed store per request.
    last_used: SharedMap<KeyId, AtomicI64>,
    /// Announces every key and account change to the open streams' guards.
    announced: CredentialChanges,
}

impl Authenticator {
    pub fn new(storage: Arc<dyn Storage>, clock: Clock) -> Self {
        Self {
            storage,
            clock,
            cache: SharedMap::default(),
            changes: AtomicU64::new(0),
            last_used: SharedMap::default(),
            announced: CredentialChanges::default(),
        }
    }

    /// The announcements of credential changes, shared with the dashboard's
    /// sessions so that one signal reaches every stream.
    pub fn credential_changes(&self) -> &CredentialChanges {
        &self.announced
    }

    /// Resolves when `key` no longer authenticates: revoked, expired, or its
    /// account disabled (see `stream_guard` for how soon).
    pub fn watch_key(self: &Arc<Self>, key: KeyId) -> Ending {
        let auth = self.clone();
        self.announced.guard(move || {
            let (auth, key) = (auth.clone(), key.clone());
            async move { auth.key_standing(&key).await }
        })
    }

    /// Why `key` no longer authenticates, if it does not.
    async fn key_standing(&self, id: &KeyId) -> Option<StreamEnd> {
        let cached = match self.lookup(id).await {
            Ok(cached) => cached,
            Err(error) => {
                tracing::warn!(key = %id, error = %crate::telemetry::error_chain(&error), "could not check a streaming key; its stream goes on until the next check");
                return None;
            }
        };
        let Some(cached) = cached else {
            return Some(StreamEnd::KeyRevoked);
        };
        match cached.key.standing(self.clock.now()) {
            Err(KeyRejection::Expired { .. }) => Some(StreamEnd::KeyExpired),
            Err(_) => Some(StreamEnd::KeyRevoked),
            Ok(()) if cached.principal.account.disabled => Some(StreamEnd::AccountDisabled),
            Ok(()) => None,
        }
    }

    /// Authenticates `authorization` (the raw header value, if any) and checks that
    /// the key grants `needed` (if anything is needed).
    pub async fn authenticate(
        &self,
        authorization: Option<&str>,
        needed: Option<Permission>,
    ) -> Result<Principal, AuthError> {
        self.authenticate_on(None, authorization, needed).await
    }

    /// [`authenticate`](Self::authenticate) for a request of `connection`: a
    /// keep-alive connection that sends the `Authorization` value it sent
    /// before is answered from what that request found, without parsing the
    /// token, hashing its secret or looking the key up again, for as long as
    /// the key's cache entry would be trusted and no key or account changed
    /// since (a revocation applies to the very next request).
    pub async fn authenticate_on(
        &self,
        connection: Option<&ConnectionAuth>,
        authorization: Option<&str>,
        needed: Option<Permission>,
    ) -> Result<Principal, AuthError> {
        let header = authorization.ok_or(KeyRejection::Missing)?;
        if let Some(known) = connection.and_then(|c| self.recall(c, header, needed)) {
            return known;
        }
        let generation = self.changes.load(Ordering::SeqCst);
        let token = bearer_token(header)?;
        let presented = parse_token(token)?;
        let cached = self
            .lookup(&presented.key_id)
            .await?
            .ok_or(KeyRejection::Unknown)?;
        let now = self.clock.now();
        cached.key.verify(&presented, now)?;
        self.admit(&cached, now, needed)?;
        self.note_use(&cached.key.id);
        if let Some(connection) = connection {
            *connection.0.borrow_mut() = Some(Remembered {
                header: header.as_bytes().into(),
                generation,
                noted_at: now.timestamp(),
                cached: cached.clone(),
            });
        }
        Ok(cached.principal.clone())
    }

    /// The answer for `header` from what `connection` remembers, if it sent
    /// the same value last and what was found then still holds.
    fn recall(
        &self,
        connection: &ConnectionAuth,
        header: &str,
        needed: Option<Permission>,
    ) -> Option<Result<Principal, AuthError>> {
        let mut slot = connection.0.borrow_mut();
        let known = slot.as_mut().filter(|known| {
            *known.header == *header.as_bytes()
                && known.generation == self.changes.load(Ordering::SeqCst)
                && known.cached.fetched.elapsed() < CACHE_TTL
        })?;
        let now = self.clock.now();
        Some(self.admit(&known.cached, now, needed).map(|()| {
            // Shown to the second: noted once a second per connection.
            if known.noted_at != now.timestamp() {
                known.noted_at = now.timestamp();
                self.note_use(&known.cached.key.id);
            }
            known.cached.principal.clone()
        }))
    }

    /// Whether the key of a verified token may make this request now.
    fn admit(
        &self,
        cached: &Cached,
        now: chrono::DateTime<chrono::Utc>,
        needed: Option<Permission>,
    ) -> Result<(), AuthError> {
        cached.key.standing(now)?;
        if cached.principal.account.disabled {
            return Err(AuthError::AccountDisabled);
        }
        if let Some(needed) = needed
            && !cached.key.allows(needed)
        {
            return Err(AuthError::Forbidden(needed));
        }
        Ok(())
    }

    async fn lookup(&self, id: &KeyId) -> Result<Option<Arc<Cached>>, StorageError> {
        if let Some(hit) = self.cache.get(id)
            && hit.fetched.elapsed() < CACHE_TTL
        {
            return Ok(Some(hit.clone()));
        }
        let generation = self.changes.load(Ordering::SeqCst);
        let Some(key) = self.storage.get_api_key(id).await? else {
            self.cache.remove(id);
            return Ok(None);
        };
        let Some(account) = self.storage.get_account(&key.account_id).await? else {
            return Err(StorageError::corrupt(format!(
                "key {} names missing account {}",
                key.id, key.account_id
            )));
        };
        let principal = Principal {
            account: Arc::new(account),
            key_id: key.id.clone(),
            permissions: key.permissions.as_slice().into(),
            expires_at: key.expires_at,
        };
        let entry = Arc::new(Cached {
            key,
            principal,
            fetched: Instant::now(),
        });
        if self.changes.load(Ordering::SeqCst) == generation {
            self.cache.insert(entry.key.id.clone(), entry.clone());
        }
        Ok(Some(entry))
    }

    fn note_use(&self, key: &KeyId) {
        let now = self.clock.now().timestamp();
        match self.last_used.get(key) {
            Some(at) => at.store(now, Ordering::Relaxed),
            None => {
                self.last_used.insert(key.clone(), AtomicI64::new(now));
            }
        }
    }

    /// When `key` last authenticated a request since this process started.
    pub fn last_used(&self, key: &KeyId) -> Option<chrono::DateTime<chrono::Utc>> {
        let at = self.last_used.get(key)?.load(Ordering::Relaxed);
        chrono::DateTime::from_timestamp(at, 0)
    }

    /// Called after a key was written (created, revoked) so the next request sees it.
    pub fn key_changed(&self, key: &ApiKey) {
        self.changes.fetch_add(1, Ordering::SeqCst);
        self.cache.remove(&key.id);
        self.announced.notify();
    }

    /// Called after an account was written (plan change) so cached keys see it.
    pub fn account_changed(&self, account: &Account) {
        self.changes.fetch_add(1, Ordering::SeqCst);
        self.cache
            .retain(|_, cached| cached.principal.account.id != account.id);
        self.announced.notify();
    }
}

/// `Bearer <token>`, scheme case-insensitive as RFC 9110 says.
fn bearer_token(header: &str) -> Result<&str, KeyRejection> {
    let header = header.trim_start();
    let (scheme, token) = header.split_once(' ').unwrap_or((header, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(KeyRejection::Malformed);
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(KeyRejection::Missing);
    }
    Ok(token)
}
