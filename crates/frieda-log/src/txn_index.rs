//! The aborted transactions index of a segment (`<base>.txnindex`, Kafka's `TransactionIndex`).
//!
//! One 34-byte entry per transaction aborted by a marker in the segment, in marker order:
//!
//! ```text
//! version int16 (0), producer_id int64, first_offset int64, last_offset int64,
//! last_stable_offset int64
//! ```
//!
//! `first_offset` is the transaction's first record, `last_offset` its abort marker,
//! `last_stable_offset` the partition's last stable offset once the marker was appended (a fetch
//! whose upper bound is at or below it needs no entry from later segments). A `read_committed`
//! fetch returns the entries overlapping what it read, and the consumer drops those producers'
//! records in `[first_offset, last_offset]`.
//!
//! The file is created with its first entry (most segments have none). Entries are also kept in
//! memory (40 bytes each) for fetches; aborts are rare next to records, so this stays small.

use std::io;
use std::path::PathBuf;

use crate::error::LogError;
use crate::fs::{FileRef, LogDir, LogFile};

/// Bytes of one entry on disk.
pub const ENTRY_LEN: usize = 34;

/// One aborted transaction (see the module docs for the fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The producer whose records `[first_offset, last_offset]` are aborted.
    pub producer_id: i64,
    /// First offset of the transaction on this partition.
    pub first_offset: i64,
    /// Offset of its abort marker.
    pub last_offset: i64,
    /// Last stable offset after the marker.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&0i16.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.first_offset.to_be_bytes());
        out.extend_from_slice(&self.last_offset.to_be_bytes());
        out.extend_from_slice(&self.last_stable_offset.to_be_bytes());
    }

    fn decode(b: &[u8]) -> Option<AbortedTxn> {
        if b.len() < ENTRY_LEN || i16::from_be_bytes([b[0], b[1]]) != 0 {
            return None;
        }
        let at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            i64::from_be_bytes(a)
        };
        Some(AbortedTxn {
            producer_id: at(2),
            first_offset: at(10),
            last_offset: at(18),
            last_stable_offset: at(26),
        })
    }
}

/// Encodes entries in the file format.
pub fn encode_entries(entries: &[AbortedTxn]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * ENTRY_LEN);
    for e in entries {
        e.encode(&mut out);
    }
    out
}

/// Decodes a whole file: the entries up to the first one that does not decode (a torn write
/// at the end of an unsynced file), and whether the file was whole.
pub fn decode_entries(b: &[u8]) -> (Vec<AbortedTxn>, bool) {
    let mut out = Vec::with_capacity(b.len() / ENTRY_LEN);
    for chunk in b.chunks(ENTRY_LEN) {
        match AbortedTxn::decode(chunk) {
            Some(e) => out.push(e),
            None => return (out, false),
        }
    }
    (out, true)
}

/// The writer's handle on a segment's `.txnindex` file (opened on first use).
pub(crate) struct TxnIndexFile {
    dir: LogDir,
    path: PathBuf,
    file: Option<FileRef>,
    len: u64,
    pub dirty: bool,
}

