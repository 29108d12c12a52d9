//! A simulated partition log on a simulated disk: batches appended to the page cache, a synced
//! prefix that survives a power loss, a leader epoch cache written durably when it changes (as
//! `leader-epoch-checkpoint` is), and fsync failures that take the log offline. Implements
//! [`LogView`], so the replication rules read it exactly as they read the partition log.
//!
//! In tiered runs the log is cut into segments (a new one once the active one holds
//! `segment_records` records, at a batch boundary); local retention removes closed segments
//! from the start, and a follower can start its log again at an offset (KIP-405). The log start
//! and the segment boundaries are durable as soon as they change (the broker checkpoints the
//! log start before it moves).

use frieda::replication::LogView;
use frieda_log::Epochs;

use crate::real_log::RealLog;

/// One record batch: `count` records from `base`, appended in leader epoch `epoch`; `id` names
/// the producer request that wrote it (unique in a run), so copies can be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    /// First offset.
    pub base: i64,
    /// Records in the batch (>= 1).
    pub count: i64,
    /// The leader epoch stamped on it.
    pub epoch: i32,
    /// The producer request it came from.
    pub id: u64,
}

impl Batch {
    /// The offset after the batch.
    pub fn end(&self) -> i64 {
        self.base + self.count
    }
}

/// Why a log operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskError {
    /// The log went offline after a failed fsync (KAFKA_STORAGE_ERROR).
    Offline,
    /// A replicated batch does not start at the log end (CORRUPT_MESSAGE).
    NotContiguous,
}

/// A partition log on one simulated broker's disk.
#[derive(Debug, Default)]
pub struct SimLog {
    batches: Vec<Batch>,
    /// Batches `[0, synced)` are on the platter; the rest only in the page cache.
    synced: usize,
    epochs: Epochs,
    log_start: i64,
    offline: bool,
    /// The next fsync fails (a fault armed by the plan).
    fail_next_sync: bool,
    /// Base offsets of the segments, ascending; the last is the active one. Empty until the
    /// first append (then one segment at the log start).
    segments: Vec<i64>,
    /// Records a segment takes before the next append rolls it; 0: never.
    segment_records: i64,
    /// The broker's own log in lock-step (unless `frieda-sim --model-log-only`; see [`RealLog`]).
    real: Option<Box<RealLog>>,
}

impl LogView for SimLog {
    fn log_start_offset(&self) -> i64 {
        self.log_start
    }
    fn log_end_offset(&self) -> i64 {
        self.batches.last().map_or(self.log_start, Batch::end)
    }
    fn latest_epoch(&self) -> i32 {
        self.epochs.latest_epoch()
    }
    fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.epochs.end_offset_for(epoch, self.log_end_offset())
    }
}

impl SimLog {
    /// A log with the broker's own partition log in lock-step ([`RealLog`]).
    pub(crate) fn with_real_log() -> SimLog {
        SimLog {
            real: Some(Box::new(RealLog::new())),
            ..SimLog::default()
        }
    }

    /// Checks the real log against this one after `what` (with every batch when `full`).
    fn check_real(&self, what: &str, full: bool) {
        if let Some(r) = &self.real {
            r.check(
                what,
                self.log_start,
                self.leo(),
                &self.epochs.pairs(),
                &self.segments,
                full.then_some(&self.batches[..]),
            );
        }
    }

    /// The log end offset.
    pub fn leo(&self) -> i64 {
        self.log_end_offset()
    }

    /// Every batch, oldest first.
    pub fn batches(&self) -> &[Batch] {
        &self.batches
    }

    /// The offset below which everything is synced (the recovery point).
    pub fn recovery_point(&self) -> i64 {
        if self.synced == 0 {
            self.log_start
        } else {
            self.batches[self.synced - 1].end()
        }
    }

    /// Whether the log went offline (a failed fsync).
    pub fn is_offline(&self) -> bool {
        self.offline
    }

    /// The batch with id `id`, if in the log.
    pub fn find(&self, id: u64) -> Option<&Batch> {
        self.batches.iter().rev().find(|b| b.id == id)
    }

    /// Whether batch `id` is synced.
    pub fn is_synced(&self, id: u64) -> bool {
        self.batches[..self.synced].iter().any(|b| b.id == id)
    }

    /// The batch containing `offset`, if any.
    pub fn batch_at(&self, offset: i64) -> Option<&Batch> {
        let i = self.batches.partition_point(|b| b.end() <= offset);
        self.batches.get(i).filter(|b| b.base <= offset)
    }

