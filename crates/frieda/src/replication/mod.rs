//! Partition replication: Kafka's ISR protocol, in one place and free of I/O (no sockets, no
//! files, no clock: callers pass offsets and times in), so that the broker and the cluster
//! simulator (crate `frieda-sim`, which runs brokers, the controller and clients on simulated
//! time, network and disk) execute the same rules.
//!
//! - [`state`]: a leader's view: followers' progress, the in-sync replicas, the high watermark,
//!   ISR shrink and expansion (the AlterPartition requests a leader makes);
//! - [`ack`]: when an `acks=all` produce is answered;
//! - [`fetch`]: how a leader validates a follower's fetch before counting it;
//! - [`follower`]: a follower's truncation (KIP-101/279), fetch position and high watermark;
//! - [`assignment`]: which role the metadata image gives a replica;
//! - [`read_replica`]: which replica a consumer reads from (KIP-392, fetch from follower);
//! - [`Replication`]: one partition's role and high watermark, shared by the threads that
//!   append, fetch and reconcile.
//!
//! The I/O that drives these rules lives in [`crate::cluster`]: the follower fetchers
//! (`cluster::fetcher`), the AlterPartition requests (`cluster::isr`) and the reconciler that
//! applies each metadata image (`cluster::reconciler`). The design choice (ISR rather than
//! majority commit) and its measurement are in `docs/cluster.md`.

/// Stops the broker when an invariant of the ISR protocol is broken (TigerBeetle's assertions,
/// kept in release builds where they are cheap): continuing could acknowledge records that are
/// not where the protocol says they are. Logs the invariant, then panics with
/// [`INVARIANT_BROKEN`]; the broker's panic hook aborts the process on such a panic (its
/// partitions fail over), the simulator reports it for the seed.
#[macro_export]
macro_rules! invariant {
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            $crate::replication::broken(format_args!($($arg)+));
        }
    };
}

/// What a broken-invariant panic message starts with.
pub const INVARIANT_BROKEN: &str = "replication invariant broken";

/// See [`invariant!`].
#[cold]
pub fn broken(what: std::fmt::Arguments) -> ! {
    tracing::error!(invariant = %what, "{INVARIANT_BROKEN}: stopping");
    panic!("{INVARIANT_BROKEN}: {what}");
}

pub mod ack;
pub mod assignment;
pub mod fetch;
pub mod follower;
pub mod read_replica;
pub mod state;

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use frieda_meta::quorum::{Claim, Led};
use frieda_meta::{BrokerId, PartitionState};
use kafka_protocol::error::ResponseError;
use parking_lot::Mutex;
use tokio::sync::Notify;

pub use ack::{ack_status, AckStatus};
pub use assignment::{plan, RoleChange};
pub use state::{IsrChange, LagLimits, Leader, Progress, Role};

/// How the controller answered an AlterPartition request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterAnswer {
    /// Committed: the partition's state now.
    Committed(PartitionState),
    /// Refused with this error (INELIGIBLE_REPLICA, INVALID_UPDATE_VERSION,
    /// FENCED_LEADER_EPOCH, ...).
    Refused(ResponseError),
    /// No answer (timeout, no controller): the change may or may not have been committed.
    Unknown,
}

/// What the replication rules read of a replica's log (the partition log implements it; so does
/// the simulator's log).
pub trait LogView {
    /// The first offset in the log.
    fn log_start_offset(&self) -> i64;
    /// The offset the next record gets.
    fn log_end_offset(&self) -> i64;
    /// The latest leader epoch in the log, -1 if none.
    fn latest_epoch(&self) -> i32;
    /// Kafka's `endOffsetForEpoch`: the largest epoch `<= epoch` in the log and where the next
    /// epoch starts (the log end for the latest); `(-1, -1)` if unknown.
    fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64);
    /// The leader epoch of the last record (Raft's last log term), -1 if none: the latest
    /// epoch, unless a leader assigned it without appending in it (Kafka's
    /// `maybeAssignEpochStartOffset`), then the one before.
    fn last_record_epoch(&self) -> i32 {
        let latest = self.latest_epoch();
        if latest <= 0 {
            return latest;
        }
        let (before, latest_start) = self.end_offset_for_epoch(latest - 1);
        if before >= 0 && latest_start >= self.log_end_offset() {
            before
        } else {
            latest
        }
    }
}

impl LogView for frieda_log::PartitionLog {
    fn log_start_offset(&self) -> i64 {
        frieda_log::PartitionLog::log_start_offset(self)
    }
    fn log_end_offset(&self) -> i64 {
        frieda_log::PartitionLog::log_end_offset(self)
    }
    fn latest_epoch(&self) -> i32 {
        frieda_log::PartitionLog::latest_epoch(self)
    }
    fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        frieda_log::PartitionLog::end_offset_for_epoch(self, epoch)
    }
}

