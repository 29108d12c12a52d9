//! The offsets log's state machine, sans-IO: committed offsets, group metadata, share-partition
//! states and pending transactional offsets, changed only by records of the log applied in log
//! order. [`super::OffsetStore`] is its I/O shell (appends, replication waits, channels);
//! the simulator (`crates/frieda-sim`, `groups`) drives the same state machine with simulated
//! logs, so what it checks (an offset commit answered OK survives every failover an `acks=all`
//! record survives) is checked on this code.
//!
//! Two ways in:
//! - [`OffsetsState::replay`]: a record read back from the log while a coordinator loads
//!   (every record, replicated or not: the loading leader's log is the partition's history);
//! - [`OffsetsState::land`]: a write this coordinator appended, reported once its replication
//!   wait ended. Writes are applied in offset order; one reported out of order waits in
//!   `landed` (bounded by [`MAX_LANDED_WRITES`]) until the writes before it are reported. A
//!   write that did not replicate as asked is not applied (Kafka's
//!   `GroupMetadataManager.failPendingOffsetWrite`) but its waiter is answered with the error.
//!
//! Each write carries a waiter `W` (the store's channel, the simulator's request id); `land`
//! hands back the waiters it answered with their outcome, in log order.

use super::codec::{self, GroupValue, LogKey, OffsetValue};
use super::TopicPartition;
use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use std::collections::{BTreeMap, HashMap};

/// Writes in the log waiting for an earlier write to be applied first. Writes land in offset
/// order except for a moment, so this is never approached; past it the store logs an error and
/// applies what it has (a gap means an earlier write's outcome was lost, e.g. the log went
/// offline after it was appended).
pub const MAX_LANDED_WRITES: usize = 10_000;

/// Producers with pending transactional offsets per store; past it (a coordinator bug or an
/// attack) new pending offsets are refused by the broker's transaction checks first.
pub const MAX_PENDING_PRODUCERS: usize = 100_000;

/// The start offset of a share-partition state record that only raises the stored leader
/// epoch ([`OffsetsState::apply_share_state`]; Kafka's `ShareUpdate` record with start offset
/// -1 keeps the stored start as well).
pub const LEADER_EPOCH_ONLY: i64 = -1;

/// Whether a share-partition state written with `value`'s epochs may replace `stored`
/// (WriteShareGroupState's check, made when a write is appended and again where the log
/// orders it, [`OffsetsState::apply_share_state`]).
///
/// Errors: FENCED_STATE_EPOCH (124) for an older state epoch (the offsets were altered since),
/// FENCED_LEADER_EPOCH (74) for an older leader epoch.
pub fn check_share_epochs(
    value: &codec::ShareStateValue,
    stored: Option<&codec::ShareStateValue>,
) -> Result<(), ResponseError> {
    let Some(old) = stored else {
        return Ok(());
    };
    if value.state_epoch < old.state_epoch {
        return Err(ResponseError::FencedStateEpoch);
    }
    if value.leader_epoch < old.leader_epoch {
        return Err(ResponseError::FencedLeaderEpoch);
    }
    Ok(())
}

/// Kafka's `RecordState` ids of persisted share-partition runs that are final: ACKNOWLEDGED (2)
/// and ARCHIVED (4); AVAILABLE (0) is not.
fn share_run_is_final(state: i8) -> bool {
    matches!(state, 2 | 4)
}

