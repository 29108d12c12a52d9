//! Tiered storage in the simulation (issue 57): each leader runs the broker's own copy task
//! ([`frieda::tiering::task::CopyTask`]) against the simulated controller and a simulated
//! object store; every replica applies local retention over the copies its own (lagging)
//! metadata image shows ([`frieda_meta::remote_log::RemoteLog::covered_end`]); a follower whose
//! leader holds its next offsets only remotely starts its log again above the copies.
//!
//! What is simulated is the I/O: commits travel the network to the controller and back; object
//! requests take time, hang while the store stalls and fail with 503 while it errs; a PUT sent
//! by a process that then dies still lands; a process restarted or paused between a PUT and
//! its commit leaves what it left. Invariants checked on top of the cluster's (`crate::check`):
//! every acknowledged record stays readable (from a replica's local log or from a finished copy
//! whose objects are in the bucket and hold it), finished copies never overlap and always have
//! their objects, and after quiescence the bucket holds no object of a copy the image does not
//! list as finished.

use std::collections::BTreeMap;

use frieda::tiering::task::{
    CommitError, CopyTask, Listed, LocalSegment, PartitionView, RoundError, Step,
};
use frieda_meta::remote_log::{RemoteLog, RemoteSegment, RemoteSegmentChange, TotalRetention};
use frieda_meta::MetaError;
use rand::Rng;
use uuid::Uuid;

use crate::disk::{Batch, SimLog};
use crate::net::{Msg, Node};
use crate::plan::Time;
use crate::world::{Event, Timer, World, TOPIC};
use frieda::replication::LogView;

/// How long a commit may wait for the controller (the broker's `tiering::COMMIT_TIMEOUT`),
/// and the image for a committed change.
const COMMIT_TIMEOUT_MS: Time = 10_000;
/// The retry backoff of a failed round: first wait and most (the broker's
/// `remote.log.manager.task.retry.backoff.ms` / `.max.ms`, shortened).
const BACKOFF_MS: (Time, Time) = (200, 5_000);
/// How often each broker applies local retention (`log.retention.check.interval.ms`).
pub(crate) const LOCAL_RETENTION_MS: Time = 250;

/// The three objects of a copy (`.log`, `.indexes`, `.rsm-manifest`), uploaded in this order.
pub(crate) const KINDS: [u8; 3] = [0, 1, 2];
/// How long before the end a sweep's listing must have been taken for an object it missed to
/// count as an orphan (its deletes take a few store round trips).
const SWEEP_SETTLE_MS: Time = 5_000;

/// The simulated bucket.
#[derive(Debug, Default)]
pub(crate) struct SimStore {
    /// `(partition, copy id, kind)` -> the copy's first offset (in its keys) and the batches
    /// of the `.log` (none for the others).
    pub(crate) objects: BTreeMap<(i32, Uuid, u8), (i64, Vec<Batch>)>,
    /// When each object in `objects` was last written.
    pub(crate) written_at: BTreeMap<(i32, Uuid, u8), Time>,
    /// When the last listing of each partition's objects was taken.
    pub(crate) listed_at: BTreeMap<i32, Time>,
    /// Requests hang until then.
    pub(crate) stall_until: Time,
    /// Requests fail (503) until then.
    pub(crate) errors_until: Time,
    ops: BTreeMap<u64, StoreOp>,
    next_op: u64,
}

/// One broker request to the store in progress: the objects left to write or delete, one
/// request at a time, or a listing.
#[derive(Debug, Clone)]
struct StoreOp {
    broker: i32,
    run: u32,
    partition: i32,
    id: Uuid,
    start_offset: i64,
    what: OpKind,
    left: Vec<u8>,
    /// A listing's answer.
    listed: Vec<Listed>,
}

#[derive(Debug, Clone)]
enum OpKind {
    /// PUTs of the three objects; the `.log`'s batches.
    Put(Vec<Batch>),
    Delete,
    List,
}

/// What a leader's copy task waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Nothing,
    /// The broker's image to reach an offset (until a deadline).
    Image(u64, Time),
    /// A commit's answer (until a deadline).
    Commit(u64, Time),
    /// A store request.
    Store(u64),
}