    /// Batches from `offset` on, at most `max` of them.
    pub fn read(&self, offset: i64, max: usize) -> Vec<Batch> {
        let i = self.batches.partition_point(|b| b.end() <= offset);
        self.batches[i..].iter().take(max).copied().collect()
    }

    /// A leader's append of `count` records from request `id` in `epoch`.
    ///
    /// Errors: [`DiskError::Offline`].
    pub fn append_leader(&mut self, epoch: i32, count: i64, id: u64) -> Result<Batch, DiskError> {
        if self.offline {
            return Err(DiskError::Offline);
        }
        let b = Batch {
            base: self.leo(),
            count,
            epoch,
            id,
        };
        let rolled = self.roll_before(b.base);
        self.epochs.assign(epoch, b.base);
        self.batches.push(b);
        if let Some(r) = &mut self.real {
            if rolled {
                r.roll();
            }
            r.append_leader(&b);
        }
        self.check_real("a leader's append", false);
        Ok(b)
    }

    /// A follower's append of its leader's batches, as they are.
    ///
    /// Errors: [`DiskError::Offline`]; [`DiskError::NotContiguous`] when the first does not start
    /// at the log end (nothing appended).
    pub fn append_replicated(&mut self, batches: &[Batch]) -> Result<(), DiskError> {
        if self.offline {
            return Err(DiskError::Offline);
        }
        let mut leo = self.leo();
        for b in batches {
            if b.base != leo {
                return Err(DiskError::NotContiguous);
            }
            leo = b.end();
        }
        for b in batches {
            let rolled = self.roll_before(b.base);
            self.epochs.assign(b.epoch, b.base);
            self.batches.push(*b);
            if let Some(r) = &mut self.real {
                if rolled {
                    r.roll();
                }
                r.append_replicated(std::slice::from_ref(b));
            }
        }
        self.check_real("a follower's append", false);
        Ok(())
    }

    /// Records that leader epoch `epoch` starts at the log end (a new leader; Kafka's
    /// `maybeAssignEpochStartOffset`), durably.
    pub fn assign_epoch(&mut self, epoch: i32) {
        let leo = self.leo();
        self.epochs.assign(epoch, leo);
        if let Some(r) = &mut self.real {
            r.assign_epoch(epoch);
        }
        self.check_real("a new leader's epoch", false);
    }

    /// Cuts the log to end before `offset` (the batch containing it goes too). Returns the new
    /// log end offset.
    ///
    /// Errors: [`DiskError::Offline`].
    pub fn truncate_to(&mut self, offset: i64) -> Result<i64, DiskError> {
        if self.offline {
            return Err(DiskError::Offline);
        }
        if offset > self.leo() {
            return Ok(self.leo());
        }
        if offset < self.log_start {
            // Below the log start (local retention of a tiered log deleted a lineage the
            // leader does not have): emptied, it starts again there, as the broker's
            // `Partition::truncate_from_leader` and Kafka's `truncateFullyAndStartAt` (seed 1478),
            // keeping the epochs below it, where this log and the leader's agree.
            let agreed = self.epochs.pairs();
            self.start_again(offset, &agreed)?;
            return Ok(offset);
        }
        let cuts = offset < self.leo();
        let keep = self.batches.partition_point(|b| b.end() <= offset);
        self.batches.truncate(keep);
        self.synced = self.synced.min(keep);
        let leo = self.leo();
        self.epochs.truncate_from_end(leo);
        self.segments_cut_at(leo);
        // A truncation that cuts is made durable by an fsync of the segment it cut, now the active
        // one (`PartitionLog::make_truncation_durable`): its batches survive a power loss when
        // everything before them does (found by running the real log beside this one,
        // `--min-insync-changes --leader-rebalance` seed 202).
        let active = self.segments.last().copied().unwrap_or(self.log_start);
        if cuts && self.synced >= self.batches.partition_point(|b| b.base < active) {
            self.synced = keep;
        }
        if let Some(r) = &mut self.real {
            r.truncate_to(offset);
        }
        self.check_real("a truncation", true);
        Ok(leo)
    }