impl TxnIndexFile {
    /// The index at `path`, and its entries if the file exists. An unreadable tail (a torn
    /// write) is cut off with a warning; the segment's recovery rebuilds the entries anyway
    /// when it is above the recovery point.
    pub fn open(dir: &LogDir, path: PathBuf) -> Result<(TxnIndexFile, Vec<AbortedTxn>), LogError> {
        match dir.fs().read(&path) {
            Ok(bytes) => {
                let (entries, whole) = decode_entries(&bytes);
                let mut idx = TxnIndexFile {
                    dir: dir.clone(),
                    path,
                    file: None,
                    len: (entries.len() * ENTRY_LEN) as u64,
                    dirty: false,
                };
                if !whole {
                    tracing::warn!(file = %idx.path.display(), kept = entries.len(),
                        "transaction index ends in an unreadable entry; cutting it off");
                    let len = idx.len;
                    idx.handle()?.set_len(len)?;
                    idx.dirty = true;
                }
                Ok((idx, entries))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((
                TxnIndexFile {
                    dir: dir.clone(),
                    path,
                    file: None,
                    len: 0,
                    dirty: false,
                },
                Vec::new(),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// A new, empty index at `path`, created when first written (the segment removed a stray
    /// file there, or knows there is none).
    pub fn create(dir: &LogDir, path: PathBuf) -> TxnIndexFile {
        TxnIndexFile {
            dir: dir.clone(),
            path,
            file: None,
            len: 0,
            dirty: false,
        }
    }

    fn handle(&mut self) -> Result<&FileRef, LogError> {
        if self.file.is_none() {
            self.file = Some(self.dir.fs().open(&self.path, true, false)?);
        }
        Ok(self.file.as_ref().expect("opened above"))
    }

    /// Notes that the file may hold bytes no fsync reached (a crashed process wrote them):
    /// the segment's next flush syncs it, if it has entries.
    ///
    /// Errors: `LogError::Io` opening the file.
    pub fn mark_unsynced(&mut self) -> Result<(), LogError> {
        if self.len > 0 {
            self.handle()?;
            self.dirty = true;
        }
        Ok(())
    }

    /// Appends one entry (page cache; synced with the segment).
    pub fn append(&mut self, e: &AbortedTxn) -> Result<(), LogError> {
        let mut buf = Vec::with_capacity(ENTRY_LEN);
        e.encode(&mut buf);
        let at = self.len;
        self.handle()?.write_all_at(&buf, at)?;
        self.len += ENTRY_LEN as u64;
        self.dirty = true;
        Ok(())
    }

    /// Replaces the whole content (recovery and truncation rebuild it), durably and at once: a
    /// temporary file written and synced, renamed over the index, the directory synced. A
    /// rewrite in place could leave a power cut an emptied index of a segment below the
    /// recovery point, which is trusted as it is (found by `crash_tests`, seed 7038).
    pub fn rewrite(&mut self, entries: &[AbortedTxn]) -> Result<(), LogError> {
        if entries.is_empty() && self.file.is_none() && !self.dir.fs().exists(&self.path) {
            return Ok(());
        }
        let bytes = encode_entries(entries);
        self.file = Some(self.dir.replace_durably(&self.path, &bytes)?);
        self.len = bytes.len() as u64;
        Ok(())
    }

    /// A clone of the open file to sync without the writer's lock (`None`: nothing to sync);
    /// the segment clears `dirty` once the sync is done.
    pub fn sync_handle(&self) -> Option<FileRef> {
        if !self.dirty {
            return None;
        }
        self.file.clone()
    }

    /// Removes the file (missing is fine).
    pub fn delete(&self) -> Result<(), LogError> {
        Ok(self.dir.remove_if_exists(&self.path)?)
    }
}

/// The entries among `entries` a fetch of `[fetch_offset, upper_bound)` must report: those whose
/// transaction ends at or after `fetch_offset` and starts before `upper_bound`. The boolean is
/// true when no later segment can hold more (an entry's last stable offset reached the bound),
/// as Kafka's `TransactionIndex.collectAbortedTxns`.
pub fn collect(
    entries: &[AbortedTxn],
    fetch_offset: i64,
    upper_bound: i64,
    out: &mut Vec<AbortedTxn>,
) -> bool {
    for e in entries {
        if e.last_offset >= fetch_offset && e.first_offset < upper_bound {
            out.push(*e);
        }
        if e.last_stable_offset >= upper_bound {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{self, OpenOptions};
    use std::os::unix::fs::FileExt;

    fn e(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        }
    }

    #[test]
    fn entries_round_trip_in_kafkas_34_byte_format_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.txnindex");
        let log_dir = LogDir::os(dir.path());
        let (mut idx, got) = TxnIndexFile::open(&log_dir, path.clone()).unwrap();
        assert!(got.is_empty());
        assert!(!path.exists(), "created lazily");
        idx.append(&e(7, 10, 20, 10)).unwrap();
        idx.append(&e(8, 15, 30, 21)).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().len(), 2 * ENTRY_LEN as u64);
        // a torn third entry
        let f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all_at(&[0, 0, 1, 2, 3], 68).unwrap();
        let (_, got) = TxnIndexFile::open(&log_dir, path.clone()).unwrap();
        assert_eq!(got, vec![e(7, 10, 20, 10), e(8, 15, 30, 21)]);
        assert_eq!(fs::metadata(&path).unwrap().len(), 68);
    }

    #[test]
    fn a_fetch_collects_the_overlapping_aborts_and_knows_when_it_is_complete() {
        let entries = [e(1, 0, 5, 0), e(2, 3, 9, 6), e(3, 20, 25, 26)];
        let mut out = Vec::new();
        // [6, 12): ends before 6 are out, starts before 12 in; the entry with lso 26 >= 12 ends it
        assert!(collect(&entries, 6, 12, &mut out));
        assert_eq!(out, vec![e(2, 3, 9, 6)]);
        out.clear();
        assert!(!collect(&entries, 0, 100, &mut out));
        assert_eq!(out.len(), 3);
    }
}
