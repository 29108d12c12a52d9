//! The remote segments of one tiered partition (KIP-405's `RemoteLogSegmentMetadata` and its
//! states), as the metadata image will keep them: the rules every node applies to a change, so
//! a retried, abandoned or taken-over copy never leaves two live copies of an offset and a
//! deposed leader changes nothing. Design: `docs/tiered-storage.md` ("Remote segment metadata
//! lives in the metadata quorum"). Step 1 of its build order: the rules and their tests; the
//! image's command and the copier that issues it come with step 2.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use uuid::Uuid;

use crate::image::BrokerId;
use frieda_log::Epochs;

/// Most remote segments one partition may have in the image (entries not yet
/// `DELETE_FINISHED`): a `COPY_STARTED` beyond it is refused, so a tiny `segment.bytes` cannot
/// grow the image without limit (`remote.log.metadata.max.segments.per.partition`).
pub const MAX_SEGMENTS_PER_PARTITION: usize = 100_000;

/// Most ids of deleted copies one partition remembers ([`RemoteLog::was_deleted`]): an object
/// of one of them still in the bucket is an orphan its leader's sweep deletes.
pub const MAX_DELETED_IDS: usize = 100;

/// KIP-405's `RemoteLogSegmentState`. A segment goes `CopyStarted → CopyFinished →
/// DeleteStarted`, or `CopyStarted → DeleteStarted` when its copy is abandoned (a failure, a
/// new leader); `DELETE_FINISHED` removes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RemoteSegmentState {
    /// Registered before the first upload: every object in the bucket belongs to a known id.
    CopyStarted,
    /// Uploaded with its indexes and manifest: readable, and its local copy may be deleted.
    CopyFinished,
    /// Being deleted (expired, below the log start, an abandoned copy, a deleted topic).
    DeleteStarted,
}

/// One remote segment (KIP-405's `RemoteLogSegmentMetadata`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSegment {
    /// New for every copy attempt (`RemoteLogSegmentId`); part of each object key.
    pub id: Uuid,
    /// First offset in the segment.
    pub start_offset: i64,
    /// Last offset in the segment (inclusive); lowered by [`RemoteSegmentChange::Truncated`].
    pub end_offset: i64,
    /// Largest record timestamp in it, ms (time retention and lookups by timestamp).
    pub max_timestamp_ms: i64,
    /// Bytes of its `.log` object (size retention counts remote and local bytes together);
    /// after a [`RemoteSegmentChange::Truncated`] the object holds batches past `end_offset`,
    /// which readers skip.
    pub size_bytes: u64,
    /// The broker that copies it.
    pub broker: BrokerId,
    /// The partition's leader epoch when the copy started: a later leader abandons it if it
    /// is still `CopyStarted`.
    pub leader_epoch: i32,
    /// The leader epochs of its batches: `(epoch, first offset)`, ascending (the segment's
    /// part of the leader-epoch checkpoint; KIP-405 `segmentLeaderEpochs`).
    pub segment_epochs: Vec<(i32, i64)>,
    /// Cut short by [`RemoteSegmentChange::Truncated`]: its objects hold batches past
    /// `end_offset`, and its producer snapshot (taken at the original end) does not describe
    /// the producers before `end_offset + 1`, so a replica starting its log again there does
    /// not restore it. Absent from older images: `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Where it is in its life.
    pub state: RemoteSegmentState,
}

/// A change to a partition's remote segments, issued by its leader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RemoteSegmentChange {
    /// Registers a copy about to start (`segment.state` must be `CopyStarted`).
    CopyStarted(RemoteSegment),
    /// Its objects are all uploaded.
    CopyFinished(Uuid),
    /// Its deletion begins: an expiry (total retention, DeleteRecords, tiering turned off) of
    /// the oldest finished copy, or the end of an unfinished one (also accepted from
    /// `CopyStarted`, as written before [`Self::AbandonCopy`] existed). Refused for a finished
    /// copy that is not the oldest finished one: the remote tier only shrinks from its start,
    /// so no hole opens between copies.
    DeleteStarted(Uuid),
    /// An unfinished copy is given up (its copier failed, or it is an earlier leader's or an
    /// earlier run's): `CopyStarted → DeleteStarted`. Refused once the copy finished, so a
    /// copier that takes its own finished copy for an abandoned one (a metadata image that had
    /// not yet applied its `CopyFinished`) deletes nothing (issue 57, defect 1).
    AbandonCopy(Uuid),
    /// Its objects are all deleted: it leaves the image.
    DeleteFinished(Uuid),
    /// Tiering was turned off with `remote.log.delete.on.disable=true` (KIP-950) and every
    /// segment is deleted: the highest offset copied is forgotten too, so tiering turned on
    /// again copies from the local log start. Refused while a segment remains.
    Disabled,
    /// The leader's log stops agreeing with the finished copies at this offset (their batches'
    /// leader epochs differ from its epoch cache there: records of a lineage lost to an
    /// unclean election or to a power cut without fsync, outside the acks=all contract; issue
    /// 57, simulator seed 1085): the remote tier is truncated to end below it, as a follower
    /// truncates its log to its new leader's. Copies wholly at or above it go to
    /// `DeleteStarted` (whatever their age), the copy holding it ends just below it (its
    /// objects keep the later batches; readers stop at its end), and the highest offset copied
    /// becomes the offset before it, so the leader copies its own records from there. Kafka
    /// finds the same point with `RemoteLogManager.findHighestRemoteOffset` and deletes the
    /// copies outside the lineage (`isRemoteSegmentWithinLeaderEpochs`). Refused when negative
    /// or when nothing at or above it was ever copied.
    Truncated(i64),
    /// DeleteRecords (KIP-107) moved the partition's log start offset to this offset: records
    /// below it are gone whatever the copies hold, and the copies wholly below it expire
    /// (Kafka's `RemoteLogManager` deletes segments breached by the log start offset). Never
    /// lowered: an offset at or below the current one changes nothing. Refused when negative.
    LogStartMoved(i64),
}

