//! Share groups (KIP-932, issue 57): a share group consuming partition 0 through the broker's
//! own share-partition state machine ([`frieda::coordinator::share::partition::SharePartition`]),
//! its durable state written to the group coordinator's offsets log and read back by every new
//! leader ([`frieda::coordinator::offsets::state::OffsetsState::share_state`]).
//!
//! What is the broker's code and what is simulated:
//! - the share-partition is the broker's: the leader acquires with `acquire` over the batches
//!   its log holds below its high watermark, stages acknowledgements with `stage_acknowledge`,
//!   applies them with `commit_pending_upto` once a state write including them succeeded (or
//!   undoes them with `rollback_pending_upto`), expires locks with `expire_locks`, and a new
//!   leader restores the stored state with `SharePartition::restore`;
//! - the leader's glue mirrors `handlers/share_fetch.rs` (`load`, `acquire`, `acknowledge`: one
//!   write in flight per share-partition, acknowledgements staged meanwhile go out together
//!   in the next one) and `handlers/share_state.rs` (five attempts while the coordinator
//!   moves, backing off from 100 ms, each waiting at most 10 s);
//! - the coordinator's side mirrors `GroupCoordinator::read_share_state` and
//!   `write_share_state` (FENCED_LEADER_EPOCH for a read of an older leader or a write of one;
//!   a newer leader's read records its epoch first; writes appended to the offsets partition
//!   through the same path as offset commits, answered once they landed in `OffsetsState`,
//!   which fences a write of an older epoch landing after a newer one).
//!
//! Three members fetch (ShareFetch) from the partition's leader as the client's metadata names
//! it, and acknowledge what they got to the broker that gave it, 5-300 ms later: mostly
//! ACCEPT, some RELEASE and REJECT; one delivery in fifty is never acknowledged (the member
//! crashed while processing), so only its lock's expiry gives it back.
//!
//! Invariants (offsets that a lost batch reused are exempt, and so are acknowledgements and
//! stored counts whose state write a power loss without fsync voided, as acknowledged records
//! are):
//! - `share-record-redelivered-after-accept`: no record is acquired again by an elected leader
//!   once an ACCEPT of it was answered OK (a deposed leader that has not heard yet, paused or
//!   cut off, serves its stale state: ShareFetch checks no lease, as Kafka's does not; its
//!   acknowledgements are fenced, which the next invariant checks);
//! - `share-record-accepted-twice`: no record's ACCEPT is answered OK twice;
//! - `share-record-skipped`: a stored state (as a coordinator applies it, and as one loads it)
//!   counts a record done (below the start offset, or acknowledged or archived) only if a
//!   member accepted or rejected it, or it reached the delivery limit;
//! - `share-delivery-count-went-down`: an elected leader delivers a record with a delivery
//!   count above every count a state write stored for it or a coordinator's committed load
//!   held (a coordinator serves only once the high watermark reached the end its load
//!   replayed to, `OffsetStore::is_committed`; before that fix a load's counts, unreplicated
//!   records included, were not promised);
//! - `liveness-share-group-stuck`: after the faults heal, the share group finishes every record
//!   acknowledged (`acks=all`) before they healed: acquisition locks expire, records come
//!   back, and the stored start offset (with the finished runs right after it) moves past them.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use frieda::coordinator::offsets::codec::{self, LogKey, ShareStateValue};
use frieda::coordinator::offsets::state::{check_share_epochs, LEADER_EPOCH_ONLY};
use frieda::coordinator::share::partition::{
    AckType, AcquiredRange, ReadSpan, SharePartition, SharePartitionConfig, ShareSnapshot,
};
use kafka_protocol::error::ResponseError as E;
use rand::Rng;
use uuid::Uuid;

use crate::net::{Msg, Node};
use crate::world::{Event, Timer, World};
use crate::Time;