/// Joins two share-partition states of one state epoch: the larger start offset, and for each
/// record the state further along (ACKNOWLEDGED or ARCHIVED over AVAILABLE) with the larger
/// delivery count, as runs `(first, last, state, delivery count)` from the start offset,
/// ascending. Within a state epoch a share-partition's start offset and its records' states and
/// counts only move forward, so the join of every write is the newest state whatever order the
/// writes land in: a late or repeated write of the same leader (a retry after a timeout, or a
/// duplicate that crossed a newer write) cannot take a record's ACCEPT back. Found by the
/// simulator (share, seed 2396 of 0-3000 with the marker fix of seeds 857 and 3293): write
/// 2365 (start 1188) landed again after 2370 (start 1203, 1224 accepted), the next leader read
/// start 1188 and delivered 1224 again.
pub fn join_share_states(
    old: &codec::ShareStateValue,
    new: &codec::ShareStateValue,
) -> codec::ShareStateValue {
    type Run = (i64, i64, i8, i16);
    let start = old.start_offset.max(new.start_offset);
    let sorted = |runs: &[Run]| {
        let mut v: Vec<Run> = runs.iter().copied().filter(|r| r.1 >= start).collect();
        v.sort_unstable_by_key(|r| r.0);
        v
    };
    let (a, b) = (sorted(&old.batches), sorted(&new.batches));
    let mut cuts: Vec<i64> = Vec::with_capacity(2 * (a.len() + b.len()));
    for r in a.iter().chain(&b) {
        cuts.push(r.0.max(start));
        cuts.push(r.1 + 1);
    }
    cuts.sort_unstable();
    cuts.dedup();
    let at = |runs: &[Run], o: i64| -> Option<(i8, i16)> {
        let i = runs.partition_point(|r| r.1 < o);
        runs.get(i).filter(|r| r.0 <= o).map(|r| (r.2, r.3))
    };
    let mut batches: Vec<Run> = Vec::new();
    for w in cuts.windows(2) {
        let (first, last) = (w[0], w[1] - 1);
        let joined = match (at(&a, first), at(&b, first)) {
            (None, None) => continue,
            (Some(x), None) | (None, Some(x)) => x,
            (Some((s1, c1)), Some((s2, c2))) => {
                let state = match (share_run_is_final(s1), share_run_is_final(s2)) {
                    (true, true) => s1.max(s2),
                    (true, false) => s1,
                    (false, true) => s2,
                    (false, false) => s1.max(s2),
                };
                (state, c1.max(c2))
            }
        };
        match batches.last_mut() {
            Some(r) if r.1 + 1 == first && (r.2, r.3) == joined => r.1 = last,
            _ => batches.push((first, last, joined.0, joined.1)),
        }
    }
    codec::ShareStateValue {
        state_epoch: new.state_epoch,
        leader_epoch: old.leader_epoch.max(new.leader_epoch),
        start_offset: start,
        batches,
    }
}

/// Something in the log waiting to be applied (in log order).
pub enum Landed<W> {
    /// A write: its records, its waiter and what to tell it (an error when the write is in the
    /// log but not replicated as asked: then it is not applied); `txn`: the producer of a
    /// transactional commit (pending until its marker).
    Write {
        /// (key, value) records; a `None` value is a tombstone.
        records: Vec<(LogKey, Option<Bytes>)>,
        /// Who waits for the outcome.
        waiter: W,
        /// `Err` when the write did not reach the in-sync replicas as asked.
        replicated: Result<(), ResponseError>,
        /// The transactional producer id of a TxnOffsetCommit.
        txn: Option<i64>,
    },
    /// A transaction marker of `producer_id` (one offset); `replicated`: whether it reached
    /// the in-sync replicas (if not, the producer's offsets stay pending: the transaction
    /// coordinator writes the marker again).
    Marker {
        /// Producer id.
        producer_id: i64,
        /// COMMIT (true) or ABORT.
        commit: bool,
        /// Whether the marker reached the in-sync replicas.
        replicated: bool,
    },
}

/// A transactional offset commit waiting for its transaction's outcome.
#[derive(Debug, Clone)]
struct PendingOffset {
    group: String,
    tp: TopicPartition,
    value: OffsetValue,
    /// Where it is in the log.
    at: i64,
}

/// The state of one offsets partition; `W`: what waits for a write's outcome.
pub struct OffsetsState<W> {
    pub(super) offsets: HashMap<String, BTreeMap<TopicPartition, OffsetValue>>,
    pub(super) groups: HashMap<String, GroupValue>,
    /// Writes in the log, by base offset, not yet applied because an earlier one is pending,
    /// with whoever waits for them (answered once applied).
    landed: BTreeMap<i64, (usize, Landed<W>)>,
    /// Offset of the next write to apply (the log end offset when everything is applied).
    next_apply: i64,
    /// Transactional offsets by producer id, until the transaction's marker.
    pending_txn: HashMap<i64, Vec<PendingOffset>>,
    /// Where the record of each group's partition's committed offset (plain or
    /// transactional) is in the log: a committed transaction's offset replaces it only if its
    /// own record is later (Kafka's `OffsetMetadataManager.replayEndTransactionMarker`,
    /// `recordOffset > existing.recordOffset`). Found by the simulator (groups, seed 21): two
    /// transactions committed offsets of one partition at 388 and 392 and their markers landed
    /// in the other order; the offset went back from 392's to 388's.
    record_at: HashMap<(String, TopicPartition), i64>,
    /// Share-partition states (KIP-932) by (group, topic id, partition).
    pub(super) shares: HashMap<(String, uuid::Uuid, i32), codec::ShareStateValue>,
}