/// Why a change was refused; every node refuses it the same way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteLogError {
    /// The change came from a leader epoch that is not the partition's current one (a deposed
    /// leader): FENCED_LEADER_EPOCH where a client would see it.
    #[error(
        "remote segment change from leader epoch {issued}; the partition is in epoch {current}"
    )]
    StaleLeaderEpoch {
        /// The issuer's epoch.
        issued: i32,
        /// The partition's.
        current: i32,
    },
    /// No such segment (already deleted, or never registered).
    #[error("unknown remote segment {0}")]
    Unknown(Uuid),
    /// The transition is not one of KIP-405's.
    #[error("remote segment {id}: {from:?} cannot become {to}")]
    BadTransition {
        /// The segment.
        id: Uuid,
        /// Its state.
        from: RemoteSegmentState,
        /// The state asked for.
        to: &'static str,
    },
    /// The segment's offsets are empty, overlap a live segment, or do not continue the copied
    /// end (a second live copy of an offset).
    #[error("remote segment {id} [{start}, {end}]: {why}")]
    Offsets {
        /// The segment.
        id: Uuid,
        /// Its first offset.
        start: i64,
        /// Its last offset.
        end: i64,
        /// What is wrong.
        why: &'static str,
    },
    /// The id is already registered.
    #[error("remote segment {0} is already registered")]
    Duplicate(Uuid),
    /// [`MAX_SEGMENTS_PER_PARTITION`] reached.
    #[error("the partition has {0} remote segments, the most it may have")]
    TooMany(usize),
}

/// The remote segments of one partition, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteLog {
    segments: BTreeMap<Uuid, RemoteSegment>,
    /// The highest offset any finished copy held, kept when retention deletes that copy
    /// (Kafka's `highestOffsetInRemoteStorage`): copies continue above it, and local retention
    /// may delete what lies at or below it. `None` until a copy finishes. (Absent from images
    /// written before remote retention: read as `None`, [`Self::copied_upto`] then falls back
    /// to the finished segments.)
    #[serde(default)]
    copied_upto: Option<i64>,
    /// The log start offset DeleteRecords set ([`RemoteSegmentChange::LogStartMoved`]), if
    /// any: the partition's log start is at least this, whatever the copies hold. Forgotten
    /// with [`RemoteSegmentChange::Disabled`] (every copy is gone then, and the local log
    /// starts at or above it). Absent from older images: `None`.
    #[serde(default)]
    log_start: Option<i64>,
    /// Ids of the copies most recently deleted (`DeleteFinished`), oldest first, at most
    /// [`MAX_DELETED_IDS`] (issue 57): a PUT sent before a copy was abandoned, by a process
    /// that then died or was paused, can land after the copy's objects were deleted; the
    /// leader's sweep deletes objects of these ids. Absent from older images: empty.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    deleted: VecDeque<Uuid>,
}

/// A partition's total retention (`retention.ms` / `retention.bytes`, remote and local tiers
/// together), as [`RemoteLog::expired`] applies it to the remote segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TotalRetention {
    /// Now, ms since the epoch.
    pub now_ms: i64,
    /// `retention.ms`; -1 (any negative) keeps records forever by time.
    pub retention_ms: i64,
    /// `retention.bytes`; -1 (any negative) sets no size bound.
    pub retention_bytes: i64,
    /// Bytes of the local log not in any copy (the segments above [`RemoteLog::copied_upto`]),
    /// counted with the remote bytes against `retention_bytes` (Kafka's
    /// `onlyLocalLogSegmentsSize`).
    pub local_only_bytes: u64,
}