/// The replication part of a partition: its role and high watermark.
pub struct Replication {
    role: Mutex<Role>,
    /// The high watermark when the partition is replicated (cluster mode).
    hw: AtomicI64,
    /// False in single-broker mode: the high watermark is the log's own.
    replicated: AtomicBool,
    /// Signalled when the high watermark moves or the role changes.
    changed: Notify,
    /// This broker's id.
    me: AtomicI64,
    /// The topic's `min.insync.replicas`: a leader's high watermark does not advance while
    /// its ISR is smaller (capped at the replication factor; KIP-966).
    min_insync: AtomicUsize,
    /// The topic's `replication.ack.policy` is `quorum` (issue 34): a leader's high watermark
    /// counts `min.insync.replicas` replicas, not the ISR ([`Leader::quorum_high_watermark`]).
    quorum: AtomicBool,
    /// This replica's last leadership, from when it ended: what its claim says when the
    /// partition is leaderless ([`frieda_meta::quorum::Led`]).
    last_led: Mutex<Option<Led>>,
    /// `replica.lag.time.max.ms` / `replica.stall.max.ms`, as the last ISR shrink check gave
    /// them: the high watermark also waits for caught-up followers outside the ISR
    /// ([`Leader::may_join`]); `None` until then.
    join_limits: Mutex<Option<LagLimits>>,
    /// The ISR change this replica's last leadership still had pending when it ended (the
    /// controller may have committed it): taken back if the replica leads again in the same
    /// leader and partition epoch ([`Replication::become_leader`]).
    unanswered: Mutex<Option<IsrChange>>,
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            role: Mutex::new(Role::Sole),
            hw: AtomicI64::new(0),
            replicated: AtomicBool::new(false),
            changed: Notify::new(),
            me: AtomicI64::new(-1),
            min_insync: AtomicUsize::new(1),
            quorum: AtomicBool::new(false),
            last_led: Mutex::new(None),
            join_limits: Mutex::new(None),
            unanswered: Mutex::new(None),
        }
    }
}

/// A client's `current_leader_epoch` (-1: not checked; KIP-320) against this replica's `epoch`:
/// FENCED_LEADER_EPOCH (74) when older, UNKNOWN_LEADER_EPOCH (75) when newer.
fn check_client_epoch(client_epoch: i32, epoch: i32) -> Result<(), ResponseError> {
    match client_epoch {
        e if e < 0 || e == epoch => Ok(()),
        e if e < epoch => Err(ResponseError::FencedLeaderEpoch),
        _ => Err(ResponseError::UnknownLeaderEpoch),
    }
}

/// The leader epoch a role knows (-1 for a replica that has none yet).
fn epoch_of(role: &Role) -> i32 {
    match role {
        Role::Sole => 0,
        Role::Leader(l) => l.epoch,
        Role::Follower { epoch, .. } | Role::Offline { epoch } => *epoch,
    }
}

impl Replication {
    /// Whether the partition is replicated (cluster mode).
    pub fn is_replicated(&self) -> bool {
        self.replicated.load(Ordering::Acquire)
    }

    /// Whether this broker takes writes for the partition: its leader, or the single broker.
    pub fn is_leader_or_sole(&self) -> bool {
        matches!(&*self.role.lock(), Role::Sole | Role::Leader(_))
    }

    /// The high watermark of a replicated partition.
    pub fn high_watermark(&self) -> i64 {
        self.hw.load(Ordering::Acquire)
    }

    /// On a leader whose high watermark has not yet reached the start of its epoch (the log
    /// end it took the leadership with: it learns what earlier leaders acknowledged only as
    /// its followers fetch), `Some((high watermark, epoch start offset))`; otherwise `None`.
    /// ListOffsets answers OFFSET_NOT_AVAILABLE (78) meanwhile, so that the offsets a client
    /// sees never go back across a leader change (KIP-207; Kafka's
    /// `Partition.fetchOffsetForTimestamp`).
    pub fn high_watermark_lagging(&self) -> Option<(i64, i64)> {
        let start = match &*self.role.lock() {
            Role::Leader(l) => l.epoch_start_offset,
            _ => return None,
        };
        let hw = self.hw.load(Ordering::Acquire);
        (hw < start).then_some((hw, start))
    }

    /// The current role.
    pub fn role(&self) -> Role {
        self.role.lock().clone()
    }

    /// The leader epoch this replica knows, or -1.
    pub fn leader_epoch(&self) -> i32 {
        epoch_of(&self.role.lock())
    }

    /// Asserts (see [`invariant!`]) that the high watermark is not above `leo`, the log's end
    /// read under the partition's lock (no truncation can run meanwhile, and the log end only
    /// grows otherwise).
    pub fn assert_within(&self, leo: i64) {
        let hw = self.hw.load(Ordering::Acquire);
        crate::invariant!(
            !self.is_replicated() || hw <= leo,
            "high watermark {hw} above the log end offset {leo}"
        );
    }

    fn me(&self) -> BrokerId {
        self.me.load(Ordering::Relaxed) as BrokerId
    }

    /// The high watermark checkpointed before a restart (`replication-offset-checkpoint`), for
    /// a log that now ends at `leo`: where this replica starts before it learns its role,
    /// capped at the log end (a power loss can take back what the checkpoint counted; a high
    /// watermark above the log end would keep followers out of the ISR for good: issue 28,
    /// item 3).
    pub fn restore_high_watermark(&self, hw: i64, leo: i64) {
        self.hw.store(hw.min(leo).max(0), Ordering::Release);
    }

    /// Sets the role (cluster mode), the log ending at `leo`: the high watermark is capped at
    /// it (on a leader it only moves forward from there; a follower takes the leader's). Wakes
    /// everyone waiting on the old role.
    pub fn set_role(&self, me: BrokerId, role: Role, leo: i64) {
        self.me.store(i64::from(me), Ordering::Relaxed);
        {
            let mut current = self.role.lock();
            if let Role::Leader(l) = &*current {
                let hw = self.hw.load(Ordering::Acquire);
                *self.last_led.lock() = Some(Led {
                    epoch: l.epoch,
                    committed: if hw > l.epoch_start_offset { hw } else { leo },
                });
                *self.unanswered.lock() = l.pending_change();
            }
            let (old, new) = (epoch_of(&current), epoch_of(&role));
            crate::invariant!(
                old < 0 || new < 0 || new >= old,
                "the leader epoch of a replica went back from {old} to {new}"
            );
            *current = role;
        }
        self.cap_high_watermark(leo);
        self.replicated.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// The log was truncated to end at `leo` (a follower's, to its leader's): the high
    /// watermark never stays above the log end (Kafka's `UnifiedLog.truncateTo`).
    pub fn on_truncated(&self, leo: i64) {
        self.cap_high_watermark(leo);
    }

    fn cap_high_watermark(&self, leo: i64) {
        let _ = self
            .hw
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |hw| {
                (hw > leo).then_some(leo.max(0))
            });
    }