impl<W> Default for OffsetsState<W> {
    fn default() -> Self {
        OffsetsState {
            offsets: HashMap::new(),
            groups: HashMap::new(),
            landed: BTreeMap::new(),
            next_apply: 0,
            pending_txn: HashMap::new(),
            record_at: HashMap::new(),
            shares: HashMap::new(),
        }
    }
}

/// One record read back from the offsets log.
#[derive(Debug, Clone, Copy)]
pub struct LogRecord<'a> {
    /// Its offset.
    pub offset: i64,
    /// The batch's producer id (-1 when none).
    pub producer_id: i64,
    /// In a transactional batch.
    pub transactional: bool,
    /// A control record (a transaction marker: key = version int16, type int16, 1 = commit).
    pub control: bool,
    /// The record key.
    pub key: Option<&'a [u8]>,
    /// The record value (`None`: a tombstone).
    pub value: Option<&'a [u8]>,
}

impl<W> OffsetsState<W> {
    /// Applies one record read back from the log while loading. Returns false for a record
    /// whose key this version does not know (skipped, as Kafka skips unknown record types).
    pub fn replay(&mut self, r: LogRecord<'_>) -> bool {
        if r.control {
            let commit = r.key.is_some_and(|k| k.get(2..4) == Some(&[0, 1]));
            self.complete_txn(r.producer_id, commit);
            return true;
        }
        match r.key.and_then(codec::decode_key) {
            Some(k) if r.transactional => self.add_pending(r.producer_id, k, r.value, r.offset),
            Some(k) => {
                // A fenced share-state record is skipped on replay as when it landed.
                let _ = self.apply(k, r.value, r.offset);
            }
            None => return false,
        }
        true
    }

    /// The replay read the log up to `end` (exclusive): writes appended from here on are
    /// applied through [`land`](Self::land).
    pub fn replayed_upto(&mut self, end: i64) {
        self.next_apply = end;
    }

    /// An entry appended at `offset`, taking `count` offsets: applies it and every landed entry
    /// after it, in log order, as far as they are contiguous. Returns the waiters answered, in
    /// log order, with their outcome (`Ok` for a write applied).
    pub fn land(
        &mut self,
        offset: i64,
        count: usize,
        entry: Landed<W>,
    ) -> Vec<(W, Result<(), ResponseError>)> {
        let mut answered = Vec::new();
        if offset < self.next_apply {
            // Already applied by the replay (a marker reported after the store opened): kept,
            // it would sit below `next_apply` for ever.
            if let Landed::Write {
                waiter, replicated, ..
            } = entry
            {
                answered.push((waiter, replicated));
            }
            return answered;
        }
        self.landed.insert(offset, (count, entry));
        if self.landed.len() > MAX_LANDED_WRITES {
            tracing::error!(
                next = self.next_apply,
                "offsets log writes are missing an earlier outcome; applying in offset order"
            );
            if let Some((&first, _)) = self.landed.first_key_value() {
                self.next_apply = first;
            }
        }
        while let Some(e) = self.landed.first_entry() {
            if *e.key() != self.next_apply {
                break;
            }
            let at = *e.key();
            let (count, entry) = e.remove();
            self.next_apply += count as i64;
            match entry {
                Landed::Write {
                    records,
                    waiter,
                    replicated,
                    txn,
                } => {
                    // A write that did not replicate as asked is not applied (Kafka's
                    // `failPendingOffsetWrite` / `failPendingTxnOffsetCommit`): its committer
                    // gets the error, OffsetFetch keeps serving what was there.
                    let mut outcome = replicated;
                    if outcome.is_ok() {
                        for (k, v) in records {
                            match txn {
                                Some(pid) => self.add_pending(pid, k, v.as_deref(), at),
                                None => {
                                    if let Err(e) = self.apply(k, v.as_deref(), at) {
                                        outcome = Err(e);
                                    }
                                }
                            }
                        }
                    }
                    answered.push((waiter, outcome));
                }
                Landed::Marker {
                    producer_id,
                    commit,
                    replicated,
                } => {
                    // Kafka completes a group's transactional offsets only for marker appends
                    // that succeeded (`KafkaApis.handleWriteTxnMarkersRequest`); a failed one is
                    // written again by the transaction coordinator.
                    if replicated {
                        self.complete_txn(producer_id, commit)
                    }
                }
            }
        }
        answered
    }

