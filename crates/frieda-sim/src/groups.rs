//! The group coordinator's offsets log (issue 57): offset commits written to an offsets
//! partition as the broker writes them, and each coordinator's state kept by the broker's own
//! state machine ([`frieda::coordinator::offsets::state::OffsetsState`]).
//!
//! What is the broker's code and what is simulated:
//! - the state machine is the broker's: a coordinator that loads replays its log through
//!   `OffsetsState::replay`, and the writes it appends are applied in log order through
//!   `OffsetsState::land`, only once they replicated as asked (Kafka's
//!   `failPendingOffsetWrite`), which answers the committer;
//! - the write path mirrors `OffsetStore::write_as`: `min.insync.replicas` checked before the
//!   append (`Replication::check_writable`), an `acks=all` wait of at most
//!   `offsets::REPLICATION_TIMEOUT` (`Replication::ack_status`, the same rule
//!   `wait_replicated` polls), errors mapped by `offsets::append_error`; the broker's lease
//!   before the append and again before the answer (`coordinator::LeaseCheck`: the write path had
//!   no lease check until seed 314 showed a fenced coordinator acknowledging commits);
//! - the reconciler's rule (`cluster/reconciler.rs` `take_role`): a broker loads the
//!   coordinator when the image makes it the offsets partition's leader and it has none
//!   loaded, and unloads it when it becomes a follower or goes offline (or the process stops).
//!
//! Each commit (and each marker) is one record in one batch; its committed offset is the commit's request id
//! (unique in a run), so a coordinator's answer names the write it came from.
//!
//! Invariants:
//! - `offset-commit-lost`: a commit answered OK is, for every coordinator that loads later
//!   and for the final one, served (OffsetFetch) as itself or as a commit written after it in
//!   that coordinator's log: "a commit answered OK survives any failover `acks=all` survives"
//!   (commits a power loss without fsync voided are exempt, as acknowledged records are);
//! - `offset-commit-not-served`: the coordinator that answered a commit OK serves it (or a
//!   later one) at once;
//! - `uncommitted-offset-served`: no coordinator ever serves the offset of a transaction
//!   that did not commit (TxnOffsetCommit stays pending until its marker; an ABORT drops it);
//! - `liveness-no-commits-after-heal`: after the faults heal, commits are answered OK again.
//!
//! Transactions: a third of the commits are a transactional producer's TxnOffsetCommit; its
//! transaction coordinator (simulated, outside the brokers) then writes the marker to the
//! offsets partition's leader as `write_marker_locally` does, again every second until one is
//! answered OK, and a committed transaction's offset counts as answered OK from then on, at
//! its TxnOffsetCommit's place in the log (which decides against other commits, as Kafka's
//! `replayEndTransactionMarker`).

use std::collections::BTreeMap;

use bytes::Bytes;
use frieda::coordinator::offsets::codec::{self, LogKey, OffsetValue};
use frieda::coordinator::offsets::state::{Landed, LogRecord, OffsetsState};
use frieda::coordinator::offsets::{append_error, TopicPartition};
use kafka_protocol::error::ResponseError;

use crate::net::{Msg, Node};
use crate::share::{share_topic_id, SHARE_GROUP, SHARE_PARTITION};
use crate::world::{Appending, Event, World};

/// The group names commits are made for.
const GROUPS: [&str; 3] = ["g0", "g1", "g2"];
/// The topic whose consumed positions are committed (a name only: nothing reads it).
const CONSUMED: &str = "events";

/// The broker's state machine as the simulator runs it: a write's waiter is its request id
/// and where the write is in the log.
type SimState = OffsetsState<(u64, i64)>;

/// The coordinator a broker runs while it leads the offsets partition.
pub(crate) struct SimCoordinator {
    /// Which load this is, its number in the run (writes of an earlier load are not reported
    /// to this one).
    pub(crate) load: u64,
    /// The broker's state machine.
    pub(crate) state: SimState,
    /// The log end offset the load replayed to (`OffsetStore::is_committed`): nothing is
    /// served until the high watermark reaches it.
    loaded_end: i64,
    /// The high watermark reached `loaded_end`: it serves.
    committed: bool,
    /// The last share state write the load replayed (its counts are promised once committed).
    last_share_write: u64,
}