    /// Takes the leader role of `p` (the image's state) in `p.leader_epoch`, this broker `me`,
    /// at `now_ms`, its log ending at `leo` (Kafka's `Partition.makeLeader`; the caller records
    /// the epoch in the log first). Returns whether the high watermark moved.
    ///
    /// A replica that leads again in the leader and partition epoch its last leadership ended
    /// in (a broker that fenced itself and was unfenced on the same image) takes back that
    /// leadership's unanswered ISR change as pending: the controller may have committed it, and
    /// the image does not show it yet. The caller asks for it again
    /// ([`Replication::pending_isr_change`]), so it is resolved either way. Without this the
    /// leader counted only the image's smaller ISR (frieda-sim seed 73576, whose first defence
    /// is `membership::lease::answer_is_fresh`).
    pub fn become_leader(&self, me: BrokerId, p: &PartitionState, now_ms: i64, leo: i64) -> bool {
        crate::invariant!(
            p.isr.contains(&me),
            "broker {me} takes the leadership of a partition whose ISR {:?} lacks it",
            p.isr
        );
        let mut leader = Leader::new(p, me, now_ms, leo);
        if let Some(c) = self.unanswered.lock().take() {
            if c.leader_epoch == p.leader_epoch
                && c.partition_epoch == p.partition_epoch
                && c.isr != p.isr
                && c.isr.contains(&me)
            {
                // The registrations the ask names, as the last leadership knew them (the
                // next fetches replace them).
                for (b, e) in &c.new_isr_epochs {
                    leader.note_broker_epoch(*b, Some(*e));
                }
                leader.pending_isr = Some(c.isr);
            }
        }
        self.set_role(me, Role::Leader(leader), leo);
        self.advance(leo, now_ms)
    }

    /// A leader's pending ISR change as the AlterPartition that asks for it (the one
    /// [`Replication::become_leader`] takes back); `None` if this replica does not lead or
    /// nothing is pending.
    pub fn pending_isr_change(&self) -> Option<IsrChange> {
        match &*self.role.lock() {
            Role::Leader(l) => l.pending_change(),
            _ => None,
        }
    }

    /// Takes a follower role of `leader` in `epoch` (or an offline one, `leader` = -1), the
    /// log ending at `leo` (Kafka's `Partition.makeFollower`).
    pub fn become_follower(&self, me: BrokerId, leader: BrokerId, epoch: i32, leo: i64) {
        let role = if leader < 0 {
            Role::Offline { epoch }
        } else {
            Role::Follower { leader, epoch }
        };
        self.set_role(me, role, leo);
    }

    /// The controller's answer to the ISR change `change` this leader asked for, its log ending
    /// at `leo` (Kafka's `Partition.handleAlterPartitionUpdate` / `handleAlterPartitionError`).
    /// Returns whether the high watermark moved.
    ///
    /// Until a definite answer the change stays pending, so the high watermark keeps counting
    /// the larger of both ISRs (issue 28, item 4: dropping it on any refusal or a timeout, or
    /// installing an answer older than what this leader already has, let a leader count a
    /// smaller ISR than the controller had committed):
    /// - a committed state is not installed from the answer: the change stays pending until
    ///   the broker's metadata image shows the partition at that partition epoch and the
    ///   reconciler installs it ([`Replication::update_leader`]). The image applies the
    ///   metadata log in order, so by then this broker also has every topic config committed
    ///   before the change: the controller chose the new ISR and ELR with the topic's
    ///   `min.insync.replicas` of that moment, and a leader that installed them with an older,
    ///   smaller one advanced its high watermark over an ISR the controller had put below the
    ///   minimum, acknowledging records an ELR member lacked (frieda-sim
    ///   `--min-insync-changes` seed 509). Kafka installs the answer directly
    ///   (`Partition.handleAlterPartitionUpdate`);
    /// - INELIGIBLE_REPLICA drops the pending change: the controller refused it at the
    ///   current partition epoch and moved that epoch on with the refusal, so no other copy of
    ///   the ask (a retry, a delayed request) can be committed later (frieda-sim seed 44251);
    /// - any other refusal, or no answer, keeps it: the driver asks again
    ///   ([`Replication::pending_change`]), or a newer image resolves it.
    pub fn on_alter_answer(
        &self,
        change: &IsrChange,
        answer: AlterAnswer,
        leo: i64,
        now_ms: i64,
    ) -> bool {
        match answer {
            // Pending until the image installs it (see above); the driver stops asking.
            AlterAnswer::Committed(_) => false,
            AlterAnswer::Refused(ResponseError::IneligibleReplica) => {
                let dropped = match &mut *self.role.lock() {
                    Role::Leader(l)
                        if l.pending_isr.as_ref() == Some(&change.isr)
                            && l.partition_epoch == change.partition_epoch =>
                    {
                        l.pending_isr = None;
                        true
                    }
                    _ => false,
                };
                // The high watermark no longer waits for members only the dropped ISR had.
                dropped && self.advance(leo, now_ms)
            }
            AlterAnswer::Refused(_) | AlterAnswer::Unknown => false,
        }
    }