    /// Makes the page cache durable (an fsync, or the kernel's write-back).
    ///
    /// Errors: [`DiskError::Offline`] when it fails (an armed fault): the log goes offline.
    pub fn sync(&mut self) -> Result<(), DiskError> {
        if self.offline {
            return Err(DiskError::Offline);
        }
        let fail = std::mem::take(&mut self.fail_next_sync);
        if let Some(r) = &mut self.real {
            // The real log fsyncs only what changed: with nothing to sync the armed fault does
            // not fire, the model goes offline alone, and both meet again at the restart.
            let synced = r.sync(fail);
            assert!(
                synced || fail,
                "real log: an fsync failed where the model's did not"
            );
            assert_eq!(
                r.is_offline(),
                !synced,
                "real log: offline after a failed fsync"
            );
        }
        if fail {
            self.offline = true;
            return Err(DiskError::Offline);
        }
        self.synced = self.batches.len();
        Ok(())
    }

    /// Disarms an armed fsync failure (the faults are over).
    pub fn heal(&mut self) {
        self.fail_next_sync = false;
    }

    /// Arms a failure of the next fsync.
    pub fn fail_next_sync(&mut self) {
        self.fail_next_sync = true;
    }

    /// Whether everything appended is synced.
    pub fn all_synced(&self) -> bool {
        self.synced == self.batches.len()
    }

    /// A power loss: the page cache is gone, the synced prefix stays; the epoch cache (written
    /// durably on each change) is cut to the surviving log end, as recovery does. Returns the
    /// ids of the batches lost.
    pub fn power_loss(&mut self) -> Vec<u64> {
        let lost: Vec<u64> = self.batches[self.synced..].iter().map(|b| b.id).collect();
        self.batches.truncate(self.synced);
        let leo = self.leo();
        self.epochs.truncate_from_end(leo);
        self.segments_cut_at(leo);
        self.fail_next_sync = false;
        if let Some(r) = &mut self.real {
            r.power_loss();
            // A segment no fsync reached may vanish with its batches: its file's directory
            // entry is durable only with the next directory fsync (a flush, a checkpoint's
            // replace), which the model does not follow. It takes the real log's boundaries,
            // which may only lack segments starting at or above the surviving log end.
            let real = r.segment_bases();
            assert!(
                self.segments.iter().all(|b| real.contains(b) || *b >= leo)
                    && (self.segments.is_empty() || real.iter().all(|b| self.segments.contains(b))),
                "real log after a power loss: segments {real:?}, the model's {:?} (log end {leo})",
                self.segments
            );
            self.segments = real;
        }
        self.check_real("a power loss", true);
        lost
    }

    /// The epoch cache.
    pub fn epochs(&self) -> &Epochs {
        &self.epochs
    }

    /// The leader epochs of the batches in `[first, last]`: `(epoch, first offset)`, ascending,
    /// as the epoch cache has them (the first may start below `first`).
    pub fn epochs_in(&self, first: i64, last: i64) -> Vec<(i32, i64)> {
        let entries = self.epochs.entries();
        entries
            .iter()
            .enumerate()
            .filter(|(i, e)| {
                let next = entries.get(i + 1).map_or(i64::MAX, |n| n.start_offset);
                e.start_offset <= last && next > first
            })
            .map(|(_, e)| (e.epoch, e.start_offset))
            .collect()
    }

    /// Segments roll after `n` records (0: never).
    pub fn set_segment_records(&mut self, n: i64) {
        self.segment_records = n;
    }

    /// Before appending a batch at `base` (the log end): the first segment, or a new one when
    /// the active one is full. Returns whether a segment was closed (a roll).
    fn roll_before(&mut self, base: i64) -> bool {
        match self.segments.last() {
            None => {
                self.segments.push(self.log_start);
                false
            }
            Some(&active) if self.segment_records > 0 && base - active >= self.segment_records => {
                self.segments.push(base);
                true
            }
            Some(_) => false,
        }
    }

    /// The log now ends at `leo` (a truncation): segments starting above it are gone, and the
    /// one holding it is the active one.
    fn segments_cut_at(&mut self, leo: i64) {
        while self.segments.len() > 1 && self.segments.last().is_some_and(|&b| b > leo) {
            self.segments.pop();
        }
        if self.segments.last().is_some_and(|&b| b > leo) {
            self.segments.clear();
        }
    }

    /// The closed segments, `(first offset, last offset)`, ascending (never the active one).
    pub fn closed_segments(&self) -> Vec<(i64, i64)> {
        self.segments
            .windows(2)
            .filter(|w| w[1] > w[0])
            .map(|w| (w[0], w[1] - 1))
            .collect()
    }