/// What a commit request wrote: `group` commits `offset` for `tp`.
#[derive(Debug, Clone)]
pub(crate) struct CommitWrite {
    pub(crate) group: &'static str,
    pub(crate) tp: TopicPartition,
    /// The producer id of a transactional commit (TxnOffsetCommit).
    pub(crate) txn: Option<i64>,
}

/// A transaction that commits offsets, as its transaction coordinator sees it.
#[derive(Debug, Clone)]
pub(crate) struct Txn {
    /// Its TxnOffsetCommit's request id.
    pub(crate) write: u64,
    /// The plan aborts it.
    pub(crate) abort: bool,
    /// The TxnOffsetCommit's answer: where it is in the log, or an error.
    pub(crate) written: Option<Result<i64, ()>>,
    /// COMMIT (true) or ABORT, once the first marker was sent.
    pub(crate) decided: Option<bool>,
    /// A marker was answered OK (replicated): the transaction is complete.
    pub(crate) complete: bool,
    /// The marker request in flight and when the coordinator gives up waiting for its answer
    /// (as Kafka's `TransactionMarkerChannelManager`, it sends again only after an answer or
    /// the request timeout: resending every second regardless piled up marker batches on an
    /// offsets partition whose follower catches up one batch per fetch, seeds 857 and 3293).
    pub(crate) in_flight: Option<(u64, crate::Time)>,
}

/// A commit answered OK.
#[derive(Debug, Clone)]
pub(crate) struct CommitOk {
    pub(crate) id: u64,
    /// Where the write it answered for is in the log (a commit delivered twice is written
    /// twice, as Kafka writes a retried OffsetCommit twice).
    pub(crate) base: i64,
    pub(crate) broker: i32,
    pub(crate) time: crate::Time,
    /// The COMMIT marker that made a transactional commit count: a power loss without fsync
    /// that voided the marker voids the commit too.
    pub(crate) marker: Option<u64>,
}

/// The simulator's record of commits: what each write holds, and which were answered OK.
#[derive(Default)]
pub(crate) struct Commits {
    /// Every commit write by request id (= batch id).
    pub(crate) writes: BTreeMap<u64, CommitWrite>,
    /// Commits answered OK, by (group, partition).
    pub(crate) ok: BTreeMap<(&'static str, TopicPartition), Vec<CommitOk>>,
    /// Transactions by producer id.
    pub(crate) txns: BTreeMap<i64, Txn>,
    /// Transaction markers by request (= batch) id: producer id, commit.
    pub(crate) markers: BTreeMap<u64, (i64, bool)>,
}

/// How long a transactional producer waits for its TxnOffsetCommit's answer before its
/// transaction aborts, ms.
const TXN_WRITE_TIMEOUT_MS: crate::Time = 6_000;
/// How often a transaction coordinator writes a marker again until one is answered OK, ms.
const MARKER_RETRY_MS: crate::Time = 1_000;

impl CommitWrite {
    /// `group`'s (an index into [`GROUPS`]) commit of partition `key`, in producer `txn`'s
    /// transaction if any.
    fn new(group: u8, key: u8, txn: Option<i64>) -> CommitWrite {
        CommitWrite {
            group: GROUPS[group as usize % GROUPS.len()],
            tp: (CONSUMED.to_string(), i32::from(key)),
            txn,
        }
    }

    fn key(&self) -> LogKey {
        LogKey::Offset {
            group: self.group.to_string(),
            topic: self.tp.0.clone(),
            partition: self.tp.1,
        }
    }

    fn value(id: u64) -> Bytes {
        codec::encode_offset(&OffsetValue {
            offset: id as i64,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: 0,
        })
    }
}

impl World {
    /// The offsets partition of this run, if the run has one.
    pub(crate) fn offsets_partition(&self) -> Option<i32> {
        self.plan.shape.offsets_partition
    }

