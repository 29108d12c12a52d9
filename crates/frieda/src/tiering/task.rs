//! The copy task of one tiered partition this broker leads, as a sans-IO state machine
//! (issue 57): [`CopyTask`] decides what to do next from what it is shown of the partition
//! ([`PartitionView`]: the remote log in this broker's metadata image, the closed local
//! segments, total retention) and hands each piece of I/O to its driver as a [`Step`]; the
//! driver does it (commits to the metadata quorum, object-store requests, segment reads) and
//! reports the outcome back. The broker's driver is [`super::copier`]; the deterministic
//! simulator (`crates/frieda-sim`) drives the same task against a simulated quorum and bucket.
//!
//! What a round does, in order of priority, each decided afresh on the image:
//! 1. a deletion begun earlier (`DELETE_STARTED`) is finished: objects, `DELETE_FINISHED`;
//! 2. a copy left `COPY_STARTED` is abandoned (`AbandonCopy`, then as 1);
//! 3. copies total retention (or a DeleteRecords log start) expired are deleted, oldest first;
//! 4. copies of a lineage the leader's log no longer has are cut off: where the finished
//!    copies' batches have other leader epochs than the leader's epoch cache gives (records
//!    lost to an unclean election or a power cut without fsync, then written anew), the
//!    remote tier is truncated there ([`RemoteSegmentChange::Truncated`]; found by the
//!    simulator, seed 1085), and the copies wholly above are deleted as in 1;
//! 5. the next closed segment past the copied end is copied: `COPY_STARTED` under a new id,
//!    the objects, `COPY_FINISHED`; one at a time, up to the last segment copyable when the
//!    round's first copy began (so a busy partition does not keep the driver forever);
//! 6. when the driver asks ([`CopyTask::request_sweep`]; the broker every 10 task
//!    intervals), before the next copy, the partition's objects are listed and those of
//!    copies the image says were deleted are deleted again: a PUT sent before its copy was
//!    abandoned, by a process that then died or was paused, can land after the deletion
//!    (found by the simulator and the tiered fault soak). Only ids the image lists as deleted
//!    are touched: an unknown id may be a newer leader's copy this image has not seen yet.
//!
//! **The rule that keeps a finished copy (issue 57, defect 1).** Decisions are made only on
//! an image that has applied every change this task committed ([`Step::AwaitImage`] until it
//! has): a copier that decided on an image which had not yet applied its own `COPY_FINISHED`
//! took its finished copy for an abandoned one and deleted it, and local retention then
//! deleted the local segment. With that rule, a `COPY_STARTED` entry in the image when the task
//! is idle is never this task's copy in flight: it is a failed copy of this task, a copy of an
//! earlier leader epoch, another broker's or an earlier run of this broker's, and it is
//! abandoned. A copy whose `COPY_FINISHED` races the abandonment (an earlier run's commit still
//! in flight at the controller) is safe too: the image refuses `AbandonCopy` of a finished copy
//! and `COPY_FINISHED` of an abandoned one (`frieda_meta::remote_log`).

use frieda_log::Epochs;
use frieda_meta::remote_log::{
    RemoteLog, RemoteSegment, RemoteSegmentChange, RemoteSegmentState, TotalRetention,
};
use frieda_meta::BrokerId;
use uuid::Uuid;

/// A copy found in the bucket by [`Step::ListObjects`]: its id and the offset its keys carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listed {
    /// The copy's id.
    pub id: Uuid,
    /// Its first offset (part of its keys).
    pub start_offset: i64,
}

/// A closed local segment, as the task sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalSegment {
    /// Its first offset (the file's base offset).
    pub base_offset: i64,
    /// Its last offset (inclusive).
    pub last_offset: i64,
    /// Bytes of its `.log`.
    pub size_bytes: u64,
    /// Largest record timestamp in it, ms.
    pub max_timestamp_ms: i64,
}

/// What the task reads of its partition each time it decides.
pub trait PartitionView {
    /// The partition's remote log in this broker's metadata image (`None`: it has none).
    fn remote_log(&self) -> Option<&RemoteLog>;
    /// The metadata offset that image has applied ([`frieda_meta::MetadataImage::offset`]).
    fn image_offset(&self) -> u64;
    /// The leader's epoch cache (KIP-101): which leader epoch wrote which local offsets, and
    /// the epoch it writes in now (its last entry).
    fn leader_epochs(&self) -> Epochs;
    /// The closed local segments holding an offset at or above `from`, each wholly below both
    /// the high watermark and the last stable offset (no uncommitted or undecided record goes
    /// to the bucket), ascending. The first may start below `from`.
    fn copyable(&self, from: i64) -> Vec<LocalSegment>;
    /// The topic's total retention now, given the highest offset copied (-1: none), or `None`
    /// when nothing bounds it.
    fn retention(&self, copied_upto: i64) -> Option<TotalRetention>;
}

