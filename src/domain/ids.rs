//! Resource identifiers: a type prefix plus a time-ordered suffix.
//!
//! The suffix is a ULID (48-bit millisecond timestamp, 80 random bits) in
//! lower-case Crockford base32, generated monotonically within the process. Sorting
//! ids as bytes therefore sorts resources by creation time, which is what lets the
//! store serve "newest first" as a reverse prefix scan with no separate sort key.

use std::fmt;
use std::sync::Mutex;

use rand::Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
const SUFFIX_LEN: usize = 26;

struct Monotonic {
    last_ms: u64,
    last_random: u128,
}

static GENERATOR: Mutex<Monotonic> = Mutex::new(Monotonic {
    last_ms: 0,
    last_random: 0,
});

/// A new ULID suffix, strictly greater than every suffix this process made before.
pub(crate) fn new_suffix() -> String {
    let now_ms = chrono::Utc::now().timestamp_millis().max(0) as u64;
    let mut state = GENERATOR.lock().unwrap_or_else(|p| p.into_inner());
    let (ms, random) = if now_ms <= state.last_ms {
        // Same millisecond (or the wall clock stepped back): keep order by counting up.
        (state.last_ms, (state.last_random + 1) & ((1u128 << 80) - 1))
    } else {
        (now_ms, rand::rng().random::<u128>() & ((1u128 << 79) - 1))
    };
    state.last_ms = ms;
    state.last_random = random;
    drop(state);
    encode((u128::from(ms) << 80) | random)
}

fn encode(mut value: u128) -> String {
    let mut out = [0u8; SUFFIX_LEN];
    for slot in out.iter_mut().rev() {
        *slot = CROCKFORD[(value & 31) as usize];
        value >>= 5;
    }
    String::from_utf8(out.to_vec()).expect("crockford alphabet is ascii")
}

/// Room for the longest id: `carrier_` and a 26-character suffix.
const ID_CAPACITY: usize = 34;

/// An id's text, kept inline rather than on the heap: ids are short ASCII, and
/// hot paths (the webhook dispatcher, the load actors) clone and hash them at
/// thousands a second, which cost an allocation per clone as a `String`.
#[derive(Clone)]
struct IdText {
    len: u8,
    bytes: [u8; ID_CAPACITY],
}

impl IdText {
    /// `text` is one of ours: a prefix and a suffix, at most `ID_CAPACITY` bytes.
    fn new(text: &str) -> Self {
        assert!(
            text.len() <= ID_CAPACITY,
            "ids are at most {ID_CAPACITY} bytes"
        );
        let mut bytes = [0; ID_CAPACITY];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        IdText {
            len: text.len() as u8,
            bytes,
        }
    }

    /// `prefix` then `suffix`, as [`Self::new`] would hold their concatenation.
    fn joined(prefix: &str, suffix: &str) -> Self {
        let len = prefix.len() + suffix.len();
        assert!(len <= ID_CAPACITY, "ids are at most {ID_CAPACITY} bytes");
        let mut bytes = [0; ID_CAPACITY];
        bytes[..prefix.len()].copy_from_slice(prefix.as_bytes());
        bytes[prefix.len()..len].copy_from_slice(suffix.as_bytes());
        IdText {
            len: len as u8,
            bytes,
        }
    }

    fn as_str(&self) -> &str {
        let text = &self.bytes[..self.len as usize];
        // SAFETY: `new` copied these bytes from a `&str`, whole (`len` is that
        // string's length), and `joined` from two whole `&str`s one after the
        // other, so they are valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(text) }
    }
}

impl PartialEq for IdText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for IdText {}