/// The share group.
pub(crate) const SHARE_GROUP: &str = "sg";
/// The partition it consumes.
pub(crate) const SHARE_PARTITION: i32 = 0;
/// Its members.
pub(crate) const MEMBERS: u8 = 3;
/// `group.share.record.lock.duration.ms` in these runs.
const LOCK_MS: u64 = 3_000;
/// `group.share.delivery.count.limit` in these runs.
const DELIVERY_LIMIT: u16 = 3;
/// `group.share.partition.max.record.locks` in these runs.
const MAX_RECORD_LOCKS: usize = 2_000;
/// Most records one ShareFetch acquires (`max.poll.records`).
const MAX_RECORDS: usize = 100;
/// How often a leader expires acquisition locks, ms (`SharePartitions::expire_locks`).
pub(crate) const EXPIRE_EVERY_MS: Time = 250;
/// Attempts of a state read or write (`share_state::ATTEMPTS`).
const ATTEMPTS: u32 = 5;
/// The wait before the second attempt, doubled before each later one, ms.
const FIRST_BACKOFF_MS: Time = 100;
/// How long one attempt waits for the coordinator, ms (`share_state::PERSIST_TIMEOUT`).
const PERSIST_TIMEOUT_MS: Time = 10_000;

/// The consumed topic's id (the durable state's key).
pub(crate) fn share_topic_id() -> Uuid {
    Uuid::from_u128(0x5348_4152_4500_0000_0000_0000_0000_0001)
}

fn member_name(m: u8) -> String {
    format!("member-{m}")
}

fn config() -> SharePartitionConfig {
    SharePartitionConfig {
        lock_duration_ms: LOCK_MS,
        delivery_count_limit: DELIVERY_LIMIT,
        max_record_locks: MAX_RECORD_LOCKS,
    }
}

/// One acknowledgement range: first, last, type.
pub(crate) type AckRange = (i64, i64, AckType);

/// A call from a leader to the group coordinator, attempt by attempt.
#[derive(Debug, Clone)]
struct Call {
    /// The request id of the attempt in flight (0 while backing off).
    req: u64,
    /// Attempts made.
    attempt: u32,
    /// A write of this state (`None`: a read).
    write: Option<ShareStateValue>,
    /// For a write: the stage generation its snapshot was taken at.
    upto: u64,
    /// The broker the attempt in flight was sent to (-1: none).
    to: i32,
}

/// An acknowledgement waiting for a state write that includes it.
#[derive(Debug, Clone)]
struct AckWait {
    member: u8,
    gen: u64,
    /// The batch of the state write that made it durable (answered OK).
    write: u64,
    ranges: Vec<AckRange>,
    result: Result<(), E>,
}

/// The share-partition a leader keeps (`ShareEntry`), or its load.
pub(crate) struct ShareSlot {
    /// The leader epoch it was loaded for.
    leader_epoch: i32,
    /// Loaded (`None` while the stored state is read, or the initial one written).
    state: Option<SharePartition>,
    /// The durable state's epoch.
    state_epoch: i32,
    /// The highest stage generation made durable, and the highest whose write failed.
    durable: u64,
    failed: u64,
    /// The batch of the last state write answered OK.
    durable_write: u64,
    /// The call to the coordinator in flight (one at a time: `ShareEntry::persist`).
    call: Option<Call>,
    waiting: Vec<AckWait>,
}

impl crate::groups::SimCoordinator {
    /// The share group's stored state in this coordinator (ReadShareGroupState's answer).
    pub(crate) fn share_state(&self) -> Option<&ShareStateValue> {
        self.state
            .share_state(SHARE_GROUP, share_topic_id(), SHARE_PARTITION)
    }
}

/// A state write appended by a coordinator: what it stores, for which leader.
#[derive(Debug, Clone)]
pub(crate) struct ShareWrite {
    pub(crate) value: ShareStateValue,
    /// The leader that asked, to answer it.
    pub(crate) leader: i32,
    /// The request id its answer names (the write's own, or the read it records the epoch
    /// for).
    pub(crate) reply_to: u64,
    /// The leader epoch record of a read: answered with the state it leaves.
    pub(crate) read: bool,
}

/// The simulator's record of the share group.
#[derive(Default)]
pub(crate) struct Shares {
    /// State writes by request (= batch) id.
    pub(crate) writes: BTreeMap<u64, ShareWrite>,
    /// Members with a ShareFetch or acknowledgement in flight.
    busy: BTreeSet<u8>,
    /// Offsets whose ACCEPT was answered OK: by whom, when.
    accepted: BTreeMap<i64, (u8, i32, Time, u64)>,
    /// Offsets a member accepted or rejected, or that reached the delivery limit: the records
    /// a stored state may count as done.
    finishing: BTreeSet<i64>,
    /// Every offset below this was checked to be in `finishing`.
    verified_below: i64,
    /// The highest delivery count a stored state gave each offset.
    stored_count: BTreeMap<i64, (u16, u64)>,
    /// The batch each delivered offset belonged to; offsets a lost batch's successor reused
    /// are exempt from the checks.
    batch_of: BTreeMap<i64, u64>,
    reused: BTreeSet<i64>,
    /// Records delivered.
    pub(crate) delivered: u64,
}