/// A led partition's copy task.
#[derive(Debug, Clone)]
pub(crate) struct TierSlot {
    task: CopyTask,
    wait: Wait,
    failures: u32,
    retry_at: Time,
    /// When the task was last asked to sweep (`None`: never).
    swept_at: Option<Time>,
}

/// The task's view of one broker's partition.
struct View<'a> {
    log: Option<&'a RemoteLog>,
    offset: u64,
    local: &'a SimLog,
    /// Copies only below this (the served high watermark; no transactions here).
    upper: i64,
}

impl PartitionView for View<'_> {
    fn remote_log(&self) -> Option<&RemoteLog> {
        self.log
    }
    fn image_offset(&self) -> u64 {
        self.offset
    }
    fn leader_epochs(&self) -> frieda_log::Epochs {
        self.local.epochs().clone()
    }
    fn copyable(&self, from: i64) -> Vec<LocalSegment> {
        self.local
            .closed_segments()
            .into_iter()
            .filter(|&(_, last)| last >= from && last < self.upper)
            .map(|(base, last)| LocalSegment {
                base_offset: base,
                last_offset: last,
                size_bytes: (last - base + 1) as u64 * 100,
                max_timestamp_ms: last,
            })
            .collect()
    }
    fn retention(&self, _copied_upto: i64) -> Option<TotalRetention> {
        // No total retention in the simulation: every acknowledged record must stay readable.
        None
    }
}

impl World {
    pub(crate) fn tiered(&self) -> bool {
        self.plan.shape.tier.is_some()
    }

    /// A broker starts: its logs roll segments, its tier timers run.
    pub(crate) fn tier_start(&mut self, id: i32) {
        let Some(tier) = self.plan.shape.tier.clone() else {
            return;
        };
        let n = tier.segment_records[(id - 1) as usize];
        for d in self.bm(id).disks.values_mut() {
            d.log.set_segment_records(n);
        }
        self.timer(id, tier.task_interval, Timer::TierTick);
        self.timer(id, LOCAL_RETENTION_MS, Timer::LocalRetention);
    }

    /// A replica was opened on broker `id`.
    pub(crate) fn tier_open(&mut self, id: i32, p: i32) {
        if let Some(tier) = &self.plan.shape.tier {
            let n = tier.segment_records[(id - 1) as usize];
            if let Some(d) = self.bm(id).disks.get_mut(&p) {
                d.log.set_segment_records(n);
            }
        }
    }

    /// `remote.log.manager.task.interval.ms`: a round for every led partition whose task is
    /// free (as the broker's `copier::run`).
    pub(crate) fn tier_tick(&mut self, id: i32) {
        let now = self.now;
        let led: Vec<(i32, i32)> = self
            .b(id)
            .replicas
            .iter()
            .filter(|(_, r)| matches!(r.repl.role(), frieda::replication::Role::Leader(_)))
            .map(|(p, r)| (*p, r.repl.leader_epoch()))
            .collect();
        let b = self.bm(id);
        b.tier.retain(|p, slot| {
            led.iter()
                .any(|(q, e)| q == p && *e == slot.task.leader_epoch())
        });
        for (p, epoch) in led {
            let b = self.bm(id);
            let slot = b.tier.entry(p).or_insert_with(|| TierSlot {
                task: CopyTask::new(id, epoch),
                wait: Wait::Nothing,
                failures: 0,
                retry_at: 0,
                swept_at: None,
            });
            match slot.wait {
                Wait::Image(_, deadline) | Wait::Commit(_, deadline) if now > deadline => {
                    // The broker gives up on the commit or the image (a RoundError::Commit).
                    let e = if matches!(slot.wait, Wait::Commit(..)) {
                        slot.task
                            .committed(Err(CommitError::Failed("timed out".into())))
                            .err()
                    } else {
                        Some(RoundError::Commit("the image did not catch up".into()))
                    };
                    slot.wait = Wait::Nothing;
                    if let Some(e) = e {
                        self.round_failed(id, p, e);
                    }
                    continue;
                }
                Wait::Nothing if now >= slot.retry_at => {
                    slot.task.begin_round();
                    self.drive(id, p);
                }
                _ => {}
            }
        }
        let interval = self
            .plan
            .shape
            .tier
            .as_ref()
            .map_or(1_000, |t| t.task_interval);
        self.timer(id, interval, Timer::TierTick);
    }

