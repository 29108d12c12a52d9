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
    /// Entries with indexes in `[from, to)`.
    fn read(&self, from: u64, to: u64) -> std::io::Result<Vec<Entry>> {
        let reader = self.log.reader();
        let start = u64::try_from(reader.log_start_offset())
            .unwrap_or(0)
            .max(from);
        let end = u64::try_from(reader.log_end_offset()).unwrap_or(0).min(to);
        let mut out = Vec::new();
        let mut at = start;
        while at < end {
            let data = reader
                .read(at as i64, 1 << 20, end as i64)
                .map_err(io_err)?;
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
        let result = blocking(move || -> std::io::Result<()> {
            let batch = encode(&entries)?;
            let mut g = inner.lock();
            let end = g.log.log_end_offset();
            let first = entries[0].log_id.index as i64;
            debug_assert_eq!(first, end, "Raft entries are appended at the log end");
            if first != end {
                return Err(io_err(format!(
                    "entry {first} appended at log end offset {end}"
                )));
            }
            g.log
                .append_replicated(batch, crate::now_ms())
                .map_err(io_err)?;
            g.log.flush().map_err(io_err)
        });
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
            let removed = g.log.truncate_to(log_id.index as i64).map_err(io_err)?;
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