    /// A client commits the next offset of `group`'s partition `key` to the coordinator it
    /// believes in (a random broker when `stale`).
    pub(crate) fn offset_commit(&mut self, group: u8, key: u8, stale: bool) {
        let Some(op) = self.offsets_partition() else {
            return;
        };
        let req = self.next_request_id();
        let leader = self.client_target(op, stale);
        self.commits
            .writes
            .insert(req, CommitWrite::new(group, key, None));
        self.send(
            Node::Client,
            Node::Broker(leader),
            Msg::OffsetCommit { req },
        );
    }

    /// A transactional producer (a new producer id) commits the next offset of `group`'s
    /// partition `key` in its transaction (TxnOffsetCommit), then its transaction ends: COMMIT
    /// once the commit was answered OK (ABORT if `abort`, if it failed or if no answer came in
    /// [`TXN_WRITE_TIMEOUT_MS`]).
    pub(crate) fn txn_offset_commit(&mut self, group: u8, key: u8, abort: bool) {
        let Some(op) = self.offsets_partition() else {
            return;
        };
        let req = self.next_request_id();
        let pid = req as i64;
        self.commits
            .writes
            .insert(req, CommitWrite::new(group, key, Some(pid)));
        self.commits.txns.insert(
            pid,
            Txn {
                write: req,
                abort,
                written: None,
                decided: None,
                complete: false,
                in_flight: None,
            },
        );
        let leader = self.client_target(op, false);
        self.send(
            Node::Client,
            Node::Broker(leader),
            Msg::OffsetCommit { req },
        );
        self.after(TXN_WRITE_TIMEOUT_MS, Event::TxnMarker(pid));
    }

    /// The transaction coordinator of `pid` writes its marker to the offsets partition's
    /// leader (again, every [`MARKER_RETRY_MS`], until one is answered OK).
    pub(crate) fn send_txn_marker(&mut self, pid: i64) {
        let Some(op) = self.offsets_partition() else {
            return;
        };
        let Some(t) = self.commits.txns.get_mut(&pid) else {
            return;
        };
        if t.complete {
            return;
        }
        if t.in_flight.is_some_and(|(_, until)| self.now < until) {
            self.after(MARKER_RETRY_MS, Event::TxnMarker(pid));
            return;
        }
        t.in_flight = None;
        let commit = *t
            .decided
            .get_or_insert(matches!(t.written, Some(Ok(_))) && !t.abort);
        let leader = self
            .controller
            .image
            .partition(crate::world::TOPIC, op)
            .map(|s| s.leader)
            .filter(|l| *l > 0);
        if let Some(leader) = leader {
            let req = self.next_request_id();
            let until = self.now
                + frieda::broker::txn_markers::MARKER_REPLICATION_TIMEOUT.as_millis()
                    as crate::Time
                + MARKER_RETRY_MS;
            if let Some(t) = self.commits.txns.get_mut(&pid) {
                t.in_flight = Some((req, until));
            }
            self.commits.markers.insert(req, (pid, commit));
            self.send(
                Node::Client,
                Node::Broker(leader),
                Msg::TxnMarker { req, pid, commit },
            );
        }
        self.after(MARKER_RETRY_MS, Event::TxnMarker(pid));
    }

    /// WriteTxnMarkers at broker `id` for the offsets partition (`write_marker_locally`: the
    /// lease, `min.insync.replicas`, the append, the wait of at most
    /// `MARKER_REPLICATION_TIMEOUT`, the lease again).
    pub(crate) fn on_txn_marker(&mut self, id: i32, req: u64, pid: i64, commit: bool) {
        let Some(op) = self.offsets_partition() else {
            return;
        };
        if !self.b(id).replicas.contains_key(&op) {
            self.marker_answered(pid, req);
            return;
        }
        let epoch = match self.check_append(id, op, true) {
            Ok(epoch) => epoch,
            Err(e) => {
                self.log(|| format!("broker {id}: refuses the marker of producer {pid}: {e:?}"));
                self.marker_answered(pid, req);
                return;
            }
        };
        let timeout =
            frieda::broker::txn_markers::MARKER_REPLICATION_TIMEOUT.as_millis() as crate::Time;
        let write = Appending {
            req,
            acks: -1,
            count: 1,
            timeout,
            coordinator: None,
            marker: Some((pid, commit)),
            reply: None,
        };
        if let Err(e) = self.append_pending(id, op, epoch, write) {
            self.log(|| format!("broker {id}: cannot append the marker of producer {pid}: {e:?}"));
            self.marker_answered(pid, req);
        }
    }