    /// Runs broker `id`'s task of `p` until it waits for something or its round ends.
    fn drive(&mut self, id: i32, p: i32) {
        for _ in 0..64 {
            let Some(mut slot) = self.bm(id).tier.remove(&p) else {
                return;
            };
            let now = self.now;
            // The broker's copier: a sweep every SWEEP_EVERY_INTERVALS task intervals.
            let interval = self
                .plan
                .shape
                .tier
                .as_ref()
                .map_or(1_000, |t| t.task_interval);
            let every = interval * u64::from(frieda::tiering::copier::SWEEP_EVERY_INTERVALS);
            if slot.swept_at.is_none_or(|at| now >= at + every) {
                slot.swept_at = Some(now);
                slot.task.request_sweep();
            }
            let step = {
                let b = self.b(id);
                let (Some(d), Some(_)) = (b.disks.get(&p), b.replicas.get(&p)) else {
                    return;
                };
                let view = View {
                    log: b.image.remote_log(TOPIC, p),
                    offset: b.image.offset,
                    local: &d.log,
                    upper: self.served_hw(id, p),
                };
                slot.task.poll(&view)
            };
            let now = self.now;
            match step {
                Step::Idle => {
                    slot.wait = Wait::Nothing;
                    slot.failures = 0;
                    self.bm(id).tier.insert(p, slot);
                    return;
                }
                Step::AwaitImage(offset) => {
                    slot.wait = Wait::Image(offset, now + COMMIT_TIMEOUT_MS);
                    self.bm(id).tier.insert(p, slot);
                    return;
                }
                Step::Prepare(seg) => {
                    let epochs = self.b(id).disks[&p]
                        .log
                        .epochs_in(seg.base_offset, seg.last_offset);
                    let copy_id = Uuid::from_u128(self.rng.gen());
                    let r = slot.task.prepared(Ok(epochs), copy_id);
                    self.bm(id).tier.insert(p, slot);
                    if let Err(e) = r {
                        self.round_failed(id, p, e);
                        return;
                    }
                }
                Step::Commit(change) => {
                    let b = self.bm(id);
                    b.next_req += 1;
                    let req = b.next_req;
                    slot.wait = Wait::Commit(req, now + COMMIT_TIMEOUT_MS);
                    let leader_epoch = slot.task.leader_epoch();
                    b.tier.insert(p, slot);
                    self.send(
                        Node::Broker(id),
                        Node::Controller,
                        Msg::RemoteCommit {
                            req,
                            partition: p,
                            leader_epoch,
                            change,
                        },
                    );
                    return;
                }
                Step::Upload(meta) => {
                    // The segment's whole file, read now (closed segments do not change).
                    let log = &self.b(id).disks[&p].log;
                    let content = log
                        .closed_segments()
                        .into_iter()
                        .find(|&(base, last)| base <= meta.start_offset && last == meta.end_offset)
                        .map(|(base, last)| {
                            log.read(base, usize::MAX)
                                .into_iter()
                                .take_while(|b| b.base <= last)
                                .collect::<Vec<Batch>>()
                        });
                    let Some(content) = content else {
                        let r = slot
                            .task
                            .uploaded(Err("no closed local segment holds it".into()));
                        self.bm(id).tier.insert(p, slot);
                        if let Err(e) = r {
                            self.round_failed(id, p, e);
                        }
                        return;
                    };
                    let op = self.store_request(id, p, &meta, OpKind::Put(content));
                    slot.wait = Wait::Store(op);
                    self.bm(id).tier.insert(p, slot);
                    return;
                }
                Step::DeleteObjects(meta) => {
                    let op = self.store_request(id, p, &meta, OpKind::Delete);
                    slot.wait = Wait::Store(op);
                    self.bm(id).tier.insert(p, slot);
                    return;
                }
                Step::ListObjects => {
                    let dummy = RemoteSegment {
                        id: Uuid::nil(),
                        start_offset: 0,
                        end_offset: 0,
                        max_timestamp_ms: 0,
                        size_bytes: 0,
                        broker: id,
                        leader_epoch: 0,
                        segment_epochs: Vec::new(),
                        truncated: false,
                        state: frieda_meta::remote_log::RemoteSegmentState::DeleteStarted,
                    };
                    let op = self.store_request(id, p, &dummy, OpKind::List);
                    slot.wait = Wait::Store(op);
                    self.bm(id).tier.insert(p, slot);
                    return;
                }
            }
        }
    }

