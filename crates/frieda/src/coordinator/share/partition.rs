//! One share-partition (KIP-932): the state a share group keeps for one topic partition, on that
//! partition's leader. Pure state, unit-tested in `partition_tests.rs`.
//!
//! The records between the share-partition start offset (SPSO, [`SharePartition::start_offset`])
//! and the end offset ([`SharePartition::end_offset`], one past the last record taken into the
//! window) are *in flight*, each in one of KIP-932's states:
//!
//! - **Available**: may be handed to a consumer (again);
//! - **Acquired**: handed to one member, locked for `group.share.record.lock.duration.ms`;
//! - **Acknowledged**: accepted by a consumer: done;
//! - **Archived**: rejected, delivered `group.share.delivery.count.limit` times, or not a
//!   record a consumer may see (a control record, an aborted transaction's record with
//!   `read_committed`): done.
//!
//! The SPSO moves past every leading Acknowledged or Archived record. The window holds at most
//! `group.share.partition.max.record.locks` records (Kafka's bound on in-flight records):
//! nothing new is acquired while it is full. A member's acknowledgement is refused with
//! INVALID_RECORD_STATE (121) for any record it does not hold (Kafka's `SharePartition.acknowledge`).

use kafka_protocol::error::ResponseError as E;
use std::collections::VecDeque;

/// A record's state (Kafka's `RecordState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    /// May be acquired.
    Available,
    /// Held by a member under a lock.
    Acquired,
    /// Accepted.
    Acknowledged,
    /// Rejected, over the delivery limit, or not deliverable.
    Archived,
}

/// An acknowledgement type (KIP-932's `AcknowledgeTypes` on the wire: 0 gap, 1 accept, 2 release,
/// 3 reject, 4 renew (KIP-1222, ShareFetch/ShareAcknowledge v2)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckType {
    /// No record at this offset (a control record or a compacted one): archived.
    Gap,
    /// Processed: acknowledged.
    Accept,
    /// Give it back: available again (archived once its delivery count reaches the limit).
    Release,
    /// Unprocessable: archived.
    Reject,
    /// Keep it: the lock starts again.
    Renew,
}

impl AckType {
    /// The wire value's type; `None` for an unknown value (INVALID_REQUEST).
    pub fn from_wire(v: i8) -> Option<AckType> {
        Some(match v {
            0 => AckType::Gap,
            1 => AckType::Accept,
            2 => AckType::Release,
            3 => AckType::Reject,
            4 => AckType::Renew,
            _ => return None,
        })
    }
}

/// Settings of one share-partition (the group's, Kafka's broker and group configs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartitionConfig {
    /// `group.share.record.lock.duration.ms` (default 30000): how long an acquired record stays
    /// with its member.
    pub lock_duration_ms: u64,
    /// `group.share.delivery.count.limit` (default 5): deliveries before a record is archived.
    pub delivery_count_limit: u16,
    /// `group.share.partition.max.record.locks` (default 2000): most records in flight.
    pub max_record_locks: usize,
}

impl Default for SharePartitionConfig {
    fn default() -> Self {
        SharePartitionConfig {
            lock_duration_ms: 30_000,
            delivery_count_limit: 5,
            max_record_locks: 2000,
        }
    }
}

#[derive(Debug, Clone)]
struct Slot {
    state: RecordState,
    delivery_count: u16,
    /// The member holding it (Acquired only).
    owner: Option<String>,
    /// When its lock expires, in ms (Acquired only).
    lock_deadline_ms: u64,
    /// An acknowledgement's outcome waiting for its durable write (Acquired only): the record
    /// stays with its member, neither expiring nor released, until the write succeeds
    /// ([`SharePartition::commit_pending`]) or fails ([`SharePartition::rollback_pending`]).
    pending: Option<(RecordState, Option<ArchiveReason>, u64)>,
}

/// Offsets acquired with one delivery count, `first..=last` (ShareFetch's `AcquiredRecords`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquiredRange {
    /// First offset.
    pub first: i64,
    /// Last offset (inclusive).
    pub last: i64,
    /// How many times these records have been delivered, this time included.
    pub delivery_count: u16,
}

/// A span of offsets a log read returned: `first..=last`, `deliverable` when a consumer may see
/// it (not a control batch, not an aborted transaction's batch under `read_committed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadSpan {
    /// First offset.
    pub first: i64,
    /// Last offset (inclusive).
    pub last: i64,
    /// Whether a consumer may get it.
    pub deliverable: bool,
}

/// Why records left the window archived, for the dead-letter queue and the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveReason {
    /// A consumer rejected it.
    Rejected,
    /// Its delivery count reached the limit.
    DeliveryLimit,
}

