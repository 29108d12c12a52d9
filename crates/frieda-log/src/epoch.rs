//! The leader epoch cache (KIP-101, KIP-279): for each leader epoch, the first offset its leader
//! appended, so a replica that follows a new leader can find where its log diverges
//! (OffsetForLeaderEpoch) and truncate there instead of at the high watermark.
//!
//! Kept in `leader-epoch-checkpoint` in the partition directory, in Kafka's format:
//! ```text
//! 0            version
//! 2            number of entries
//! 0 0          <epoch> <start offset>
//! 3 1200
//! ```
//! written durably (temporary file, fsync, rename, directory fsync) whenever it changes, which is
//! only when leadership changes or the log is truncated.

use std::path::PathBuf;

use crate::error::LogError;
use crate::fs::LogDir;

/// File name of the epoch cache (Kafka's).
pub const EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";

/// No epoch (Kafka's `UNDEFINED_EPOCH`).
pub const UNDEFINED_EPOCH: i32 = -1;
/// No offset (Kafka's `UNDEFINED_EPOCH_OFFSET`).
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

/// One epoch and the first offset its leader appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    /// Leader epoch (>= 0).
    pub epoch: i32,
    /// First offset appended in that epoch.
    pub start_offset: i64,
}

/// The epochs of one log, in memory: entries with strictly increasing epochs and non-decreasing
/// start offsets, and Kafka's rules on them (`LeaderEpochFileCache`). Pure: the partition log
/// keeps it in [`EpochCache`] with its checkpoint file; the cluster simulator (crate
/// `frieda-sim`) keeps one per simulated replica.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Epochs {
    entries: Vec<EpochEntry>,
}

/// The cache: [`Epochs`] and the `leader-epoch-checkpoint` file that keeps them.
#[derive(Debug)]
pub(crate) struct EpochCache {
    dir: LogDir,
    path: PathBuf,
    epochs: Epochs,
}

impl std::ops::Deref for EpochCache {
    type Target = Epochs;
    fn deref(&self) -> &Epochs {
        &self.epochs
    }
}

impl std::ops::DerefMut for EpochCache {
    fn deref_mut(&mut self) -> &mut Epochs {
        &mut self.epochs
    }
}

impl EpochCache {
    /// Loads the cache of the partition in `dir` (missing or damaged: empty, with a warning for
    /// damage; recovery fills it again from the batches it validates).
    pub fn load(dir: &LogDir) -> EpochCache {
        let path = dir.join(EPOCH_CHECKPOINT_FILE);
        let text = dir
            .fs()
            .read(&path)
            .and_then(|b| String::from_utf8(b).map_err(std::io::Error::other));
        let entries = match text {
            Ok(text) => parse(&text).unwrap_or_else(|why| {
                tracing::warn!(file = %path.display(), why, "ignoring a damaged leader epoch checkpoint");
                Vec::new()
            }),
            Err(_) => Vec::new(),
        };
        EpochCache {
            dir: dir.clone(),
            path,
            epochs: Epochs { entries },
        }
    }

    /// The empty cache of a new partition in `dir` (nothing read; its checkpoint is written when
    /// the first epoch is assigned).
    pub fn empty(dir: &LogDir) -> EpochCache {
        EpochCache {
            dir: dir.clone(),
            path: dir.join(EPOCH_CHECKPOINT_FILE),
            epochs: Epochs::new(),
        }
    }

    /// Writes the checkpoint durably.
    ///
    /// Errors: `LogError::Io`.
    pub fn persist(&self) -> Result<(), LogError> {
        let mut text = format!("0\n{}\n", self.entries.len());
        for e in &self.entries {
            text.push_str(&format!("{} {}\n", e.epoch, e.start_offset));
        }
        self.dir.replace_durably(&self.path, text.as_bytes())?;
        Ok(())
    }
}

