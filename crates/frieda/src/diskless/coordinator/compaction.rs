//! Object compaction at the batch coordinator (issue 60, "Object compaction"; docs/diskless.md,
//! "Compaction and garbage collection"), sans-IO: which batches of a partition to rewrite into
//! one object of that partition alone ([`BatchCoordinator::compaction_plan`]), and the decision
//! that replaces their coordinates with one ([`BatchCoordinator::compacted`]).
//!
//! A produce leaves each batch in a shared object (many partitions, one coordinate per batch).
//! Compaction reads a run of a partition's oldest uncompacted batches (markers included, built
//! as readers build them), writes them one after another with their offsets patched in, as one
//! new object, and the coordinator then names the whole run with a single coordinate: the
//! partition's coordinates stay about `retained bytes / diskless.compaction.max.bytes` instead of
//! one per batch, and a shared object is deleted once every partition in it is compacted or
//! retention passed it.
//!
//! Safety rests on two facts: the batches at an offset never change once decided (so any object
//! holding the right bytes for a run can stand for it, whoever wrote it and whenever), and the
//! new object is committed under the same age bound as an upload (so the orphan sweep never
//! deletes an object a decision may still name; a compaction that never gets its decision, e.g.
//! its compactor died, leaves an orphan the sweep removes).

use super::{BatchCoordinator, Coordinate, DisklessPartition, Location, ObjectEntry, ObjectId};

/// When a partition's batches are compacted (`diskless.compaction.max.bytes`,
/// `diskless.segment.max.ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionPolicy {
    /// The largest run rewritten into one object (bytes; a single larger batch is taken alone).
    /// A run this full is compacted at once.
    pub max_bytes: u64,
    /// A run whose oldest batch is this old (ms, by its object's UUIDv7 time or a marker's
    /// decision time) is compacted however small.
    pub max_age_ms: i64,
}

/// Size of a transaction marker's control batch as readers build it (bytes; one control record
/// of 6 bytes of key and value: 61 + 17): how much a marker adds to a compacted object.
pub const MARKER_BATCH_BYTES: u64 = 78;

/// A run of a partition's coordinates to rewrite, all visible to readers (below the
/// coordinator partition's high watermark).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionPlan {
    /// The partition.
    pub partition: DisklessPartition,
    /// The coordinates, consecutive, oldest first.
    pub coordinates: Vec<Coordinate>,
    /// The partition holds at least half its coordinate bound
    /// (`diskless.coordinator.max.batches.per.partition`): compact whatever the byte budget
    /// (`diskless.compaction.max.bytes.per.second`), before produces are refused at the bound.
    pub crowded: bool,
}

impl CompactionPlan {
    /// The first offset of the run.
    pub fn base_offset(&self) -> i64 {
        self.coordinates.first().map_or(0, |c| c.base_offset)
    }

    /// The last offset of the run.
    pub fn last_offset(&self) -> i64 {
        self.coordinates.last().map_or(-1, |c| c.last_offset)
    }

    /// The largest timestamp of its data batches (its markers' decision times when it holds
    /// nothing else): the compacted coordinate's, which ListOffsets by time and `retention.ms` read.
    pub fn max_timestamp(&self) -> i64 {
        let data = self
            .coordinates
            .iter()
            .filter(|c| c.object().is_some())
            .map(|c| c.max_timestamp)
            .max();
        data.or_else(|| self.coordinates.iter().map(|c| c.max_timestamp).max())
            .unwrap_or(-1)
    }
}

/// A compaction as decided ([`super::Decision::Compacted`]): `object` (`size` bytes, written by
/// broker `compactor`) holds `partition`'s batches from `base_offset` to `last_offset`, one
/// after another as readers get them; `max_timestamp` is its data batches' largest (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactedRun {
    /// The partition.
    pub partition: DisklessPartition,
    /// The new object.
    pub object: ObjectId,
    /// Its size (bytes).
    pub size: u64,
    /// The broker that wrote it.
    pub compactor: i32,
    /// The run's first offset.
    pub base_offset: i64,
    /// The run's last offset.
    pub last_offset: i64,
    /// The largest timestamp of its data batches (ms).
    pub max_timestamp: i64,
}