    /// Local retention of a tiered log: removes closed segments from the start while more
    /// than `keep` are closed and the oldest ends at or below `deletable_upto`, moving the log
    /// start to the first remaining one, but never from where the copies' leader epochs
    /// (`copied_epochs`) stop agreeing with this log's (the broker's
    /// `PartitionLog::enforce_local_retention`, the same [`Epochs::agrees_upto`]). Returns the
    /// segments removed.
    pub fn remove_local(
        &mut self,
        deletable_upto: i64,
        copied_epochs: &[(i32, i64)],
        keep: usize,
    ) -> Vec<(i64, i64)> {
        let mut removed = Vec::new();
        if self.offline {
            return removed;
        }
        let deletable_upto = self
            .epochs
            .agrees_upto(copied_epochs, self.log_start, deletable_upto);
        loop {
            let closed = self.closed_segments();
            if closed.len() <= keep {
                break;
            }
            let (first, last) = closed[0];
            if last > deletable_upto {
                break;
            }
            let i = self.segments.iter().position(|&b| b == first).unwrap_or(0);
            self.segments.drain(..=i);
            self.log_start = last + 1;
            let gone = self.batches.partition_point(|b| b.end() <= self.log_start);
            self.batches.drain(..gone);
            self.synced = self.synced.saturating_sub(gone);
            // The epoch cache keeps the removed epochs (the broker's local retention of a
            // tiered log does not cut it: `PartitionLog::enforce_local_retention`).
            removed.push((first, last));
        }
        if !removed.is_empty() {
            if let Some(r) = &mut self.real {
                r.remove_local(self.log_start, copied_epochs);
            }
            self.check_real("local retention", true);
        }
        removed
    }

    /// A follower starts its log again at `offset` (KIP-405: the leader holds its next offsets
    /// only in remote storage): every batch goes, the log starts and ends there, and the epoch
    /// cache becomes `epochs_below` (the copies' lineage below `offset`), as
    /// `PartitionLog::truncate_fully_and_start_at`.
    ///
    /// Errors: [`DiskError::Offline`] (a failed fsync took the log offline: the broker's
    /// `truncate_fully_and_start_at` refuses it too; found by running the real log beside this one, seed 472).
    pub fn start_again(
        &mut self,
        offset: i64,
        epochs_below: &[(i32, i64)],
    ) -> Result<(), DiskError> {
        if self.offline {
            return Err(DiskError::Offline);
        }
        self.batches.clear();
        self.synced = 0;
        self.log_start = offset;
        self.segments = vec![offset];
        self.epochs = Epochs::default();
        self.epochs.assign_lineage(epochs_below, offset);
        if let Some(r) = &mut self.real {
            r.start_again(offset, epochs_below);
        }
        self.check_real("starting again", true);
        Ok(())
    }

    /// A process restart: the log is recovered from its files (what a crashed process wrote is
    /// still in the page cache) and, as `PartitionLog::open_from` does after an unclean
    /// shutdown, what recovery kept is fsync'ed before the log serves.
    pub fn restart(&mut self) {
        self.offline = false;
        self.fail_next_sync = false;
        self.synced = self.batches.len();
        // Recovery cuts the epoch cache to the log end: an epoch a leader began at the log end
        // and wrote nothing in goes, as `PartitionLog::open_from` does (Kafka's LogLoader too).
        // Found by running the broker's own log beside this one (`real_log.rs`).
        let leo = self.leo();
        self.epochs.truncate_from_end(leo);
        if let Some(r) = &mut self.real {
            r.restart();
        }
        self.check_real("a restart", true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_loss_keeps_the_synced_prefix_and_its_epochs() {
        let mut log = SimLog::default();
        log.assign_epoch(1);
        log.append_leader(1, 3, 1).unwrap();
        log.sync().unwrap();
        log.assign_epoch(2);
        log.append_leader(2, 2, 2).unwrap();
        assert_eq!(log.leo(), 5);
        assert_eq!(log.end_offset_for_epoch(1), (1, 3));
        assert_eq!(log.power_loss(), vec![2]);
        assert_eq!(log.leo(), 3);
        assert_eq!(log.latest_epoch(), 1);
        assert_eq!(log.end_offset_for_epoch(1), (1, 3));
        assert_eq!(
            log.append_replicated(&[Batch {
                base: 4,
                count: 1,
                epoch: 3,
                id: 9
            }]),
            Err(DiskError::NotContiguous)
        );
        log.fail_next_sync();
        assert_eq!(log.sync(), Err(DiskError::Offline));
        assert!(log.is_offline());
        assert_eq!(log.truncate_to(0), Err(DiskError::Offline));
    }
}