    /// Whether `change` is still this leader's pending ISR change (its driver asks the
    /// controller again after no answer).
    pub fn pending_change(&self, change: &IsrChange) -> bool {
        matches!(&*self.role.lock(), Role::Leader(l)
            if l.epoch == change.leader_epoch
                && l.partition_epoch == change.partition_epoch
                && l.pending_isr.as_ref() == Some(&change.isr))
    }

    /// A cluster replica just opened, before the reconciler gives it its role: replicated and
    /// offline (no epoch), so until then it takes no produce, serves no consumer and answers
    /// no OffsetForLeaderEpoch (NOT_LEADER_OR_FOLLOWER) instead of acting as a single broker's
    /// sole replica. Soak B (tests/jepsen power-loss): a broker restarted after a power cut
    /// listens before its replicas have roles; a client with stale metadata could otherwise
    /// reach a replica that answered as its own leader for a moment.
    pub fn await_role(&self) {
        *self.role.lock() = Role::Offline { epoch: -1 };
        self.replicated.store(true, Ordering::Release);
    }

    /// This replica stops (removed from this broker by a reassignment, or its topic deleted):
    /// it leads and follows nothing any more, and whoever waits on it wakes, so an `acks=all`
    /// produce waiting for the high watermark is answered NOT_LEADER_OR_FOLLOWER at once (Kafka
    /// completes its delayed produces when a replica stops) instead of at its timeout.
    pub fn stop(&self) {
        let epoch = self.leader_epoch();
        *self.role.lock() = Role::Offline { epoch };
        self.changed.notify_waiters();
    }

    /// The leader epoch an append is made in, if this replica may append now: `0` for the
    /// sole replica, the epoch for a leader. Called under the partition's lock, so a role change
    /// (which takes that lock too) never lands between the check and the append.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER (6) on a follower or an offline replica.
    pub fn append_epoch(&self) -> Result<i32, ResponseError> {
        match &*self.role.lock() {
            Role::Sole => Ok(0),
            Role::Leader(l) => Ok(l.epoch),
            _ => Err(ResponseError::NotLeaderOrFollower),
        }
    }

    /// Whether this replica leads in `epoch` (or is the single broker's only replica).
    pub fn leads_in(&self, epoch: i32) -> bool {
        match &*self.role.lock() {
            Role::Sole => true,
            Role::Leader(l) => l.epoch == epoch,
            _ => false,
        }
    }

    /// The leader and epoch this replica follows, if it is a follower.
    pub fn following(&self) -> Option<(BrokerId, i32)> {
        match &*self.role.lock() {
            Role::Follower { leader, epoch } => Some((*leader, *epoch)),
            _ => None,
        }
    }

    /// Whether this replica follows `leader` in `epoch` (what a fetcher checks before it
    /// appends or truncates).
    pub fn is_follower_of(&self, leader: BrokerId, epoch: i32) -> bool {
        matches!(&*self.role.lock(), Role::Follower { leader: l, epoch: e } if *l == leader && *e == epoch)
    }

    /// A leader learns a new partition state from the controller (an ISR change it asked for,
    /// a reassignment) without a new leader epoch: the ISR, partition epoch and replicas are
    /// replaced, the followers' progress kept. Returns false if this broker does not lead in
    /// that epoch (the caller then takes the role afresh).
    pub fn update_leader(&self, p: &PartitionState, leo: i64, now_ms: i64) -> bool {
        let mut role = self.role.lock();
        let Role::Leader(l) = &mut *role else {
            return false;
        };
        if l.epoch != p.leader_epoch {
            return false;
        }
        // Only a newer partition state replaces the leader's (Kafka: "ignoring new ISR since
        // we have a newer version"): an image or answer that is older must not install an
        // older, smaller ISR (issue 28, item 4).
        if p.partition_epoch > l.partition_epoch {
            crate::invariant!(
                p.isr.contains(&self.me()),
                "the leader's new ISR {:?} lacks the leader {}",
                p.isr,
                self.me()
            );
            l.isr = p.isr.clone();
            l.partition_epoch = p.partition_epoch;
            l.pending_isr = None;
            l.set_replicas(self.me(), p, now_ms);
        }
        drop(role);
        self.advance(leo, now_ms);
        true
    }

    /// A follower's high watermark from its leader's fetch response, capped by its own log end.
    /// Returns whether it moved (consumers reading from this follower, KIP-392, may read more).
    pub fn follower_high_watermark(&self, leader_hw: i64, leo: i64) -> bool {
        let hw = follower::high_watermark(leader_hw, leo);
        let old = self.hw.load(Ordering::Acquire);
        if hw != old {
            self.hw.store(hw, Ordering::Release);
            self.changed.notify_waiters();
            return true;
        }
        false
    }

    /// Sets the topic's `min.insync.replicas` (at partition creation and on every config
    /// change); a leader whose high watermark it frees is advanced at the next append or fetch.
    pub fn set_min_insync(&self, min_insync: usize) {
        self.min_insync.store(min_insync.max(1), Ordering::Release);
    }

    /// Sets the topic's `replication.ack.policy` (`quorum`: true), at partition creation and
    /// on every config change.
    pub fn set_quorum_acks(&self, quorum: bool) {
        self.quorum.store(quorum, Ordering::Release);
    }

    /// Whether the topic's `replication.ack.policy` is `quorum`.
    pub fn quorum_acks(&self) -> bool {
        self.quorum.load(Ordering::Acquire)
    }

