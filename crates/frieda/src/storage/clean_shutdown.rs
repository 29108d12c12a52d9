//! The clean-shutdown marker (Kafka's `.kafka_cleanshutdown`): written once a stop has flushed
//! and closed every log, taken (read and removed) at the next start. A broker that starts
//! without it crashed or lost power, so unsynced records may be gone from its logs; it says so
//! when it registers, and the controller takes it out of every ELR (KIP-966).

use std::path::Path;

/// The marker's name in `data.dir`.
pub const FILE: &str = ".frieda_cleanshutdown";

/// Whether the previous run stopped cleanly; removes the marker (durably), so that a crash of
/// this run is not taken for a clean stop.
///
/// Errors: the marker exists but could not be removed.
pub fn take(data_dir: &Path) -> std::io::Result<bool> {
    let path = data_dir.join(FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => {
            std::fs::File::open(data_dir)?.sync_all()?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Writes the marker (durably) after a clean stop.
///
/// Errors: it could not be written or synced.
pub fn mark(data_dir: &Path) -> std::io::Result<()> {
    let f = std::fs::File::create(data_dir.join(FILE))?;
    f.sync_all()?;
    std::fs::File::open(data_dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_marker_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!super::take(dir.path()).unwrap(), "no marker: a crash");
        super::mark(dir.path()).unwrap();
        assert!(super::take(dir.path()).unwrap());
        assert!(!super::take(dir.path()).unwrap(), "taken");
    }
}