    fn trace_done(&mut self, id: i32, p: i32, done: &frieda::tiering::task::Completed) {
        use frieda::tiering::task::Completed;
        match done {
            Completed::Copied(_) => self.stats.copies += 1,
            Completed::Truncated(_) => self.stats.remote_truncations += 1,
            _ => {}
        }
        if let Some(t) = &mut self.trace {
            t.push(format!(
                "{:>6} broker {id}: partition {p}: {done:?}",
                self.now
            ));
        }
    }

    fn round_failed(&mut self, id: i32, p: i32, e: RoundError) {
        let now = self.now;
        self.log(|| format!("broker {id}: partition {p}: copy round stopped: {e}"));
        let b = self.bm(id);
        if matches!(e, RoundError::Deposed(_)) {
            b.tier.remove(&p);
            return;
        }
        if let Some(slot) = b.tier.get_mut(&p) {
            slot.failures += 1;
            let wait = (BACKOFF_MS.0 << slot.failures.min(10)).min(BACKOFF_MS.1);
            slot.retry_at = now + wait;
            slot.wait = Wait::Nothing;
        }
    }

    /// Broker `id`'s image advanced: tasks waiting for it go on.
    pub(crate) fn tier_image_advanced(&mut self, id: i32) {
        let offset = self.b(id).image.offset;
        let ready: Vec<i32> = self
            .b(id)
            .tier
            .iter()
            .filter(|(_, s)| matches!(s.wait, Wait::Image(o, _) if o <= offset))
            .map(|(p, _)| *p)
            .collect();
        for p in ready {
            if let Some(s) = self.bm(id).tier.get_mut(&p) {
                s.wait = Wait::Nothing;
            }
            self.drive(id, p);
        }
    }

    /// The controller receives a remote-segment change.
    pub(crate) fn tier_commit(
        &mut self,
        from: Node,
        req: u64,
        p: i32,
        leader_epoch: i32,
        change: RemoteSegmentChange,
    ) {
        let topic_id = self
            .controller
            .image
            .topics
            .get(TOPIC)
            .map(|t| t.id)
            .unwrap_or_default();
        let result = self
            .commit(frieda_meta::MetaCommand::RemoteSegment {
                topic: TOPIC.into(),
                topic_id,
                partition: p,
                leader_epoch,
                change,
            })
            .map(|_| self.controller.image.offset);
        self.check_copies(p);
        self.check_tier_readable(p, "after a remote-segment change");
        self.send(
            Node::Controller,
            from,
            Msg::RemoteCommitReply {
                req,
                partition: p,
                result,
            },
        );
    }

    /// A leader receives the answer to its commit.
    pub(crate) fn tier_commit_reply(
        &mut self,
        id: i32,
        req: u64,
        p: i32,
        result: Result<u64, MetaError>,
    ) {
        let Some(slot) = self.bm(id).tier.get_mut(&p) else {
            return;
        };
        if !matches!(slot.wait, Wait::Commit(r, _) if r == req) {
            return;
        }
        slot.wait = Wait::Nothing;
        let result = result.map_err(|e| match e {
            MetaError::StaleLeader(_) => CommitError::Deposed,
            e => CommitError::Failed(e.to_string()),
        });
        let r = slot.task.committed(result);
        match r {
            Ok(Some(done)) => {
                self.trace_done(id, p, &done);
                self.drive(id, p);
            }
            Ok(None) => self.drive(id, p),
            Err(e) => self.round_failed(id, p, e),
        }
    }

    // ------------------------------------------------------------------ object store

    fn store_latency(&mut self) -> Time {
        let (lo, hi) = self
            .plan
            .shape
            .tier
            .as_ref()
            .map_or((1, 2), |t| t.store_latency);
        self.rng.gen_range(lo..=hi)
    }