impl Epochs {
    /// No epochs (an empty log).
    pub fn new() -> Epochs {
        Epochs::default()
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    /// The entries as `(epoch, first offset)` pairs, oldest first (the form
    /// [`first_divergence`] compares).
    pub fn pairs(&self) -> Vec<(i32, i64)> {
        self.entries
            .iter()
            .map(|e| (e.epoch, e.start_offset))
            .collect()
    }

    /// The last offset up to `to` at which this log still agrees with `copies` (the `(epoch,
    /// first offset)` of the remote tier's batches), looking from `from`: `to`, or the offset
    /// before [`first_divergence`] over this cache's entries. What local retention of a tiered
    /// log may count as copied (the broker's `PartitionLog::enforce_local_retention`, the
    /// simulator's replicas).
    pub fn agrees_upto(&self, copies: &[(i32, i64)], from: i64, to: i64) -> i64 {
        first_divergence(&self.pairs(), copies, from, to).map_or(to, |diverged| diverged - 1)
    }

    /// The latest epoch, or [`UNDEFINED_EPOCH`].
    pub fn latest_epoch(&self) -> i32 {
        self.entries.last().map_or(UNDEFINED_EPOCH, |e| e.epoch)
    }

    /// Records that `epoch` starts at `start_offset` if it is newer than the latest epoch
    /// (batches of an older or the same epoch change nothing). Returns whether it changed.
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> bool {
        if epoch < 0 || epoch <= self.latest_epoch() {
            return false;
        }
        debug_assert!(self
            .entries
            .last()
            .is_none_or(|e| e.start_offset <= start_offset));
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        true
    }

    /// Appends the entries of `lineage` (`(epoch, first offset)`, ascending) that start below
    /// `below`, skipping any that would not follow the last entry (an older epoch, or an earlier
    /// offset: a lineage read from copies that overlap). For a log started again above the
    /// remote copies (`PartitionLog::truncate_fully_and_start_at`). Returns whether it changed.
    pub fn assign_lineage(&mut self, lineage: &[(i32, i64)], below: i64) -> bool {
        let mut changed = false;
        for &(epoch, first) in lineage.iter().filter(|&&(_, first)| first < below) {
            if self.entries.last().is_none_or(|e| e.start_offset <= first) {
                changed |= self.assign(epoch, first);
            }
        }
        changed
    }

    /// Drops the epochs that start at or after `end_offset` (the log was truncated there).
    /// Returns whether it changed.
    pub fn truncate_from_end(&mut self, end_offset: i64) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.start_offset < end_offset);
        self.entries.len() != before
    }

    /// Drops the epochs wholly below `start_offset` (the log start moved), keeping the one
    /// containing it with its start moved up. Returns whether it changed.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> bool {
        let keep_from = self
            .entries
            .iter()
            .rposition(|e| e.start_offset <= start_offset)
            .unwrap_or(0);
        let mut changed = keep_from > 0;
        self.entries.drain(..keep_from);
        if let Some(first) = self.entries.first_mut() {
            if first.start_offset < start_offset {
                first.start_offset = start_offset;
                changed = true;
            }
        }
        changed
    }

    /// OffsetForLeaderEpoch (Kafka's `LeaderEpochFileCache.endOffsetFor`): the largest epoch
    /// `<= requested` and the offset where the next epoch starts (the log end offset `leo` for
    /// the latest epoch). `(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)` for an undefined or a
    /// future epoch.
    pub fn end_offset_for(&self, requested: i32, leo: i64) -> (i32, i64) {
        if requested == UNDEFINED_EPOCH {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        }
        if requested == self.latest_epoch() {
            return (requested, leo);
        }
        let Some(next) = self.entries.iter().find(|e| e.epoch > requested) else {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        };
        match self.entries.iter().rev().find(|e| e.epoch <= requested) {
            Some(floor) => (floor.epoch, next.start_offset),
            None => (requested, next.start_offset),
        }
    }
}

/// The leader epoch of `offset` in a list of `(epoch, first offset)` entries ascending by
/// offset (an epoch cache's, or the batches' epochs of remote copies): the epoch of the last
/// entry starting at or below it, `None` below the first. Past the last entry's records this
/// answers the last epoch (for a leader: the epoch it writes the next offsets in).
pub fn epoch_at(entries: &[(i32, i64)], offset: i64) -> Option<i32> {
    let i = entries.partition_point(|&(_, start)| start <= offset);
    i.checked_sub(1).map(|i| entries[i].0)
}

/// The first offset in `[from, to]` at which two logs' leader epochs (`(epoch, first
/// offset)`, ascending) differ where both know one, or `None`: where `a` and `b` hold records
/// of different leader epochs at one offset, they hold different records there and from there
/// on (KIP-101's divergence; issue 57: a replica's log against the finished copies of the
/// remote tier, which outlive an unclean election or a power cut without fsync). Both lists
/// are step functions of the offset, so only their boundaries are compared. An offset where
/// either has no epoch (below its first entry) counts as agreeing.
pub fn first_divergence(a: &[(i32, i64)], b: &[(i32, i64)], from: i64, to: i64) -> Option<i64> {
    if to < from {
        return None;
    }
    // The entries starting inside (from, to], found by binary search: a replica's cache may
    // hold thousands of epochs and the leader compares it with every copy.
    fn inside(list: &[(i32, i64)], from: i64, to: i64) -> &[(i32, i64)] {
        let lo = list.partition_point(|&(_, start)| start <= from);
        let hi = list.partition_point(|&(_, start)| start <= to);
        &list[lo..hi.max(lo)]
    }
    let mut points: Vec<i64> = inside(a, from, to)
        .iter()
        .chain(inside(b, from, to))
        .map(|&(_, start)| start)
        .collect();
    points.push(from);
    points.sort_unstable();
    points.dedup();
    points
        .into_iter()
        .find(|&o| match (epoch_at(a, o), epoch_at(b, o)) {
            (Some(x), Some(y)) => x != y,
            _ => false,
        })
}