impl CompactionPlan {
    /// The run as decided once `object` (`size` bytes, written by broker `compactor`) holds it.
    pub fn compacted(&self, object: ObjectId, size: u64, compactor: i32) -> CompactedRun {
        CompactedRun {
            partition: self.partition,
            object,
            size,
            compactor,
            base_offset: self.base_offset(),
            last_offset: self.last_offset(),
            max_timestamp: self.max_timestamp(),
        }
    }
}

/// Why a compaction's decision is refused (nothing decided; the new object is an orphan the
/// sweep removes, or the compactor deletes it at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CompactError {
    /// The partition is not served here (its topic was deleted meanwhile).
    #[error("the partition is not served here")]
    UnknownPartition,
    /// The run's coordinates are gone or changed: retention, DeleteRecords or another
    /// compaction passed them.
    #[error("the run's coordinates are no longer the partition's")]
    Stale,
    /// The new object is known already.
    #[error("the object was committed before")]
    CommittedBefore,
    /// The new object is older than the commit-age bound (the sweep may delete it).
    #[error("the object is older than the commit-age bound")]
    TooOld,
    /// The object's size does not fit a coordinate (over 4 GiB).
    #[error("the object is too large for a coordinate")]
    TooLarge,
}

impl BatchCoordinator {
    /// The run of `partition` to compact now, if any. Runs are the stretches of consecutive
    /// coordinates below `end` (the partition's visible end) that are not settled (settled: a
    /// batch or a compacted run at least half `policy.max_bytes` large alone in its object),
    /// each cut where its bytes would pass `policy.max_bytes` (the first
    /// coordinate whatever its size). The oldest run is taken that is due: full (cut by the
    /// size), its oldest batch `policy.max_age_ms` old at `now_ms`, or the partition holding half
    /// its coordinate bound; and worth it: two coordinates or more, or one sharing its object.
    pub fn compaction_plan(
        &self,
        partition: DisklessPartition,
        now_ms: i64,
        end: i64,
        policy: &CompactionPolicy,
    ) -> Option<CompactionPlan> {
        let p = self.partitions.get(&partition)?;
        let crowded = p.coordinates.len() >= self.max_batches / 2;
        let visible: Vec<&Coordinate> = p
            .coordinates
            .iter()
            .take_while(|c| c.last_offset < end)
            .collect();
        let mut i = 0;
        while i < visible.len() {
            if self.is_settled(visible[i], policy) {
                i += 1;
                continue;
            }
            let mut run = Vec::new();
            let mut bytes = 0u64;
            let mut full = false;
            while let Some(c) = visible.get(i) {
                if self.is_settled(c, policy) {
                    break;
                }
                let len = coordinate_bytes(c);
                if !run.is_empty() && bytes + len > policy.max_bytes {
                    full = true;
                    break;
                }
                bytes += len;
                run.push(**c);
                i += 1;
                if bytes >= policy.max_bytes {
                    full = true;
                    break;
                }
            }
            let oldest = &run[0];
            let born = oldest
                .object()
                .map_or(oldest.max_timestamp, |o| o.created_ms());
            let old = now_ms.saturating_sub(born) >= policy.max_age_ms;
            let worth = run.len() > 1 || !self.is_alone(oldest);
            if (full || old || crowded) && worth {
                return Some(CompactionPlan {
                    partition,
                    coordinates: run,
                    crowded,
                });
            }
        }
        None
    }

    /// Decides `run`: its object holds the partition's batches from its base to its last
    /// offset, one after another as readers get them; their coordinates become one, naming the
    /// whole object. The objects the run named lose a reference each (and are marked for
    /// deletion at `now_ms` when none is left).
    ///
    /// Errors (nothing decided): [`CompactError`]; the run must start and end at coordinate
    /// boundaries of the partition as it is now.
    pub fn compacted(
        &mut self,
        now_ms: i64,
        run: CompactedRun,
    ) -> Result<super::Decision, CompactError> {
        let p = self
            .partitions
            .get(&run.partition)
            .ok_or(CompactError::UnknownPartition)?;
        if self.objects.contains_key(&run.object) {
            return Err(CompactError::CommittedBefore);
        }
        if now_ms.saturating_sub(run.object.created_ms()) > self.max_commit_age_ms {
            return Err(CompactError::TooOld);
        }
        if u32::try_from(run.size).is_err() {
            return Err(CompactError::TooLarge);
        }
        if run_bounds(p, run.base_offset, run.last_offset).is_none() {
            return Err(CompactError::Stale);
        }
        let d = super::Decision::Compacted { now_ms, run };
        self.apply(&d);
        Ok(d)
    }

