//! The data directory is the service's alone: the store (whose journal holds
//! every record), the TLS key, the admin token and the secrets key. It is made
//! 0700 and its files 0600, and one found open to other users (made by an
//! older version, or by hand) is tightened at start, with a warning.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// At most this many paths are named in the warning about tightened ones.
const NAMED_IN_WARNING: usize = 20;

/// Creates the data directory private to this user, and takes group and other
/// permissions off whatever is already in it (symbolic links are neither
/// followed nor changed).
///
/// Also sets the process's umask to 077, so that files created later (fjall
/// makes tables and journals all the time, with the process umask) are
/// private too. The umask is process-wide: it is set here, where the service
/// is built, rather than in `freight serve`, so that tests, which build the
/// service in their own process, run what production runs; nothing else a
/// process that serves freight writes is meant for other users.
pub fn prepare(data_dir: &Path) -> anyhow::Result<()> {
    #[cfg(unix)]
    // SAFETY: umask only sets the process's file creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
    if let Some(parent) = data_dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    match builder.create(data_dir) {
        Ok(()) => return Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => {
            return Err(error)
                .with_context(|| format!("creating data directory {}", data_dir.display()));
        }
    }
    #[cfg(unix)]
    tighten(data_dir);
    Ok(())
}

/// Takes group and other permissions off `data_dir` and everything under it,
/// warning about what it changed and what it could not.
#[cfg(unix)]
fn tighten(data_dir: &Path) {
    let mut changed = Vec::new();
    let mut failed = Vec::new();
    // The directory itself may be a link the operator made (to a volume): it
    // is followed; nothing under it is.
    visit(data_dir, true, &mut changed, &mut failed);
    if !changed.is_empty() {
        let named: Vec<String> = changed
            .iter()
            .take(NAMED_IN_WARNING)
            .map(|p| p.display().to_string())
            .collect();
        tracing::warn!(
            data_dir = %data_dir.display(),
            count = changed.len(),
            paths = %named.join(", "),
            "the data directory was readable by other users; took group and other permissions off \
             these (directories now 0700, files 0600)"
        );
    }
    for (path, error) in failed {
        tracing::warn!(path = %path.display(), %error, "could not make this private to the service's user; other users may read it");
    }
}

#[cfg(unix)]
fn visit(
    path: &Path,
    follow: bool,
    changed: &mut Vec<PathBuf>,
    failed: &mut Vec<(PathBuf, std::io::Error)>,
) {
    use std::os::unix::fs::PermissionsExt;
    let metadata = match follow {
        true => std::fs::metadata(path),
        false => std::fs::symlink_metadata(path),
    };
    let metadata = match metadata {
        Ok(metadata) => metadata,
        Err(error) => return failed.push((path.to_owned(), error)),
    };
    if metadata.file_type().is_symlink() {
        return;
    }
    let mode = metadata.permissions().mode();
    if mode & 0o077 != 0 {
        let private = std::fs::Permissions::from_mode(mode & 0o7700);
        match std::fs::set_permissions(path, private) {
            Ok(()) => changed.push(path.to_owned()),
            Err(error) => failed.push((path.to_owned(), error)),
        }
    }
    if metadata.is_dir() {
        let entries = match std::fs::read_dir(path) {
            Ok(entries) => entries,
            Err(error) => return failed.push((path.to_owned(), error)),
        };
        for entry in entries {
            match entry {
                Ok(entry) => visit(&entry.path(), false, changed, failed),
                Err(error) => failed.push((path.to_owned(), error)),
            }
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn an_open_data_directory_is_tightened_but_links_are_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let outside = root.path().join("outside.txt");
        std::fs::write(&outside, "not ours").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::create_dir_all(data.join("store")).unwrap();
        std::fs::write(data.join("store/journal"), "records").unwrap();
        for (path, mode) in [
            (data.clone(), 0o755),
            (data.join("store"), 0o755),
            (data.join("store/journal"), 0o644),
        ] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        std::os::unix::fs::symlink(&outside, data.join("link")).unwrap();

        prepare(&data).unwrap();

        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&data.join("store")), 0o700);
        assert_eq!(mode(&data.join("store/journal")), 0o600);
        assert_eq!(mode(&outside), 0o644, "a link's target is left alone");
    }

    #[test]
    fn a_new_data_directory_is_private() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("a/b/data");
        prepare(&data).unwrap();
        assert_eq!(mode(&data), 0o700);
        std::fs::write(data.join("file"), "x").unwrap();
        assert_eq!(
            mode(&data.join("file")),
            0o600,
            "the umask makes new files private"
        );
    }
}