    /// The offset of the next write to apply.
    pub fn next_apply(&self) -> i64 {
        self.next_apply
    }

    /// Writes reported but waiting for an earlier one.
    pub fn landed_waiting(&self) -> usize {
        self.landed.len()
    }

    /// `group`'s committed offset of `tp`, as OffsetFetch serves it.
    pub fn committed(&self, group: &str, tp: &TopicPartition) -> Option<&OffsetValue> {
        self.offsets.get(group)?.get(tp)
    }

    /// The stored state of `group`'s share-partition `topic_id`/`partition` (KIP-932), as
    /// ReadShareGroupState serves it.
    pub fn share_state(
        &self,
        group: &str,
        topic_id: uuid::Uuid,
        partition: i32,
    ) -> Option<&codec::ShareStateValue> {
        self.shares.get(&(group.to_string(), topic_id, partition))
    }

    /// Every committed offset: (group, topic and partition, value).
    pub fn committed_offsets(&self) -> impl Iterator<Item = (&str, &TopicPartition, &OffsetValue)> {
        self.offsets
            .iter()
            .flat_map(|(g, m)| m.iter().map(move |(tp, v)| (g.as_str(), tp, v)))
    }

    fn add_pending(&mut self, pid: i64, key: LogKey, value: Option<&[u8]>, at: i64) {
        let LogKey::Offset {
            group,
            topic,
            partition,
        } = key
        else {
            return;
        };
        let Some(value) = value.and_then(codec::decode_offset) else {
            return;
        };
        if self.pending_txn.len() >= MAX_PENDING_PRODUCERS && !self.pending_txn.contains_key(&pid) {
            tracing::error!(
                producer_id = pid,
                "too many producers with pending transactional offsets; dropping this one's"
            );
            return;
        }
        self.pending_txn
            .entry(pid)
            .or_default()
            .push(PendingOffset {
                group,
                tp: (topic, partition),
                value,
                at,
            });
    }

    /// A transaction of `pid` ended: a commit applies each of its offsets unless the offset
    /// committed now was written later in the log (plain or transactional), an abort drops
    /// them (Kafka's `OffsetMetadataManager.replayEndTransactionMarker`).
    fn complete_txn(&mut self, pid: i64, commit: bool) {
        let Some(pending) = self.pending_txn.remove(&pid) else {
            return;
        };
        if !commit {
            return;
        }
        for p in pending {
            let key = (p.group, p.tp);
            let newer = self.record_at.get(&key).is_some_and(|&at| at >= p.at);
            if !newer {
                self.record_at.insert(key.clone(), p.at);
                self.offsets
                    .entry(key.0)
                    .or_default()
                    .insert(key.1, p.value);
            }
        }
    }

    /// Whether a transactional commit of `group`'s `tp` waits for its transaction.
    pub fn has_pending(&self, group: &str, tp: &TopicPartition) -> bool {
        self.pending_txn
            .values()
            .flatten()
            .any(|p| p.group == group && &p.tp == tp)
    }

    /// Live entries (groups with metadata plus committed offsets).
    pub fn live(&self) -> usize {
        self.groups.len() + self.offsets.values().map(BTreeMap::len).sum::<usize>()
    }