    /// Applies a [`super::Decision::Compacted`] (the leader checked it on this same state).
    pub(super) fn replace_run(&mut self, now_ms: i64, run: &CompactedRun) {
        let Some(p) = self.partitions.get_mut(&run.partition) else {
            tracing::warn!(partition = ?run.partition, "a compaction of a partition not served: skipped");
            return;
        };
        let Some((i, j)) = run_bounds(p, run.base_offset, run.last_offset) else {
            tracing::warn!(
                ?run,
                "a compaction of a run that is not the partition's: skipped"
            );
            return;
        };
        let Ok(byte_len) = u32::try_from(run.size) else {
            return;
        };
        let replaced: Vec<Coordinate> = p.coordinates.drain(i..=j).collect();
        p.coordinates.insert(
            i,
            Coordinate {
                location: Location::Object {
                    object: run.object,
                    byte_offset: 0,
                    byte_len,
                },
                base_offset: run.base_offset,
                last_offset: run.last_offset,
                max_timestamp: run.max_timestamp,
            },
        );
        self.objects.insert(
            run.object,
            ObjectEntry {
                size: run.size,
                uploader: run.compactor,
                references: 1,
                deleting_since: None,
                compacted: true,
            },
        );
        for old in replaced.iter().filter_map(Coordinate::object) {
            self.release(now_ms, old);
        }
    }

    /// Whether `c` needs no compaction: alone in its object (a batch uploaded alone, or a
    /// compacted run) and at least half `policy.max_bytes` large. A smaller compacted run is
    /// merged again with what follows it, so a partition compacted in small runs (its budget
    /// spent until it was crowded, or its runs due by age) still ends with about one
    /// coordinate per `max_bytes` and never fills its bound with small compacted objects.
    fn is_settled(&self, c: &Coordinate, policy: &CompactionPolicy) -> bool {
        self.is_alone(c) && u64::from(c.byte_len()) >= policy.max_bytes / 2
    }

    /// Whether `c` is a batch its object holds alone.
    fn is_alone(&self, c: &Coordinate) -> bool {
        c.object_range().is_some_and(|(object, _, len)| {
            self.objects
                .get(&object)
                .is_some_and(|o| o.references == 1 && o.size == u64::from(len))
        })
    }

    /// Whether `c` names an object compaction wrote.
    fn is_compacted(&self, c: &Coordinate) -> bool {
        c.object()
            .and_then(|o| self.objects.get(&o))
            .is_some_and(|o| o.compacted)
    }

    /// How many of `partition`'s coordinates name compacted objects, and how many in all.
    pub fn compacted_coordinates(&self, partition: DisklessPartition) -> Option<(usize, usize)> {
        self.partitions.get(&partition).map(|p| {
            let compacted = p
                .coordinates
                .iter()
                .filter(|c| self.is_compacted(c))
                .count();
            (compacted, p.coordinates.len())
        })
    }
}

/// Bytes a coordinate adds to a compacted object.
fn coordinate_bytes(c: &Coordinate) -> u64 {
    match c.location {
        Location::Object { byte_len, .. } => u64::from(byte_len),
        Location::Marker(_) => MARKER_BATCH_BYTES,
    }
}

/// The indexes of the coordinates that start at `base_offset` and end at `last_offset`.
fn run_bounds(
    p: &super::PartitionState,
    base_offset: i64,
    last_offset: i64,
) -> Option<(usize, usize)> {
    if last_offset < base_offset {
        return None;
    }
    let i = p
        .coordinates
        .partition_point(|c| c.base_offset < base_offset);
    let j = p
        .coordinates
        .partition_point(|c| c.last_offset < last_offset);
    let starts = p
        .coordinates
        .get(i)
        .is_some_and(|c| c.base_offset == base_offset);
    let ends = p
        .coordinates
        .get(j)
        .is_some_and(|c| c.last_offset == last_offset);
    (starts && ends && i <= j).then_some((i, j))
}