    /// This replica's claim ([`frieda_meta::quorum::Claim`]) while it is offline in a leader
    /// epoch (a leaderless `quorum` partition), its log being `log`; `None` otherwise. Taken
    /// under the role's lock, after the replica stopped following anyone.
    pub fn claim(&self, log: &impl LogView) -> Option<Claim> {
        let role = self.role.lock();
        let Role::Offline { epoch } = &*role else {
            return None;
        };
        Some(Claim {
            leader_epoch: *epoch,
            last_epoch: log.last_record_epoch(),
            log_end: log.log_end_offset(),
            led: *self.last_led.lock(),
        })
    }

    /// Recomputes a leader's high watermark for its log end offset `leo` at `now_ms`; returns
    /// whether it moved (the caller wakes fetches waiting for data).
    pub fn advance(&self, leo: i64, now_ms: i64) -> bool {
        let join = *self.join_limits.lock();
        let role = self.role.lock();
        let Role::Leader(l) = &*role else {
            return false;
        };
        let current = self.hw.load(Ordering::Acquire);
        let hw = l.high_watermark(
            self.me(),
            leo,
            current,
            self.min_insync.load(Ordering::Acquire),
            self.quorum.load(Ordering::Acquire),
            now_ms,
            join,
        );
        if hw > current {
            self.hw.store(hw, Ordering::Release);
            drop(role);
            self.changed.notify_waiters();
            return true;
        }
        false
    }

    /// Whether `replica` may fetch from this leader as a follower in `follower_epoch` (-1: not
    /// checked), before the fetch is validated and read ([`fetch::validate_follower_fetch`]).
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER when this broker does not lead, UNKNOWN_LEADER_EPOCH /
    /// FENCED_LEADER_EPOCH when the follower's epoch is newer / older.
    pub fn check_follower(&self, follower_epoch: i32) -> Result<(), ResponseError> {
        let Role::Leader(l) = &*self.role.lock() else {
            return Err(ResponseError::NotLeaderOrFollower);
        };
        match follower_epoch {
            e if e >= 0 && e > l.epoch => Err(ResponseError::UnknownLeaderEpoch),
            e if e >= 0 && e < l.epoch => Err(ResponseError::FencedLeaderEpoch),
            _ => Ok(()),
        }
    }

    /// A follower's fetch at `fetch_offset` was validated and read (its log starting at
    /// `follower_log_start`, -1 if not said; `broker_epoch` its registration as this leader's
    /// metadata says, KIP-903) while the leader's log ends at `leo`: records its progress and
    /// moves the high watermark (Kafka's `updateFollowerFetchState`, called only after a
    /// successful read). Returns an ISR expansion to ask the controller for, and whether the
    /// high watermark moved.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER when this broker does not lead, UNKNOWN_LEADER_EPOCH /
    /// FENCED_LEADER_EPOCH when the follower's epoch is newer / older.
    #[allow(clippy::too_many_arguments)]
    pub fn on_follower_fetch(
        &self,
        replica: BrokerId,
        broker_epoch: Option<u64>,
        fetch_offset: i64,
        follower_log_start: i64,
        follower_epoch: i32,
        leo: i64,
        now_ms: i64,
    ) -> Result<(Option<IsrChange>, bool), ResponseError> {
        let join = *self.join_limits.lock();
        let mut role = self.role.lock();
        let Role::Leader(l) = &mut *role else {
            return Err(ResponseError::NotLeaderOrFollower);
        };
        if follower_epoch >= 0 && follower_epoch > l.epoch {
            return Err(ResponseError::UnknownLeaderEpoch);
        }
        if follower_epoch >= 0 && follower_epoch < l.epoch {
            return Err(ResponseError::FencedLeaderEpoch);
        }
        let current = self.hw.load(Ordering::Acquire);
        l.note_broker_epoch(replica, broker_epoch);
        let change = l.on_fetch(
            replica,
            fetch_offset,
            follower_log_start,
            leo,
            current,
            now_ms,
        );
        let hw = l.high_watermark(
            self.me(),
            leo,
            current,
            self.min_insync.load(Ordering::Acquire),
            self.quorum.load(Ordering::Acquire),
            now_ms,
            join,
        );
        drop(role);
        let moved = hw > current;
        if moved {
            self.hw.store(hw, Ordering::Release);
            self.changed.notify_waiters();
        }
        Ok((change, moved))
    }

    /// The low watermark for DeleteRecords: on a leader the smallest log start offset over it
    /// (`own_start`) and its in-sync followers; elsewhere `own_start`.
    pub fn low_watermark(&self, own_start: i64) -> i64 {
        match &*self.role.lock() {
            Role::Leader(l) => l.low_watermark(self.me(), own_start),
            _ => own_start,
        }
    }

    /// Whether a consumer's request for this partition may be served here, given the
    /// `current_leader_epoch` it carries (-1: not checked; KIP-320).
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER (6) on a follower or offline replica,
    /// FENCED_LEADER_EPOCH (74) when the client's epoch is older, UNKNOWN_LEADER_EPOCH (75)
    /// when it is newer (this broker has not caught up with the metadata yet).
    pub fn check_leader(&self, client_epoch: i32) -> Result<(), ResponseError> {
        let epoch = match &*self.role.lock() {
            Role::Sole => return Ok(()),
            Role::Leader(l) => l.epoch,
            _ => return Err(ResponseError::NotLeaderOrFollower),
        };
        check_client_epoch(client_epoch, epoch)
    }

