//! The quorum's Raft log, stored in a Frieda partition log: each Raft entry is one record (its
//! JSON as the value) at the offset equal to its Raft index, so the metadata log gets the same
//! segments, CRC-checked recovery and group-committed fsync as partition data (as Kafka keeps
//! `__cluster_metadata` in an ordinary log). The vote and the last purged log id are small files
//! written durably next to it.
//!
//! Every append is fsync'ed before openraft is told it is durable (a Raft log must not forget an
//! entry it acknowledged).

use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::BytesMut;
use frieda_log::{
    build_batch, encode_record, parse_records, BatchHeader, Codec, LogConfig, PartitionLog,
    RecordRef, BATCH_HEADER_LEN,
};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{LogId, OptionalSend, RaftLogReader, StorageError, StorageIOError, Vote};
use parking_lot::Mutex;

use crate::types::{Entry, TypeConfig};
use crate::{durable_write, read_json};

type NodeId = u64;

struct Inner {
    log: PartitionLog,
    dir: PathBuf,
    last_purged: Option<LogId<NodeId>>,
}

/// The Raft log storage (openraft's `RaftLogStorage`); cheap to clone (readers share it).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Mutex<Inner>>,
}

fn io_err(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// Runs blocking file I/O on a runtime worker without stalling the tasks queued on it.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

impl LogStore {
    /// Opens (creating) the Raft log in `dir` (`dir/log`, `dir/vote.json`, `dir/purged.json`).
    ///
    /// Errors: the log cannot be opened or recovered.
    pub fn open(dir: &Path) -> anyhow::Result<LogStore> {
        frieda_log::create_dir_durably(dir)?;
        let config = LogConfig {
            segment_bytes: 16 << 20,
            retention_ms: -1,
            max_message_bytes: usize::MAX / 2,
            tail_cache_bytes: 1 << 20,
            ..LogConfig::default()
        };
        let now = crate::now_ms();
        let (log, report) = PartitionLog::open(&dir.join("log"), config, now)?;
        if report.truncated_bytes > 0 {
            tracing::warn!(
                truncated_bytes = report.truncated_bytes,
                "recovered a torn tail of the metadata log"
            );
        }
        let last_purged = read_json(&dir.join("purged.json"))?;
        Ok(LogStore {
            inner: Arc::new(Mutex::new(Inner {
                log,
                dir: dir.to_path_buf(),
                last_purged,
            })),
        })
    }

    /// The log end offset (the next Raft index).
    pub fn end(&self) -> u64 {
        u64::try_from(self.inner.lock().log.log_end_offset()).unwrap_or(0)
    }
}

/// Encodes entries (contiguous indexes) as one record batch based at the first index.
fn encode(entries: &[Entry]) -> std::io::Result<BytesMut> {
    let first = entries.first().ok_or_else(|| io_err("no entries"))?;
    let base = i64::try_from(first.log_id.index).map_err(io_err)?;
    let now = crate::now_ms();
    let mut section = Vec::new();
    let mut json = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        json.clear();
        serde_json::to_writer(&mut json, e).map_err(io_err)?;
        encode_record(
            &mut section,
            &RecordRef {
                attributes: 0,
                timestamp_delta: 0,
                offset_delta: i32::try_from(i).map_err(io_err)?,
                key: None,
                value: Some(&json),
                headers: &[0],
            },
        );
    }
    let n = i32::try_from(entries.len()).map_err(io_err)?;
    let header = BatchHeader {
        base_offset: base,
        batch_length: 0,
        partition_leader_epoch: -1,
        magic: 2,
        crc: 0,
        attributes: 0,
        last_offset_delta: n - 1,
        base_timestamp: now,
        max_timestamp: now,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records_count: n,
    };
    Ok(BytesMut::from(
        &build_batch(&header, Codec::None, &section)[..],
    ))
}

impl Inner {
    /// The first index this log still holds: past the purged entries and the log start.
    fn first_held(&self) -> u64 {
        // Purged entries are gone even while the segment holding them stays (segments go
        // whole; openraft may purge in the middle of one).
        let purged_end = self.last_purged.map_or(0, |l| l.index + 1);
        u64::try_from(self.log.log_start_offset())
            .unwrap_or(0)
            .max(purged_end)
    }