impl std::hash::Hash for IdText {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialOrd for IdText {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for IdText {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

/// Which bytes are Crockford digits, by byte: ids are checked on every request
/// (path, key), and a table lookup per byte beats a search of the alphabet.
const IS_CROCKFORD: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < CROCKFORD.len() {
        table[CROCKFORD[i] as usize] = true;
        i += 1;
    }
    table
};

/// Each Crockford character's value (0 for any other byte: ids are checked
/// when made, so decoding has nothing left to refuse).
const CROCKFORD_VALUE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < CROCKFORD.len() {
        table[CROCKFORD[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// The 128-bit value a suffix spells (the inverse of `encode`).
fn decode(suffix: &[u8]) -> u128 {
    suffix.iter().fold(0u128, |value, &b| {
        (value << 5) | u128::from(CROCKFORD_VALUE[usize::from(b)])
    })
}

fn is_valid_suffix(suffix: &str) -> bool {
    suffix.len() == SUFFIX_LEN
        && suffix.bytes().all(|b| IS_CROCKFORD[usize::from(b)])
        // The first character carries only 3 bits of a 128-bit value.
        && suffix.as_bytes()[0] <= b'7'
}

macro_rules! prefixed_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(IdText);

        impl $name {
            pub const PREFIX: &'static str = $prefix;

                        pub fn generate() -> Self {
                Self(IdText::new(&format!("{}{}", $prefix, new_suffix())))
            }

            /// The smallest id made at `at`: every id made before `at` sorts below it.
            pub fn floor_at(at: chrono::DateTime<chrono::Utc>) -> Self {
                let ms = at.timestamp_millis().max(0) as u128;
                Self(IdText::new(&format!("{}{}", $prefix, encode(ms << 80))))
            }


            /// Parses an id as a client sent it; `None` when it cannot be one of ours.
            pub fn parse(raw: &str) -> Option<Self> {
                let suffix = raw.strip_prefix($prefix)?;
                is_valid_suffix(suffix).then(|| Self(IdText::new(raw)))
            }

            /// The id whose suffix (the part after the prefix) is `suffix`, if valid.
            pub fn from_suffix(suffix: &str) -> Option<Self> {
                is_valid_suffix(suffix).then(|| Self(IdText::joined($prefix, suffix)))
            }

            pub fn as_str(&self) -> &str {
                self.0.as_str()
            }

            /// The ULID the suffix spells: creation millisecond in the top 48
            /// bits, then 80 random (or counted) bits.
            #[allow(dead_code)] // not every kind of id needs its number
            pub(crate) fn ulid(&self) -> u128 {
                decode(&self.as_str().as_bytes()[$prefix.len()..])
            }

            /// The millisecond (since 1970) the id was made: its ULID's top 48 bits.
            #[allow(dead_code)] // not every kind of id needs its time
            pub(crate) fn created_millis(&self) -> i64 {
                (self.ulid() >> 80) as i64
            }

            /// An id read back from this service's own storage, where only ids that
            /// passed `parse` or came from `generate` are written: only its shape is
            /// checked again, not every character. `None` when it is not one of ours.
            #[allow(dead_code)] // not every kind of id is read from a binary record
            pub(crate) fn from_stored(raw: &str) -> Option<Self> {
                let shaped = raw.len() == $prefix.len() + SUFFIX_LEN && raw.starts_with($prefix);
                shaped.then(|| Self(IdText::new(raw)))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = String::deserialize(d)?;
                Self::parse(&raw).ok_or_else(|| {
                    serde::de::Error::custom(format!("expected an id of the form {}<26 characters>", $prefix))
                })
            }
        }
    };
}

prefixed_id!(
    /// A load, `load_<ulid>`.
    LoadId,
    "load_"
);
prefixed_id!(
    /// A carrier, `carrier_<ulid>`.
    CarrierId,
    "carrier_"
);
prefixed_id!(
    /// An account (the tenant every resource belongs to), `acct_<ulid>`.
    AccountId,
    "acct_"
);
prefixed_id!(
    /// An API key's public identifier, `key_<ulid>`; also embedded in the secret token.
    KeyId,
    "key_"
);

prefixed_id!(
    /// A telematics device or phone app that posts positions, `dev_<ulid>`;
    /// also embedded in its token.
    DeviceId,
    "dev_"
);
prefixed_id!(
    /// A share link of a load's tracking page, `shl_<ulid>`.
    ShareLinkId,
    "shl_"
);
prefixed_id!(
    /// A webhook subscription, `wh_<ulid>`.
    WebhookId,
    "wh_"
);
prefixed_id!(
    /// A person who signs in to the dashboard, `user_<ulid>`.
    UserId,
    "user_"
);
prefixed_id!(
    /// A stop of a load, `stop_<ulid>`.
    StopId,
    "stop_"
);
prefixed_id!(
    /// A domain event, `evt_<ulid>`: ordered by creation, the same on every delivery attempt.
    EventId,
    "evt_"
);

impl StopId {
    /// The id of stop `sequence` (1-based) of a load stored before loads had
    /// stop ids: derived from the load's id, so every instance and every read
    /// names the stop alike. Its creation time is the load's.
    pub fn derived(load: &LoadId, sequence: u8) -> StopId {
        let ulid = load.ulid() ^ u128::from(sequence);
        StopId::from_suffix(&encode(ulid)).expect("a ULID encodes to a valid suffix")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_sort_by_creation() {
        let ids: Vec<LoadId> = (0..1000).map(|_| LoadId::generate()).collect();
        for pair in ids.windows(2) {
            assert!(pair[0] < pair[1], "{:?} !< {:?}", pair[0], pair[1]);
        }
        let parsed = LoadId::parse(ids[0].as_str()).expect("own id parses");
        assert_eq!(parsed, ids[0]);
    }

    #[test]
    fn an_id_decodes_to_the_ulid_it_was_made_from() {
        for value in [0u128, 1, (1 << 80) - 1, 1 << 80, u128::MAX] {
            let id = LoadId::from_suffix(&encode(value)).unwrap();
            assert_eq!(id.ulid(), value, "{id}");
        }
        let id = LoadId::generate();
        let ms = (id.ulid() >> 80) as i64;
        assert!((chrono::Utc::now().timestamp_millis() - ms).abs() < 60_000);
    }

    #[test]
    fn foreign_shapes_are_refused() {
        assert!(LoadId::parse("load_").is_none());
        assert!(LoadId::parse("carrier_01jd0000000000000000000000").is_none());
        assert!(LoadId::parse("load_01JD0000000000000000000000").is_none());
        assert!(LoadId::parse("load_01jd00000000000000000000u0").is_none());
        assert!(LoadId::parse("load_91jd0000000000000000000000").is_none());
        assert!(LoadId::parse("load_01jd0000000000000000000000").is_some());
    }

    /// Kept inline, an id still compares, orders and hashes as its text.
    #[test]
    fn inline_ids_behave_as_their_text() {
        use std::collections::HashSet;
        let longest = CarrierId::generate();
        assert_eq!(longest.as_str().len(), ID_CAPACITY);
        let (a, b) = (EventId::generate(), EventId::generate());
        assert_eq!(a.cmp(&b), a.as_str().cmp(b.as_str()));
        assert_eq!(a.clone(), a);
        let set: HashSet<EventId> = [a.clone(), a.clone(), b.clone()].into();
        assert_eq!(set.len(), 2);
        assert_eq!(format!("{a}"), a.as_str());
        assert_eq!(serde_json::to_string(&a).unwrap(), format!("\"{a}\""));
        assert_eq!(EventId::from_stored(a.as_str()), Some(a.clone()));
        assert_eq!(EventId::from_stored("evt_short"), None);
        assert_eq!(EventId::from_stored(&format!("{a}x")), None);
        assert_eq!(
            EventId::from_stored(b.as_str().replace("evt_", "wh_x").as_str()),
            None
        );
    }
}
