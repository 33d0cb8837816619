//! The admin token: a random secret in the data directory that the command line
//! reads to prove it runs as the operator (whoever can read the data directory).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rand::RngCore;

pub const FILE_NAME: &str = "admin.token";
const MIN_TOKEN_CHARS: usize = 32;

pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// Reads the token, creating it on first start.
pub fn load_or_create(data_dir: &Path) -> anyhow::Result<String> {
    let path = path(data_dir);
    if path.exists() {
        match read(data_dir) {
            Ok(token) if token.len() >= MIN_TOKEN_CHARS => return Ok(token),
            // An empty or truncated file (a crash while writing it) is replaced,
            // never accepted: an empty token would match a request without one.
            Ok(_) => {
                tracing::warn!(path = %path.display(), "admin token too short; generating a new one")
            }
            Err(e) => return Err(e),
        }
    }
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    write_private(&path, token.as_bytes())?;
    Ok(token)
}

pub fn read(data_dir: &Path) -> anyhow::Result<String> {
    let path = path(data_dir);
    let token = std::fs::read_to_string(&path)
        .with_context(|| format!("reading the admin token {}", path.display()))?;
    Ok(token.trim().to_owned())
}

/// Writes a file only its owner can read.
pub fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}