    /// Whether a consumer that may read from followers (Fetch v11+, KIP-392) may read this
    /// replica, given the `current_leader_epoch` it carries (-1: not checked). Kafka's
    /// `Partition.localLogWithEpochOrThrow` without `requireLeader`: the leader and its
    /// followers serve such reads (up to their own high watermark); an offline replica does not.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER (6) on an offline replica, FENCED_LEADER_EPOCH (74) when
    /// the client's epoch is older than this replica's, UNKNOWN_LEADER_EPOCH (75) when newer.
    pub fn check_replica_read(&self, client_epoch: i32) -> Result<(), ResponseError> {
        let epoch = match &*self.role.lock() {
            Role::Sole => return Ok(()),
            Role::Leader(l) => l.epoch,
            Role::Follower { epoch, .. } => *epoch,
            Role::Offline { .. } => return Err(ResponseError::NotLeaderOrFollower),
        };
        check_client_epoch(client_epoch, epoch)
    }

    /// Whether this replica still leads or follows in `epoch` (a consumer's read from a
    /// follower checks it again before each read, as [`Replication::leads_in`] does for the
    /// leader's).
    pub fn serves_in(&self, epoch: i32) -> bool {
        match &*self.role.lock() {
            Role::Sole => true,
            Role::Leader(l) => l.epoch == epoch,
            Role::Follower { epoch: e, .. } => *e == epoch,
            Role::Offline { .. } => false,
        }
    }

    /// On a leader, the followers a consumer reading at `fetch_offset` could be sent to
    /// (KIP-392): in the committed ISR, their log holding the offset (log start <= offset <=
    /// log end, as their last fetch said), with their log end offset and how long since they
    /// were caught up at `now_ms` (ms). `None` on any other replica.
    pub fn read_candidates(
        &self,
        fetch_offset: i64,
        now_ms: i64,
    ) -> Option<Vec<(BrokerId, i64, i64)>> {
        let Role::Leader(l) = &*self.role.lock() else {
            return None;
        };
        let mut out: Vec<(BrokerId, i64, i64)> = l
            .followers
            .iter()
            .filter(|(id, f)| {
                l.isr.contains(id) && f.leo >= fetch_offset && f.log_start <= fetch_offset
            })
            .map(|(id, f)| (*id, f.leo, (now_ms - f.caught_up_ms).max(0)))
            .collect();
        out.sort_unstable();
        Some(out)
    }

    /// The ISR shrink a leader whose log ends at `leo` should ask for now, if any. Remembers
    /// `limits` for the high watermark's wait for followers that may join the ISR
    /// ([`Leader::may_join`]).
    pub fn shrink_check(&self, now_ms: i64, leo: i64, limits: LagLimits) -> Option<IsrChange> {
        *self.join_limits.lock() = Some(limits);
        let me = self.me();
        match &mut *self.role.lock() {
            Role::Leader(l) => l.shrink(me, now_ms, leo, limits),
            _ => None,
        }
    }

    /// Whether a produce may be appended now: this broker leads (and is not fenced), and for
    /// `acks=all` the ISR has at least `min_insync` members, capped at the replica count as
    /// Kafka's `effectiveMinIsr` ([`Leader::effective_min_insync`]).
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER (6), NOT_ENOUGH_REPLICAS (19).
    pub fn check_writable(&self, acks_all: bool, min_insync: usize) -> Result<i32, ResponseError> {
        match &*self.role.lock() {
            Role::Sole => Ok(0),
            Role::Leader(l) => {
                if acks_all && l.isr.len() < l.effective_min_insync(min_insync) {
                    return Err(ResponseError::NotEnoughReplicas);
                }
                Ok(l.epoch)
            }
            _ => Err(ResponseError::NotLeaderOrFollower),
        }
    }

    /// Where an `acks=all` produce of a batch ending at `last_offset`, appended in `epoch`,
    /// stands now (see [`ack::ack_status`]).
    pub fn ack_status(&self, last_offset: i64, epoch: i32, min_insync: usize) -> AckStatus {
        if !self.is_replicated() {
            return AckStatus::Done(Ok(()));
        }
        let role = self.role.lock();
        ack_status(
            &role,
            self.hw.load(Ordering::Acquire),
            last_offset,
            epoch,
            min_insync,
            self.quorum.load(Ordering::Acquire),
        )
    }