impl RemoteLog {
    /// Applies `change`, issued by the leader of `issued_epoch`, to a partition now in
    /// `current_epoch`. Nothing changes when it is refused.
    ///
    /// Errors: [`RemoteLogError`] as its variants say.
    pub fn apply(
        &mut self,
        change: &RemoteSegmentChange,
        issued_epoch: i32,
        current_epoch: i32,
    ) -> Result<(), RemoteLogError> {
        if issued_epoch != current_epoch {
            return Err(RemoteLogError::StaleLeaderEpoch {
                issued: issued_epoch,
                current: current_epoch,
            });
        }
        match change {
            RemoteSegmentChange::CopyStarted(s) => {
                let bad = |why| RemoteLogError::Offsets {
                    id: s.id,
                    start: s.start_offset,
                    end: s.end_offset,
                    why,
                };
                if s.state != RemoteSegmentState::CopyStarted {
                    return Err(RemoteLogError::BadTransition {
                        id: s.id,
                        from: s.state,
                        to: "a new segment",
                    });
                }
                if self.segments.contains_key(&s.id) {
                    return Err(RemoteLogError::Duplicate(s.id));
                }
                if self.segments.len() >= MAX_SEGMENTS_PER_PARTITION {
                    return Err(RemoteLogError::TooMany(self.segments.len()));
                }
                if s.start_offset < 0 || s.end_offset < s.start_offset {
                    return Err(bad("not an offset range"));
                }
                self.check_above_copied_end(s, "starts at or below the copied end")?;
                self.segments.insert(s.id, s.clone());
            }
            RemoteSegmentChange::CopyFinished(id) => {
                let s = self.get(*id)?;
                if s.state != RemoteSegmentState::CopyStarted {
                    return Err(RemoteLogError::BadTransition {
                        id: *id,
                        from: s.state,
                        to: "CopyFinished",
                    });
                }
                // Checked again here: another copy of these offsets may have finished since
                // this one started (a takeover that did not abandon it first).
                self.check_above_copied_end(s, "another copy of these offsets finished first")?;
                let end = s.end_offset;
                self.set_state(*id, RemoteSegmentState::CopyFinished);
                self.copied_upto = Some(self.copied_upto.map_or(end, |u| u.max(end)));
            }
            RemoteSegmentChange::DeleteStarted(id) => {
                let s = self.get(*id)?;
                if s.state == RemoteSegmentState::DeleteStarted {
                    return Err(RemoteLogError::BadTransition {
                        id: *id,
                        from: s.state,
                        to: "DeleteStarted",
                    });
                }
                if s.state == RemoteSegmentState::CopyFinished
                    && self.finished().next().map(|f| f.id) != Some(*id)
                {
                    return Err(RemoteLogError::BadTransition {
                        id: *id,
                        from: s.state,
                        to: "DeleteStarted while an older copy is readable (copies expire oldest first)",
                    });
                }
                self.set_state(*id, RemoteSegmentState::DeleteStarted);
            }
            RemoteSegmentChange::AbandonCopy(id) => {
                let s = self.get(*id)?;
                if s.state != RemoteSegmentState::CopyStarted {
                    return Err(RemoteLogError::BadTransition {
                        id: *id,
                        from: s.state,
                        to: "abandoned (only an unfinished copy is)",
                    });
                }
                self.set_state(*id, RemoteSegmentState::DeleteStarted);
            }
            RemoteSegmentChange::DeleteFinished(id) => {
                let s = self.get(*id)?;
                if s.state != RemoteSegmentState::DeleteStarted {
                    return Err(RemoteLogError::BadTransition {
                        id: *id,
                        from: s.state,
                        to: "DeleteFinished",
                    });
                }
                self.segments.remove(id);
                if self.deleted.len() >= MAX_DELETED_IDS {
                    self.deleted.pop_front();
                }
                self.deleted.push_back(*id);
            }
            RemoteSegmentChange::Disabled => {
                if let Some(s) = self.segments.values().next() {
                    return Err(RemoteLogError::BadTransition {
                        id: s.id,
                        from: s.state,
                        to: "gone before tiering is disabled",
                    });
                }
                self.copied_upto = None;
                self.log_start = None;
                self.deleted.clear();
            }
            RemoteSegmentChange::Truncated(offset) => {
                let offset = *offset;
                if offset < 0 || self.copied_upto().is_none_or(|upto| upto < offset) {
                    return Err(RemoteLogError::Offsets {
                        id: Uuid::nil(),
                        start: offset,
                        end: offset,
                        why: "nothing at or above this offset was copied",
                    });
                }
                for s in self.segments.values_mut() {
                    if s.state != RemoteSegmentState::CopyFinished || s.end_offset < offset {
                        continue;
                    }
                    if s.start_offset >= offset {
                        s.state = RemoteSegmentState::DeleteStarted;
                    } else {
                        s.end_offset = offset - 1;
                        s.segment_epochs.retain(|&(_, first)| first < offset);
                        s.truncated = true;
                    }
                }
                self.copied_upto = (offset > 0).then_some(offset - 1);
                debug_assert!(self.copied_upto().is_none_or(|u| u < offset), "{self:?}");
            }
            RemoteSegmentChange::LogStartMoved(offset) => {
                if *offset < 0 {
                    return Err(RemoteLogError::Offsets {
                        id: Uuid::nil(),
                        start: *offset,
                        end: *offset,
                        why: "a log start offset cannot be negative",
                    });
                }
                self.log_start = Some(self.log_start.map_or(*offset, |s| s.max(*offset)));
            }
        }
        debug_assert!(self.finished_do_not_overlap(), "{self:?}");
        Ok(())
    }

    /// The last offset of the `CopyFinished` segments (ListOffsets `-5`, KIP-1005), if any.
    pub fn copied_end(&self) -> Option<i64> {
        self.segments
            .values()
            .filter(|s| s.state == RemoteSegmentState::CopyFinished)
            .map(|s| s.end_offset)
            .max()
    }