    /// Applies one record. Errors: a share-partition state of an older state epoch
    /// (FENCED_STATE_EPOCH, 124) or leader epoch (FENCED_LEADER_EPOCH, 74) than the one stored is
    /// not applied ([`Self::apply_share_state`]).
    fn apply(&mut self, key: LogKey, value: Option<&[u8]>, at: i64) -> Result<(), ResponseError> {
        match key {
            LogKey::Offset {
                group,
                topic,
                partition,
            } => match value.and_then(codec::decode_offset) {
                Some(v) => {
                    self.record_at
                        .insert((group.clone(), (topic.clone(), partition)), at);
                    self.offsets
                        .entry(group)
                        .or_default()
                        .insert((topic, partition), v);
                }
                None => {
                    self.record_at
                        .remove(&(group.clone(), (topic.clone(), partition)));
                    if let Some(m) = self.offsets.get_mut(&group) {
                        m.remove(&(topic, partition));
                        if m.is_empty() {
                            self.offsets.remove(&group);
                        }
                    }
                }
            },
            LogKey::ShareState {
                group,
                topic_id,
                partition,
            } => match value.and_then(codec::decode_share_state) {
                Some(v) => return self.apply_share_state((group, topic_id, partition), v),
                None => {
                    self.shares.remove(&(group, topic_id, partition));
                }
            },
            LogKey::Group { group } => match value.and_then(codec::decode_group) {
                Some(v) => {
                    self.groups.insert(group, v);
                }
                None => {
                    self.groups.remove(&group);
                }
            },
        }
        Ok(())
    }

