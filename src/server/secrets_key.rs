//! The key that seals webhook secrets at rest (`storage::secret_box`): 32
//! random bytes, as 64 hex digits, in a file only the service's user can read.
//! By default it is `secrets.key` in the data directory, beside the admin
//! token, created on first start; instances sharing a ScyllaDB keyspace must
//! all be given the same file (`--secrets-key-file`). It is backed up with the
//! store: without it the store's webhook secrets cannot be opened.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use rand::RngCore;

use super::admin_token::write_private;
use crate::storage::secret_box::{KEY_BYTES, SecretBox};

pub const FILE_NAME: &str = "secrets.key";

/// Where the key is: the file the operator named, or the data directory's.
pub fn path(data_dir: &Path, configured: Option<&Path>) -> PathBuf {
    configured.map_or_else(|| data_dir.join(FILE_NAME), Path::to_owned)
}

/// Reads the key at `path`. A missing file is created with a new key when it
/// is the data directory's (`may_create`); a file the operator named must
/// exist, or instances meant to share one key would each make their own. A
/// file that is not a key is an error, never replaced: its secrets would be
/// lost.
pub fn load_or_create(path: &Path, may_create: bool) -> anyhow::Result<SecretBox> {
    if !path.exists() {
        if !may_create {
            bail!(
                "the secrets key file {} does not exist; copy the key the other instances use, \
                 or make one with `openssl rand -hex 32 > {0} && chmod 600 {0}`",
                path.display()
            );
        }
        let mut key = [0u8; KEY_BYTES];
        rand::rng().fill_bytes(&mut key);
        write_private(path, format!("{}\n", hex(&key)).as_bytes())?;
        tracing::info!(path = %path.display(), "created the key that seals webhook secrets at rest; back it up with the store");
        return Ok(SecretBox::new(&key));
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the secrets key {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // One in the data directory was made private already; a file named
        // elsewhere (a mounted secret) is the operator's to change.
        let mode = std::fs::metadata(path)?.permissions().mode();
        if mode & 0o077 != 0 {
            tracing::warn!(path = %path.display(), mode = %format!("{:o}", mode & 0o777), "the secrets key file is readable by other users; make it 0600 (or 0400)");
        }
    }
    let key = parse(text.trim()).with_context(|| {
        format!(
            "the secrets key file {} must hold {} hex digits (32 random bytes)",
            path.display(),
            KEY_BYTES * 2
        )
    })?;
    Ok(SecretBox::new(&key))
}

fn parse(text: &str) -> anyhow::Result<[u8; KEY_BYTES]> {
    if text.len() != KEY_BYTES * 2 || !text.is_ascii() {
        bail!("it holds {} characters", text.chars().count());
    }
    let mut key = [0u8; KEY_BYTES];
    for (byte, pair) in key.iter_mut().zip(text.as_bytes().chunks(2)) {
        let pair = std::str::from_utf8(pair).expect("ASCII");
        *byte = u8::from_str_radix(pair, 16).with_context(|| format!("{pair:?} is not hex"))?;
    }
    Ok(key)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_created_once_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(dir.path(), None);
        let created = load_or_create(&path, true).unwrap();
        let sealed = created.seal("a-webhook-secret", "wh_1");
        let read = load_or_create(&path, true).unwrap();
        assert_eq!(read.open(&sealed, "wh_1").unwrap(), "a-webhook-secret");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_named_key_file_must_exist_and_hold_a_key() {
        let dir = tempfile::tempdir().unwrap();
        let named = dir.path().join("shared.key");
        let missing = load_or_create(&named, false).unwrap_err();
        assert!(
            format!("{missing:#}").contains("does not exist"),
            "{missing:#}"
        );
        std::fs::write(&named, "not a key\n").unwrap();
        let bad = load_or_create(&named, false).unwrap_err();
        assert!(format!("{bad:#}").contains("64 hex digits"), "{bad:#}");
        assert_eq!(std::fs::read_to_string(&named).unwrap(), "not a key\n");
    }
}