impl World {
    fn share_run(&self) -> bool {
        self.plan.shape.share && self.offsets_partition().is_some()
    }

    /// The broker `id` believes coordinates the share group: the offsets partition's leader
    /// in its image.
    fn share_coordinator(&self, id: i32) -> Option<i32> {
        let op = self.offsets_partition()?;
        self.b(id)
            .image
            .partition(crate::world::TOPIC, op)
            .map(|s| s.leader)
            .filter(|l| *l > 0)
    }

    // ------------------------------------------------------------------ members

    /// Member `m` sends a ShareFetch to the partition's leader as its metadata names it.
    pub(crate) fn share_fetch(&mut self, m: u8) {
        if !self.share_run() || !self.shares.busy.insert(m) {
            return;
        }
        let to = self.client_target(SHARE_PARTITION, false);
        self.send(
            Node::Client,
            Node::Broker(to),
            Msg::ShareFetch { member: m },
        );
        // The answer (or its absence) frees the member after the request timeout at most.
        self.after(2_000, Event::ShareMemberFree(m));
    }

    /// Member `m` got `ranges` from broker `id`: it processes them and acknowledges them to
    /// `id`, or crashes while processing (nothing acknowledged: the locks expire).
    fn share_delivered(&mut self, id: i32, m: u8, ranges: &[AcquiredRange]) {
        if ranges.is_empty() {
            self.shares.busy.remove(&m);
            return;
        }
        if self.rng.gen_bool(0.02) {
            self.log(|| format!("member {m} crashes holding {ranges:?}"));
            self.shares.busy.remove(&m);
            return;
        }
        let mut acks: Vec<AckRange> = Vec::new();
        for r in ranges {
            for o in r.first..=r.last {
                let t = match self.rng.gen_range(0..100) {
                    0..=84 => AckType::Accept,
                    85..=94 => AckType::Release,
                    _ => AckType::Reject,
                };
                match acks.last_mut() {
                    Some(a) if a.1 + 1 == o && a.2 == t => a.1 = o,
                    _ => acks.push((o, o, t)),
                }
            }
        }
        let delay = self.rng.gen_range(5..=300);
        self.after(
            delay,
            Event::ShareAck {
                member: m,
                broker: id,
                acks,
            },
        );
    }

    /// Member `m` sends its acknowledgement to broker `id`, the one that gave it the records.
    pub(crate) fn send_share_ack(&mut self, m: u8, id: i32, acks: Vec<AckRange>) {
        self.send(
            Node::Client,
            Node::Broker(id),
            Msg::ShareAck { member: m, acks },
        );
        self.after(1_000, Event::ShareMemberFree(m));
    }

    pub(crate) fn share_member_free(&mut self, m: u8) {
        self.shares.busy.remove(&m);
    }

    /// An acknowledgement was answered.
    fn share_ack_answered(&mut self, id: i32, w: AckWait) {
        let m = w.member;
        self.shares.busy.remove(&m);
        if let Err(e) = w.result {
            self.log(|| format!("broker {id}: answers member {m}'s acknowledgement with {e:?}"));
            return;
        }
        self.stats.share_acks_ok += 1;
        let now = self.now;
        for (first, last, t) in &w.ranges {
            if *t != AckType::Accept {
                continue;
            }
            for o in *first..=*last {
                if self.shares.reused.contains(&o) {
                    continue;
                }
                let before = self.shares.accepted.insert(o, (m, id, now, w.write));
                if let Some((m0, b0, t0, _)) = before.filter(|b| !self.exempt(b.3)) {
                    self.violate(
                        "share-record-accepted-twice",
                        format!("broker {id} answered member {m}'s ACCEPT of offset {o} OK, but broker {b0} had answered member {m0}'s ACCEPT of it OK at {t0} ms"),
                    );
                    return;
                }
            }
        }
        let ranges = w.ranges.clone();
        self.log(|| format!("broker {id}: answers member {m}'s acknowledgement {ranges:?} OK"));
    }

    // ------------------------------------------------------------------ the leader

    fn share_leader_epoch(&self, id: i32) -> Result<i32, E> {
        let r = self
            .b(id)
            .replicas
            .get(&SHARE_PARTITION)
            .ok_or(E::NotLeaderOrFollower)?;
        r.repl.check_leader(-1)?;
        Ok(r.repl.leader_epoch())
    }

