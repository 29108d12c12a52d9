//! A simulated partition log on a simulated disk: batches appended to the page cache, a synced
//! prefix that survives a power loss, a leader epoch cache written durably when it changes (as
//! `leader-epoch-checkpoint` is), and fsync failures that take the log offline. Implements
//! [`LogView`], so the replication rules read it exactly as they read the partition log.

use frieda::replication::LogView;
use frieda_log::Epochs;

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
#[derive(Debug, Clone, Default)]
pub struct SimLog {
    batches: Vec<Batch>,
    /// Batches `[0, synced)` are on the platter; the rest only in the page cache.
    synced: usize,
    epochs: Epochs,
    log_start: i64,
    offline: bool,
    /// The next fsync fails (a fault armed by the plan).
    fail_next_sync: bool,
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
        self.epochs.assign(epoch, b.base);
        self.batches.push(b);
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
            self.epochs.assign(b.epoch, b.base);
            self.batches.push(*b);
        }
        Ok(())
    }

    /// Records that leader epoch `epoch` starts at the log end (a new leader; Kafka's
    /// `maybeAssignEpochStartOffset`), durably.
    pub fn assign_epoch(&mut self, epoch: i32) {
        let leo = self.leo();
        self.epochs.assign(epoch, leo);
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
        let keep = self.batches.partition_point(|b| b.end() <= offset);
        self.batches.truncate(keep);
        self.synced = self.synced.min(keep);
        let leo = self.leo();
        self.epochs.truncate_from_end(leo);
        Ok(leo)
    }

    /// Makes the page cache durable (an fsync, or the kernel's write-back).
    ///
    /// Errors: [`DiskError::Offline`] when it fails (an armed fault): the log goes offline.
    pub fn sync(&mut self) -> Result<(), DiskError> {
        if self.offline {
            return Err(DiskError::Offline);
        }
        if std::mem::take(&mut self.fail_next_sync) {
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
        self.fail_next_sync = false;
        lost
    }

    /// A process restart: the log is recovered from its files (what a crashed process wrote is
    /// still in the page cache) and, as `PartitionLog::open_from` does after an unclean
    /// shutdown, what recovery kept is fsync'ed before the log serves.
    pub fn restart(&mut self) {
        self.offline = false;
        self.fail_next_sync = false;
        self.synced = self.batches.len();
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