    /// The entries held in `[from, to)`, from the first held one up to the first gap (openraft's
    /// reader contract: missing entries are left out; its storage suite reads `0..100` after
    /// purging 0 and expects 1..). A gap inside the range ends the answer, so openraft's range
    /// check (`get_log_entries`, the apply path) fails rather than a state machine applying
    /// around it.
    ///
    /// Errors: the log cannot be read or decoded.
    fn read(&self, from: u64, to: u64) -> std::io::Result<Vec<Entry>> {
        let reader = self.log.reader();
        let leo = reader.log_end_offset();
        let end = u64::try_from(leo).unwrap_or(0).min(to);
        let mut out: Vec<Entry> = Vec::new();
        let mut at = from.max(self.first_held());
        while at < end {
            // Read whole batches up to the log end (a limit inside a batch would leave the
            // batch out) and keep the entries in range.
            let data = reader.read(at as i64, 1 << 20, leo).map_err(io_err)?;
            if data.chunks.is_empty() || data.next_offset as u64 <= at {
                break;
            }
            for chunk in &data.chunks {
                let mut pos = 0;
                while pos < chunk.len() {
                    let h = BatchHeader::parse(&chunk[pos..]).map_err(io_err)?;
                    let batch = &chunk[pos..pos + h.total_size()];
                    for r in parse_records(&batch[BATCH_HEADER_LEN..], h.records_count)
                        .map_err(io_err)?
                    {
                        let index = (h.base_offset + i64::from(r.offset_delta)) as u64;
                        if index < at || index >= end {
                            continue;
                        }
                        if out.last().is_some_and(|l| index != l.log_id.index + 1) {
                            // A gap: the entries up to it are the answer.
                            return Ok(out);
                        }
                        let value = r.value.ok_or_else(|| io_err("an entry without a value"))?;
                        out.push(serde_json::from_slice(value).map_err(io_err)?);
                    }
                    pos += h.total_size();
                }
            }
            at = data.next_offset as u64;
        }
        Ok(out)
    }

    /// Appends `entries` (contiguous, not empty) as one batch and fsyncs it. They follow the
    /// last entry, or start anywhere in a log that holds none (empty, or purged up to a
    /// snapshot past its end: the leader's next entry after a snapshot install).
    ///
    /// Errors: any other first index (a hole or an overwrite; openraft truncates before it
    /// overwrites), or the write fails.
    fn append(&mut self, entries: &[Entry]) -> std::io::Result<()> {
        let batch = encode(entries)?;
        let end = self.log.log_end_offset();
        let first = entries[0].log_id.index as i64;
        // Nothing held: an empty log, or one purged past its end.
        let held = self.first_held() as i64;
        if first != end && !(first > end && end <= held) {
            return Err(io_err(format!(
                "entry {first} appended at log end offset {end} (entries held from {held})"
            )));
        }
        self.log
            .append_replicated(batch, crate::now_ms())
            .map_err(io_err)?;
        self.log.flush().map_err(io_err)
    }

    fn last_log_id(&self) -> std::io::Result<Option<LogId<NodeId>>> {
        let end = u64::try_from(self.log.log_end_offset()).unwrap_or(0);
        let start = u64::try_from(self.log.log_start_offset()).unwrap_or(0);
        if end > start {
            if let Some(e) = self.read(end - 1, end)?.pop() {
                return Ok(Some(e.log_id));
            }
        }
        Ok(self.last_purged)
    }
}

fn range_of(range: impl RangeBounds<u64>) -> (u64, u64) {
    let from = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s + 1,
        Bound::Unbounded => 0,
    };
    let to = match range.end_bound() {
        Bound::Included(&e) => e + 1,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => u64::MAX,
    };
    (from, to)
}