    /// Broker `id`'s leader epoch of the share group's partition, its share-partition of an
    /// older leadership dropped (`SharePartitions::get`); `share` is then this leadership's.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER when it does not lead the partition.
    fn share_leadership(&mut self, id: i32) -> Result<i32, E> {
        let epoch = self.share_leader_epoch(id)?;
        let b = self.bm(id);
        if b.share.as_ref().is_some_and(|s| s.leader_epoch != epoch) {
            b.share = None;
        }
        Ok(epoch)
    }

    /// ShareFetch of member `m` at broker `id` (`share_fetch::acquire`).
    pub(crate) fn on_share_fetch(&mut self, id: i32, m: u8) {
        let epoch = match self.share_leadership(id) {
            Err(e) => {
                self.log(|| format!("broker {id}: answers member {m}'s ShareFetch with {e:?}"));
                self.shares.busy.remove(&m);
                return;
            }
            Ok(epoch) if self.b(id).share.is_some() => epoch,
            Ok(epoch) => {
                // `load`: read the stored state first (the fetch finds nothing this time).
                self.bm(id).share = Some(ShareSlot {
                    leader_epoch: epoch,
                    state: None,
                    state_epoch: 0,
                    durable: 0,
                    failed: 0,
                    durable_write: 0,
                    call: None,
                    waiting: Vec::new(),
                });
                self.share_call(id, None, 0);
                self.shares.busy.remove(&m);
                return;
            }
        };
        let now = self.now;
        let hw = self.served_hw(id, SHARE_PARTITION);
        let b = self.bm(id);
        let d = &b.disks[&SHARE_PARTITION];
        let acquired = b
            .share
            .as_mut()
            .and_then(|s| s.state.as_mut())
            .map(|state| {
                let log_start = d.log.batches().first().map_or(0, |b| b.base);
                state.on_log_start(log_start);
                let Some((from, span)) = state.fetch_span(MAX_RECORDS) else {
                    return (Vec::new(), BTreeMap::new());
                };
                let until = (from + span as i64).min(hw);
                let mut spans = Vec::new();
                let mut ids = BTreeMap::new();
                let batches = d.log.batches();
                let first = batches.partition_point(|bt| bt.end() <= from);
                for bt in &batches[first..] {
                    if bt.end() > hw {
                        break;
                    }
                    if bt.base >= until {
                        break;
                    }
                    spans.push(ReadSpan {
                        first: bt.base,
                        last: bt.end() - 1,
                        deliverable: true,
                    });
                    for o in bt.base..bt.end() {
                        ids.insert(o, bt.id);
                    }
                }
                (
                    state.acquire(&member_name(m), &spans, MAX_RECORDS, now),
                    ids,
                )
            });
        let Some((ranges, ids)) = acquired else {
            self.shares.busy.remove(&m);
            return; // still loading
        };
        for r in &ranges {
            for o in r.first..=r.last {
                let bid = ids[&o];
                if *self.shares.batch_of.entry(o).or_insert(bid) != bid {
                    self.shares.reused.insert(o);
                }
                if self.shares.reused.contains(&o) {
                    continue;
                }
                self.shares.delivered += 1;
                // A leader the controller no longer has (it has not heard yet: paused, cut
                // off) serves its stale state: deliveries again are at-least-once's, and its
                // acknowledgements are fenced (share-record-accepted-twice checks that).
                let elected = self.elected(id, SHARE_PARTITION, epoch);
                let accepted = self
                    .shares
                    .accepted
                    .get(&o)
                    .filter(|a| elected && !self.exempt(a.3));
                if let Some((m0, b0, t0, _)) = accepted {
                    let detail = format!("broker {id} (leader epoch {epoch}) delivered offset {o} to member {m} (delivery {}), but broker {b0} had answered member {m0}'s ACCEPT of it OK at {t0} ms", r.delivery_count);
                    self.violate("share-record-redelivered-after-accept", detail);
                    return;
                }
                let stored = self.shares.stored_count.get(&o).copied();
                if let Some((stored, _)) = stored.filter(|s| !self.exempt(s.1)) {
                    if elected && r.delivery_count <= stored {
                        let detail = format!("broker {id} (leader epoch {epoch}) delivered offset {o} to member {m} as delivery {}, but a stored state had counted {stored} deliveries", r.delivery_count);
                        self.violate("share-delivery-count-went-down", detail);
                        return;
                    }
                }
            }
        }
        self.log(|| format!("broker {id}: member {m} acquires {ranges:?}"));
        self.share_delivered(id, m, &ranges);
    }