/// The next piece of I/O, for the driver. After doing it the driver reports its outcome with
/// the method named, then polls again; polling without reporting gives the same step again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing is decided until this broker's image has applied this metadata offset (a change
    /// this task committed); poll again once it has.
    AwaitImage(u64),
    /// Read the leader epochs of this local segment: [`CopyTask::prepared`].
    Prepare(LocalSegment),
    /// Commit this change in the metadata quorum under the task's leader epoch:
    /// [`CopyTask::committed`].
    Commit(RemoteSegmentChange),
    /// Upload the objects of this copy from the local segment holding its offsets (the
    /// segment's whole file, whose base offset may lie below the copy's first offset):
    /// [`CopyTask::uploaded`].
    Upload(RemoteSegment),
    /// Delete every object of this copy (a missing one is no error):
    /// [`CopyTask::objects_deleted`].
    DeleteObjects(RemoteSegment),
    /// List the copies the partition's objects in the bucket belong to: [`CopyTask::listed`].
    ListObjects,
    /// The round is over.
    Idle,
}

/// Why a copy is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteReason {
    /// It never finished (a failure, an earlier leader or run).
    Abandoned,
    /// A deletion begun earlier (by any leader) is finished.
    Resumed,
    /// Total retention or the DeleteRecords log start expired it.
    Expired,
    /// Tiering was turned off with `remote.log.delete.on.disable=true` (KIP-950).
    Disabled,
}

/// Something a step completed, for the driver's logs and counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completed {
    /// A copy finished: readable remotely.
    Copied(RemoteSegment),
    /// A copy and its objects are gone.
    Deleted(RemoteSegment, DeleteReason),
    /// Every copy is gone and the image forgot the partition's remote log (KIP-950).
    Disabled,
    /// The remote tier was truncated to end below this offset: the copies there were of a
    /// lineage the leader's log no longer has.
    Truncated(i64),
    /// The objects of a deleted copy, found in the bucket again, are gone.
    OrphanDeleted(Uuid),
}

/// Why a round stopped; the driver backs off and starts another.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoundError {
    /// The image refused the change: this broker no longer leads in that epoch. The driver
    /// drops the task.
    #[error("no longer the leader in epoch {0}")]
    Deposed(i32),
    /// The controller did not answer, or refused the change.
    #[error("metadata change not committed: {0}")]
    Commit(String),
    /// The bucket failed.
    #[error("object store: {0}")]
    Store(String),
    /// The local segment could not be read.
    #[error("reading the segment: {0}")]
    Log(String),
}

/// How a commit failed, as the driver reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitError {
    /// The image refused it for a stale leader epoch.
    Deposed,
    /// Anything else (unavailable, timed out, refused): it may still commit later.
    Failed(String),
}

/// What the task is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Idle,
    /// Reading the segment's leader epochs; the copy will start at the offset given.
    Preparing(LocalSegment, i64),
    /// `COPY_STARTED` in flight.
    Starting(RemoteSegment),
    Uploading(RemoteSegment),
    /// `COPY_FINISHED` in flight.
    Finishing(RemoteSegment),
    /// `AbandonCopy` or `DELETE_STARTED` in flight.
    Marking(RemoteSegment, DeleteReason),
    Deleting(RemoteSegment, DeleteReason),
    /// `DELETE_FINISHED` in flight.
    Unregistering(RemoteSegment, DeleteReason),
    /// [`RemoteSegmentChange::Disabled`] in flight.
    Disabling,
    /// [`RemoteSegmentChange::Truncated`] in flight.
    Truncating(i64),
    /// Listing the partition's objects.
    Listing,
    /// Listed: orphans are picked on the next poll.
    Listed(Vec<Listed>),
    /// Deleting an orphan's objects; the others after it.
    Orphan(RemoteSegment, Vec<Listed>),
}

/// The copy task of one partition in one leader epoch of this broker's.
#[derive(Debug, Clone)]
pub struct CopyTask {
    broker: BrokerId,
    leader_epoch: i32,
    /// Tiering was turned off: delete everything instead of copying.
    delete_all: bool,
    /// The highest metadata offset of a change this task committed: no decision before the
    /// image has applied it.
    awaited: u64,
    /// The last offset this round copies up to (set when its first copy is decided).
    round_upto: Option<i64>,
    /// The driver asked for a sweep for orphans, not done yet.
    sweep_requested: bool,
    op: Op,
}