impl RaftLogReader<TypeConfig> for LogStore {
    /// What a replication task sends: the entries from `start` on, or none when `start` was
    /// purged (openraft then sends a heartbeat and, if this node still leads, a snapshot).
    /// Entries after purged ones must not be answered here: a replication task of a leader
    /// that has just stepped down can still read while its node, now a follower, purges
    /// (openraft 0.9 purges a follower's log at once), and it sent a follower entries 150..198
    /// as if they followed 95, which left a hole in that follower's log and 23 producer-id
    /// blocks missing from its image (`frieda-sim --quorum`, seed 33936; issue 57).
    async fn limited_get_log_entries(
        &mut self,
        start: u64,
        end: u64,
    ) -> Result<Vec<Entry>, StorageError<NodeId>> {
        let inner = self.inner.clone();
        blocking(move || {
            let g = inner.lock();
            if start < g.first_held() {
                return Ok(Vec::new());
            }
            g.read(start, end)
        })
        .map_err(|e| StorageIOError::read_logs(&e).into())
    }

    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + std::fmt::Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError<NodeId>> {
        let (from, to) = range_of(range);
        let inner = self.inner.clone();
        blocking(move || inner.lock().read(from, to))
            .map_err(|e| StorageIOError::read_logs(&e).into())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let inner = self.inner.clone();
        let (last_purged, last) = blocking(move || {
            let g = inner.lock();
            g.last_log_id().map(|l| (g.last_purged, l))
        })
        .map_err(|e| StorageError::from(StorageIOError::read_logs(&e)))?;
        Ok(LogState {
            last_purged_log_id: last_purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        let dir = self.inner.lock().dir.clone();
        let vote = *vote;
        blocking(move || durable_write(&dir.join("vote.json"), &vote))
            .map_err(|e| StorageIOError::write_vote(&e).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        let dir = self.inner.lock().dir.clone();
        read_json(&dir.join("vote.json")).map_err(|e| StorageIOError::read_vote(&e).into())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        if entries.is_empty() {
            callback.log_io_completed(Ok(()));
            return Ok(());
        }
        let inner = self.inner.clone();
        let result = blocking(move || inner.lock().append(&entries));
        match result {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                let kind = e.kind();
                callback.log_io_completed(Err(std::io::Error::new(kind, e.to_string())));
                Err(StorageIOError::write_logs(&e).into())
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let inner = self.inner.clone();
        blocking(move || -> std::io::Result<()> {
            let mut g = inner.lock();
            let at = log_id.index as i64;
            // The partition log cuts whole batches: the entries of the batch holding `at` that
            // come before it are written back after the cut.
            let leo = g.log.log_end_offset();
            let batch_start = if at < leo {
                let data = g.log.reader().read(at, 1, leo).map_err(io_err)?;
                match data.chunks.first() {
                    Some(c) => BatchHeader::parse(c).map_err(io_err)?.base_offset,
                    None => at,
                }
            } else {
                at
            };
            let held = (batch_start as u64).max(g.first_held());
            let keep = if held < at as u64 {
                g.read(held, at as u64)?
            } else {
                Vec::new()
            };
            let removed = g.log.truncate_to(at).map_err(io_err)?;
            if !keep.is_empty() {
                g.log
                    .append_replicated(encode(&keep)?, crate::now_ms())
                    .map_err(io_err)?;
            }
            debug_assert!(g.log.log_end_offset() <= at.max(0));
            g.log.flush().map_err(io_err)?;
            removed.delete_files().map_err(io_err)
        })
        .map_err(|e| StorageIOError::write_logs(&e).into())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let inner = self.inner.clone();
        blocking(move || -> std::io::Result<()> {
            let mut g = inner.lock();
            durable_write(&g.dir.join("purged.json"), &log_id)?;
            g.last_purged = Some(log_id);
            let removed = g
                .log
                .remove_segments_below(log_id.index as i64 + 1)
                .map_err(io_err)?;
            drop(g);
            removed.delete_files().map_err(io_err)
        })
        .map_err(|e| StorageIOError::write_logs(&e).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::{CommittedLeaderId, EntryPayload};

    fn entry(term: u64, index: u64) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
            payload: EntryPayload::Blank,
        }
    }

    fn indexes(entries: Vec<Entry>) -> Vec<u64> {
        entries.iter().map(|e| e.log_id.index).collect()
    }

    fn stored(inner: &Inner) -> Vec<(u64, u64)> {
        inner
            .read(0, u64::MAX)
            .unwrap()
            .iter()
            .map(|e| (e.log_id.leader_id.term, e.log_id.index))
            .collect()
    }

    #[test]
    fn truncation_inside_a_batch_keeps_the_entries_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open(dir.path()).unwrap();
        {
            let mut g = store.inner.lock();
            let all: Vec<Entry> = (0..5).map(|i| entry(1, i)).collect();
            g.log.append_replicated(encode(&all).unwrap(), 0).unwrap();
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut s = store.clone();
        rt.block_on(s.truncate(LogId::new(CommittedLeaderId::new(1, 1), 2)))
            .unwrap();
        let g = store.inner.lock();
        assert_eq!(stored(&g), vec![(1, 0), (1, 1)]);
        assert_eq!(g.log.log_end_offset(), 2);
        drop(g);
        // What follows is appended where the cut was.
        let mut g = store.inner.lock();
        let next: Vec<Entry> = (2..4).map(|i| entry(2, i)).collect();
        g.log.append_replicated(encode(&next).unwrap(), 0).unwrap();
        assert_eq!(stored(&g), vec![(1, 0), (1, 1), (2, 2), (2, 3)]);
    }

    #[test]
    fn a_replication_read_below_the_purged_entries_returns_none_rather_than_later_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open(dir.path()).unwrap();
        let mut g = store.inner.lock();
        let all: Vec<Entry> = (0..12).map(|i| entry(1, i)).collect();
        g.append(&all).unwrap();
        g.last_purged = Some(LogId::new(CommittedLeaderId::new(1, 1), 9));
        drop(g);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut s = store.clone();
        // A stale replication task asking from 8 must not get 10 and 11 as if they were 8, 9.
        assert!(rt
            .block_on(s.limited_get_log_entries(8, 12))
            .unwrap()
            .is_empty());
        let held = rt.block_on(s.limited_get_log_entries(10, 12)).unwrap();
        assert_eq!(indexes(held), vec![10, 11]);
    }

    #[test]
    fn an_append_that_would_leave_a_hole_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::open(dir.path()).unwrap();
        let mut g = store.inner.lock();
        g.append(&(0..5).map(|i| entry(1, i)).collect::<Vec<_>>())
            .unwrap();
        // Entries 7.. after 0..4: the 95 -> 150 append of seed 33936.
        assert!(g.append(&[entry(1, 7)]).is_err());
        assert!(g.append(&[entry(1, 3)]).is_err());
        assert_eq!(g.log.log_end_offset(), 5);
        // After a snapshot at 9 is installed and the log purged to it, the leader's next entry
        // (10) follows the snapshot.
        g.last_purged = Some(LogId::new(CommittedLeaderId::new(1, 1), 9));
        g.append(&[entry(1, 10)]).unwrap();
        assert_eq!(indexes(g.read(10, 20).unwrap()), vec![10]);
    }
}