    /// The highest offset ever copied (Kafka's `highestOffsetInRemoteStorage`, ListOffsets
    /// `-5`), kept when retention deletes the copy holding it; `None` if no copy ever finished.
    /// New copies start above it.
    pub fn copied_upto(&self) -> Option<i64> {
        match (self.copied_upto, self.copied_end()) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The last offset up to which local retention may delete local segments (issue 57): the
    /// end of the contiguous run of finished copies that starts at the oldest finished copy;
    /// with no finished copy, [`Self::copied_upto`] (every copy ever made expired by total
    /// retention); `None` if nothing was ever copied. Offsets below the oldest finished copy
    /// were expired from the remote tier (copies expire oldest first, and [`Self::apply`]
    /// refuses any other deletion of a finished copy) or never reached it (below the log start
    /// when tiering began); every offset from there to this one is in a finished copy. A gap
    /// between finished copies ends the run, so a local segment reaching into offsets no copy
    /// holds stays on disk however old it is. Below [`Self::copied_upto`] when such a gap exists.
    pub fn covered_end(&self) -> Option<i64> {
        let mut finished = self.finished();
        let Some(first) = finished.next() else {
            return self.copied_upto();
        };
        let mut end = first.end_offset;
        for s in finished {
            if s.start_offset != end + 1 {
                break;
            }
            end = s.end_offset;
        }
        Some(end)
    }

    /// The first offset at which the finished copies disagree with `replica`'s log (the
    /// leader's, as its copy task checks before copying; issue 57): the lowest offset where a
    /// copy's batches have another leader epoch than `replica`'s epoch cache gives (past the
    /// cache's last entry, the replica's last epoch: what a leader writes next). `None` when
    /// every copy agrees, also where the cache knows no epoch (below its first entry). The
    /// leader then commits [`RemoteSegmentChange::Truncated`] at it.
    pub fn divergence(&self, replica: &Epochs) -> Option<i64> {
        let ours = replica.pairs();
        self.finished().find_map(|s| {
            frieda_log::first_divergence(&ours, &s.segment_epochs, s.start_offset, s.end_offset)
        })
    }

    /// The leader epochs of the batches in the finished copies up to [`Self::covered_end`]:
    /// `(epoch, first offset)`, ascending, one entry per change of epoch (each copy's
    /// `segment_epochs`, the first clamped to its first offset). Local retention compares them
    /// with its replica's epoch cache, so copies of a lineage the replica no longer has never
    /// count as holding its records (`PartitionLog::enforce_local_retention`).
    pub fn covered_epochs(&self) -> Vec<(i32, i64)> {
        self.epochs_upto(self.covered_end().unwrap_or(-1))
    }

    /// The leader epochs of the batches in the finished copies that start at or below `upto`:
    /// `(epoch, first offset)`, ascending, one entry per change of epoch (as
    /// [`Self::covered_epochs`]). A follower that starts its log again above the copies takes
    /// them as its epoch cache (Kafka's `buildRemoteLogAuxState` restores the leader epoch
    /// checkpoint of the copy below its new start), so that as a leader it answers
    /// OffsetsForLeaderEpoch for the epochs only the bucket holds with where they really end.
    pub fn epochs_upto(&self, upto: i64) -> Vec<(i32, i64)> {
        let mut out: Vec<(i32, i64)> = Vec::new();
        for s in self.finished().take_while(|s| s.start_offset <= upto) {
            for &(epoch, first) in &s.segment_epochs {
                if first > s.end_offset.min(upto) {
                    break;
                }
                if out.last().is_none_or(|&(e, _)| e != epoch) {
                    out.push((epoch, first.max(s.start_offset)));
                }
            }
        }
        out
    }

    /// The log start offset DeleteRecords set (KIP-107), if any: the partition's log start is
    /// at least this.
    pub fn log_start(&self) -> Option<i64> {
        self.log_start
    }

    /// The readable segments that total retention deletes now, oldest first (Kafka's
    /// `RemoteLogManager` expiration task): the longest run from the oldest in which each
    /// segment lies wholly below the [`log_start`](Self::log_start) DeleteRecords set, or its
    /// largest timestamp is at or before `now_ms - retention_ms`, or deleting it still leaves
    /// the partition's bytes (remote plus `local_only_bytes`) at or above `retention_bytes`. A
    /// segment that no bound breaches ends the run, so the remote tier only ever shrinks from
    /// its start.
    pub fn expired(&self, r: &TotalRetention) -> Vec<&RemoteSegment> {
        let finished: Vec<&RemoteSegment> = self.finished().collect();
        let mut breach = if r.retention_bytes >= 0 {
            let remote: u64 = finished.iter().map(|s| s.size_bytes).sum();
            (remote + r.local_only_bytes) as i128 - r.retention_bytes as i128
        } else {
            0
        };
        let cutoff = (r.retention_ms >= 0).then(|| r.now_ms.saturating_sub(r.retention_ms));
        let mut out = Vec::new();
        for s in finished {
            let by_time = cutoff.is_some_and(|c| s.max_timestamp_ms <= c);
            let by_size = breach - s.size_bytes as i128 >= 0 && breach > 0;
            let by_start = self.log_start.is_some_and(|start| s.end_offset < start);
            if !(by_time || by_size || by_start) {
                break;
            }
            breach -= s.size_bytes as i128;
            out.push(s);
        }
        out
    }

    /// The readable segments, ascending by offset.
    pub fn finished(&self) -> impl Iterator<Item = &RemoteSegment> {
        let mut v: Vec<&RemoteSegment> = self
            .segments
            .values()
            .filter(|s| s.state == RemoteSegmentState::CopyFinished)
            .collect();
        v.sort_by_key(|s| s.start_offset);
        v.into_iter()
    }

    /// The readable segment holding `offset`, if any.
    pub fn finished_holding(&self, offset: i64) -> Option<&RemoteSegment> {
        self.finished()
            .find(|s| s.start_offset <= offset && offset <= s.end_offset)
    }

    /// Copies started under an earlier leader epoch than `epoch` and never finished: the new
    /// leader deletes their objects before it copies those offsets again.
    pub fn abandoned(&self, epoch: i32) -> impl Iterator<Item = &RemoteSegment> {
        self.segments
            .values()
            .filter(move |s| s.state == RemoteSegmentState::CopyStarted && s.leader_epoch < epoch)
    }

    /// Copies not finished (`CopyStarted`), ascending by offset.
    pub fn unfinished(&self) -> impl Iterator<Item = &RemoteSegment> {
        let mut v: Vec<&RemoteSegment> = self
            .segments
            .values()
            .filter(|s| s.state == RemoteSegmentState::CopyStarted)
            .collect();
        v.sort_by_key(|s| s.start_offset);
        v.into_iter()
    }

    /// Segments being deleted (their deletion is retried until `DeleteFinished`).
    pub fn deleting(&self) -> impl Iterator<Item = &RemoteSegment> {
        self.segments
            .values()
            .filter(|s| s.state == RemoteSegmentState::DeleteStarted)
    }

    /// Whether `id` is the id of a copy deleted lately (one of the last [`MAX_DELETED_IDS`]):
    /// any object of it in the bucket is an orphan.
    pub fn was_deleted(&self, id: Uuid) -> bool {
        self.deleted.contains(&id)
    }

    /// Whether any id of a deleted copy is remembered (a sweep for orphans has something to
    /// look for).
    pub fn has_deleted(&self) -> bool {
        !self.deleted.is_empty()
    }

    /// Whether `id` is a registered copy (any state).
    pub fn is_registered(&self, id: Uuid) -> bool {
        self.segments.contains_key(&id)
    }

    /// Every registered segment (any state).
    pub fn len(&self) -> usize {
        self.segments.len()
    }

    /// No segment is registered, no copy ever finished and no deleted copy is remembered (or
    /// tiering was turned off): the image may forget the partition's remote log.
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
            && self.copied_upto.is_none()
            && self.log_start.is_none()
            && self.deleted.is_empty()
    }