impl CopyTask {
    /// The task of a partition `broker` leads in `leader_epoch`.
    pub fn new(broker: BrokerId, leader_epoch: i32) -> Self {
        CopyTask {
            broker,
            leader_epoch,
            delete_all: false,
            awaited: 0,
            round_upto: None,
            sweep_requested: false,
            op: Op::Idle,
        }
    }

    /// The task of a partition whose tiering was turned off with
    /// `remote.log.delete.on.disable=true`: it deletes every copy, then commits
    /// [`RemoteSegmentChange::Disabled`].
    pub fn deleting_all(broker: BrokerId, leader_epoch: i32) -> Self {
        CopyTask {
            delete_all: true,
            ..Self::new(broker, leader_epoch)
        }
    }

    /// The leader epoch the task acts in (every commit carries it).
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }

    /// Whether this is a [`Self::deleting_all`] task.
    pub fn is_deleting_all(&self) -> bool {
        self.delete_all
    }

    /// Whether no step is outstanding.
    pub fn is_idle(&self) -> bool {
        self.op == Op::Idle
    }

    /// Starts a round: the copies it makes end at the last segment copyable when its first copy
    /// is decided.
    pub fn begin_round(&mut self) {
        self.round_upto = None;
    }

    /// Asks for a sweep of the partition's objects for orphans at the next decision (before
    /// the next copy; nothing to do unless the image remembers deleted copies). One LIST
    /// request per sweep: the driver asks every few minutes.
    pub fn request_sweep(&mut self) {
        self.sweep_requested = true;
    }

    /// The next step: the outstanding one, or a new decision on `view`.
    pub fn poll(&mut self, view: &dyn PartitionView) -> Step {
        if let Op::Listed(found) = &self.op {
            let log = view.remote_log();
            let mut orphans: Vec<Listed> = found
                .iter()
                .filter(|l| {
                    log.is_some_and(|log| log.was_deleted(l.id) && !log.is_registered(l.id))
                })
                .copied()
                .collect();
            return match orphans.pop() {
                Some(first) => {
                    let seg = self.orphan(first);
                    self.start(Op::Orphan(seg, orphans), view)
                }
                None => {
                    self.op = Op::Idle;
                    self.decide(view)
                }
            };
        }
        match &self.op {
            Op::Idle => self.decide(view),
            Op::Preparing(seg, _) => Step::Prepare(*seg),
            Op::Starting(s) => Step::Commit(RemoteSegmentChange::CopyStarted(s.clone())),
            Op::Uploading(s) => Step::Upload(s.clone()),
            Op::Finishing(s) => Step::Commit(RemoteSegmentChange::CopyFinished(s.id)),
            Op::Marking(s, DeleteReason::Abandoned) => {
                Step::Commit(RemoteSegmentChange::AbandonCopy(s.id))
            }
            Op::Marking(s, _) => Step::Commit(RemoteSegmentChange::DeleteStarted(s.id)),
            Op::Deleting(s, _) => Step::DeleteObjects(s.clone()),
            Op::Unregistering(s, _) => Step::Commit(RemoteSegmentChange::DeleteFinished(s.id)),
            Op::Disabling => Step::Commit(RemoteSegmentChange::Disabled),
            Op::Truncating(offset) => Step::Commit(RemoteSegmentChange::Truncated(*offset)),
            Op::Listing => Step::ListObjects,
            Op::Listed(_) => Step::Idle,
            Op::Orphan(s, _) => Step::DeleteObjects(s.clone()),
        }
    }

    /// The copy an orphan's objects belong to, for their keys.
    fn orphan(&self, l: Listed) -> RemoteSegment {
        RemoteSegment {
            id: l.id,
            start_offset: l.start_offset,
            end_offset: l.start_offset,
            max_timestamp_ms: -1,
            size_bytes: 0,
            broker: self.broker,
            leader_epoch: self.leader_epoch,
            segment_epochs: Vec::new(),
            truncated: false,
            state: RemoteSegmentState::DeleteStarted,
        }
    }

    fn decide(&mut self, view: &dyn PartitionView) -> Step {
        if view.image_offset() < self.awaited {
            return Step::AwaitImage(self.awaited);
        }
        let log = view.remote_log();
        if let Some(s) = log.and_then(|l| l.deleting().next()) {
            return self.start(Op::Deleting(s.clone(), DeleteReason::Resumed), view);
        }
        // Idle on an image holding all of this task's commits: no COPY_STARTED is in flight.
        if let Some(s) = log.and_then(|l| l.unfinished().next()) {
            return self.start(Op::Marking(s.clone(), DeleteReason::Abandoned), view);
        }
        if self.delete_all {
            let Some(log) = log.filter(|l| !l.is_empty()) else {
                return Step::Idle;
            };
            return match log.finished().next() {
                Some(s) => self.start(Op::Marking(s.clone(), DeleteReason::Disabled), view),
                None => self.start(Op::Disabling, view),
            };
        }
        // Copies of a lineage this leader's log no longer has are cut off before anything is
        // copied on top of them (checked over every finished copy, not only the newest: a copy
        // made on top of a diverged one agrees with the leader and hides nothing).
        if let Some(offset) = log.and_then(|l| l.divergence(&view.leader_epochs())) {
            return self.start(Op::Truncating(offset), view);
        }
        if std::mem::take(&mut self.sweep_requested) && log.is_some_and(RemoteLog::has_deleted) {
            return self.start(Op::Listing, view);
        }
        let copied_upto = log.and_then(RemoteLog::copied_upto);
        if let (Some(log), Some(r)) = (log, view.retention(copied_upto.unwrap_or(-1))) {
            if let Some(s) = log.expired(&r).first() {
                return self.start(Op::Marking((*s).clone(), DeleteReason::Expired), view);
            }
        }
        // Copies continue above the highest offset ever copied and at or above the log start
        // DeleteRecords set (Kafka's `max(copiedOffset + 1, logStartOffset)`).
        let from = copied_upto
            .map_or(0, |e| e + 1)
            .max(log.and_then(RemoteLog::log_start).unwrap_or(0));
        let copyable = view.copyable(from);
        let upto = *self
            .round_upto
            .get_or_insert_with(|| copyable.last().map_or(-1, |s| s.last_offset));
        match copyable.first() {
            Some(seg) if seg.last_offset <= upto => {
                let start = seg.base_offset.max(from);
                self.start(Op::Preparing(*seg, start), view)
            }
            _ => Step::Idle,
        }
    }

    fn start(&mut self, op: Op, view: &dyn PartitionView) -> Step {
        self.op = op;
        self.poll(view)
    }

    /// The outcome of [`Step::Prepare`]: the segment's leader epochs (`(epoch, first
    /// offset)`, ascending) and the id the new copy gets (fresh for every attempt).
    ///
    /// Errors: [`RoundError::Log`] when the read failed (the round stops).
    pub fn prepared(
        &mut self,
        epochs: Result<Vec<(i32, i64)>, String>,
        id: Uuid,
    ) -> Result<(), RoundError> {
        let Op::Preparing(seg, start) = self.op else {
            return Ok(());
        };
        let epochs = match epochs {
            Ok(e) => e,
            Err(e) => {
                self.op = Op::Idle;
                return Err(RoundError::Log(e));
            }
        };
        self.op = Op::Starting(RemoteSegment {
            id,
            start_offset: start,
            end_offset: seg.last_offset,
            max_timestamp_ms: seg.max_timestamp_ms,
            size_bytes: seg.size_bytes,
            broker: self.broker,
            leader_epoch: self.leader_epoch,
            segment_epochs: epochs_from(&epochs, start),
            truncated: false,
            state: RemoteSegmentState::CopyStarted,
        });
        Ok(())
    }

    /// The outcome of a [`Step::Commit`]: the metadata offset it was committed at (0 when the
    /// controller did not say), or why not.
    ///
    /// Errors: [`RoundError::Deposed`], [`RoundError::Commit`] (the round stops; a change whose
    /// outcome is unknown is found in the image by a later round).
    pub fn committed(
        &mut self,
        result: Result<u64, CommitError>,
    ) -> Result<Option<Completed>, RoundError> {
        let offset = match result {
            Ok(offset) => offset,
            Err(e) => {
                self.op = Op::Idle;
                return Err(match e {
                    CommitError::Deposed => RoundError::Deposed(self.leader_epoch),
                    CommitError::Failed(why) => RoundError::Commit(why),
                });
            }
        };
        self.awaited = self.awaited.max(offset);
        let (next, done) = match std::mem::replace(&mut self.op, Op::Idle) {
            Op::Starting(s) => (Op::Uploading(s), None),
            Op::Finishing(s) => (Op::Idle, Some(Completed::Copied(s))),
            Op::Marking(s, why) => (Op::Deleting(s, why), None),
            Op::Unregistering(s, why) => (Op::Idle, Some(Completed::Deleted(s, why))),
            Op::Disabling => (Op::Idle, Some(Completed::Disabled)),
            Op::Truncating(offset) => (Op::Idle, Some(Completed::Truncated(offset))),
            other => (other, None),
        };
        self.op = next;
        Ok(done)
    }

    /// The outcome of [`Step::Upload`].
    ///
    /// Errors: [`RoundError::Store`] (the round stops; the copy, still `COPY_STARTED`, is
    /// abandoned by the next round).
    pub fn uploaded(&mut self, result: Result<(), String>) -> Result<(), RoundError> {
        let Op::Uploading(s) = std::mem::replace(&mut self.op, Op::Idle) else {
            return Ok(());
        };
        match result {
            Ok(()) => {
                self.op = Op::Finishing(s);
                Ok(())
            }
            Err(e) => Err(RoundError::Store(e)),
        }
    }

    /// The outcome of [`Step::DeleteObjects`]; an orphan's deletion is completed here.
    ///
    /// Errors: [`RoundError::Store`] (the round stops; the deletion is resumed by a later one).
    pub fn objects_deleted(
        &mut self,
        result: Result<(), String>,
    ) -> Result<Option<Completed>, RoundError> {
        match std::mem::replace(&mut self.op, Op::Idle) {
            Op::Deleting(s, why) => match result {
                Ok(()) => {
                    self.op = Op::Unregistering(s, why);
                    Ok(None)
                }
                Err(e) => Err(RoundError::Store(e)),
            },
            Op::Orphan(s, mut rest) => match result {
                Ok(()) => {
                    if let Some(next) = rest.pop() {
                        self.op = Op::Orphan(self.orphan(next), rest);
                    }
                    Ok(Some(Completed::OrphanDeleted(s.id)))
                }
                Err(e) => Err(RoundError::Store(e)),
            },
            other => {
                self.op = other;
                Ok(None)
            }
        }
    }

    /// The outcome of [`Step::ListObjects`].
    ///
    /// Errors: [`RoundError::Store`] (the round stops; the next sweep lists again).
    pub fn listed(&mut self, result: Result<Vec<Listed>, String>) -> Result<(), RoundError> {
        if self.op != Op::Listing {
            return Ok(());
        }
        match result {
            Ok(found) => {
                self.op = Op::Listed(found);
                Ok(())
            }
            Err(e) => {
                self.op = Op::Idle;
                Err(RoundError::Store(e))
            }
        }
    }
}