    /// Broker `id` starts writing or deleting the objects of `meta` (one request after the
    /// other), or listing the partition's objects.
    fn store_request(&mut self, id: i32, p: i32, meta: &RemoteSegment, what: OpKind) -> u64 {
        self.store.next_op += 1;
        let op = self.store.next_op;
        let run = self.b(id).run;
        let left = match what {
            OpKind::List => vec![0],
            _ => KINDS.to_vec(),
        };
        self.store.ops.insert(
            op,
            StoreOp {
                broker: id,
                run,
                partition: p,
                id: meta.id,
                start_offset: meta.start_offset,
                what,
                left,
                listed: Vec::new(),
            },
        );
        let delay = self.store_latency();
        self.after(delay, Event::StoreDone(op));
        op
    }

    /// A store request completes (or, while the store stalls, waits longer).
    pub(crate) fn store_done(&mut self, op: u64) {
        if self.now < self.store.stall_until {
            let at = self.store.stall_until + self.store_latency();
            self.push(at, Event::StoreDone(op));
            return;
        }
        let Some(mut o) = self.store.ops.remove(&op) else {
            return;
        };
        let failed = self.now < self.store.errors_until;
        if !failed {
            let kind = o.left.remove(0);
            let key = (o.partition, o.id, kind);
            match &o.what {
                OpKind::Put(batches) => {
                    let v = if kind == 0 {
                        batches.clone()
                    } else {
                        Vec::new()
                    };
                    self.store.objects.insert(key, (o.start_offset, v));
                    self.store.written_at.insert(key, self.now);
                    let (b, id) = (o.broker, o.id);
                    self.log(|| {
                        format!("store: object {kind} of copy {id} written (sent by broker {b})")
                    });
                }
                OpKind::Delete => {
                    self.store.objects.remove(&key);
                    self.store.written_at.remove(&key);
                    self.check_tier_readable(o.partition, "after an object was deleted");
                }
                OpKind::List => {
                    let mut found: Vec<Listed> = self
                        .store
                        .objects
                        .iter()
                        .filter(|((q, _, _), _)| *q == o.partition)
                        .map(|((_, id, _), (start, _))| Listed {
                            id: *id,
                            start_offset: *start,
                        })
                        .collect();
                    found.dedup();
                    o.listed = found;
                    self.store.listed_at.insert(o.partition, self.now);
                }
            }
        }
        let (broker, run) = (o.broker, o.run);
        let more = !failed && !o.left.is_empty();
        self.store.ops.insert(op, o);
        // The answer reaches the broker process (or not: it died); it sends the next request.
        self.push(
            self.now,
            Event::StoreReply {
                broker,
                run,
                op,
                failed,
                more,
            },
        );
    }

    /// Broker `id` gets a store answer.
    pub(crate) fn store_reply(&mut self, id: i32, op: u64, failed: bool, more: bool) {
        if more {
            let delay = self.store_latency();
            self.after(delay, Event::StoreDone(op));
            return;
        }
        let Some(o) = self.store.ops.remove(&op) else {
            return;
        };
        let p = o.partition;
        let Some(slot) = self.bm(id).tier.get_mut(&p) else {
            return;
        };
        if slot.wait != Wait::Store(op) {
            return;
        }
        slot.wait = Wait::Nothing;
        let result = if failed {
            Err("503 SlowDown".to_string())
        } else {
            Ok(())
        };
        let r = match o.what {
            OpKind::Put(_) => slot.task.uploaded(result),
            OpKind::Delete => slot.task.objects_deleted(result).map(|done| {
                if let Some(done) = done {
                    self.trace_done(id, p, &done);
                }
            }),
            OpKind::List => {
                let n = o.listed.len();
                self.log(|| format!("broker {id}: partition {p}: listed {n} copies in the bucket"));
                let slot = self.bm(id).tier.get_mut(&p).expect("checked above");
                slot.task.listed(result.map(|()| o.listed))
            }
        };
        match r {
            Ok(()) => self.drive(id, p),
            Err(e) => self.round_failed(id, p, e),
        }
    }

    // ------------------------------------------------------------------ local retention