    /// An acknowledgement of member `m` at broker `id` (`share_fetch::acknowledge`): staged,
    /// then written (with whatever else was staged) before it is answered.
    pub(crate) fn on_share_ack(&mut self, id: i32, m: u8, acks: Vec<AckRange>) {
        let now = self.now;
        let refused = match self.share_leadership(id) {
            Err(e) => Some(e),
            Ok(_) if self.b(id).share.as_ref().is_none_or(|s| s.state.is_none()) => {
                Some(E::UnknownTopicOrPartition)
            }
            Ok(_) => None,
        };
        if let Some(e) = refused {
            let w = AckWait {
                member: m,
                gen: 0,
                write: 0,
                ranges: acks,
                result: Err(e),
            };
            self.share_ack_answered(id, w);
            return;
        }
        let slot = self.bm(id).share.as_mut().expect("loaded");
        let state = slot.state.as_mut().expect("loaded");
        let mut result = Ok(());
        let mut finishing = Vec::new();
        for (first, last, t) in &acks {
            // What the stored state may count as done once this is written.
            for o in *first..=*last {
                let at_limit = state.state(o).is_some_and(|(_, dc)| dc >= DELIVERY_LIMIT);
                if matches!(t, AckType::Accept | AckType::Reject)
                    || (*t == AckType::Release && at_limit)
                {
                    finishing.push(o);
                }
            }
            if let Err(e) = state.stage_acknowledge(&member_name(m), *first, *last, &[*t], now) {
                result = Err(e);
            }
        }
        let gen = state.stage_gen();
        slot.waiting.push(AckWait {
            member: m,
            gen,
            write: 0,
            ranges: acks,
            result,
        });
        self.shares.finishing.extend(finishing);
        self.share_persist(id);
    }

    /// Starts a write of broker `id`'s share-partition state when one is needed and none is in
    /// flight; answers the acknowledgements an earlier write already decided.
    fn share_persist(&mut self, id: i32) {
        let Some(slot) = self.bm(id).share.as_mut() else {
            return;
        };
        if slot.call.is_some() || slot.state.is_none() {
            return;
        }
        let (durable, failed, durable_write) = (slot.durable, slot.failed, slot.durable_write);
        let (decided, rest): (Vec<AckWait>, Vec<AckWait>) = std::mem::take(&mut slot.waiting)
            .into_iter()
            .partition(|w| w.gen <= durable || w.gen <= failed);
        slot.waiting = rest;
        let needed = !slot.waiting.is_empty();
        let value = needed.then(|| {
            let state = slot.state.as_ref().expect("loaded");
            let s = state.snapshot();
            (
                ShareStateValue {
                    state_epoch: slot.state_epoch,
                    leader_epoch: slot.leader_epoch,
                    start_offset: s.start_offset,
                    batches: s.batches,
                },
                state.stage_gen(),
            )
        });
        for mut w in decided {
            if w.gen > durable && w.result.is_ok() {
                w.result = Err(E::CoordinatorNotAvailable);
            }
            w.write = durable_write;
            self.share_ack_answered(id, w);
        }
        if let Some((value, upto)) = value {
            self.share_call(id, Some(value), upto);
        }
    }

    /// Leader `id` calls the coordinator: a read (`write` = `None`) or a write of `upto`'s
    /// snapshot; the first attempt.
    fn share_call(&mut self, id: i32, write: Option<ShareStateValue>, upto: u64) {
        if let Some(slot) = self.bm(id).share.as_mut() {
            slot.call = Some(Call {
                req: 0,
                attempt: 0,
                write,
                upto,
                to: -1,
            });
        }
        self.share_attempt(id);
    }