    /// Marker request `req` of `pid` was answered (its error is not simulated in flight): the
    /// coordinator may send again.
    fn marker_answered(&mut self, pid: i64, req: u64) {
        if let Some(t) = self.commits.txns.get_mut(&pid) {
            if t.in_flight.is_some_and(|(r, _)| r == req) {
                t.in_flight = None;
            }
        }
    }

    /// A marker's replication wait ended at broker `id`: it lands in the coordinator loaded
    /// there (`GroupCoordinators::land_marker`, replicated or not); answered OK, the
    /// transaction is complete.
    pub(crate) fn marker_landed(
        &mut self,
        id: i32,
        req: u64,
        pid: i64,
        commit: bool,
        base: i64,
        result: Result<(), ResponseError>,
    ) {
        self.marker_answered(pid, req);
        let replicated = result.is_ok();
        let entry = Landed::Marker {
            producer_id: pid,
            commit,
            replicated,
        };
        self.coordinator_land(id, None, base, entry);
        if self.violation.is_some() || !replicated {
            return;
        }
        let now = self.now;
        let Some(t) = self.commits.txns.get_mut(&pid) else {
            return;
        };
        if t.complete {
            return;
        }
        t.complete = true;
        let (write, written) = (t.write, t.written);
        self.log(|| {
            format!("broker {id}: marker {req} of producer {pid} answered OK (commit: {commit})")
        });
        if let (true, Some(Ok(base))) = (commit, written) {
            // A committed transaction's offset counts from now, at its TxnOffsetCommit's place
            // in the log.
            let w = self.commits.writes[&write].clone();
            self.stats.commits_ok += 1;
            self.commits
                .ok
                .entry((w.group, w.tp.clone()))
                .or_default()
                .push(CommitOk {
                    id: write,
                    base,
                    broker: id,
                    time: now,
                    marker: Some(req),
                });
        }
    }

    /// OffsetCommit at broker `id` (the write path of `OffsetStore::write_as`).
    pub(crate) fn on_offset_commit(&mut self, id: i32, req: u64) {
        if let Err(e) = self.coordinator_append(id, req) {
            self.log(|| format!("broker {id}: answers offset commit {req} with {e:?}"));
        }
    }

    /// Broker `id`'s group coordinator appends write `req` to the offsets partition
    /// (`OffsetStore::write_as`: the lease and `min.insync.replicas` before the append, then
    /// the wait); its outcome lands in the coordinator's state ([`Self::commit_landed`]).
    ///
    /// Errors: NOT_COORDINATOR without a coordinator loaded, else `append_error`'s.
    pub(crate) fn coordinator_append(&mut self, id: i32, req: u64) -> Result<(), ResponseError> {
        let op = self
            .offsets_partition()
            .ok_or(ResponseError::NotCoordinator)?;
        let load = self
            .b(id)
            .groups
            .as_ref()
            .map(|c| c.load)
            .ok_or(ResponseError::NotCoordinator)?;
        if !self.group_serves(id) {
            return Err(ResponseError::CoordinatorLoadInProgress);
        }
        let epoch = self.check_append(id, op, true).map_err(append_error)?;
        let timeout = frieda::coordinator::offsets::REPLICATION_TIMEOUT.as_millis() as crate::Time;
        let write = Appending {
            req,
            acks: -1,
            count: 1,
            timeout,
            coordinator: Some(load),
            marker: None,
            reply: None,
        };
        self.append_pending(id, op, epoch, write)
            .map_err(append_error)
    }