    /// `log.retention.check.interval.ms` on broker `id`: local retention of every tiered
    /// replica over the copies its own image shows.
    pub(crate) fn local_retention(&mut self, id: i32) {
        let keep = self.plan.shape.tier.as_ref().map_or(0, |t| t.keep_local);
        let parts: Vec<i32> = self.b(id).replicas.keys().copied().collect();
        for p in parts {
            let (deletable, epochs) = self
                .b(id)
                .image
                .remote_log(TOPIC, p)
                .map(|l| (l.covered_end().unwrap_or(-1), l.covered_epochs()))
                .unwrap_or((-1, Vec::new()));
            let removed = match self.bm(id).disks.get_mut(&p) {
                Some(d) => d.log.remove_local(deletable, &epochs, keep),
                None => continue,
            };
            if removed.is_empty() {
                continue;
            }
            self.log(|| format!("broker {id}: partition {p}: local retention removed {removed:?} (covered up to {deletable})"));
            self.check_tier_readable(p, "after local retention");
            let isr = self
                .controller
                .image
                .partition(TOPIC, p)
                .map(|s| s.isr.contains(&id) || s.elr.contains(&id))
                .unwrap_or(false);
            if isr {
                self.check_isr_members(p, &[id], "after local retention");
            }
            if self.violation.is_some() {
                return;
            }
        }
        self.timer(id, LOCAL_RETENTION_MS, Timer::LocalRetention);
    }

    // ------------------------------------------------------------------ replication

    /// The leader's answer to a follower fetch below its local log start: the offsets are only
    /// remote (KIP-405's OFFSET_MOVED_TO_TIERED_STORAGE).
    pub(crate) fn tier_fetch_below_start(&self, id: i32, p: i32, offset: i64) -> bool {
        self.tiered()
            && self
                .b(id)
                .disks
                .get(&p)
                .is_some_and(|d| offset < d.log.log_start_offset())
    }

    /// A follower told its next offsets are only remote (the broker's fetcher): it starts its
    /// log again above everything its image says was copied, if that is above `offset`.
    pub(crate) fn tier_start_again(&mut self, id: i32, p: i32, offset: i64) -> bool {
        let remote = self.b(id).image.remote_log(TOPIC, p);
        let start = remote.and_then(RemoteLog::copied_upto).map_or(0, |e| e + 1);
        if start <= offset {
            return false;
        }
        let epochs = remote.map(|l| l.epochs_upto(start - 1)).unwrap_or_default();
        let b = self.bm(id);
        let (Some(d), Some(r)) = (b.disks.get_mut(&p), b.replicas.get_mut(&p)) else {
            return false;
        };
        if d.log.start_again(start, &epochs).is_err() {
            return false;
        }
        r.repl.on_truncated(start);
        r.repl.follower_high_watermark(start, start);
        r.fetch_starts_again();
        self.log(|| format!("broker {id}: partition {p}: fetch offset {offset} only remote; log starts again at {start}"));
        true
    }

    // ------------------------------------------------------------------ checks

    /// Whether acknowledged batch `bid` at `base` of `p` is in a finished copy of the
    /// controller's image whose objects are all in the bucket and whose `.log` holds it.
    pub(crate) fn remotely_held(&self, p: i32, base: i64, bid: u64) -> bool {
        let Some(s) = self
            .controller
            .image
            .remote_log(TOPIC, p)
            .and_then(|l| l.finished_holding(base))
        else {
            return false;
        };
        let objects = &self.store.objects;
        KINDS.iter().all(|k| objects.contains_key(&(p, s.id, *k)))
            && objects[&(p, s.id, 0)]
                .1
                .iter()
                .any(|b| b.base == base && b.id == bid)
    }

    /// Every acknowledged `acks=all` record of `p` is readable: in some replica's local log or
    /// in a finished copy (nothing total retention may delete here).
    pub(crate) fn check_tier_readable(&mut self, p: i32, when: &str) {
        if !self.tiered() || self.violation.is_some() {
            return;
        }
        let unreadable = self
            .acked
            .iter()
            .filter(|(bid, a)| a.partition == p && a.acks == -1 && !self.exempt(**bid))
            .find(|(bid, a)| {
                let local = self.brokers.iter().any(|b| {
                    b.disks
                        .get(&p)
                        .is_some_and(|d| d.log.batch_at(a.base).is_some_and(|x| x.id == **bid))
                });
                !local && !self.remotely_held(p, a.base, **bid)
            })
            .map(|(bid, a)| (*bid, a.base));
        if let Some((bid, base)) = unreadable {
            let copies: Vec<String> = self
                .controller
                .image
                .remote_log(TOPIC, p)
                .map(|l| {
                    l.finished()
                        .map(|s| format!("[{}, {}] {}", s.start_offset, s.end_offset, s.id))
                        .collect()
                })
                .unwrap_or_default();
            self.violate(
                "acked-record-unreadable",
                format!("partition {p} ({when}): acknowledged batch {bid} at offset {base} is in no replica's local log and no finished copy in the bucket; finished copies {copies:?}"),
            );
        }
    }