    /// A share-partition state record, in log order. Its epochs are checked against the stored
    /// state's here, where the log orders the writes, and not only when it was appended: a
    /// write of an older leader appended before a newer leader's epoch was recorded but landing
    /// after it is fenced too. A record with start offset [`LEADER_EPOCH_ONLY`] only raises the
    /// stored leader epoch (ReadShareGroupState of a new leader, Kafka's
    /// `ShareCoordinatorShard.readStateAndMaybeUpdateLeaderEpoch`), keeping the state it does
    /// not carry.
    ///
    /// Errors: FENCED_STATE_EPOCH (124) for an older state epoch, FENCED_LEADER_EPOCH (74) for
    /// an older leader epoch; the record is not applied then. Found by the simulator (share,
    /// seed 21): a partition leader that lost its leadership had an acknowledgement's state
    /// write in flight while the coordinator moved; the new leader read the state first, and
    /// both answered an ACCEPT of one record OK.
    fn apply_share_state(
        &mut self,
        key: (String, uuid::Uuid, i32),
        v: codec::ShareStateValue,
    ) -> Result<(), ResponseError> {
        check_share_epochs(&v, self.shares.get(&key))?;
        if v.start_offset == LEADER_EPOCH_ONLY {
            if let Some(old) = self.shares.get_mut(&key) {
                old.leader_epoch = v.leader_epoch;
            }
            return Ok(());
        }
        // Within one state epoch the stored state only moves forward ([`join_share_states`]);
        // a new state epoch (the offsets were altered) replaces it.
        let v = match self.shares.get(&key) {
            Some(old) if old.state_epoch == v.state_epoch => join_share_states(old, &v),
            _ => v,
        };
        self.shares.insert(key, v);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offset_key(partition: i32) -> LogKey {
        LogKey::Offset {
            group: "g".into(),
            topic: "t".into(),
            partition,
        }
    }

    fn offset_value(offset: i64) -> Bytes {
        codec::encode_offset(&OffsetValue {
            offset,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: 0,
        })
    }

    fn write(offset: i64, waiter: u64, replicated: bool) -> Landed<u64> {
        Landed::Write {
            records: vec![(offset_key(0), Some(offset_value(offset)))],
            waiter,
            replicated: if replicated {
                Ok(())
            } else {
                Err(ResponseError::NotCoordinator)
            },
            txn: None,
        }
    }

    fn served(s: &OffsetsState<u64>) -> Option<i64> {
        s.committed("g", &("t".into(), 0)).map(|v| v.offset)
    }

    /// Writes reported out of log order wait for the earlier ones and are applied and
    /// answered in log order; a write that did not replicate is answered with its error and
    /// not applied.
    #[test]
    fn writes_apply_in_log_order_and_only_when_replicated() {
        let mut s = OffsetsState::default();
        s.replayed_upto(10);
        assert!(s.land(11, 1, write(2, 2, true)).is_empty(), "waits for 10");
        assert_eq!(s.landed_waiting(), 1);
        assert_eq!(served(&s), None);
        let answered = s.land(10, 1, write(1, 1, false));
        assert_eq!(
            answered,
            vec![(1, Err(ResponseError::NotCoordinator)), (2, Ok(()))]
        );
        assert_eq!(served(&s), Some(2));
        assert_eq!(s.next_apply(), 12);
        // A write below what the replay read is answered at once, not applied again.
        assert_eq!(s.land(5, 1, write(9, 3, true)), vec![(3, Ok(()))]);
        assert_eq!(served(&s), Some(2));
    }

    /// Two transactions commit offsets of one partition, written at 10 and 11, and their
    /// markers land in the other order: the offset written later (11) stays (simulator seed
    /// 21; before, the last marker won and the offset went back to 10's).
    #[test]
    fn a_transaction_committed_later_does_not_override_an_offset_written_later() {
        let mut s = OffsetsState::default();
        let txn = |value: i64, waiter: u64, pid: i64| Landed::Write {
            records: vec![(offset_key(0), Some(offset_value(value)))],
            waiter,
            replicated: Ok(()),
            txn: Some(pid),
        };
        let marker = |pid| Landed::Marker {
            producer_id: pid,
            commit: true,
            replicated: true,
        };
        s.replayed_upto(10);
        s.land(10, 1, txn(10, 1, 7));
        s.land(11, 1, txn(11, 2, 8));
        assert_eq!(served(&s), None, "pending");
        s.land(12, 1, marker(8));
        assert_eq!(served(&s), Some(11));
        s.land(13, 1, marker(7));
        assert_eq!(served(&s), Some(11), "10 was written before 11");
        // A plain commit written later replaces it; a transaction written before that does not.
        s.land(14, 1, txn(14, 3, 9));
        s.land(15, 1, write(15, 4, true));
        s.land(16, 1, marker(9));
        assert_eq!(served(&s), Some(15));
    }

    /// A replay applies records in log order, tombstones included, and skips keys it does
    /// not know.
    #[test]
    fn a_replay_gives_the_last_value_of_each_key() {
        let mut s: OffsetsState<u64> = OffsetsState::default();
        let key = codec::encode_key(&offset_key(0));
        let (one, two) = (offset_value(1), offset_value(2));
        let read = |offset, value: Option<&'static [u8]>| LogRecord {
            offset,
            producer_id: -1,
            transactional: false,
            control: false,
            key: None,
            value,
        };
        assert!(s.replay(LogRecord {
            key: Some(&key),
            value: Some(&one),
            ..read(0, None)
        }));
        assert!(s.replay(LogRecord {
            key: Some(&key),
            value: Some(&two),
            ..read(1, None)
        }));
        assert_eq!(served(&s), Some(2));
        assert!(!s.replay(LogRecord {
            key: Some(&[0, 99, 1, 2]),
            ..read(2, Some(b"x"))
        }));
        assert!(s.replay(LogRecord {
            key: Some(&key),
            ..read(3, None)
        }));
        assert_eq!(served(&s), None, "a tombstone deletes it");
        assert_eq!(s.live(), 0);
    }

    fn share_write(leader_epoch: i32, start_offset: i64, waiter: u64) -> Landed<u64> {
        let v = codec::ShareStateValue {
            state_epoch: 0,
            leader_epoch,
            start_offset,
            batches: Vec::new(),
        };
        Landed::Write {
            records: vec![(
                LogKey::ShareState {
                    group: "sg".into(),
                    topic_id: uuid::Uuid::nil(),
                    partition: 0,
                },
                Some(codec::encode_share_state(&v)),
            )],
            waiter,
            replicated: Ok(()),
            txn: None,
        }
    }