    /// The replication wait of a coordinator write of load `load` ended with `result`: the
    /// write lands in the coordinator's state (if that load still runs), which answers the
    /// commits it applied.
    pub(crate) fn commit_landed(
        &mut self,
        id: i32,
        load: u64,
        req: u64,
        base: i64,
        result: Result<(), ResponseError>,
    ) {
        if self.txns.writes.contains_key(&req) {
            // A transaction coordinator's record (`crate::txn`).
            self.txn_write_landed(id, load, req, result);
            return;
        }
        let (records, txn) = match self.commits.writes.get(&req) {
            Some(w) => (vec![(w.key(), Some(CommitWrite::value(req)))], w.txn),
            None => match self.share_records(req) {
                Some(records) => (records, None),
                None => return,
            },
        };
        let entry = Landed::Write {
            records,
            waiter: (req, base),
            replicated: result.map_err(append_error),
            txn,
        };
        self.coordinator_land(id, Some(load), base, entry);
    }

    /// `entry`, at `base` of the log, lands in broker `id`'s coordinator (of load `load` for
    /// a write, any for a marker); the writes it answers are answered.
    fn coordinator_land(
        &mut self,
        id: i32,
        load: Option<u64>,
        base: i64,
        entry: Landed<(u64, i64)>,
    ) {
        let now = self.now;
        let Some(c) = self
            .bm(id)
            .groups
            .as_mut()
            .filter(|c| load.is_none_or(|load| c.load == load))
        else {
            return;
        };
        let answered = c.state.land(base, 1, entry);
        for ((done, at), outcome) in answered {
            let Some(w) = self.commits.writes.get(&done).cloned() else {
                // A share-partition's state (`crate::share`).
                self.share_write_landed(id, done, outcome);
                continue;
            };
            if let Some(pid) = w.txn {
                // A TxnOffsetCommit's answer goes to its producer, which ends the transaction.
                if let Some(t) = self.commits.txns.get_mut(&pid) {
                    if t.written.is_none() {
                        t.written = Some(outcome.as_ref().map(|()| at).map_err(|_| ()));
                    }
                }
                let r = outcome;
                self.log(|| {
                    format!(
                        "broker {id}: answers txn offset commit {done} (producer {pid}) with {r:?}"
                    )
                });
                self.after(1, Event::TxnMarker(pid));
                continue;
            }
            match outcome {
                Ok(()) => {
                    self.stats.commits_ok += 1;
                    self.log(|| {
                        format!(
                            "broker {id}: answers offset commit {done} OK ({} {:?})",
                            w.group, w.tp
                        )
                    });
                    self.commits
                        .ok
                        .entry((w.group, w.tp.clone()))
                        .or_default()
                        .push(CommitOk {
                            id: done,
                            base: at,
                            broker: id,
                            time: now,
                            marker: None,
                        });
                    let key = (w.group, w.tp.clone());
                    let bad = self.b(id).groups.as_ref().and_then(|c| {
                        self.unserved_commit(id, &c.state, "after it answered OK", Some(&key))
                    });
                    if let Some((kind, detail)) = bad {
                        let kind = match kind {
                            "offset-commit-lost" => "offset-commit-not-served",
                            other => other,
                        };
                        self.violate(kind, detail);
                        return;
                    }
                }
                Err(e) => {
                    self.log(|| format!("broker {id}: answers offset commit {done} with {e:?}"))
                }
            }
        }
    }

    /// The reconciler gave broker `id` the offsets partition's role: load the coordinator when
    /// it leads and has none, unload it otherwise (`take_role`).
    pub(crate) fn coordinator_role(&mut self, id: i32, leads: bool) {
        if !leads {
            if self.bm(id).groups.take().is_some() {
                self.log(|| format!("broker {id}: unloads the group coordinator"));
            }
            return;
        }
        if self.b(id).groups.is_some() {
            return;
        }
        let Some(op) = self.offsets_partition() else {
            return;
        };
        let (state, records) = self.replay_offsets_log(id, op);
        self.stats.coordinator_loads += 1;
        let load = self.stats.coordinator_loads;
        let d = &self.b(id).disks[&op];
        let loaded_end = d.log.leo();
        let last_share_write = d
            .log
            .batches()
            .iter()
            .rev()
            .find(|b| self.shares.writes.contains_key(&b.id))
            .map(|b| b.id)
            .unwrap_or(0);
        self.bm(id).groups = Some(SimCoordinator {
            load,
            state,
            loaded_end,
            committed: false,
            last_share_write,
        });
        self.log(|| {
            format!("broker {id}: loads the group coordinator ({records} commits replayed, to offset {loaded_end})")
        });
        self.group_serves(id);
    }