    /// The controller's finished copies of `p` never overlap and each has its objects.
    pub(crate) fn check_copies(&mut self, p: i32) {
        let Some(log) = self.controller.image.remote_log(TOPIC, p) else {
            return;
        };
        let finished: Vec<&RemoteSegment> = log.finished().collect();
        if let Some(w) = finished
            .windows(2)
            .find(|w| w[0].end_offset >= w[1].start_offset)
        {
            let d = format!(
                "partition {p}: finished copies [{}, {}] and [{}, {}] overlap",
                w[0].start_offset, w[0].end_offset, w[1].start_offset, w[1].end_offset
            );
            self.violate("finished-copies-overlap", d);
            return;
        }
        let missing = finished.iter().find(|s| {
            KINDS
                .iter()
                .any(|k| !self.store.objects.contains_key(&(p, s.id, *k)))
        });
        if let Some(s) = missing {
            let d = format!(
                "partition {p}: finished copy {} [{}, {}] lacks objects in the bucket",
                s.id, s.start_offset, s.end_offset
            );
            self.violate("finished-copy-without-objects", d);
        }
    }

    /// After quiescence: every object in the bucket belongs to a registered copy, each
    /// finished copy still holds its objects, and the finished copies are of the leader's
    /// lineage (their batches' leader epochs agree with its epoch cache: a copy of records
    /// the leader's log no longer has was truncated away; seed 1085).
    pub(crate) fn check_tier_end(&mut self) {
        if !self.tiered() {
            return;
        }
        for p in 0..self.plan.shape.partitions {
            self.check_copies(p);
            self.check_tier_readable(p, "at the end");
            if self.violation.is_some() {
                return;
            }
            let leader = self
                .controller
                .image
                .partition(TOPIC, p)
                .map_or(-1, |s| s.leader);
            let diverged = (leader > 0 && self.b(leader).up)
                .then(|| {
                    let epochs = self.b(leader).disks.get(&p)?.log.epochs();
                    self.controller
                        .image
                        .remote_log(TOPIC, p)?
                        .divergence(epochs)
                })
                .flatten();
            if let Some(offset) = diverged {
                let d = format!("partition {p}: after quiescence the finished copies hold records of another lineage than leader {leader}'s log from offset {offset}");
                self.violate("copies-off-lineage", d);
                return;
            }
        }
        // A copy still registered (finished, in progress, being deleted) is live; an object of
        // any other id is an orphan once a sweep had its chance: a listing of its partition
        // taken after the object was written, at least SWEEP_SETTLE_MS before the end. (A late
        // PUT of an abandoned copy can land after the faults healed and after the last sweep
        // of the run: seed 5418, written at 42,001 ms, next sweep after the end.)
        let end = self.now;
        let orphan = self.store.objects.keys().find(|key| {
            let (p, id, _) = **key;
            let registered = self
                .controller
                .image
                .remote_log(TOPIC, p)
                .is_some_and(|l| l.is_registered(id));
            let written = self.store.written_at.get(key).copied().unwrap_or(0);
            let swept = self
                .store
                .listed_at
                .get(&p)
                .is_some_and(|&at| at > written && at + SWEEP_SETTLE_MS <= end);
            !registered && swept
        });
        if let Some((p, id, kind)) = orphan {
            let deleted = self
                .controller
                .image
                .remote_log(TOPIC, *p)
                .is_some_and(|l| l.was_deleted(*id));
            let d = format!("partition {p}: object {kind} of copy {id} is in the bucket after quiescence, but the image registers no copy {id} (one it deleted: {deleted})");
            self.violate("orphan-object", d);
        }
    }
}
