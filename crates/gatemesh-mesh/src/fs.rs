//! Files only their owner may read (mode 0600): private keys, credentials, tokens. Every
//! part of gatemesh that keeps a secret on disk writes it through here, so each is created
//! with the mode already set (never readable by others, not even for a moment) and synced
//! before the call returns. The mesh keeps the device keys, so it is the lowest crate that
//! writes secrets; the rest depend on it.

use std::{
    io::Write,
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
};

/// A secret that could not be written, and where.
#[derive(Debug, thiserror::Error)]
#[error("writing {}: {source}", path.display())]
pub struct SecretFileError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// Owner read and write.
pub const PRIVATE: u32 = 0o600;
/// Owner read and write, everyone read (certificates and other public halves).
pub const PUBLIC: u32 = 0o644;

fn write(path: &Path, text: &str, mode: u32, replace: bool) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).mode(mode);
    if replace {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut f = options.open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

/// Creates `path` with `mode`; fails if it exists (a key or a batch is never overwritten).
pub fn create_new(path: &Path, mode: u32, text: &str) -> std::io::Result<()> {
    write(path, text, mode, false)
}

fn at(path: &Path) -> impl FnOnce(std::io::Error) -> SecretFileError {
    let path = path.to_owned();
    move |source| SecretFileError { path, source }
}

/// Creates `path` readable by its owner only; fails if it exists.
pub fn create_private(path: &Path, text: &str) -> Result<(), SecretFileError> {
    create_new(path, PRIVATE, text).map_err(at(path))
}

/// Writes `path` readable by its owner only, replacing what was there. A file that existed
/// keeps the mode it had; callers that replace a secret own its directory.
pub fn write_private(path: &Path, text: &str) -> Result<(), SecretFileError> {
    write(path, text, PRIVATE, true).map_err(at(path))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn secrets_are_the_owners_alone_and_never_overwritten_by_create() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        create_private(&path, "one").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, PRIVATE);
        assert!(create_private(&path, "two").is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one");
        write_private(&path, "three").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three");
        let fresh = dir.path().join("token");
        write_private(&fresh, "t").unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, PRIVATE);
    }
}
