//! Producer-state snapshot files: `<20-digit offset>.snapshot` in the partition directory, the
//! producer table as it stood before the record at that offset (Kafka's ProducerSnapshot v1
//! format, see [`ProducerStateManager::snapshot`]). One is written at every segment roll; a
//! recovery starts from one and replays the batches after it.
//!
//! Snapshots are written to a temporary file and renamed, without an fsync: a snapshot the
//! power took is only a longer replay, and one that survived in pieces fails its CRC and is
//! ignored (and deleted).

use std::io;
use std::path::{Path, PathBuf};

use crate::error::LogError;
use crate::fs::LogDir;
use crate::producer_state::ProducerStateManager;
use crate::segment;

const SUFFIX: &str = ".snapshot";

/// The path of the snapshot at `offset`.
pub(crate) fn path(dir: &Path, offset: i64) -> PathBuf {
    segment::file_name(dir, offset, SUFFIX)
}

/// Offsets of the snapshots in `dir`, ascending.
pub(crate) fn list(dir: &LogDir) -> Result<Vec<i64>, LogError> {
    let mut out = Vec::new();
    for name in dir.fs().list(dir)? {
        let Some(stem) = name.strip_suffix(SUFFIX) else {
            continue;
        };
        if stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(o) = stem.parse() {
                out.push(o);
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Writes the snapshot at `offset` (temporary file, then rename).
pub(crate) fn write(
    dir: &LogDir,
    offset: i64,
    state: &ProducerStateManager,
) -> Result<(), LogError> {
    let final_path = path(dir, offset);
    let tmp = final_path.with_extension("snapshot.tmp");
    // A temporary file a crash left is not reused: its inode's old, durable content could
    // survive a power cut under the final name if only the rename did (found by
    // `crash_tests` on MemFs, seed 57; Linux's ext4 orders the truncation before the rename).
    dir.remove_if_exists(&tmp)?;
    dir.fs().write(&tmp, &state.snapshot())?;
    dir.fs().rename(&tmp, &final_path)?;
    Ok(())
}

/// Reads the snapshot at `offset`; `None` (with a warning, the file deleted) when it does not
/// decode.
pub(crate) fn read(dir: &LogDir, offset: i64) -> Result<Option<ProducerStateManager>, LogError> {
    let p = path(dir, offset);
    let bytes = match dir.fs().read(&p) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    match ProducerStateManager::from_snapshot(&bytes) {
        Ok(s) => Ok(Some(s)),
        Err(why) => {
            tracing::warn!(file = %p.display(), %why, "ignoring an unreadable producer snapshot");
            delete(dir, offset);
            Ok(None)
        }
    }
}

/// Deletes the snapshot at `offset` (best effort: a stale one is ignored or replaced later).
pub(crate) fn delete(dir: &LogDir, offset: i64) {
    match dir.remove_if_exists(&path(dir, offset)) {
        Ok(()) => {}
        Err(e) => {
            tracing::warn!(dir = %dir.display(), offset, error = %e, "cannot delete a producer snapshot")
        }
    }
}