    /// The next attempt of broker `id`'s call.
    pub(crate) fn share_attempt(&mut self, id: i32) {
        let req = self.next_request_id();
        let coordinator = self.share_coordinator(id);
        let Some(slot) = self.bm(id).share.as_mut() else {
            return;
        };
        let Some(call) = slot.call.as_mut() else {
            return;
        };
        call.req = req;
        call.attempt += 1;
        call.to = coordinator.unwrap_or(-1);
        let leader_epoch = slot.leader_epoch;
        let write = call.write.clone();
        let msg = match write {
            Some(value) => {
                let w = ShareWrite {
                    value,
                    leader: id,
                    reply_to: req,
                    read: false,
                };
                self.shares.writes.insert(req, w);
                Msg::ShareWrite { req }
            }
            None => Msg::ShareRead { req, leader_epoch },
        };
        self.timer(id, PERSIST_TIMEOUT_MS, Timer::ShareTimeout(req));
        match coordinator {
            // A broker whose process is down refuses the connection at once (the kernel resets
            // it: `share_state::io_error`, COORDINATOR_NOT_AVAILABLE, retried); a paused one
            // accepts it and leaves the attempt to its timeout.
            Some(c) if self.b(c).up => self.send(Node::Broker(id), Node::Broker(c), msg),
            _ => self.share_answer(id, req, Err(E::CoordinatorNotAvailable)),
        }
    }

    /// Broker `stopped`'s process ended: the attempts in flight to it fail at once, as a
    /// connection the peer's kernel resets fails (`share_state::io_error`:
    /// COORDINATOR_NOT_AVAILABLE, retried), instead of waiting out their timeout. A paused
    /// broker's stay unanswered until the timeout.
    pub(crate) fn share_peer_stopped(&mut self, stopped: i32) {
        let calls: Vec<(i32, u64)> = self
            .brokers
            .iter()
            .filter_map(|b| {
                let call = b.share.as_ref()?.call.as_ref()?;
                (call.req != 0 && call.to == stopped).then_some((b.id, call.req))
            })
            .collect();
        for (id, req) in calls {
            self.log(|| format!("broker {id}: share state attempt {req} to broker {stopped} fails: the connection was reset"));
            self.share_answer(id, req, Err(E::CoordinatorNotAvailable));
        }
    }

    /// The answer to attempt `req` of broker `id`'s call: the stored state for a read.
    pub(crate) fn share_answer(
        &mut self,
        id: i32,
        req: u64,
        result: Result<Option<ShareStateValue>, E>,
    ) {
        let now = self.now;
        let Some(slot) = self.bm(id).share.as_mut() else {
            return;
        };
        let Some(call) = slot.call.as_ref().filter(|c| c.req == req).cloned() else {
            return;
        };
        let retriable = matches!(
            result,
            Err(E::CoordinatorNotAvailable | E::NotCoordinator | E::CoordinatorLoadInProgress)
        );
        if retriable && call.attempt < ATTEMPTS {
            let backoff = FIRST_BACKOFF_MS << (call.attempt - 1);
            slot.call.as_mut().expect("in flight").req = 0;
            self.timer(id, backoff, Timer::ShareRetry);
            return;
        }
        slot.call = None;
        match (call.write, result) {
            // A read: restore, or start a new share-partition at the log start and write it.
            (None, Ok(Some(v))) => {
                let snapshot = ShareSnapshot {
                    start_offset: v.start_offset,
                    batches: v.batches,
                };
                slot.state = Some(SharePartition::restore(&snapshot, config()));
                slot.state_epoch = v.state_epoch;
                let epoch = slot.leader_epoch;
                self.log(|| {
                    format!(
                        "broker {id}: share-partition loaded in leader epoch {epoch}: start {}",
                        snapshot.start_offset
                    )
                });
            }
            (None, Ok(None)) => {
                let value = ShareStateValue {
                    state_epoch: 0,
                    leader_epoch: slot.leader_epoch,
                    start_offset: 0,
                    batches: Vec::new(),
                };
                self.share_call(id, Some(value), 0);
            }
            (None, Err(e)) | (Some(_), Err(e)) if slot.state.is_none() => {
                // The load failed: the next fetch loads again.
                self.bm(id).share = None;
                self.log(|| format!("broker {id}: share-partition not loaded: {e:?}"));
            }
            (Some(_), Ok(_)) if slot.state.is_none() => {
                slot.state = Some(SharePartition::new(0, config()));
                self.log(|| format!("broker {id}: new share-partition written"));
            }
            (Some(_), Ok(_)) => {
                let state = slot.state.as_mut().expect("loaded");
                state.commit_pending_upto(call.upto);
                slot.durable = slot.durable.max(call.upto);
                slot.durable_write = req;
                let archived = state.take_archived();
                self.shares
                    .finishing
                    .extend(archived.into_iter().map(|(o, _, _)| o));
                self.share_persist(id);
            }
            (Some(_), Err(e)) => {
                let state = slot.state.as_mut().expect("loaded");
                state.rollback_pending_upto(call.upto);
                slot.failed = slot.failed.max(call.upto);
                let fenced = matches!(e, E::FencedStateEpoch | E::FencedLeaderEpoch);
                let waiting = if fenced {
                    std::mem::take(&mut slot.waiting)
                } else {
                    Vec::new()
                };
                self.log(|| {
                    format!("broker {id}: share-partition state not written at {now} ms: {e:?}")
                });
                if fenced {
                    // `shares.forget`: answered, then loaded again by the next fetch.
                    self.bm(id).share = None;
                    for mut w in waiting {
                        if w.result.is_ok() {
                            w.result = Err(e);
                        }
                        self.share_ack_answered(id, w);
                    }
                } else {
                    self.share_persist(id);
                }
            }
            (None, _) => {}
        }
    }