    /// Refuses `s` ([`RemoteLogError::Offsets`] saying `why`) unless it starts above every
    /// offset ever copied: invariant 5, no offset in two readable segments (and none copied
    /// again after retention deleted its copy).
    fn check_above_copied_end(
        &self,
        s: &RemoteSegment,
        why: &'static str,
    ) -> Result<(), RemoteLogError> {
        if self.copied_upto().is_some_and(|end| s.start_offset <= end) {
            return Err(RemoteLogError::Offsets {
                id: s.id,
                start: s.start_offset,
                end: s.end_offset,
                why,
            });
        }
        Ok(())
    }

    fn get(&self, id: Uuid) -> Result<&RemoteSegment, RemoteLogError> {
        self.segments.get(&id).ok_or(RemoteLogError::Unknown(id))
    }

    fn set_state(&mut self, id: Uuid, state: RemoteSegmentState) {
        if let Some(s) = self.segments.get_mut(&id) {
            s.state = state;
        }
    }

    /// Invariant 5 of the design: at most one readable segment covers any offset.
    fn finished_do_not_overlap(&self) -> bool {
        let f: Vec<&RemoteSegment> = self.finished().collect();
        f.windows(2).all(|w| w[0].end_offset < w[1].start_offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(n: u128, start: i64, end: i64, epoch: i32) -> RemoteSegment {
        RemoteSegment {
            id: Uuid::from_u128(n),
            start_offset: start,
            end_offset: end,
            max_timestamp_ms: 0,
            size_bytes: 100,
            broker: 1,
            leader_epoch: epoch,
            segment_epochs: vec![(epoch, start)],
            truncated: false,
            state: RemoteSegmentState::CopyStarted,
        }
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn a_segment_lives_through_kip_405s_states() {
        let mut r = RemoteLog::default();
        r.apply(&RemoteSegmentChange::CopyStarted(seg(1, 0, 99, 3)), 3, 3)
            .unwrap();
        assert_eq!(
            r.copied_end(),
            None,
            "not readable before its copy finished"
        );
        r.apply(&RemoteSegmentChange::CopyFinished(id(1)), 3, 3)
            .unwrap();
        assert_eq!(r.copied_end(), Some(99));
        assert_eq!(r.finished_holding(42).map(|s| s.id), Some(id(1)));
        assert!(r.finished_holding(100).is_none());
        r.apply(&RemoteSegmentChange::CopyStarted(seg(2, 100, 199, 3)), 3, 3)
            .unwrap();
        r.apply(&RemoteSegmentChange::CopyFinished(id(2)), 3, 3)
            .unwrap();
        assert_eq!(r.copied_end(), Some(199));
        // Expiry of the oldest: deleting, then gone.
        r.apply(&RemoteSegmentChange::DeleteStarted(id(1)), 3, 3)
            .unwrap();
        assert!(r.finished_holding(42).is_none());
        assert_eq!(r.deleting().count(), 1);
        r.apply(&RemoteSegmentChange::DeleteFinished(id(1)), 3, 3)
            .unwrap();
        assert_eq!(r.len(), 1);
        // Only KIP-405's transitions.
        for bad in [
            RemoteSegmentChange::CopyFinished(id(2)),
            RemoteSegmentChange::DeleteFinished(id(2)),
            RemoteSegmentChange::CopyFinished(id(1)),
        ] {
            assert!(r.apply(&bad, 3, 3).is_err(), "{bad:?}");
        }
        let mut finished = seg(9, 500, 600, 3);
        finished.state = RemoteSegmentState::CopyFinished;
        assert!(matches!(
            r.apply(&RemoteSegmentChange::CopyStarted(finished), 3, 3),
            Err(RemoteLogError::BadTransition { .. })
        ));
    }

    #[test]
    fn a_deposed_leader_changes_nothing() {
        let mut r = RemoteLog::default();
        r.apply(&RemoteSegmentChange::CopyStarted(seg(1, 0, 99, 3)), 3, 3)
            .unwrap();
        let before = r.clone();
        assert_eq!(
            r.apply(&RemoteSegmentChange::CopyFinished(id(1)), 3, 4),
            Err(RemoteLogError::StaleLeaderEpoch {
                issued: 3,
                current: 4
            })
        );
        assert_eq!(r, before);
        // The new leader sees the copy as abandoned, deletes it and copies again under a new id.
        assert_eq!(r.abandoned(4).map(|s| s.id).collect::<Vec<_>>(), [id(1)]);
        assert_eq!(
            r.abandoned(3).count(),
            0,
            "its own copies are not abandoned"
        );
        r.apply(&RemoteSegmentChange::DeleteStarted(id(1)), 4, 4)
            .unwrap();
        r.apply(&RemoteSegmentChange::CopyStarted(seg(2, 0, 99, 4)), 4, 4)
            .unwrap();
        r.apply(&RemoteSegmentChange::CopyFinished(id(2)), 4, 4)
            .unwrap();
        r.apply(&RemoteSegmentChange::DeleteFinished(id(1)), 4, 4)
            .unwrap();
        assert_eq!(r.copied_end(), Some(99));
    }

    #[test]
    fn no_offset_gets_two_live_copies() {
        let mut r = RemoteLog::default();
        // Two attempts at the same offsets (a retry whose first attempt was not abandoned):
        // the first to finish wins, the second can never finish.
        r.apply(&RemoteSegmentChange::CopyStarted(seg(1, 0, 99, 1)), 1, 1)
            .unwrap();
        r.apply(&RemoteSegmentChange::CopyStarted(seg(2, 0, 99, 1)), 1, 1)
            .unwrap();
        r.apply(&RemoteSegmentChange::CopyFinished(id(2)), 1, 1)
            .unwrap();
        assert!(matches!(
            r.apply(&RemoteSegmentChange::CopyFinished(id(1)), 1, 1),
            Err(RemoteLogError::Offsets { .. })
        ));
        // A new copy must start above the copied end; empty ranges and reused ids are refused.
        for (s, why) in [
            (seg(3, 50, 150, 1), "overlaps"),
            (seg(4, 99, 99, 1), "at the end"),
            (seg(5, 200, 199, 1), "empty"),
            (seg(2, 100, 199, 1), "reused id"),
        ] {
            assert!(
                r.apply(&RemoteSegmentChange::CopyStarted(s), 1, 1).is_err(),
                "{why}"
            );
        }
        r.apply(&RemoteSegmentChange::CopyStarted(seg(6, 100, 199, 1)), 1, 1)
            .unwrap();
        assert!(r.finished_do_not_overlap());
    }

    fn finished_log(sizes_and_times: &[(u64, i64)]) -> RemoteLog {
        let mut r = RemoteLog::default();
        for (n, &(size, ts)) in sizes_and_times.iter().enumerate() {
            let mut s = seg(n as u128 + 1, n as i64 * 100, n as i64 * 100 + 99, 1);
            s.size_bytes = size;
            s.max_timestamp_ms = ts;
            r.apply(&RemoteSegmentChange::CopyStarted(s), 1, 1).unwrap();
            r.apply(&RemoteSegmentChange::CopyFinished(id(n as u128 + 1)), 1, 1)
                .unwrap();
        }
        r
    }

    fn expired_ids(r: &RemoteLog, t: TotalRetention) -> Vec<Uuid> {
        r.expired(&t).iter().map(|s| s.id).collect()
    }

    #[test]
    fn total_retention_expires_the_oldest_segments_by_time_and_size() {
        // Four segments of 100 bytes, largest timestamps 1000, 2000, 3000, 4000.
        let r = finished_log(&[(100, 1000), (100, 2000), (100, 3000), (100, 4000)]);
        let keep_all = TotalRetention {
            now_ms: 5000,
            retention_ms: -1,
            retention_bytes: -1,
            local_only_bytes: 50,
        };
        assert!(expired_ids(&r, keep_all).is_empty());
        // Time: everything at or before now - retention.
        let by_time = TotalRetention {
            retention_ms: 3000,
            ..keep_all
        };
        assert_eq!(expired_ids(&r, by_time), [id(1), id(2)]);
        // Size: 450 bytes against 250: deleting two leaves 250 (>= the bound), a third 150.
        let by_size = TotalRetention {
            retention_bytes: 250,
            ..keep_all
        };
        assert_eq!(expired_ids(&r, by_size), [id(1), id(2)]);
        // Exactly at the bound: nothing to delete.
        let at_bound = TotalRetention {
            retention_bytes: 450,
            ..keep_all
        };
        assert!(expired_ids(&r, at_bound).is_empty());
        // Either bound; a segment neither breaches ends the run (only a prefix goes).
        let both = TotalRetention {
            retention_ms: 3500,
            retention_bytes: 240,
            ..keep_all
        };
        assert_eq!(expired_ids(&r, both), [id(1), id(2)]);
        let out_of_order = finished_log(&[(100, 1000), (100, 9000), (100, 1000)]);
        assert_eq!(expired_ids(&out_of_order, by_time), [id(1)]);
    }

    #[test]
    fn copies_continue_above_what_retention_deleted() {
        let mut r = finished_log(&[(100, 1000), (100, 2000)]);
        for n in [1, 2] {
            r.apply(&RemoteSegmentChange::DeleteStarted(id(n)), 1, 1)
                .unwrap();
            r.apply(&RemoteSegmentChange::DeleteFinished(id(n)), 1, 1)
                .unwrap();
        }
        assert_eq!(r.copied_end(), None, "nothing readable");
        assert_eq!(
            r.copied_upto(),
            Some(199),
            "but offsets up to 199 were copied"
        );
        assert!(!r.is_empty(), "the image keeps the partition's remote log");
        assert!(matches!(
            r.apply(&RemoteSegmentChange::CopyStarted(seg(7, 150, 250, 1)), 1, 1),
            Err(RemoteLogError::Offsets { .. })
        ));
        r.apply(&RemoteSegmentChange::CopyStarted(seg(8, 200, 299, 1)), 1, 1)
            .unwrap();
        // Tiering turned off: refused while a segment remains, then the copied offsets go.
        assert!(r.apply(&RemoteSegmentChange::Disabled, 1, 1).is_err());
        let mut off = r.clone();
        off.apply(&RemoteSegmentChange::DeleteStarted(id(8)), 1, 1)
            .unwrap();
        off.apply(&RemoteSegmentChange::DeleteFinished(id(8)), 1, 1)
            .unwrap();
        off.apply(&RemoteSegmentChange::Disabled, 1, 1).unwrap();
        assert!(off.is_empty() && off.copied_upto().is_none());
        // An image written before `copied_upto` existed reads it as absent.
        let mut json = serde_json::to_value(&r).unwrap();
        json.as_object_mut().unwrap().remove("copied_upto");
        let old: RemoteLog = serde_json::from_value(json).unwrap();
        assert_eq!(old.copied_upto(), None);
    }

    #[test]
    fn delete_records_moves_the_log_start_and_expires_the_copies_below_it() {
        // Segments [0, 99], [100, 199], [200, 299], [300, 399]; no retention bound.
        let mut r = finished_log(&[(100, 1000), (100, 2000), (100, 3000), (100, 4000)]);
        let keep_all = TotalRetention {
            now_ms: 5000,
            retention_ms: -1,
            retention_bytes: -1,
            local_only_bytes: 0,
        };
        assert_eq!(r.log_start(), None);
        // Inside the second segment: only the first lies wholly below.
        r.apply(&RemoteSegmentChange::LogStartMoved(150), 1, 1)
            .unwrap();
        assert_eq!(r.log_start(), Some(150));
        assert_eq!(expired_ids(&r, keep_all), [id(1)]);
        // Never lowered; a deposed leader's move changes nothing.
        r.apply(&RemoteSegmentChange::LogStartMoved(50), 1, 1)
            .unwrap();
        assert_eq!(r.log_start(), Some(150));
        assert!(matches!(
            r.apply(&RemoteSegmentChange::LogStartMoved(400), 1, 2),
            Err(RemoteLogError::StaleLeaderEpoch { .. })
        ));
        assert!(r
            .apply(&RemoteSegmentChange::LogStartMoved(-3), 1, 1)
            .is_err());
        // At a segment's first offset: the ones before it; past the last copy: all of them.
        r.apply(&RemoteSegmentChange::LogStartMoved(300), 1, 1)
            .unwrap();
        assert_eq!(expired_ids(&r, keep_all), [id(1), id(2), id(3)]);
        r.apply(&RemoteSegmentChange::LogStartMoved(1000), 1, 1)
            .unwrap();
        assert_eq!(expired_ids(&r, keep_all), [id(1), id(2), id(3), id(4)]);
        // With every copy gone the image still remembers the start; tiering turned off forgets it.
        for n in 1..=4 {
            r.apply(&RemoteSegmentChange::DeleteStarted(id(n)), 1, 1)
                .unwrap();
            r.apply(&RemoteSegmentChange::DeleteFinished(id(n)), 1, 1)
                .unwrap();
        }
        assert_eq!(r.log_start(), Some(1000));
        r.apply(&RemoteSegmentChange::Disabled, 1, 1).unwrap();
        assert!(r.is_empty() && r.log_start().is_none());
    }

    #[test]
    fn a_finished_copy_cannot_be_abandoned_nor_deleted_out_of_order() {
        // Issue 57, defect 1: a copier whose image had not yet applied its own CopyFinished
        // took the copy for an abandoned one and deleted it; local retention then deleted the
        // local segment, and the range was nowhere.
        let mut r = finished_log(&[(100, 1000), (100, 2000)]);
        let before = r.clone();
        assert!(matches!(
            r.apply(&RemoteSegmentChange::AbandonCopy(id(2)), 1, 1),
            Err(RemoteLogError::BadTransition { .. })
        ));
        // The newest finished copy cannot be deleted while an older one is readable.
        assert!(matches!(
            r.apply(&RemoteSegmentChange::DeleteStarted(id(2)), 1, 1),
            Err(RemoteLogError::BadTransition { .. })
        ));
        assert_eq!(r, before);
        // An unfinished copy is abandoned; its late CopyFinished is then refused.
        r.apply(&RemoteSegmentChange::CopyStarted(seg(3, 200, 299, 1)), 1, 1)
            .unwrap();
        r.apply(&RemoteSegmentChange::AbandonCopy(id(3)), 1, 1)
            .unwrap();
        assert!(r
            .apply(&RemoteSegmentChange::CopyFinished(id(3)), 1, 1)
            .is_err());
        assert!(
            r.apply(&RemoteSegmentChange::AbandonCopy(id(3)), 1, 1)
                .is_err(),
            "abandoned once"
        );
        // Expiry goes oldest first.
        r.apply(&RemoteSegmentChange::DeleteStarted(id(1)), 1, 1)
            .unwrap();
        r.apply(&RemoteSegmentChange::DeleteStarted(id(2)), 1, 1)
            .unwrap();
    }

    #[test]
    fn local_retention_may_delete_only_up_to_the_contiguous_finished_copies() {
        let mut r = RemoteLog::default();
        assert_eq!(r.covered_end(), None, "nothing copied: nothing deletable");
        // [0, 99] finished, [100, 199] still copying.
        r.apply(&RemoteSegmentChange::CopyStarted(seg(1, 0, 99, 1)), 1, 1)
            .unwrap();
        r.apply(&RemoteSegmentChange::CopyFinished(id(1)), 1, 1)
            .unwrap();
        r.apply(&RemoteSegmentChange::CopyStarted(seg(2, 100, 199, 1)), 1, 1)
            .unwrap();
        assert_eq!(r.covered_end(), Some(99));
        r.apply(&RemoteSegmentChange::CopyFinished(id(2)), 1, 1)
            .unwrap();
        assert_eq!(r.covered_end(), Some(199));
        // A copy that starts above the copied end (the local log starts higher): the gap
        // [200, 249] is in no copy, so nothing past it is deletable.
        r.apply(&RemoteSegmentChange::CopyStarted(seg(3, 250, 299, 1)), 1, 1)
            .unwrap();
        r.apply(&RemoteSegmentChange::CopyFinished(id(3)), 1, 1)
            .unwrap();
        assert_eq!(r.copied_upto(), Some(299));
        assert_eq!(r.covered_end(), Some(199));
        // Total retention expires the oldest two: the run now starts at the third.
        for n in [1, 2] {
            r.apply(&RemoteSegmentChange::DeleteStarted(id(n)), 1, 1)
                .unwrap();
        }
        assert_eq!(r.covered_end(), Some(299));
        // Every copy expired: what was copied is deletable locally.
        r.apply(&RemoteSegmentChange::DeleteStarted(id(3)), 1, 1)
            .unwrap();
        assert_eq!(r.covered_end(), Some(299));
    }

    #[test]
    fn a_leader_of_another_lineage_truncates_the_remote_tier() {
        // Seed 1085 of the simulator: broker 1 copied [61, 91] in epoch 0; broker 2 lost its
        // unsynced 81..89 in a power cut, led epoch 2 from offset 90 and wrote other records.
        let mut r = RemoteLog::default();
        for (n, start, end) in [(1, 0, 29), (2, 30, 60), (3, 61, 91)] {
            r.apply(
                &RemoteSegmentChange::CopyStarted(seg(n, start, end, 0)),
                0,
                0,
            )
            .unwrap();
            r.apply(&RemoteSegmentChange::CopyFinished(id(n)), 0, 0)
                .unwrap();
        }
        let mut leader = Epochs::new();
        leader.assign(0, 0);
        assert_eq!(r.divergence(&leader), None, "the same lineage");
        leader.assign(2, 90);
        assert_eq!(r.divergence(&leader), Some(90));
        assert_eq!(r.covered_epochs(), [(0, 0)]);
        // A later copy on top of the diverged one does not hide it.
        let mut later = seg(4, 92, 99, 2);
        later.segment_epochs = vec![(2, 92)];
        r.apply(&RemoteSegmentChange::CopyStarted(later), 2, 2)
            .unwrap();
        r.apply(&RemoteSegmentChange::CopyFinished(id(4)), 2, 2)
            .unwrap();
        assert_eq!(r.divergence(&leader), Some(90));
        assert_eq!(r.covered_epochs(), [(0, 0), (2, 92)]);

        let stale = r.apply(&RemoteSegmentChange::Truncated(90), 1, 2);
        assert!(matches!(
            stale,
            Err(RemoteLogError::StaleLeaderEpoch { .. })
        ));
        r.apply(&RemoteSegmentChange::Truncated(90), 2, 2).unwrap();
        assert_eq!(r.copied_upto(), Some(89));
        assert_eq!(r.covered_end(), Some(89));
        assert_eq!(r.finished_holding(90), None);
        let cut = r.finished_holding(89).unwrap();
        assert_eq!((cut.id, cut.start_offset, cut.end_offset), (id(3), 61, 89));
        assert!(cut.truncated && !r.finished_holding(60).unwrap().truncated);
        assert_eq!(
            r.deleting().map(|s| s.id).collect::<Vec<_>>(),
            [id(4)],
            "wholly above: deleted"
        );
        assert_eq!(r.divergence(&leader), None);
        // The leader copies its own records from 90 on.
        let mut own = seg(5, 90, 120, 2);
        own.segment_epochs = vec![(2, 90)];
        r.apply(&RemoteSegmentChange::CopyStarted(own), 2, 2)
            .unwrap();
        r.apply(&RemoteSegmentChange::CopyFinished(id(5)), 2, 2)
            .unwrap();
        assert_eq!(r.covered_end(), Some(120));
        assert_eq!(r.covered_epochs(), [(0, 0), (2, 90)]);
        assert!(r.apply(&RemoteSegmentChange::Truncated(121), 2, 2).is_err());
        assert!(r.apply(&RemoteSegmentChange::Truncated(-1), 2, 2).is_err());
        // The flag is written only when set, and older images read it as unset.
        let json = serde_json::to_value(&r).unwrap().to_string();
        assert_eq!(json.matches("\"truncated\":true").count(), 1, "{json}");
        assert!(!json.contains("\"truncated\":false"), "{json}");
        let back: RemoteLog =
            serde_json::from_str(&json.replace(",\"truncated\":true", "")).unwrap();
        assert!(!back.finished_holding(89).unwrap().truncated);
        // A truncation at 0 forgets every copy.
        r.apply(&RemoteSegmentChange::Truncated(0), 2, 2).unwrap();
        assert_eq!((r.finished().count(), r.copied_upto()), (0, None));
    }

    #[test]
    fn deleted_ids_are_remembered_up_to_a_bound() {
        let mut r = finished_log(&[(100, 1000)]);
        r.apply(&RemoteSegmentChange::DeleteStarted(id(1)), 1, 1)
            .unwrap();
        assert!(!r.was_deleted(id(1)), "not until its objects are gone");
        r.apply(&RemoteSegmentChange::DeleteFinished(id(1)), 1, 1)
            .unwrap();
        assert!(r.was_deleted(id(1)) && !r.is_registered(id(1)));
        for n in 0..MAX_DELETED_IDS as u128 {
            let s = seg(10 + n, 100 + n as i64, 100 + n as i64, 1);
            r.apply(&RemoteSegmentChange::CopyStarted(s), 1, 1).unwrap();
            r.apply(&RemoteSegmentChange::AbandonCopy(id(10 + n)), 1, 1)
                .unwrap();
            r.apply(&RemoteSegmentChange::DeleteFinished(id(10 + n)), 1, 1)
                .unwrap();
        }
        assert!(!r.was_deleted(id(1)), "the oldest id is forgotten");
        assert!(r.was_deleted(id(10 + MAX_DELETED_IDS as u128 - 1)));
        assert_eq!(r.deleted.len(), MAX_DELETED_IDS);
    }

    #[test]
    fn the_image_holds_a_bounded_number_of_segments() {
        let mut r = RemoteLog::default();
        for n in 0..MAX_SEGMENTS_PER_PARTITION as i64 {
            let s = seg(n as u128 + 1, n, n, 1);
            r.segments.insert(s.id, s);
        }
        assert_eq!(
            r.apply(
                &RemoteSegmentChange::CopyStarted(seg(u128::MAX, 1 << 40, 1 << 40, 1)),
                1,
                1
            ),
            Err(RemoteLogError::TooMany(MAX_SEGMENTS_PER_PARTITION))
        );
    }
}