    /// Whether broker `id`'s group coordinator serves: its load is committed (the high
    /// watermark reached the end it replayed to: `OffsetStore::is_committed`; before, requests
    /// get COORDINATOR_LOAD_IN_PROGRESS). The first time it is, what it loaded is checked:
    /// every commit answered OK is served, and the share state it holds is a stored one (its
    /// delivery counts are promised from then on).
    pub(crate) fn group_serves(&mut self, id: i32) -> bool {
        let Some(op) = self.offsets_partition() else {
            return false;
        };
        let hw = self.served_hw(id, op);
        let Some(c) = self.bm(id).groups.as_mut() else {
            return false;
        };
        if c.committed {
            return true;
        }
        if hw < c.loaded_end {
            return false;
        }
        c.committed = true;
        let write = c.last_share_write;
        self.log(|| format!("broker {id}: the group coordinator's load is committed (high watermark {hw}): it serves"));
        let epoch = self.b(id).replicas[&op].repl.leader_epoch();
        if self.elected(id, op, epoch) {
            self.check_commits_served(id, "when its load was committed");
        }
        let stored = self
            .b(id)
            .groups
            .as_ref()
            .and_then(|c| c.share_state().cloned());
        if let (Some(v), None) = (stored, &self.violation) {
            let when = format!("loaded by broker {id}'s coordinator");
            self.check_share_state(&v, &when, write);
        }
        true
    }

    /// A coordinator's state as a load of broker `id`'s log of `op` gives it, and the commits
    /// replayed.
    fn replay_offsets_log(&self, id: i32, op: i32) -> (SimState, usize) {
        let mut state = OffsetsState::default();
        let d = &self.b(id).disks[&op];
        let mut records = 0;
        for b in d.log.batches() {
            if let Some(&(pid, commit)) = self.commits.markers.get(&b.id) {
                // A control record: key = version 0, type (1 commit, 0 abort).
                let key = [0, 0, 0, u8::from(commit)];
                state.replay(LogRecord {
                    offset: b.base,
                    producer_id: pid,
                    transactional: true,
                    control: true,
                    key: Some(&key),
                    value: None,
                });
                continue;
            }
            if let Some(records) = self.share_records(b.id) {
                for (k, v) in records {
                    let key = codec::encode_key(&k);
                    state.replay(LogRecord {
                        offset: b.base,
                        producer_id: -1,
                        transactional: false,
                        control: false,
                        key: Some(&key),
                        value: v.as_deref(),
                    });
                }
                continue;
            }
            let Some(w) = self.commits.writes.get(&b.id) else {
                continue;
            };
            let key = codec::encode_key(&w.key());
            let value = CommitWrite::value(b.id);
            state.replay(LogRecord {
                offset: b.base,
                producer_id: w.txn.unwrap_or(-1),
                transactional: w.txn.is_some(),
                control: false,
                key: Some(&key),
                value: Some(&value),
            });
            records += 1;
        }
        state.replayed_upto(d.log.leo());
        (state, records)
    }

    /// Every commit answered OK (and not voided) is served by broker `id`'s coordinator as
    /// itself or as a commit after it in `id`'s log.
    pub(crate) fn check_commits_served(&mut self, id: i32, when: &str) {
        let b = self.b(id);
        let bad = b
            .groups
            .as_ref()
            .and_then(|c| self.unserved_commit(id, &c.state, when, None));
        if let Some((kind, detail)) = bad {
            self.violate(kind, detail);
        }
    }