/// A share-partition's durable state (what `WriteShareGroupState` carries and the group
/// coordinator keeps): the start offset and the in-flight records as runs of one state and
/// delivery count. Acquired records are kept as Available (a lock does not outlive the leader).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareSnapshot {
    /// The share-partition start offset.
    pub start_offset: i64,
    /// Runs `(first, last, state, delivery count)`, `state` as Kafka's `RecordState` ids:
    /// 0 available, 2 acknowledged, 4 archived.
    pub batches: Vec<(i64, i64, i8, i16)>,
}

/// Kafka's `RecordState` id of a state as persisted (acquired persists as available).
fn persisted_id(s: RecordState) -> i8 {
    match s {
        RecordState::Available | RecordState::Acquired => 0,
        RecordState::Acknowledged => 2,
        RecordState::Archived => 4,
    }
}

/// One share-partition's in-flight state.
#[derive(Debug, Clone)]
pub struct SharePartition {
    start: i64,
    slots: VecDeque<Slot>,
    config: SharePartitionConfig,
    /// Records archived by rejection or the delivery limit since the last
    /// [`take_archived`](Self::take_archived): (offset, reason, delivery count).
    archived: Vec<(i64, ArchiveReason, u16)>,
    /// Bound of `archived`: the oldest are dropped beyond it.
    archived_bound: usize,
    /// Records archived here so far (rejected, at the delivery limit): a counter for the
    /// metrics endpoint.
    archived_total: u64,
    /// Generation of the last staged acknowledgement.
    stage_gen: u64,
}

impl SharePartition {
    /// A share-partition starting at `start_offset` (from `share.auto.offset.reset`, or its
    /// persisted start), nothing in flight.
    pub fn new(start_offset: i64, config: SharePartitionConfig) -> Self {
        SharePartition {
            start: start_offset.max(0),
            slots: VecDeque::new(),
            archived_bound: config.max_record_locks.max(1) * 2,
            config,
            archived: Vec::new(),
            archived_total: 0,
            stage_gen: 0,
        }
    }

    /// A share-partition restored from its durable state: the records of `snapshot`'s runs are
    /// back in flight, Available ones (acquired before) to be delivered again with their counts.
    pub fn restore(snapshot: &ShareSnapshot, config: SharePartitionConfig) -> Self {
        let mut p = SharePartition::new(snapshot.start_offset, config);
        for (first, last, state, count) in &snapshot.batches {
            let state = match state {
                2 => RecordState::Acknowledged,
                4 => RecordState::Archived,
                _ => RecordState::Available,
            };
            let from = (*first).max(p.end_offset());
            for _ in from..=*last {
                if p.slots.len() >= p.config.max_record_locks {
                    break;
                }
                p.slots.push_back(Slot {
                    state,
                    delivery_count: (*count).max(0) as u16,
                    owner: None,
                    lock_deadline_ms: 0,
                    pending: None,
                });
            }
        }
        // Trailing Available records with no delivery yet need not be remembered: drop them,
        // so a restored window ends at its last record with a history.
        while p
            .slots
            .back()
            .is_some_and(|s| s.state == RecordState::Available && s.delivery_count == 0)
        {
            p.slots.pop_back();
        }
        p.advance();
        p
    }

    /// The durable state now (see [`ShareSnapshot`]).
    pub fn snapshot(&self) -> ShareSnapshot {
        let mut batches: Vec<(i64, i64, i8, i16)> = Vec::new();
        for (i, s) in self.slots.iter().enumerate() {
            let o = self.start + i as i64;
            let (id, dc) = (
                persisted_id(s.pending.map_or(s.state, |p| p.0)),
                s.delivery_count as i16,
            );
            match batches.last_mut() {
                Some(b) if b.1 + 1 == o && b.2 == id && b.3 == dc => b.1 = o,
                _ => batches.push((o, o, id, dc)),
            }
        }
        ShareSnapshot {
            start_offset: self.start,
            batches,
        }
    }

    /// Records acknowledged or archived above the start offset (Kafka's delivery-complete
    /// count, for the lag: end offset − start offset − this).
    pub fn completed_in_flight(&self) -> i64 {
        self.slots
            .iter()
            .filter(|s| matches!(s.state, RecordState::Acknowledged | RecordState::Archived))
            .count() as i64
    }

    /// Records archived here so far (rejected or at the delivery limit; not control records).
    pub fn archived_total(&self) -> u64 {
        self.archived_total
    }

    /// The share-partition start offset (SPSO): every record below it is done.
    pub fn start_offset(&self) -> i64 {
        self.start
    }

