//! Small metadata files (topic metadata, the producer-id block, checkpoints, the cluster id)
//! written and removed crash-safely: a write goes to a temporary file, which is fsync'ed and
//! renamed over the old one, then the directory is fsync'ed; a removal unlinks and fsyncs the
//! directory.
//!
//! The rename (or unlink) is the commit point. A failure before it changed nothing
//! ([`DurableError::NotDone`]: report it to the client). A failure after it, in the directory
//! fsync, leaves it unknown whether the change survives a crash ([`DurableError::Uncertain`]):
//! answering "failed" could be undone by a restart that finds the change, answering "done" could
//! be undone by a power cut. Callers whose promise depends on it stop the broker with
//! [`halt`], as Kafka halts when its metadata directory fails.

use std::io::Write;
use std::path::Path;

/// Why a durable write or removal did not complete.
#[derive(Debug, thiserror::Error)]
pub enum DurableError {
    /// Failed before the commit point: the old file is intact.
    #[error("not written: {0}")]
    NotDone(std::io::Error),
    /// Failed after the commit point (the directory fsync): the change may or may not survive
    /// a crash.
    #[error("written, but the directory could not be synced: {0}")]
    Uncertain(std::io::Error),
}

impl From<DurableError> for std::io::Error {
    fn from(e: DurableError) -> Self {
        match e {
            DurableError::NotDone(e) | DurableError::Uncertain(e) => e,
        }
    }
}

fn sync_parent(path: &Path) -> std::io::Result<()> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => std::fs::File::open(dir)?.sync_all(),
        None => std::fs::File::open(".")?.sync_all(),
    }
}

/// Replaces `path` with `contents`: temporary file `<path>.tmp`, fsync, rename, directory fsync.
///
/// Errors: see [`DurableError`].
pub fn write(path: &Path, contents: &str) -> Result<(), DurableError> {
    let tmp = path.with_extension("tmp");
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(contents.as_bytes())?;
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(DurableError::NotDone(e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        DurableError::NotDone(e)
    })?;
    sync_parent(path).map_err(DurableError::Uncertain)
}

/// Removes `path` and fsyncs its directory.
///
/// Errors: see [`DurableError`].
pub fn remove(path: &Path) -> Result<(), DurableError> {
    std::fs::remove_file(path).map_err(DurableError::NotDone)?;
    sync_parent(path).map_err(DurableError::Uncertain)
}

/// [`write`] for a change whose answer depends on it: a failure before the commit point is
/// returned (nothing changed: tell the client), one after it stops the broker ([`halt`], with
/// `what` in the log line).
pub fn write_or_halt(path: &Path, contents: &str, what: &str) -> std::io::Result<()> {
    match write(path, contents) {
        Ok(()) => Ok(()),
        Err(DurableError::NotDone(e)) => Err(e),
        Err(e) => halt(what, &e),
    }
}

/// Reads a JSON metadata file written by [`write_json_or_halt`]; a missing file is
/// `T::default()`.
///
/// Errors: the file exists but cannot be read or is not JSON of the right shape (named, so the
/// broker refuses to start rather than silently drop what the file holds).
pub fn read_json<T: serde::de::DeserializeOwned + Default>(path: &Path) -> anyhow::Result<T> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{} is corrupt: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(anyhow::anyhow!("reading {}: {e}", path.display())),
    }
}

/// [`write_or_halt`] of `value` as pretty-printed JSON.
pub fn write_json_or_halt<T: serde::Serialize>(
    path: &Path,
    value: &T,
    what: &str,
) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    write_or_halt(path, &text, what)
}

/// Stops the broker at once after a metadata change whose durability is unknown (see the module
/// docs): clients waiting for an answer see their connection close (an unknown outcome, which is
/// the truth), and the next start recovers from what is on disk.
pub fn halt(what: &str, e: &DurableError) -> ! {
    tracing::error!(error = %e, "{what}: the metadata directory failed; stopping the broker (restart it to recover from what is on disk)");
    std::process::exit(70)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_replaces_and_remove_removes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("meta.json");
        write(&p, "one").unwrap();
        write(&p, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert!(!p.with_extension("tmp").exists());
        remove(&p).unwrap();
        assert!(!p.exists());
        assert!(matches!(remove(&p), Err(DurableError::NotDone(_))));
        let missing = dir.path().join("no/such/dir/file");
        assert!(matches!(
            write(&missing, "x"),
            Err(DurableError::NotDone(_))
        ));
    }
}
