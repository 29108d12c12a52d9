//! Log start offsets that the segment files alone do not show: moved inside a segment by
//! DeleteRecords (KIP-107) on a leader, or taken from the leader by a follower. Kept in Kafka's
//! `log-start-offset-checkpoint` (same format as the other checkpoint files, see
//! [`super::checkpoint`]) and written **before** the new start is applied, so records a client
//! was told are deleted never come back after a restart. Kafka writes this file every
//! `log.flush.start.offset.checkpoint.interval.ms` (60 s) instead; DeleteRecords is rare enough
//! to write it at once.
//!
//! An entry only ever raises a log's start when the partition is opened again (a lower one is a
//! no-op: retention may have passed it since). A partition created anew under a name that had
//! an entry forgets it first, so a deleted topic's namesake starts at 0.

use super::checkpoint::{self, Offsets};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};

/// File name of the log start offsets (Kafka's).
pub const LOG_START_OFFSET_FILE: &str = "log-start-offset-checkpoint";

/// The persisted log start offsets of one data directory.
pub struct LogStartCheckpoint {
    path: PathBuf,
    /// Bounded by the number of partitions hosted (one entry each at most).
    entries: Mutex<Offsets>,
}

impl LogStartCheckpoint {
    /// Loads `<data_dir>/log-start-offset-checkpoint` (missing or damaged: empty, i.e. every
    /// log starts at its first segment, as Kafka does with a damaged file).
    pub fn load(data_dir: &Path) -> LogStartCheckpoint {
        let path = data_dir.join(LOG_START_OFFSET_FILE);
        LogStartCheckpoint {
            entries: Mutex::new(checkpoint::read(&path)),
            path,
        }
    }

    /// The persisted start of a partition, if one was recorded.
    pub fn get(&self, topic: &str, partition: i32) -> Option<i64> {
        self.entries
            .lock()
            .get(&(topic.to_string(), partition))
            .copied()
    }

    /// Records `offset` as the partition's log start and writes the file durably; does nothing
    /// if the recorded start is already at or past it.
    ///
    /// Errors: the file could not be written (the old one stays; the caller must not apply
    /// the new start).
    pub fn record(&self, topic: &str, partition: i32, offset: i64) -> std::io::Result<()> {
        let mut entries = self.entries.lock();
        let key = (topic.to_string(), partition);
        if entries.get(&key).is_some_and(|&o| o >= offset) {
            return Ok(());
        }
        let mut next = entries.clone();
        next.insert(key, offset);
        checkpoint::write(&self.path, &next)?;
        *entries = next;
        Ok(())
    }

    /// Lowers the partition's recorded start to `offset` if it is above it, and writes the file
    /// durably: a follower whose log is emptied and started again below its old start (its
    /// leader's log diverges from it below that start; Kafka's `truncateFullyAndStartAt`) must
    /// not find the old start raised again when it is opened. Does nothing otherwise.
    ///
    /// Errors: the file could not be written (the old one stays; the caller must not start the
    /// log lower).
    pub fn lower(&self, topic: &str, partition: i32, offset: i64) -> std::io::Result<()> {
        let mut entries = self.entries.lock();
        let key = (topic.to_string(), partition);
        if entries.get(&key).is_none_or(|&o| o <= offset) {
            return Ok(());
        }
        let mut next = entries.clone();
        next.insert(key, offset);
        checkpoint::write(&self.path, &next)?;
        *entries = next;
        Ok(())
    }

    /// Forgets a partition's entry (a new log of that name, or its replica removed) and
    /// rewrites the file if there was one.
    ///
    /// Errors: the file could not be written.
    pub fn forget(&self, topic: &str, partition: i32) -> std::io::Result<()> {
        let mut entries = self.entries.lock();
        if entries.remove(&(topic.to_string(), partition)).is_none() {
            return Ok(());
        }
        checkpoint::write(&self.path, &entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_raise_persist_and_forget() {
        let dir = tempfile::tempdir().unwrap();
        let c = LogStartCheckpoint::load(dir.path());
        assert_eq!(c.get("orders", 0), None);
        c.record("orders", 0, 40).unwrap();
        c.record("orders", 0, 10).unwrap(); // lower: ignored
        c.record("orders", 1, 7).unwrap();
        assert_eq!(c.get("orders", 0), Some(40));
        let again = LogStartCheckpoint::load(dir.path());
        assert_eq!(
            (again.get("orders", 0), again.get("orders", 1)),
            (Some(40), Some(7))
        );
        again.forget("orders", 0).unwrap();
        again.forget("nothing", 3).unwrap();
        let third = LogStartCheckpoint::load(dir.path());
        assert_eq!(
            (third.get("orders", 0), third.get("orders", 1)),
            (None, Some(7))
        );
    }
}