    /// A new leader's epoch record keeps the stored state and fences a write of the older
    /// leader that lands after it (the simulator's share seed 21), also on replay.
    #[test]
    fn a_share_state_of_an_older_leader_landing_after_a_newer_epoch_is_fenced() {
        let mut s = OffsetsState::default();
        s.replayed_upto(0);
        let stored = |s: &OffsetsState<u64>| {
            s.share_state("sg", uuid::Uuid::nil(), 0)
                .map(|v| (v.leader_epoch, v.start_offset))
        };
        assert_eq!(s.land(0, 1, share_write(1, 10, 1)), vec![(1, Ok(()))]);
        assert_eq!(
            s.land(1, 1, share_write(2, LEADER_EPOCH_ONLY, 2)),
            vec![(2, Ok(()))]
        );
        assert_eq!(
            stored(&s),
            Some((2, 10)),
            "the epoch rises, the state stays"
        );
        assert_eq!(
            s.land(2, 1, share_write(1, 30, 3)),
            vec![(3, Err(ResponseError::FencedLeaderEpoch))]
        );
        assert_eq!(stored(&s), Some((2, 10)));
        assert_eq!(s.land(3, 1, share_write(2, 40, 4)), vec![(4, Ok(()))]);
        assert_eq!(stored(&s), Some((2, 40)));
        // An epoch record with nothing stored stores nothing.
        let mut fresh = OffsetsState::default();
        fresh.replayed_upto(0);
        assert_eq!(
            fresh.land(0, 1, share_write(3, LEADER_EPOCH_ONLY, 1)),
            vec![(1, Ok(()))]
        );
        assert_eq!(stored(&fresh), None);
    }

    /// Issue 57 (frieda-sim share seed 2396): a repeated write of the same leader landing
    /// after a newer one takes neither the start offset nor an ACCEPT back; a write of a new
    /// state epoch (the offsets were altered) replaces the state.
    #[test]
    fn a_late_share_state_write_of_the_same_leader_takes_nothing_back() {
        let v = |state_epoch, start, batches: Vec<(i64, i64, i8, i16)>| codec::ShareStateValue {
            state_epoch,
            leader_epoch: 4,
            start_offset: start,
            batches,
        };
        let older = v(0, 1188, vec![(1188, 1188, 0, 1), (1224, 1228, 0, 1)]);
        let newer = v(
            0,
            1203,
            vec![(1203, 1203, 0, 2), (1224, 1227, 2, 1), (1228, 1228, 0, 2)],
        );
        let joined = join_share_states(&newer, &older);
        assert_eq!(joined.start_offset, 1203);
        assert_eq!(
            joined.batches,
            vec![(1203, 1203, 0, 2), (1224, 1227, 2, 1), (1228, 1228, 0, 2)]
        );
        assert_eq!(join_share_states(&older, &newer).batches, joined.batches);
        // ARCHIVED stays, counts only grow, runs coalesce.
        let a = v(0, 0, vec![(0, 9, 0, 1)]);
        let b = v(0, 0, vec![(0, 4, 4, 3), (5, 9, 0, 1)]);
        assert_eq!(
            join_share_states(&a, &b).batches,
            vec![(0, 4, 4, 3), (5, 9, 0, 1)]
        );
        // Through the log: the late write is joined, a new state epoch replaces.
        let mut s = OffsetsState::default();
        s.replayed_upto(0);
        let write = |value: &codec::ShareStateValue, waiter| Landed::Write {
            records: vec![(
                LogKey::ShareState {
                    group: "sg".into(),
                    topic_id: uuid::Uuid::nil(),
                    partition: 0,
                },
                Some(codec::encode_share_state(value)),
            )],
            waiter,
            replicated: Ok(()),
            txn: None,
        };
        assert_eq!(s.land(0, 1, write(&newer, 1)), vec![(1, Ok(()))]);
        assert_eq!(s.land(1, 1, write(&older, 2)), vec![(2, Ok(()))]);
        let stored = s.share_state("sg", uuid::Uuid::nil(), 0).cloned();
        assert_eq!(
            stored.map(|x| (x.start_offset, x.batches)),
            Some((1203, joined.batches))
        );
        let reset = v(1, 0, vec![]);
        assert_eq!(s.land(2, 1, write(&reset, 3)), vec![(3, Ok(()))]);
        let stored = s.share_state("sg", uuid::Uuid::nil(), 0).cloned();
        assert_eq!(stored.map(|x| x.start_offset), Some(0));
    }
}