    /// Broker `id`'s lock expiry (`SharePartitions::expire_locks`).
    pub(crate) fn share_expire(&mut self, id: i32) {
        let now = self.now;
        if let Some(state) = self.bm(id).share.as_mut().and_then(|s| s.state.as_mut()) {
            if state.next_lock_deadline().is_some_and(|d| d <= now) {
                state.expire_locks(now);
                let archived = state.take_archived();
                self.shares
                    .finishing
                    .extend(archived.into_iter().map(|(o, _, _)| o));
            }
        }
        self.timer(id, EXPIRE_EVERY_MS, Timer::ShareExpire);
    }

    // ------------------------------------------------------------------ the coordinator

    /// ReadShareGroupState at broker `id` (`GroupCoordinator::read_share_state`): a newer
    /// leader's epoch is recorded first, and the read answered once that record landed.
    pub(crate) fn on_share_read(&mut self, id: i32, from: i32, req: u64, leader_epoch: i32) {
        let serves = self.group_serves(id);
        let stored = self.b(id).groups.as_ref().map(|c| c.share_state().cloned());
        let result = match stored {
            None => Err(E::NotCoordinator),
            Some(_) if !serves => Err(E::CoordinatorLoadInProgress),
            Some(Some(v)) if v.leader_epoch > leader_epoch => Err(E::FencedLeaderEpoch),
            Some(Some(v)) if leader_epoch > v.leader_epoch => {
                let raise = self.next_request_id();
                let w = ShareWrite {
                    value: ShareStateValue {
                        state_epoch: v.state_epoch,
                        leader_epoch,
                        start_offset: LEADER_EPOCH_ONLY,
                        batches: Vec::new(),
                    },
                    leader: from,
                    reply_to: req,
                    read: true,
                };
                self.shares.writes.insert(raise, w);
                match self.coordinator_append(id, raise) {
                    Ok(()) => return, // answered when it lands
                    Err(e) => Err(e),
                }
            }
            Some(other) => Ok(other),
        };
        self.log(|| format!("broker {id}: answers broker {from}'s share state read {req} (leader epoch {leader_epoch}): {result:?}"));
        self.send(
            Node::Broker(id),
            Node::Broker(from),
            Msg::ShareReply { req, result },
        );
    }

    /// WriteShareGroupState at broker `id` (`GroupCoordinator::write_share_state`): the epochs
    /// against the stored state, then the offsets log's write path.
    pub(crate) fn on_share_write(&mut self, id: i32, from: i32, req: u64) {
        let Some(w) = self.shares.writes.get(&req).cloned() else {
            return;
        };
        let serves = self.group_serves(id);
        let refuse = match self.b(id).groups.as_ref() {
            None => Some(E::NotCoordinator),
            Some(_) if !serves => Some(E::CoordinatorLoadInProgress),
            Some(c) => check_share_epochs(&w.value, c.share_state()).err(),
        };
        let refuse = refuse.or_else(|| self.coordinator_append(id, req).err());
        self.log(|| format!("broker {id}: share state write {req} from broker {from} (leader epoch {}, start {}, {} batches): {refuse:?}", w.value.leader_epoch, w.value.start_offset, w.value.batches.len()));
        if let Some(e) = refuse {
            self.send(
                Node::Broker(id),
                Node::Broker(from),
                Msg::ShareReply {
                    req,
                    result: Err(e),
                },
            );
        }
    }