    /// Waits until [`ack_status`](Self::ack_status) is done for an `acks=all` produce, at most
    /// `timeout`.
    ///
    /// Errors: NOT_LEADER_OR_FOLLOWER (leadership moved: the record may or may not survive),
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) when too few replicas are in sync, REQUEST_TIMED_OUT
    /// (7).
    pub async fn wait_replicated(
        &self,
        last_offset: i64,
        epoch: i32,
        min_insync: usize,
        timeout: Duration,
    ) -> Result<(), ResponseError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let AckStatus::Done(answer) = self.ack_status(last_offset, epoch, min_insync) {
                return answer;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Err(ResponseError::RequestTimedOut);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(isr: Vec<BrokerId>, leader_epoch: i32, partition_epoch: i32) -> PartitionState {
        PartitionState {
            replicas: vec![1, 2, 3],
            isr,
            leader: 1,
            leader_epoch,
            partition_epoch,
            adding: vec![],
            removing: vec![],
            elr: vec![],
            last_known_elr: vec![],
            electing: None,
        }
    }

    /// Issue 57, defect 6: `acks=all` caps `min.insync.replicas` at the replicas there are
    /// (Kafka's `effectiveMinIsr`): a topic of RF 2 with min.insync.replicas=3 takes acks=all
    /// writes with both replicas in sync, and acknowledges them.
    #[test]
    fn acks_all_caps_min_insync_replicas_at_the_replica_count() {
        let r = Replication::default();
        let p = PartitionState {
            replicas: vec![1, 2],
            ..state(vec![1, 2], 4, 9)
        };
        r.become_leader(1, &p, 0, 10);
        assert_eq!(r.check_writable(true, 3), Ok(4));
        r.on_follower_fetch(2, Some(1), 10, 0, 4, 10, 5).unwrap();
        assert_eq!(r.ack_status(9, 4, 3), AckStatus::Done(Ok(())));
        // A follower's fetch counted for an older leader epoch is refused.
        assert_eq!(
            r.on_follower_fetch(2, Some(1), 10, 0, 3, 10, 6),
            Err(ResponseError::FencedLeaderEpoch)
        );
    }

    /// KIP-392: a leader offers consumers only in-sync followers that hold the fetch offset;
    /// followers serve consumers' reads in their own epoch, offline replicas do not.
    #[test]
    fn read_candidates_and_replica_reads() {
        let r = Replication::default();
        r.become_leader(1, &state(vec![1, 2], 4, 9), 0, 100);
        // Follower 2 (in sync) reached 100, follower 3 (not in the ISR) 100 too.
        r.on_follower_fetch(2, None, 100, 10, -1, 100, 50).unwrap();
        r.on_follower_fetch(3, None, 100, 0, -1, 100, 50).unwrap();
        assert_eq!(r.read_candidates(60, 80), Some(vec![(2, 100, 30)]));
        assert_eq!(
            r.read_candidates(5, 80),
            Some(vec![]),
            "below follower 2's log start"
        );
        assert_eq!(r.read_candidates(101, 80), Some(vec![]), "past its log end");
        assert_eq!(r.check_replica_read(4), Ok(()));
        assert!(r.serves_in(4) && !r.serves_in(3));

        let f = Replication::default();
        f.become_follower(2, 1, 4, 100);
        assert_eq!(
            f.read_candidates(60, 80),
            None,
            "only a leader sends consumers elsewhere"
        );
        assert_eq!(f.check_replica_read(-1), Ok(()));
        assert_eq!(f.check_replica_read(4), Ok(()));
        assert_eq!(
            f.check_replica_read(3),
            Err(ResponseError::FencedLeaderEpoch)
        );
        assert_eq!(
            f.check_replica_read(5),
            Err(ResponseError::UnknownLeaderEpoch)
        );
        assert_eq!(f.check_leader(4), Err(ResponseError::NotLeaderOrFollower));
        assert!(f.serves_in(4) && !f.serves_in(5));
        assert!(
            f.follower_high_watermark(80, 100),
            "the high watermark moved"
        );
        assert!(!f.follower_high_watermark(80, 100));

        let o = Replication::default();
        o.become_follower(2, -1, 4, 100);
        assert_eq!(
            o.check_replica_read(4),
            Err(ResponseError::NotLeaderOrFollower)
        );
        assert!(!o.serves_in(4));
    }

    /// KIP-207: a new leader whose high watermark (learnt as a follower) is below the log end
    /// it took the leadership with is "lagging" until its followers reach that offset; a
    /// follower or a caught-up leader is not.
    #[test]
    fn a_new_leader_lags_until_its_high_watermark_reaches_the_epoch_start() {
        let r = Replication::default();
        r.become_follower(1, 2, 3, 100);
        r.follower_high_watermark(90, 100);
        assert_eq!(r.high_watermark_lagging(), None, "a follower never lags");
        r.become_leader(1, &state(vec![1, 2, 3], 4, 9), 0, 100);
        assert_eq!(r.high_watermark(), 90);
        assert_eq!(r.high_watermark_lagging(), Some((90, 100)));
        r.on_follower_fetch(2, None, 100, 0, 4, 100, 10).unwrap();
        assert_eq!(
            r.high_watermark_lagging(),
            Some((90, 100)),
            "follower 3 has not fetched yet"
        );
        r.on_follower_fetch(3, None, 100, 0, 4, 100, 10).unwrap();
        assert_eq!(r.high_watermark(), 100);
        assert_eq!(r.high_watermark_lagging(), None);
    }

    /// Issue 28, item 3: a checkpointed high watermark above the log end (a power loss took back
    /// what it counted) is capped when loaded, on a role change and after a truncation.
    #[test]
    fn the_high_watermark_never_stays_above_the_log_end() {
        let r = Replication::default();
        r.restore_high_watermark(120, 80);
        assert_eq!(r.high_watermark(), 80, "capped when loaded");
        r.await_role();
        r.become_follower(2, 1, 3, 60);
        assert_eq!(r.high_watermark(), 60, "capped at a role change");
        r.follower_high_watermark(60, 60);
        r.on_truncated(45);
        assert_eq!(r.high_watermark(), 45, "capped after a truncation");
        r.assert_within(45);
    }

    /// Issue 28, item 4: only a newer partition epoch of this leader epoch replaces the
    /// leader's ISR; a refusal other than INELIGIBLE_REPLICA, or no answer, keeps the pending
    /// change (the maximal ISR the high watermark waits for).
    #[test]
    fn stale_alter_partition_answers_change_nothing() {
        let r = Replication::default();
        r.become_leader(1, &state(vec![1, 2, 3], 4, 9), 0, 100);
        // The image already moved to partition epoch 11 with ISR [1, 2, 3].
        assert!(r.update_leader(&state(vec![1, 2, 3], 4, 11), 100, 0));
        // A late answer of an older request (epoch 10, ISR [1]) must not install [1].
        let shrink = IsrChange {
            leader_epoch: 4,
            partition_epoch: 9,
            isr: vec![1],
            new_isr_epochs: vec![],
        };
        r.on_alter_answer(
            &shrink,
            AlterAnswer::Committed(state(vec![1], 4, 10)),
            100,
            0,
        );
        assert!(r.update_leader(&state(vec![1], 4, 10), 100, 0));
        match r.role() {
            Role::Leader(l) => assert_eq!((l.isr, l.partition_epoch), (vec![1, 2, 3], 11)),
            other => panic!("{other:?}"),
        }
        // A pending shrink to [1, 2] stays pending on a stale refusal or no answer...
        let pending = r
            .shrink_check(
                100_000,
                101,
                LagLimits {
                    lag_max_ms: 1,
                    stall_max_ms: 1,
                },
            )
            .expect("both followers lag");
        for answer in [
            AlterAnswer::Refused(ResponseError::InvalidUpdateVersion),
            AlterAnswer::Unknown,
        ] {
            r.on_alter_answer(&pending, answer, 101, 0);
            assert!(r.pending_change(&pending));
        }
        // ...and is dropped only when the controller says it applied nothing.
        r.on_alter_answer(
            &pending,
            AlterAnswer::Refused(ResponseError::IneligibleReplica),
            101,
            0,
        );
        assert!(!r.pending_change(&pending));
        // An answer for another leader epoch is ignored.
        r.on_alter_answer(
            &pending,
            AlterAnswer::Committed(state(vec![1], 5, 12)),
            101,
            0,
        );
        match r.role() {
            Role::Leader(l) => assert_eq!(l.partition_epoch, 11),
            other => panic!("{other:?}"),
        }
    }

    /// A committed answer is installed by the image, not the answer (frieda-sim
    /// `--min-insync-changes` seed 509): until then the shrink stays pending and the high
    /// watermark keeps waiting for the member it removes.
    #[test]
    fn a_committed_isr_change_waits_for_the_image() {
        let r = Replication::default();
        r.set_min_insync(1);
        r.become_leader(1, &state(vec![1, 2, 3], 4, 9), 0, 100);
        let shrink = r
            .shrink_check(
                100_000,
                100,
                LagLimits {
                    lag_max_ms: 1,
                    stall_max_ms: 1,
                },
            )
            .expect("both followers lag");
        assert!(!r.on_alter_answer(
            &shrink,
            AlterAnswer::Committed(state(vec![1], 4, 10)),
            100,
            100_000,
        ));
        assert!(r.pending_change(&shrink), "pending until the image has it");
        assert_eq!(r.high_watermark(), 0, "still waits for the followers");
        // The image brings the state (and the configs committed before it).
        r.set_min_insync(2);
        assert!(r.update_leader(&state(vec![1], 4, 10), 100, 100_000));
        assert!(!r.pending_change(&shrink));
        assert_eq!(
            r.high_watermark(),
            0,
            "an ISR of one below min.insync.replicas=2 acknowledges nothing"
        );
    }

    /// Issue 57, the second defence for frieda-sim seed 73576: a leader that stepped down
    /// with an ISR expansion unanswered and leads again in the same leader and partition epoch
    /// (a self-fenced broker unfenced on the same image) takes the expansion back as pending,
    /// so the high watermark waits for the member the controller may have added.
    #[test]
    fn a_leader_retaken_in_the_same_epoch_takes_back_its_unanswered_isr_change() {
        let r = Replication::default();
        let image = state(vec![1, 3], 4, 9);
        r.become_leader(1, &image, 0, 100);
        for b in [2, 3] {
            r.on_follower_fetch(b, Some(7), 100, 0, 4, 100, 0).unwrap();
        }
        let expand = r.pending_isr_change().expect("broker 2 caught up");
        assert_eq!(expand.isr, vec![1, 2, 3]);
        assert_eq!(expand.new_isr_epochs, vec![(2, 7)]);
        assert_eq!(r.high_watermark(), 100);
        // Self-fenced: offline in the same epoch, then the leader again on the same image.
        r.become_follower(1, -1, 4, 110);
        r.become_leader(1, &image, 0, 110);
        assert_eq!(r.pending_isr_change(), Some(expand.clone()));
        r.on_follower_fetch(3, Some(7), 110, 0, 4, 110, 0).unwrap();
        assert_eq!(
            r.high_watermark(),
            100,
            "waits for broker 2, maybe in the ISR"
        );
        // A newer image resolves it; a later leadership in another epoch takes nothing back.
        r.update_leader(&state(vec![1, 2, 3], 4, 10), 110, 0);
        assert_eq!(r.pending_isr_change(), None);
        r.become_follower(1, -1, 4, 110);
        r.become_leader(1, &state(vec![1, 3], 5, 11), 0, 110);
        assert_eq!(r.pending_isr_change(), None);
    }

    #[tokio::test]
    async fn a_stopped_replica_answers_its_waiting_produces_at_once() {
        let p = PartitionState {
            replicas: vec![1, 2, 3],
            isr: vec![1, 2, 3],
            leader: 1,
            leader_epoch: 4,
            partition_epoch: 9,
            adding: vec![],
            removing: vec![],
            elr: vec![],
            last_known_elr: vec![],
            electing: None,
        };
        let r = std::sync::Arc::new(Replication::default());
        r.set_role(1, Role::Leader(Leader::new(&p, 1, 0, 0)), 0);
        let waiter = {
            let r = r.clone();
            tokio::spawn(async move { r.wait_replicated(10, 4, 2, Duration::from_secs(30)).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !waiter.is_finished(),
            "nothing replicated yet: the produce waits"
        );
        let t0 = std::time::Instant::now();
        r.stop();
        let answer = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("answered at once, not at its timeout")
            .unwrap();
        assert_eq!(answer, Err(ResponseError::NotLeaderOrFollower));
        assert!(t0.elapsed() < Duration::from_secs(1));
    }
}