    /// The first commit answered OK (not voided) that `state`, a coordinator of broker `id`,
    /// serves neither as itself nor as a commit after it in `id`'s log (of `only` key, or of
    /// every key).
    fn unserved_commit(
        &self,
        id: i32,
        state: &SimState,
        when: &str,
        only: Option<&(&'static str, TopicPartition)>,
    ) -> Option<(&'static str, String)> {
        let op = self.offsets_partition()?;
        let d = self.b(id).disks.get(&op)?;
        // No offset of a transaction that did not commit is ever served.
        for (group, tp, v) in state.committed_offsets() {
            let txn = self
                .commits
                .writes
                .get(&(v.offset as u64))
                .and_then(|w| w.txn);
            let Some(pid) = txn else {
                continue;
            };
            let decided = self.commits.txns.get(&pid).and_then(|t| t.decided);
            if decided != Some(true) {
                return Some((
                    "uncommitted-offset-served",
                    format!("broker {id}'s group coordinator ({when}) serves {} for {group} {tp:?}, the offset of producer {pid}'s transaction, which did not commit (decided: {decided:?})", v.offset),
                ));
            }
        }
        // The last copy of a write (a commit delivered twice is in the log twice).
        let at = |bid: u64| d.log.find(bid).map(|bt| bt.base);
        let holds = |ok: &CommitOk| d.log.batch_at(ok.base).is_some_and(|b| b.id == ok.id);
        let keys = self
            .commits
            .ok
            .iter()
            .filter(|(k, _)| only.is_none_or(|o| o == *k));
        for ((group, tp), oks) in keys {
            let served = state.committed(group, tp).map(|v| v.offset as u64);
            let voided =
                |ok: &&CommitOk| self.exempt(ok.id) || ok.marker.is_some_and(|m| self.exempt(m));
            for ok in oks.iter().filter(|ok| !voided(ok)) {
                let fine = holds(ok) && served.and_then(at).is_some_and(|sp| sp >= ok.base);
                if !fine {
                    return Some(("offset-commit-lost", format!(
                        "broker {id}'s group coordinator ({when}) serves {served:?} (last in its log at {:?}) for {group} {tp:?}, but commit {} was answered OK by broker {} at {} ms for its write at offset {} (in this log there: {})",
                        served.and_then(at), ok.id, ok.broker, ok.time, ok.base, holds(ok)
                    )));
                }
            }
        }
        None
    }

    /// At the end: the final leader of the offsets partition serves every commit answered OK,
    /// through the coordinator it runs and through a fresh load of its log; and commits were
    /// answered OK after the faults healed.
    pub(crate) fn check_groups_end(&mut self) {
        let Some(op) = self.offsets_partition() else {
            return;
        };
        let Some(leader) = self
            .controller
            .image
            .partition(crate::world::TOPIC, op)
            .map(|s| s.leader)
            .filter(|l| *l > 0)
        else {
            return; // liveness-no-leader reports it
        };
        if !self.b(leader).up {
            return;
        }
        self.check_commits_served(leader, "at the end");
        if self.violation.is_some() {
            return;
        }
        let (fresh, _) = self.replay_offsets_log(leader, op);
        if let Some((kind, detail)) =
            self.unserved_commit(leader, &fresh, "loaded again at the end", None)
        {
            self.violate(kind, detail);
            return;
        }
        let stored = fresh
            .share_state(SHARE_GROUP, share_topic_id(), SHARE_PARTITION)
            .cloned();
        if let Some(v) = &stored {
            self.check_share_state(v, "loaded again at the end", 0);
        }
        self.check_share_end(stored, leader);
        if self.violation.is_some() {
            return;
        }
        let heal = self.plan.shape.heal;
        let after_heal = self.commits.ok.values().flatten().any(|ok| ok.time > heal);
        if !after_heal {
            self.violate(
                "liveness-no-commits-after-heal",
                format!("no offset commit was answered OK after the faults healed (offsets partition {op}, leader {leader})"),
            );
        }
    }
}