    /// The offsets-log records of share state write `req`.
    pub(crate) fn share_records(&self, req: u64) -> Option<Vec<(LogKey, Option<Bytes>)>> {
        let w = self.shares.writes.get(&req)?;
        Some(vec![(
            LogKey::ShareState {
                group: SHARE_GROUP.into(),
                topic_id: share_topic_id(),
                partition: SHARE_PARTITION,
            },
            Some(codec::encode_share_state(&w.value)),
        )])
    }

    /// Coordinator `id` applied (or failed) share state write `req`: the stored state is
    /// checked, and the leader answered (a read with the state the write left).
    pub(crate) fn share_write_landed(&mut self, id: i32, req: u64, result: Result<(), E>) {
        let Some(w) = self.shares.writes.get(&req).cloned() else {
            return;
        };
        let stored = self
            .b(id)
            .groups
            .as_ref()
            .and_then(|c| c.share_state().cloned());
        if let (Ok(()), Some(v)) = (&result, &stored) {
            self.check_share_state(v, &format!("applied by broker {id}'s coordinator"), req);
        }
        let answer = match result {
            Ok(()) if w.read => Ok(stored),
            other => other.map(|()| None),
        };
        self.send(
            Node::Broker(id),
            Node::Broker(w.leader),
            Msg::ShareReply {
                req: w.reply_to,
                result: answer,
            },
        );
    }

    /// A stored state counts done only what members finished (`share-record-skipped`), and
    /// its delivery counts are the least any later delivery may have.
    /// `write`: the batch of the write that stored it (0 for a loaded state), whose loss in a
    /// power cut without fsync exempts its counts.
    pub(crate) fn check_share_state(&mut self, v: &ShareStateValue, when: &str, write: u64) {
        let from = self.shares.verified_below;
        for o in from..v.start_offset {
            if !self.shares.finishing.contains(&o) && !self.shares.reused.contains(&o) {
                self.violate(
                    "share-record-skipped",
                    format!("a share state {when} starts at {} (leader epoch {}), past offset {o}, which no member accepted or rejected and which did not reach the delivery limit", v.start_offset, v.leader_epoch),
                );
                return;
            }
        }
        self.shares.verified_below = from.max(v.start_offset);
        for &(first, last, state, count) in &v.batches {
            for o in first..=last {
                if state != 0
                    && !self.shares.finishing.contains(&o)
                    && !self.shares.reused.contains(&o)
                {
                    self.violate(
                        "share-record-skipped",
                        format!("a share state {when} (leader epoch {}) has offset {o} in state {state}, but no member accepted or rejected it and it did not reach the delivery limit", v.leader_epoch),
                    );
                    return;
                }
                // Counts of states a write stored (replicated as asked), or a committed
                // load holds (`write` its last share state write; 0 for a fresh load of the
                // final log, which is not served).
                if write == 0 {
                    continue;
                }
                let count = count.max(0) as u16;
                let c = self.shares.stored_count.entry(o).or_insert((0, 0));
                if count >= c.0 {
                    *c = (count, write);
                }
            }
        }
    }

    /// At the end: the final coordinator's stored state (a fresh load of its log) has moved
    /// past every record acknowledged before the faults healed.
    pub(crate) fn check_share_end(&mut self, stored: Option<ShareStateValue>, leader: i32) {
        if !self.share_run() || self.leaderless_as_in_kafka(SHARE_PARTITION) {
            return;
        }
        let heal = self.plan.shape.heal;
        let before_heal = self
            .acked
            .iter()
            .filter(|(bid, a)| {
                a.partition == SHARE_PARTITION
                    && a.acks == -1
                    && a.time <= heal
                    && !self.exempt(**bid)
            })
            .map(|(_, a)| a.base + 1)
            .max()
            .unwrap_or(0);
        // The stored start, past the runs right after it that are done (a state written with
        // its acknowledgements staged keeps the start before them: nothing after them wrote
        // again).
        let start = stored.as_ref().map_or(0, |v| {
            let mut start = v.start_offset;
            for &(first, last, state, _) in &v.batches {
                if first > start || state == 0 {
                    break;
                }
                start = start.max(last + 1);
            }
            start
        });
        if start < before_heal {
            self.violate(
                "liveness-share-group-stuck",
                format!("the share group's stored start offset at the end is {start} (coordinator broker {leader}), but records up to {before_heal} were acknowledged before the faults healed ({} records delivered, {} acknowledgements answered OK)", self.shares.delivered, self.stats.share_acks_ok),
            );
        }
    }
}