fn parse(text: &str) -> Result<Vec<EpochEntry>, String> {
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("0") {
        return Err("unrecognised version".into());
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or("no entry count")?;
    let mut out: Vec<EpochEntry> = Vec::new();
    for line in lines.take(count) {
        let mut f = line.split_whitespace();
        let (Some(e), Some(o), None) = (f.next(), f.next(), f.next()) else {
            return Err(format!("malformed entry {line:?}"));
        };
        let epoch: i32 = e.parse().map_err(|_| format!("bad epoch in {line:?}"))?;
        let start_offset: i64 = o.parse().map_err(|_| format!("bad offset in {line:?}"))?;
        if out
            .last()
            .is_some_and(|p| p.epoch >= epoch || p.start_offset > start_offset)
        {
            return Err(format!("entries out of order at {line:?}"));
        }
        out.push(EpochEntry {
            epoch,
            start_offset,
        });
    }
    if out.len() != count {
        return Err(format!("expected {count} entries, found {}", out.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divergence_is_the_first_offset_whose_epochs_differ() {
        // A replica: epoch 0 from 0, epoch 2 from 90 (it lost 81..89 and led again).
        let replica = [(0, 0), (2, 90)];
        // The copies: epoch 0 over [0, 91].
        let copies = [(0, 0)];
        assert_eq!(first_divergence(&replica, &copies, 0, 91), Some(90));
        assert_eq!(
            first_divergence(&replica, &copies, 0, 89),
            None,
            "a prefix agrees"
        );
        assert_eq!(
            first_divergence(&replica, &copies, 95, 99),
            Some(95),
            "from inside"
        );
        // The same lineage, the copies' epochs from their batches (no empty epoch 1).
        assert_eq!(
            first_divergence(
                &[(0, 0), (1, 50), (3, 50), (4, 70)],
                &[(0, 0), (3, 50), (4, 70)],
                0,
                99
            ),
            None
        );
        // Unknown below a list's first entry: agreeing.
        assert_eq!(first_divergence(&[(5, 100)], &[(0, 0)], 0, 99), None);
        assert_eq!(first_divergence(&[(5, 100)], &[(0, 0)], 0, 100), Some(100));
        assert_eq!(first_divergence(&[], &copies, 0, 10), None);
        assert_eq!(
            first_divergence(&replica, &copies, 10, 9),
            None,
            "empty range"
        );
        assert_eq!(epoch_at(&replica, 89), Some(0));
        assert_eq!(epoch_at(&replica, 1_000), Some(2), "the last epoch goes on");
        assert_eq!(epoch_at(&[(1, 5)], 4), None);
    }

    #[test]
    fn end_offsets_as_kafka_answers_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = EpochCache::load(&LogDir::os(dir.path()));
        assert_eq!(
            c.end_offset_for(0, 10),
            (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        );
        assert!(c.assign(1, 0));
        assert!(!c.assign(1, 5), "same epoch");
        assert!(c.assign(3, 100));
        assert!(c.assign(5, 250));
        assert!(!c.assign(4, 300), "older epoch");
        assert_eq!(c.end_offset_for(5, 400), (5, 400));
        assert_eq!(c.end_offset_for(3, 400), (3, 250));
        assert_eq!(c.end_offset_for(4, 400), (3, 250));
        assert_eq!(c.end_offset_for(2, 400), (1, 100));
        assert_eq!(c.end_offset_for(0, 400), (0, 0));
        assert_eq!(
            c.end_offset_for(6, 400),
            (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        );
        assert_eq!(
            c.end_offset_for(-1, 400),
            (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        );
        c.persist().unwrap();
        let again = EpochCache::load(&LogDir::os(dir.path()));
        assert_eq!(again.entries(), c.entries());
        assert!(c.truncate_from_end(250));
        assert_eq!(c.latest_epoch(), 3);
        assert!(c.truncate_from_start(120));
        assert_eq!(
            c.entries(),
            &[EpochEntry {
                epoch: 3,
                start_offset: 120
            }]
        );
        for bad in ["1\n0\n", "0\n2\n1 0\n", "0\n2\n3 0\n1 5\n", "0\n1\nx 0\n"] {
            std::fs::write(dir.path().join(EPOCH_CHECKPOINT_FILE), bad).unwrap();
            assert!(
                EpochCache::load(&LogDir::os(dir.path()))
                    .entries()
                    .is_empty(),
                "{bad:?}"
            );
        }
    }
}