    /// One past the last offset in flight: where new records are read from.
    pub fn end_offset(&self) -> i64 {
        self.start + self.slots.len() as i64
    }

    /// The settings.
    pub fn config(&self) -> &SharePartitionConfig {
        &self.config
    }

    /// Replaces the settings (a group config changed); records keep their locks.
    pub fn set_config(&mut self, config: SharePartitionConfig) {
        self.config = config;
    }

    fn slot(&self, offset: i64) -> Option<&Slot> {
        let i = offset.checked_sub(self.start)?;
        usize::try_from(i).ok().and_then(|i| self.slots.get(i))
    }

    /// The state of `offset`: `None` outside the window (below it: done; above: not read yet).
    pub fn state(&self, offset: i64) -> Option<(RecordState, u16)> {
        self.slot(offset).map(|s| (s.state, s.delivery_count))
    }

    /// Records in flight (window length).
    pub fn in_flight(&self) -> usize {
        self.slots.len()
    }

    /// Records currently acquired.
    pub fn acquired(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.state == RecordState::Acquired)
            .count()
    }

    /// Whether `member` holds Acquired records whose acknowledgement is not already being
    /// written: records only it can give back (or their locks' expiry).
    pub fn holds(&self, member: &str) -> bool {
        self.slots.iter().any(|s| {
            s.state == RecordState::Acquired
                && s.pending.is_none()
                && s.owner.as_deref() == Some(member)
        })
    }

    /// The first offset a fetch should read from to find something to acquire: the first
    /// Available record in the window, else the end when the window has room; `None` when
    /// nothing can be acquired now.
    pub fn next_fetch_offset(&self) -> Option<i64> {
        if let Some(i) = self
            .slots
            .iter()
            .position(|s| s.state == RecordState::Available)
        {
            return Some(self.start + i as i64);
        }
        (self.slots.len() < self.config.max_record_locks).then(|| self.end_offset())
    }

    /// Where a fetch that may take `max_records` records should read, and how far:
    /// `(first offset, offsets to read)`. The read starts at [`next_fetch_offset`]
    /// (Self::next_fetch_offset) and spans the window's slots up to the `max_records`-th
    /// Available one, then (if that is not enough) the records past the window's end it still
    /// has room for. `None` when nothing can be acquired now. Lets the caller size its log read
    /// to what it can take instead of a fixed budget.
    pub fn fetch_span(&self, max_records: usize) -> Option<(i64, u64)> {
        let from = self.next_fetch_offset()?;
        let want = max_records.max(1);
        let first = (from - self.start) as usize;
        let mut found = 0usize;
        for (i, s) in self.slots.iter().enumerate().skip(first) {
            if s.state == RecordState::Available {
                found += 1;
                if found == want {
                    return Some((from, (i - first + 1) as u64));
                }
            }
        }
        let room = self
            .config
            .max_record_locks
            .saturating_sub(self.slots.len());
        let past_end = room.min(want - found);
        let in_window = self.slots.len().saturating_sub(first);
        Some((from, (in_window + past_end).max(1) as u64))
    }

    /// The log moved its start past the SPSO (retention, DeleteRecords): records below
    /// `log_start` are gone, so the window starts there.
    pub fn on_log_start(&mut self, log_start: i64) {
        while self.start < log_start {
            if self.slots.pop_front().is_none() {
                self.start = log_start;
                break;
            }
            self.start += 1;
        }
    }

    /// Acquires for `member` what the log read `spans` (in offset order) returned, at most
    /// `max_records` deliverable records: Available records in the window, then new records past
    /// its end while it has room. Undeliverable records are archived. Returns the acquired
    /// ranges, merged where contiguous with one delivery count.
    pub fn acquire(
        &mut self,
        member: &str,
        spans: &[ReadSpan],
        max_records: usize,
        now_ms: u64,
    ) -> Vec<AcquiredRange> {
        let mut out: Vec<AcquiredRange> = Vec::new();
        let mut taken = 0usize;
        let deadline = now_ms + self.config.lock_duration_ms;
        'spans: for span in spans {
            let mut offset = span.first.max(self.start);
            while offset <= span.last {
                if taken >= max_records {
                    break 'spans;
                }
                let end = self.end_offset();
                if offset > end {
                    // A hole before this span: the log has no record there (compacted away, or
                    // a read that started inside a batch). Those offsets are done.
                    if self.slots.len() >= self.config.max_record_locks {
                        break 'spans;
                    }
                    self.slots.push_back(Slot {
                        state: RecordState::Archived,
                        delivery_count: 0,
                        owner: None,
                        lock_deadline_ms: 0,
                        pending: None,
                    });
                    continue;
                }
                if offset == end {
                    if self.slots.len() >= self.config.max_record_locks {
                        break 'spans;
                    }
                    self.slots.push_back(Slot {
                        state: RecordState::Available,
                        delivery_count: 0,
                        owner: None,
                        lock_deadline_ms: 0,
                        pending: None,
                    });
                }
                let i = (offset - self.start) as usize;
                let slot = &mut self.slots[i];
                if slot.state == RecordState::Available {
                    if span.deliverable {
                        slot.state = RecordState::Acquired;
                        slot.delivery_count = slot.delivery_count.saturating_add(1);
                        slot.owner = Some(member.to_string());
                        slot.lock_deadline_ms = deadline;
                        taken += 1;
                        let dc = slot.delivery_count;
                        match out.last_mut() {
                            Some(r) if r.last + 1 == offset && r.delivery_count == dc => {
                                r.last = offset
                            }
                            _ => out.push(AcquiredRange {
                                first: offset,
                                last: offset,
                                delivery_count: dc,
                            }),
                        }
                    } else {
                        slot.state = RecordState::Archived;
                    }
                }
                offset += 1;
            }
        }
        self.advance();
        out
    }

    /// Applies `member`'s acknowledgement of `first..=last`: one type for the whole range, or
    /// one per offset.
    ///
    /// Errors: INVALID_REQUEST (42) for a malformed batch (last < first, a type count that is
    /// neither 1 nor the range's length); INVALID_RECORD_STATE (121) when a record of the range
    /// is not acquired by `member` (nothing is applied then), as Kafka's `SharePartition`.
    pub fn acknowledge(
        &mut self,
        member: &str,
        first: i64,
        last: i64,
        types: &[AckType],
        now_ms: u64,
    ) -> Result<(), E> {
        self.stage_acknowledge(member, first, last, types, now_ms)?;
        self.commit_pending();
        Ok(())
    }

    /// [`acknowledge`](Self::acknowledge) in two steps: the outcome of each record is staged
    /// (the records stay acquired by `member`, see [`snapshot`](Self::snapshot), which already
    /// shows the outcome) until [`commit_pending`](Self::commit_pending) after the durable write,
    /// or [`rollback_pending`](Self::rollback_pending) if it failed (the records then stay
    /// acquired, and come back when their lock expires). A renewal applies at once. Same errors.
    pub fn stage_acknowledge(
        &mut self,
        member: &str,
        first: i64,
        last: i64,
        types: &[AckType],
        now_ms: u64,
    ) -> Result<(), E> {
        if last < first || types.is_empty() {
            return Err(E::InvalidRequest);
        }
        // i128: any two offsets off the wire, without overflow.
        let len = last as i128 - first as i128 + 1;
        if types.len() != 1 && types.len() as i128 != len {
            return Err(E::InvalidRequest);
        }
        let type_of = |o: i64| {
            if types.len() == 1 {
                types[0]
            } else {
                types[(o - first) as usize]
            }
        };
        // Below the window every record is done: only gaps may be named there.
        if first < self.start {
            let below = if types.len() == 1 {
                types
            } else {
                let n = (self.start as i128 - first as i128).min(types.len() as i128) as usize;
                &types[..n]
            };
            if below.iter().any(|t| *t != AckType::Gap) {
                return Err(E::InvalidRecordState);
            }
        }
        // In the window, each record must be `member`'s (the loop ends at the first that is
        // not, at the latest one past the window's end).
        for o in first.max(self.start)..=last {
            match self.slot(o) {
                Some(s)
                    if s.state == RecordState::Acquired
                        && s.pending.is_none()
                        && s.owner.as_deref() == Some(member) => {}
                _ => return Err(E::InvalidRecordState),
            }
        }
        let limit = self.config.delivery_count_limit;
        let deadline = now_ms + self.config.lock_duration_ms;
        self.stage_gen += 1;
        let gen = self.stage_gen;
        for o in first.max(self.start)..=last {
            let i = (o - self.start) as usize;
            let s = &mut self.slots[i];
            let (state, reason) = match type_of(o) {
                AckType::Accept => (RecordState::Acknowledged, None),
                AckType::Gap => (RecordState::Archived, None),
                AckType::Reject => (RecordState::Archived, Some(ArchiveReason::Rejected)),
                AckType::Release if s.delivery_count >= limit => {
                    (RecordState::Archived, Some(ArchiveReason::DeliveryLimit))
                }
                AckType::Release => (RecordState::Available, None),
                AckType::Renew => {
                    s.lock_deadline_ms = deadline;
                    continue;
                }
            };
            s.pending = Some((state, reason, gen));
        }
        Ok(())
    }

    /// The generation of the last staged acknowledgement: a write whose snapshot was taken at
    /// generation `g` makes every acknowledgement staged at or before `g` durable.
    pub fn stage_gen(&self) -> u64 {
        self.stage_gen
    }

    /// Every acknowledgement staged (the state after it is durable): their outcomes apply.
    pub fn commit_pending(&mut self) {
        self.commit_pending_upto(u64::MAX)
    }

    /// The acknowledgements staged at or before generation `upto` are durable (a snapshot
    /// taken at `upto` was written): their outcomes apply; later ones stay staged.
    pub fn commit_pending_upto(&mut self, upto: u64) {
        let start = self.start;
        for (i, s) in self.slots.iter_mut().enumerate() {
            let Some((target, reason, _)) = s.pending.filter(|p| p.2 <= upto) else {
                continue;
            };
            s.pending = None;
            if let Some(reason) = reason {
                self.archived_total += 1;
                push_bounded(
                    &mut self.archived,
                    self.archived_bound,
                    (start + i as i64, reason, s.delivery_count),
                );
            }
            s.state = target;
            s.owner = None;
        }
        self.advance();
    }

    /// The staged acknowledgements could not be written: the records stay acquired by their
    /// member (their locks run on).
    pub fn rollback_pending(&mut self) {
        self.rollback_pending_upto(u64::MAX)
    }

    /// The write of the snapshot taken at generation `upto` failed: the acknowledgements staged
    /// at or before it are undone (the records stay acquired); later ones stay staged.
    pub fn rollback_pending_upto(&mut self, upto: u64) {
        for s in self.slots.iter_mut() {
            if s.pending.is_some_and(|p| p.2 <= upto) {
                s.pending = None;
            }
        }
    }

    /// Gives back every record `member` holds (its share session closed, or it left the group):
    /// Available again, or Archived once at the delivery limit. Returns how many.
    pub fn release_member(&mut self, member: &str) -> usize {
        self.release_where(|s, _| s.owner.as_deref() == Some(member), 0)
    }

    /// Releases every record whose lock expired by `now_ms`. Returns how many.
    pub fn expire_locks(&mut self, now_ms: u64) -> usize {
        self.release_where(|s, now| s.lock_deadline_ms <= now, now_ms)
    }

    fn release_where(&mut self, pick: impl Fn(&Slot, u64) -> bool, now_ms: u64) -> usize {
        let limit = self.config.delivery_count_limit;
        let mut n = 0;
        for (i, s) in self.slots.iter_mut().enumerate() {
            if s.state == RecordState::Acquired && s.pending.is_none() && pick(s, now_ms) {
                s.owner = None;
                n += 1;
                if s.delivery_count >= limit {
                    s.state = RecordState::Archived;
                    self.archived_total += 1;
                    push_bounded(
                        &mut self.archived,
                        self.archived_bound,
                        (
                            self.start + i as i64,
                            ArchiveReason::DeliveryLimit,
                            s.delivery_count,
                        ),
                    );
                } else {
                    s.state = RecordState::Available;
                }
            }
        }
        if n > 0 {
            self.advance();
        }
        n
    }

    /// The earliest lock deadline in flight (ms), if any record is acquired.
    pub fn next_lock_deadline(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter(|s| s.state == RecordState::Acquired && s.pending.is_none())
            .map(|s| s.lock_deadline_ms)
            .min()
    }

    /// Moves the start to `offset` and drops everything in flight (AlterShareGroupOffsets,
    /// allowed only while the group has no members).
    pub fn reset(&mut self, offset: i64) {
        self.start = offset.max(0);
        self.slots.clear();
    }

    /// The records archived by rejection or the delivery limit since the last call (for the
    /// dead-letter queue), oldest first.
    pub fn take_archived(&mut self) -> Vec<(i64, ArchiveReason, u16)> {
        std::mem::take(&mut self.archived)
    }

    fn advance(&mut self) {
        while let Some(s) = self.slots.front() {
            if matches!(s.state, RecordState::Acknowledged | RecordState::Archived) {
                self.slots.pop_front();
                self.start += 1;
            } else {
                break;
            }
        }
        debug_assert!(
            self.slots.front().is_none_or(|s| !matches!(
                s.state,
                RecordState::Acknowledged | RecordState::Archived
            )),
            "the start offset stops at the first record in flight"
        );
    }
}

fn push_bounded<T>(v: &mut Vec<T>, bound: usize, x: T) {
    if v.len() >= bound {
        v.remove(0);
    }
    v.push(x);
}

#[cfg(test)]
#[path = "partition_tests.rs"]
mod tests;