/// A copy's leader epochs from its segment's: the ones reaching `start` or later, the first
/// moved up to `start` (the segment's file may begin below the copy's first offset).
fn epochs_from(epochs: &[(i32, i64)], start: i64) -> Vec<(i32, i64)> {
    let mut out: Vec<(i32, i64)> = Vec::with_capacity(epochs.len());
    for (i, &(epoch, first)) in epochs.iter().enumerate() {
        let next = epochs.get(i + 1).map_or(i64::MAX, |e| e.1);
        if next <= start {
            continue;
        }
        out.push((epoch, first.max(start)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A partition as a test drives it: the image's remote log at an offset, local segments.
    struct View {
        log: Option<RemoteLog>,
        offset: u64,
        segments: Vec<LocalSegment>,
        retention: Option<TotalRetention>,
        /// The leader's epoch cache (empty: agrees with every copy).
        epochs: Epochs,
    }

    impl PartitionView for View {
        fn remote_log(&self) -> Option<&RemoteLog> {
            self.log.as_ref()
        }
        fn image_offset(&self) -> u64 {
            self.offset
        }
        fn leader_epochs(&self) -> Epochs {
            self.epochs.clone()
        }
        fn copyable(&self, from: i64) -> Vec<LocalSegment> {
            self.segments
                .iter()
                .filter(|s| s.last_offset >= from)
                .copied()
                .collect()
        }
        fn retention(&self, _copied_upto: i64) -> Option<TotalRetention> {
            self.retention
        }
    }

    fn seg(base: i64, last: i64) -> LocalSegment {
        LocalSegment {
            base_offset: base,
            last_offset: last,
            size_bytes: 100,
            max_timestamp_ms: 1_000 + last,
        }
    }

    /// The controller: applies a change to its own remote log and answers with the offset.
    struct Controller {
        log: RemoteLog,
        offset: u64,
        epoch: i32,
    }

    impl Controller {
        fn commit(&mut self, change: &RemoteSegmentChange) -> Result<u64, CommitError> {
            self.log
                .apply(change, self.epoch, self.epoch)
                .map_err(|e| CommitError::Failed(e.to_string()))?;
            self.offset += 1;
            Ok(self.offset)
        }
    }

    /// Runs the task until it idles or awaits the image, answering every step at once; the
    /// view's image is not updated (it lags the controller by everything committed here).
    fn run(task: &mut CopyTask, view: &View, c: &mut Controller) -> (Step, Vec<Completed>) {
        let mut done = Vec::new();
        loop {
            let step = task.poll(view);
            match &step {
                Step::Idle | Step::AwaitImage(_) => return (step, done),
                Step::Prepare(s) => {
                    // A fresh id for every attempt: from the controller's offset.
                    let id = Uuid::from_u128(1_000 + u128::from(c.offset));
                    let epochs = if view.epochs.entries().is_empty() {
                        vec![(7, s.base_offset)]
                    } else {
                        view.epochs.pairs()
                    };
                    task.prepared(Ok(epochs), id).unwrap();
                }
                Step::Commit(change) => {
                    let r = c.commit(change);
                    if let Some(d) = task.committed(r).unwrap() {
                        done.push(d);
                    }
                }
                Step::Upload(_) => task.uploaded(Ok(())).unwrap(),
                Step::DeleteObjects(_) => {
                    if let Some(d) = task.objects_deleted(Ok(())).unwrap() {
                        done.push(d);
                    }
                }
                Step::ListObjects => task.listed(Ok(Vec::new())).unwrap(),
            }
        }
    }

    #[test]
    fn a_finished_copy_is_not_taken_for_an_abandoned_one_on_a_lagging_image() {
        // Issue 57, defect 1: the copy of [0, 9] finished (committed at offsets 1 and 2), but
        // this broker's image has applied only offset 1 and still shows it COPY_STARTED.
        let mut c = Controller {
            log: RemoteLog::default(),
            offset: 0,
            epoch: 7,
        };
        let mut task = CopyTask::new(1, 7);
        let mut view = View {
            log: None,
            offset: 0,
            segments: vec![seg(0, 9)],
            retention: None,
            epochs: Epochs::new(),
        };
        let (step, done) = run(&mut task, &view, &mut c);
        assert_eq!(step, Step::AwaitImage(2));
        assert!(
            matches!(&done[..], [Completed::Copied(s)] if s.start_offset == 0 && s.end_offset == 9)
        );
        // The image at offset 1: the copy looks unfinished. The task waits; it abandons nothing.
        let mut lagging = c.log.clone();
        let id = lagging.finished().next().unwrap().id;
        let mut started = lagging.finished().next().unwrap().clone();
        started.state = RemoteSegmentState::CopyStarted;
        lagging = RemoteLog::default();
        lagging
            .apply(&RemoteSegmentChange::CopyStarted(started), 7, 7)
            .unwrap();
        view.log = Some(lagging);
        view.offset = 1;
        task.begin_round();
        assert_eq!(task.poll(&view), Step::AwaitImage(2));
        // Once the image has it, nothing is left to do.
        view.log = Some(c.log.clone());
        view.offset = 2;
        assert_eq!(task.poll(&view), Step::Idle);
        assert_eq!(c.log.finished().next().map(|s| s.id), Some(id));
    }

    #[test]
    fn an_unfinished_copy_in_a_current_image_is_abandoned_and_deleted() {
        let mut c = Controller {
            log: RemoteLog::default(),
            offset: 0,
            epoch: 7,
        };
        // An earlier run's (or leader's) copy of [0, 9], never finished.
        let left = RemoteSegment {
            id: Uuid::from_u128(1),
            start_offset: 0,
            end_offset: 9,
            max_timestamp_ms: 0,
            size_bytes: 100,
            broker: 2,
            leader_epoch: 7,
            segment_epochs: vec![(7, 0)],
            truncated: false,
            state: RemoteSegmentState::CopyStarted,
        };
        c.commit(&RemoteSegmentChange::CopyStarted(left.clone()))
            .unwrap();
        let view = View {
            log: Some(c.log.clone()),
            offset: c.offset,
            segments: vec![seg(0, 9), seg(10, 19)],
            retention: None,
            epochs: Epochs::new(),
        };
        let mut task = CopyTask::new(1, 7);
        assert_eq!(
            task.poll(&view),
            Step::Commit(RemoteSegmentChange::AbandonCopy(left.id))
        );
        let (_, done) = run(&mut task, &view, &mut c);
        assert_eq!(done, [Completed::Deleted(left, DeleteReason::Abandoned)]);
        assert_eq!(c.log.len(), 0);
    }

    #[test]
    fn a_failed_upload_stops_the_round_and_the_next_abandons_the_copy() {
        let mut c = Controller {
            log: RemoteLog::default(),
            offset: 0,
            epoch: 3,
        };
        let mut task = CopyTask::new(1, 3);
        let mut view = View {
            log: None,
            offset: 0,
            segments: vec![seg(0, 9)],
            retention: None,
            epochs: Epochs::new(),
        };
        assert!(matches!(task.poll(&view), Step::Prepare(_)));
        task.prepared(Ok(vec![(3, 0)]), Uuid::from_u128(9)).unwrap();
        let Step::Commit(change) = task.poll(&view) else {
            panic!("COPY_STARTED first")
        };
        task.committed(c.commit(&change)).unwrap();
        assert!(matches!(task.poll(&view), Step::Upload(_)));
        assert_eq!(
            task.uploaded(Err("503 SlowDown".into())),
            Err(RoundError::Store("503 SlowDown".into()))
        );
        assert!(task.is_idle());
        view.log = Some(c.log.clone());
        view.offset = c.offset;
        task.begin_round();
        assert_eq!(
            task.poll(&view),
            Step::Commit(RemoteSegmentChange::AbandonCopy(Uuid::from_u128(9)))
        );
    }

    #[test]
    fn a_segment_straddling_the_copied_end_is_copied_from_the_offset_after_it() {
        // An earlier leader copied [0, 14]; this leader's segments are [10, 19] and [20, 29].
        let mut c = Controller {
            log: RemoteLog::default(),
            offset: 0,
            epoch: 4,
        };
        let mut first = RemoteSegment {
            id: Uuid::from_u128(1),
            start_offset: 0,
            end_offset: 14,
            max_timestamp_ms: 0,
            size_bytes: 100,
            broker: 2,
            leader_epoch: 4,
            segment_epochs: vec![(2, 0)],
            truncated: false,
            state: RemoteSegmentState::CopyStarted,
        };
        c.commit(&RemoteSegmentChange::CopyStarted(first.clone()))
            .unwrap();
        c.commit(&RemoteSegmentChange::CopyFinished(first.id))
            .unwrap();
        first.state = RemoteSegmentState::CopyFinished;
        let view = View {
            log: Some(c.log.clone()),
            offset: c.offset,
            segments: vec![seg(10, 19), seg(20, 29)],
            retention: None,
            epochs: Epochs::new(),
        };
        let mut task = CopyTask::new(1, 4);
        let mut done = Vec::new();
        let mut v = view;
        loop {
            let (step, d) = run(&mut task, &v, &mut c);
            done.extend(d);
            if step == Step::Idle {
                break;
            }
            v.log = Some(c.log.clone());
            v.offset = c.offset;
        }
        let copied: Vec<(i64, i64)> = done
            .iter()
            .map(|d| match d {
                Completed::Copied(s) => (s.start_offset, s.end_offset),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(copied, [(15, 19), (20, 29)]);
        assert_eq!(c.log.covered_end(), Some(29), "no gap between the copies");
    }

    #[test]
    fn expired_copies_go_oldest_first_before_new_copies() {
        let mut c = Controller {
            log: RemoteLog::default(),
            offset: 0,
            epoch: 1,
        };
        let mut task = CopyTask::new(1, 1);
        let mut view = View {
            log: None,
            offset: 0,
            segments: vec![seg(0, 9), seg(10, 19)],
            retention: None,
            epochs: Epochs::new(),
        };
        loop {
            let (step, _) = run(&mut task, &view, &mut c);
            view.log = Some(c.log.clone());
            view.offset = c.offset;
            if step == Step::Idle {
                break;
            }
        }
        assert_eq!(c.log.covered_end(), Some(19));
        // Now everything at or before 1,009 ms expires: the first copy (max timestamp 1,009).
        view.segments.push(seg(20, 29));
        view.retention = Some(TotalRetention {
            now_ms: 2_009,
            retention_ms: 1_000,
            retention_bytes: -1,
            local_only_bytes: 0,
        });
        task.begin_round();
        let first = c.log.finished().next().unwrap().id;
        assert_eq!(
            task.poll(&view),
            Step::Commit(RemoteSegmentChange::DeleteStarted(first))
        );
    }

    #[test]
    fn turning_tiering_off_deletes_every_copy_then_forgets_the_remote_log() {
        let mut c = Controller {
            log: RemoteLog::default(),
            offset: 0,
            epoch: 1,
        };
        let mut copy = CopyTask::new(1, 1);
        let mut view = View {
            log: None,
            offset: 0,
            segments: vec![seg(0, 9), seg(10, 19)],
            retention: None,
            epochs: Epochs::new(),
        };
        let mut task = &mut copy;
        let mut off = CopyTask::deleting_all(1, 1);
        let mut completed = Vec::new();
        for phase in 0..2 {
            loop {
                let (step, d) = run(task, &view, &mut c);
                completed.extend(d);
                view.log = Some(c.log.clone()).filter(|l| !l.is_empty());
                view.offset = c.offset;
                if step == Step::Idle {
                    break;
                }
            }
            if phase == 0 {
                assert_eq!(c.log.covered_end(), Some(19));
                task = &mut off;
            }
        }
        assert!(c.log.is_empty(), "{:?}", c.log);
        assert_eq!(completed.last(), Some(&Completed::Disabled));
        let deleted = completed
            .iter()
            .filter(|d| matches!(d, Completed::Deleted(_, DeleteReason::Disabled)))
            .count();
        assert_eq!(deleted, 2);
    }

    #[test]
    fn a_sweep_deletes_objects_of_deleted_copies_and_leaves_unknown_ones() {
        let mut c = Controller {
            log: RemoteLog::default(),
            offset: 0,
            epoch: 5,
        };
        // A copy abandoned and deleted: a late PUT of its put objects back in the bucket.
        let gone = RemoteSegment {
            id: Uuid::from_u128(1),
            start_offset: 0,
            end_offset: 9,
            max_timestamp_ms: 0,
            size_bytes: 100,
            broker: 2,
            leader_epoch: 4,
            segment_epochs: vec![(4, 0)],
            truncated: false,
            state: RemoteSegmentState::CopyStarted,
        };
        c.log
            .apply(&RemoteSegmentChange::CopyStarted(gone.clone()), 4, 4)
            .unwrap();
        c.log
            .apply(&RemoteSegmentChange::AbandonCopy(gone.id), 5, 5)
            .unwrap();
        c.log
            .apply(&RemoteSegmentChange::DeleteFinished(gone.id), 5, 5)
            .unwrap();
        let view = View {
            log: Some(c.log.clone()),
            offset: 0,
            segments: vec![],
            retention: None,
            epochs: Epochs::new(),
        };
        let mut task = CopyTask::new(1, 5);
        task.begin_round();
        assert_eq!(task.poll(&view), Step::Idle, "no sweep unless asked");
        task.request_sweep();
        assert_eq!(task.poll(&view), Step::ListObjects);
        let unknown = Listed {
            id: Uuid::from_u128(77),
            start_offset: 10,
        };
        let late = Listed {
            id: gone.id,
            start_offset: 0,
        };
        task.listed(Ok(vec![unknown, late])).unwrap();
        let Step::DeleteObjects(s) = task.poll(&view) else {
            panic!("the late objects are deleted")
        };
        assert_eq!((s.id, s.start_offset), (gone.id, 0));
        assert_eq!(
            task.objects_deleted(Ok(())).unwrap(),
            Some(Completed::OrphanDeleted(gone.id))
        );
        assert_eq!(task.poll(&view), Step::Idle, "the unknown id is left alone");
        task.begin_round();
        assert_eq!(task.poll(&view), Step::Idle, "one sweep per request");
    }

    #[test]
    fn a_copy_keeps_only_the_epochs_from_its_first_offset() {
        assert_eq!(
            epochs_from(&[(1, 0), (2, 5), (3, 12)], 7),
            [(2, 7), (3, 12)]
        );
        assert_eq!(epochs_from(&[(1, 0), (2, 7)], 7), [(2, 7)]);
        assert_eq!(epochs_from(&[(4, 3)], 0), [(4, 3)]);
    }

    #[test]
    fn copies_of_a_lineage_the_leader_no_longer_has_are_cut_off_and_copied_again() {
        // Simulator seed 1085: epoch 7's leader copied [0, 9] and [10, 19]; the new leader of
        // epoch 9 lost 15..19 (a power cut without fsync) and wrote its own records from 15.
        let mut c = Controller {
            log: RemoteLog::default(),
            offset: 0,
            epoch: 7,
        };
        let mut old = CopyTask::new(1, 7);
        let mut view = View {
            log: None,
            offset: 0,
            segments: vec![seg(0, 9), seg(10, 19)],
            retention: None,
            epochs: Epochs::new(),
        };
        while run(&mut old, &view, &mut c).0 != Step::Idle {
            view.log = Some(c.log.clone());
            view.offset = c.offset;
        }
        assert_eq!(c.log.covered_end(), Some(19));
        c.epoch = 9;
        let mut epochs = Epochs::new();
        epochs.assign(7, 0);
        epochs.assign(9, 15);
        view = View {
            log: Some(c.log.clone()),
            offset: c.offset,
            segments: vec![seg(0, 9), seg(10, 14), seg(15, 29)],
            retention: None,
            epochs,
        };
        let mut task = CopyTask::new(2, 9);
        assert_eq!(
            task.poll(&view),
            Step::Commit(RemoteSegmentChange::Truncated(15))
        );
        let (step, done) = run(&mut task, &view, &mut c);
        assert_eq!(done, [Completed::Truncated(15)]);
        assert!(matches!(step, Step::AwaitImage(_)));
        assert_eq!(c.log.covered_end(), Some(14));
        // On the image that has it: the leader copies its own records from 15 on.
        view.log = Some(c.log.clone());
        view.offset = c.offset;
        task.begin_round();
        let (_, done) = run(&mut task, &view, &mut c);
        assert!(
            matches!(&done[..], [Completed::Copied(s)] if (s.start_offset, s.end_offset) == (15, 29)),
            "{done:?}"
        );
        assert_eq!(c.log.covered_end(), Some(29));
        view.log = Some(c.log.clone());
        view.offset = c.offset;
        assert_eq!(c.log.divergence(&view.epochs), None);
    }
}
