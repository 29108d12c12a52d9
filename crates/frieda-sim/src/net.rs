//! The simulated network's messages: the requests and answers brokers, the controller quorum and
//! clients exchange (the Kafka RPCs that matter for replication, reduced to their fields).

use frieda::replication::follower::EpochEnd;
use frieda::replication::IsrChange;
use frieda_meta::{Heartbeat, MetaCommand, MetaError, PartitionState};
use kafka_protocol::error::ResponseError;

use crate::disk::Batch;

/// Who sends or receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Node {
    /// The controller quorum (its Raft replication is not simulated: openraft's job).
    Controller,
    /// A broker.
    Broker(i32),
    /// The producer clients.
    Client,
}

/// A follower's fetch data.
#[derive(Debug, Clone)]
pub struct FetchData {
    /// Batches from the fetch offset.
    pub batches: Vec<Batch>,
    /// The leader's high watermark as it serves it.
    pub hw: i64,
    /// The leader's log start offset.
    pub log_start: i64,
    /// KIP-595: where the follower's last fetched epoch ends in the leader's log, when the logs
    /// diverge (no batches then).
    pub diverging: Option<EpochEnd>,
}

/// A message.
#[derive(Debug, Clone)]
pub enum Msg {
    /// Broker -> controller: BrokerHeartbeat (with the registration folded in), sent at
    /// `sent` on the broker's lease clock.
    Heartbeat {
        /// The heartbeat.
        hb: Heartbeat,
        /// Lease-clock send time, ms.
        sent: u64,
    },
    /// Controller -> broker.
    HeartbeatReply {
        /// Fenced now.
        fenced: bool,
        /// The controller's metadata offset.
        offset: u64,
        /// Echo of the send time.
        sent: u64,
    },
    /// Broker -> controller: the metadata log from `from` on (a Raft learner's fetch).
    MetaFetch {
        /// First offset wanted.
        from: u64,
    },
    /// Controller -> broker: committed metadata entries `(offset, command)`.
    MetaEntries {
        /// Entries in order.
        entries: Vec<(u64, MetaCommand)>,
    },
    /// Leader -> controller: AlterPartition.
    AlterIsr {
        /// Request id (per broker run).
        req: u64,
        /// Partition.
        partition: i32,
        /// The change.
        change: IsrChange,
    },
    /// Controller -> leader.
    AlterIsrReply {
        /// Request id.
        req: u64,
        /// Partition.
        partition: i32,
        /// The state, or the refusal.
        result: Result<PartitionState, MetaError>,
    },
    /// Follower -> leader: OffsetForLeaderEpoch.
    EpochReq {
        /// Request id.
        req: u64,
        /// Partition.
        partition: i32,
        /// The follower's leader epoch (KIP-320).
        current_epoch: i32,
        /// The epoch asked about.
        asked: i32,
    },
    /// Leader -> follower.
    EpochReply {
        /// Request id.
        req: u64,
        /// Partition.
        partition: i32,
        /// The epoch asked about.
        asked: i32,
        /// Where it ends, or the error.
        result: Result<EpochEnd, ResponseError>,
    },
    /// Follower -> leader: Fetch with `replica_id`.
    FetchReq {
        /// Request id.
        req: u64,
        /// Partition.
        partition: i32,
        /// The follower's leader epoch.
        current_epoch: i32,
        /// Fetch offset.
        offset: i64,
        /// KIP-595 last fetched epoch (-1: none).
        last_fetched_epoch: i32,
        /// The follower's log start.
        log_start: i64,
    },
    /// Leader -> follower.
    FetchReply {
        /// Request id.
        req: u64,
        /// Partition.
        partition: i32,
        /// The fetch offset it answers.
        offset: i64,
        /// Data or error.
        result: Result<FetchData, ResponseError>,
    },
    /// Client -> broker: Produce.
    Produce {
        /// Request id (unique in the run; also the batch id).
        req: u64,
        /// Partition.
        partition: i32,
        /// -1 or 1.
        acks: i16,
        /// Records.
        count: i64,
    },
    /// Client -> broker: OffsetCommit of one partition (what it commits is in
    /// `crate::groups::Commits`, by request id).
    OffsetCommit {
        /// Request id (unique in the run, shared with produce requests; also the batch id).
        req: u64,
    },
    /// Transaction coordinator -> leader of the offsets partition: WriteTxnMarkers.
    TxnMarker {
        /// Request id (unique in the run; also the batch id).
        req: u64,
        /// The producer.
        pid: i64,
        /// COMMIT or ABORT.
        commit: bool,
    },
    /// Leader -> controller: a change to a partition's remote segments (the copy task's
    /// `ControllerRequest::RemoteSegment`).
    RemoteCommit {
        /// Request id (per broker run).
        req: u64,
        /// Partition.
        partition: i32,
        /// The issuing leader's epoch.
        leader_epoch: i32,
        /// The change.
        change: frieda_meta::remote_log::RemoteSegmentChange,
    },
    /// Controller -> leader: the metadata offset the change was committed at, or the refusal.
    RemoteCommitReply {
        /// Request id.
        req: u64,
        /// Partition.
        partition: i32,
        /// Offset or refusal.
        result: Result<u64, MetaError>,
    },
    /// Share group member -> leader of the consumed partition: ShareFetch (`crate::share`).
    ShareFetch {
        /// The member.
        member: u8,
    },
    /// Share group member -> the broker that gave it records: ShareAcknowledge.
    ShareAck {
        /// The member.
        member: u8,
        /// (first, last, type) ranges.
        acks: Vec<(i64, i64, frieda::coordinator::share::partition::AckType)>,
    },
    /// Leader -> group coordinator: ReadShareGroupState.
    ShareRead {
        /// Request id (unique in the run).
        req: u64,
        /// The leader's epoch (an older one is refused).
        leader_epoch: i32,
    },
    /// Leader -> group coordinator: WriteShareGroupState (what it writes is in
    /// `crate::share::Shares`, by request id, which is also the batch id).
    ShareWrite {
        /// Request id.
        req: u64,
    },
    /// Group coordinator -> leader: the stored state (a read), or the outcome.
    ShareReply {
        /// Request id.
        req: u64,
        /// The stored state (reads), or the error.
        result: Result<Option<frieda::coordinator::offsets::codec::ShareStateValue>, ResponseError>,
    },
    /// Transactional client -> coordinator: InitProducerId (`crate::txn`).
    TxnInit {
        /// Request id.
        req: u64,
        /// `transactional.id`.
        tid: String,
    },
    /// Transactional client -> coordinator: AddPartitionsToTxn of partition 0.
    TxnAdd {
        /// Request id.
        req: u64,
        /// `transactional.id`.
        tid: String,
        /// Producer id.
        pid: i64,
        /// Producer epoch.
        epoch: i16,
    },
    /// Transactional client -> coordinator: EndTxn.
    TxnEnd {
        /// Request id.
        req: u64,
        /// `transactional.id`.
        tid: String,
        /// Producer id.
        pid: i64,
        /// Producer epoch.
        epoch: i16,
        /// COMMIT or ABORT.
        commit: bool,
    },
    /// Transactional or idempotent client -> leader of partition 0: Produce of one batch, the
    /// `frame`-th request on the client's connection `conn` (the broker reads a connection's
    /// frames in order, once, as TCP hands them over; `crate::txn`).
    TxnProduce {
        /// Request id (also the batch id).
        req: u64,
        /// `transactional.id` (the Produce request's, for the KIP-890 verification).
        tid: String,
        /// The connection (its first request's id).
        conn: u64,
        /// The request's place on the connection, from 0.
        frame: u64,
        /// Producer id.
        pid: i64,
        /// Producer epoch.
        epoch: i16,
        /// Base sequence.
        seq: i32,
        /// Records.
        count: i64,
        /// A transactional batch (else an idempotent producer's).
        transactional: bool,
        /// Produce v12+ (transactions v2, KIP-890 part 2): the client did not add partition 0
        /// to its transaction, the leader adds it; else the leader verifies (part 1).
        adds: bool,
    },
    /// Leader of partition 0 -> transaction coordinator: AddPartitionsToTxn v5 for partition
    /// 0, `verify_only` (KIP-890 part 1) or an add (part 2; `txn_verify::add_or_verify`).
    TxnVerify {
        /// Request id.
        req: u64,
        /// `transactional.id`.
        tid: String,
        /// Producer id.
        pid: i64,
        /// Producer epoch.
        epoch: i16,
        /// Add partition 0 to the transaction (else only verify it is in it).
        add: bool,
    },
    /// Transaction coordinator -> leader of partition 0: partition 0 is in the transaction,
    /// or the error.
    TxnVerified {
        /// Request id.
        req: u64,
        /// Outcome.
        result: Result<(), ResponseError>,
    },
    /// Transaction coordinator -> leader of partition 0: WriteTxnMarkers.
    TxnMarkers {
        /// Request id (also the batch id).
        req: u64,
        /// Producer id.
        pid: i64,
        /// The marker's (bumped) epoch.
        epoch: i16,
        /// COMMIT or ABORT.
        commit: bool,
        /// The coordinator's epoch.
        coordinator_epoch: i32,
    },
    /// Leader of partition 0 -> coordinator: the marker's outcome.
    TxnMarkersReply {
        /// Request id.
        req: u64,
        /// Outcome.
        result: Result<(), ResponseError>,
    },
    /// Broker -> transactional client: producer id and epoch (InitProducerId, EndTxn), or the
    /// base offset (Produce), or the error.
    TxnReply {
        /// Request id.
        req: u64,
        /// The answer.
        result: Result<(i64, i16), ResponseError>,
    },
    /// Broker -> client.
    ProduceReply {
        /// Request id.
        req: u64,
        /// Base offset or error.
        result: Result<i64, ResponseError>,
    },
}
