//! The cluster metadata image: what every node knows once the quorum committed it (brokers and
//! their fencing, topics, partition assignments, leaders, leader epochs, in-sync replicas,
//! configs), and the commands that change it.
//!
//! [`MetadataImage::apply`] is the replicated state machine's transition function: it must be
//! deterministic (same image, same command, same outcome on every node), so it validates the
//! command against the image and refuses it with a [`MetaError`] instead of trusting the
//! controller that proposed it. Kafka's equivalents: the `__cluster_metadata` records
//! (`RegisterBrokerRecord`, `FenceBrokerRecord`, `TopicRecord`, `PartitionRecord`,
//! `PartitionChangeRecord`, `ConfigRecord`, `ProducerIdsRecord`) and `MetadataImage`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::partition_change::{self, Context, ELR_DEFAULT_LEVEL, ELR_FEATURE};
use crate::remote_log::{RemoteLog, RemoteLogError, RemoteSegmentChange};
use crate::security::{
    AclEntry, ClientQuotas, DelegationToken, DelegationTokens, QuotaEntity, ScramCredential,
    ScramCredentials,
};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A broker id (`node.id`).
pub type BrokerId = i32;

/// No leader (an offline partition).
pub const NO_LEADER: BrokerId = -1;

/// One listener of a broker as clients reach it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// Listener name (`PLAINTEXT`).
    pub name: String,
    /// Host advertised to clients.
    pub host: String,
    /// Port.
    pub port: u16,
}

/// A registered broker (Kafka's `BrokerRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerRegistration {
    /// `node.id`.
    pub id: BrokerId,
    /// Random id of the broker process's current run: a restarted broker registers again.
    pub incarnation: Uuid,
    /// Where clients reach it.
    pub endpoints: Vec<Endpoint>,
    /// `broker.rack`, if set.
    pub rack: Option<String>,
    /// Fenced brokers lead nothing and are out of every ISR (missed heartbeats, or shut down).
    pub fenced: bool,
    /// Log index of the registration (Kafka's broker epoch).
    pub epoch: u64,
    /// Replicas whose log this run of the broker reported offline (a failed fsync; Kafka's
    /// offline log directories, KIP-858): ineligible to lead or to be in sync until the broker
    /// registers again (a restart recovers the log).
    #[serde(default)]
    pub offline_replicas: BTreeSet<(String, i32)>,
    /// The broker's previous run stopped cleanly (its logs flushed and closed; Kafka's
    /// `PreviousBrokerEpoch` matching the last registration). A broker that registers without
    /// it may have lost unsynced records and leaves every ELR (KIP-966).
    #[serde(default)]
    pub clean_shutdown: bool,
}

/// One partition's replicas and leadership (Kafka's `PartitionRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionState {
    /// Assigned replicas, preferred leader first.
    pub replicas: Vec<BrokerId>,
    /// In-sync replicas: the leader and the followers caught up with it. Always contains the
    /// leader when there is one.
    pub isr: Vec<BrokerId>,
    /// The leader, or [`NO_LEADER`].
    pub leader: BrokerId,
    /// Bumped on every leader change (KIP-101): fences a deposed leader's writes and requests.
    pub leader_epoch: i32,
    /// Bumped on every change of this partition (leader, ISR, replicas): AlterPartition requests
    /// carry it so stale ones are refused (Kafka's partition epoch).
    pub partition_epoch: i32,
    /// Replicas being added by a reassignment (they join `replicas` as followers first).
    #[serde(default)]
    pub adding: Vec<BrokerId>,
    /// Replicas being removed by a reassignment (removed once the new ones are in sync).
    #[serde(default)]
    pub removing: Vec<BrokerId>,
    /// Eligible leader replicas (KIP-966): replicas that left an ISR already smaller than
    /// `min.insync.replicas`, so they hold every committed record and may lead when the ISR is
    /// empty. Sorted; empty when ELR is off (see [`crate::partition_change`]).
    #[serde(default)]
    pub elr: Vec<BrokerId>,
    /// Last known ELR (KIP-966, balanced recovery): the leader at the moment the ISR became
    /// empty, electable when ISR and ELR are both empty; cleared when a leader is elected.
    #[serde(default)]
    pub last_known_elr: Vec<BrokerId>,
    /// A partition of a topic with `replication.ack.policy=quorum` waiting for its replicas'
    /// claims before a leader is chosen (issue 34, [`crate::quorum`]); `None` otherwise.
    #[serde(default)]
    pub electing: Option<Electing>,
}

/// Why a `quorum` partition is leaderless: whose leadership ended and who was asked for
/// ([`crate::quorum`]). The leader epoch was bumped when it began, so a replica that sees the
/// partition leaderless has stopped following the previous leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Electing {
    /// The leader whose epoch ended ([`NO_LEADER`] if none): its claim, when it makes one,
    /// says what was acknowledged.
    pub previous: BrokerId,
    /// The replica a leader election asked for (preferred election, measured placement,
    /// ElectLeaders), or [`NO_LEADER`]: chosen when its log holds every acknowledged record.
    pub wanted: BrokerId,
}

/// A topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicImage {
    /// Topic id (KIP-516).
    pub id: Uuid,
    /// Explicitly set configs (Kafka names).
    pub configs: BTreeMap<String, String>,
    /// Partitions by index.
    pub partitions: Vec<PartitionState>,
    /// The remote segments of its tiered partitions (KIP-405), by partition index; a partition
    /// without any is absent. Shared, so cloning the image does not copy them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub remote: BTreeMap<i32, Arc<RemoteLog>>,
}

/// The whole metadata image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataImage {
    /// Cluster id (22-character base64 UUID), set by the first controller.
    pub cluster_id: Option<String>,
    /// Registered brokers by id.
    pub brokers: BTreeMap<BrokerId, BrokerRegistration>,
    /// Topics by name.
    pub topics: BTreeMap<String, TopicImage>,
    /// Next producer id to hand out in a block (KIP-730: the controller allocates blocks).
    pub next_producer_id: i64,
    /// Dynamic broker configs (`kafka-configs --entity-type brokers`), by resource: `""` for the
    /// cluster-wide default (`--entity-default`), a broker id for one broker; Kafka's broker
    /// key names and values as set.
    #[serde(default)]
    pub broker_configs: BTreeMap<String, BTreeMap<String, String>>,
    /// Group configs (`kafka-configs --entity-type groups`, ConfigResource type GROUP), by
    /// group id; Kafka's group config names and values as set (Kafka keeps them as
    /// `ConfigRecord`s of resource type GROUP in its metadata log).
    #[serde(default)]
    pub group_configs: BTreeMap<String, BTreeMap<String, String>>,
    /// SCRAM credentials (AlterUserScramCredentials), by user and mechanism.
    #[serde(default)]
    pub scram_credentials: ScramCredentials,
    /// ACL bindings (CreateAcls / DeleteAcls).
    #[serde(default)]
    pub acls: BTreeSet<AclEntry>,
    /// Client quotas (AlterClientQuotas).
    #[serde(default)]
    pub client_quotas: ClientQuotas,
    /// Delegation tokens (KIP-48: CreateDelegationToken, renewed, expired and swept), by id.
    #[serde(default)]
    pub delegation_tokens: DelegationTokens,
    /// Finalized feature levels set by UpdateFeatures (KIP-584, `kafka-features
    /// upgrade/downgrade/disable`), by feature name; a feature not here is at the broker's
    /// default level. Validated by the broker that took the request.
    #[serde(default)]
    pub finalized_features: BTreeMap<String, i16>,
    /// Log index of the last UpdateFeatures (0: none yet): the finalized-features epoch
    /// ApiVersions reports (Kafka reports the metadata offset of the last feature change).
    #[serde(default)]
    pub features_epoch: u64,
    /// The active controller's static `unclean.leader.election.enable` (the default for topics
    /// that set none, below a dynamic cluster-wide default), set by
    /// [`MetaCommand::SetUncleanDefault`].
    #[serde(default)]
    pub unclean_default: bool,
    /// The active controller's static `min.insync.replicas` (the default for topics that set
    /// none, below a dynamic cluster-wide default), set by [`MetaCommand::SetMinInsyncDefault`];
    /// 0 until set, read as 1 (Kafka's default).
    #[serde(default)]
    pub min_insync_default: i32,
    /// The active controller's static `replication.ack.policy` is `quorum` (the default for
    /// topics that set none, below a dynamic cluster-wide default), set by
    /// [`MetaCommand::SetAckPolicyDefault`].
    #[serde(default)]
    pub quorum_ack_default: bool,
    /// Deleted topics whose remote segments (KIP-405) are still in the bucket, by topic id,
    /// with the topic's name (part of the object keys): the remote-log manager of the lowest
    /// live broker deletes their objects, then [`MetaCommand::RemoteTopicDeleted`] removes the
    /// entry. At most [`MAX_DELETED_REMOTE_TOPICS`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub deleted_remote: BTreeMap<Uuid, String>,
    /// Log index of the last applied command (the image's version).
    pub offset: u64,
    /// KRaft's leader epoch (DescribeQuorum's LeaderEpoch): the number of leaderships that
    /// wrote to the metadata log, each starting with its first entry (a new leader's blank
    /// entry, as KRaft's LeaderChange record). Unique per leader, where the Raft term is not
    /// (openraft's leader id is (term, node): two nodes may lead one term one after the other).
    /// 0 in an image that predates it.
    #[serde(default)]
    pub leader_epoch: u64,
    /// The Raft leader id, (term, node), of the last applied entry: the leadership
    /// `leader_epoch` counts.
    #[serde(default)]
    pub epoch_leader: Option<(u64, u64)>,
}

/// The topic config (and broker-level synonym) KIP-966's ELR is kept by.
pub const MIN_INSYNC_REPLICAS: &str = "min.insync.replicas";

/// The topic config choosing how `acks=all` records are acknowledged and leaders elected
/// (issue 34): `isr` (Kafka's rule, the default) or `quorum`.
pub const ACK_POLICY: &str = "replication.ack.policy";

/// Most deleted topics whose remote data awaits deletion ([`MetadataImage::deleted_remote`]);
/// a topic deleted beyond it leaves its objects in the bucket (logged by the controller).
pub const MAX_DELETED_REMOTE_TOPICS: usize = 100_000;

/// A change to the image, proposed by the active controller and applied by every node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MetaCommand {
    /// Names the cluster (once; later ones are no-ops).
    InitCluster {
        /// The cluster id.
        cluster_id: String,
    },
    /// A broker (re)registers; an earlier incarnation is replaced. Registered unfenced.
    RegisterBroker {
        /// The registration (its `epoch` and `fenced` are set by `apply`).
        registration: BrokerRegistration,
    },
    /// A broker missed its heartbeats (or shut down): fenced, out of every ISR it can leave,
    /// and new leaders elected for what it led.
    FenceBroker {
        /// The broker.
        id: BrokerId,
        /// Only this incarnation (a newer registration is not fenced by a stale decision).
        incarnation: Uuid,
    },
    /// UnregisterBroker (API 64, `kafka-cluster unregister`): the broker's registration is
    /// removed; it leaves every ISR and ELR first, as if fenced after an unclean shutdown
    /// (Kafka's `handleBrokerUnregistered`). Partitions keep it among their replicas. A broker
    /// that still runs registers again at its next heartbeat.
    UnregisterBroker {
        /// The broker.
        id: BrokerId,
    },
    /// A fenced broker heartbeats again: unfenced, and offline partitions it can lead get it.
    UnfenceBroker {
        /// The broker.
        id: BrokerId,
        /// Only this incarnation.
        incarnation: Uuid,
    },
    /// A broker's replicas whose log went offline (reported with its heartbeat): the broker
    /// leaves their ISRs (the last member stays), and where it led, an eligible in-sync replica
    /// is elected (Kafka's `ReplicationControlManager.handleDirectoriesOffline`).
    ReplicasOffline {
        /// The broker.
        id: BrokerId,
        /// Only this incarnation.
        incarnation: Uuid,
        /// `(topic, partition)` of each offline replica.
        replicas: Vec<(String, i32)>,
    },
    /// The active controller's static `unclean.leader.election.enable`.
    SetUncleanDefault {
        /// Enabled.
        enable: bool,
    },
    /// The active controller's static `replication.ack.policy` (issue 34).
    SetAckPolicyDefault {
        /// `replication.ack.policy=quorum`.
        quorum: bool,
    },
    /// Elects `leader` for a `quorum` partition that is leaderless in `leader_epoch`, chosen
    /// from its replicas' claims by [`crate::quorum::choose`]; refused (ELECTION_NOT_NEEDED)
    /// when the partition moved on meanwhile, INELIGIBLE_REPLICA when `leader` may not lead.
    ElectFromClaims {
        /// Topic name.
        topic: String,
        /// Partition index.
        partition: i32,
        /// The leaderless epoch the claims were made in.
        leader_epoch: i32,
        /// The replica chosen.
        leader: BrokerId,
    },
    /// The active controller's static `min.insync.replicas` (KIP-966: the controller keeps
    /// ELR by each topic's effective value).
    SetMinInsyncDefault {
        /// The value (at least 1).
        min_insync: i32,
    },
    /// Creates a topic with the given assignment (leader = first live replica, ISR = live ones).
    CreateTopic {
        /// Topic name.
        name: String,
        /// Topic id.
        id: Uuid,
        /// Explicit configs.
        configs: BTreeMap<String, String>,
        /// Replicas of each partition.
        assignment: Vec<Vec<BrokerId>>,
    },
    /// Deletes a topic.
    DeleteTopic {
        /// Topic name.
        name: String,
    },
    /// Adds partitions to a topic.
    CreatePartitions {
        /// Topic name.
        name: String,
        /// Replicas of each new partition.
        assignment: Vec<Vec<BrokerId>>,
    },
    /// Replaces the dynamic configs of a broker resource (`""`: the cluster default, else a
    /// broker id); an empty set removes the resource.
    SetBrokerConfigs {
        /// `""` or a broker id.
        resource: String,
        /// Kafka broker key names and values.
        configs: BTreeMap<String, String>,
    },
    /// Replaces a group's configs; an empty set removes them.
    SetGroupConfigs {
        /// Group id.
        group: String,
        /// Kafka group config names and values.
        configs: BTreeMap<String, String>,
    },
    /// Replaces a topic's explicit configs.
    SetTopicConfigs {
        /// Topic name.
        name: String,
        /// The new explicit configs.
        configs: BTreeMap<String, String>,
    },
    /// A partition leader's ISR change (Kafka's AlterPartition): applied only if the leader
    /// epoch and partition epoch still match.
    AlterIsr {
        /// Topic name.
        topic: String,
        /// Partition index.
        partition: i32,
        /// The leader asking.
        leader: BrokerId,
        /// Its leader epoch.
        leader_epoch: i32,
        /// The partition epoch it saw.
        partition_epoch: i32,
        /// The ISR it wants (must contain the leader).
        isr: Vec<BrokerId>,
        /// For each replica it adds, the broker epoch (registration) the leader saw it fetch
        /// under (Kafka's KIP-903 `NewIsrWithEpochs`): a replica that registered again since,
        /// i.e. restarted, possibly with a shorter log, is refused. Empty in entries written
        /// before this field existed (they are applied as they were).
        #[serde(default)]
        new_isr_epochs: Vec<(BrokerId, u64)>,
    },
    /// Elects a leader (preferred-leader election, or an operator's choice): `leader` must be a
    /// live, in-sync replica, or with `unclean` any live replica (the ISR becomes just it).
    ElectLeader {
        /// Topic name.
        topic: String,
        /// Partition index.
        partition: i32,
        /// The new leader.
        leader: BrokerId,
        /// Unclean election (ElectLeaders type 1): an out-of-sync replica may lead.
        unclean: bool,
    },
    /// Starts (or cancels, with the current replicas) a reassignment to `target`.
    Reassign {
        /// Topic name.
        topic: String,
        /// Partition index.
        partition: i32,
        /// The replicas wanted.
        target: Vec<BrokerId>,
    },
    /// Adds or replaces SCRAM credentials and removes others (AlterUserScramCredentials,
    /// validated by the broker): `(user, mechanism name)` keys.
    AlterScramCredentials {
        /// Credentials to store.
        upserts: Vec<(String, String, ScramCredential)>,
        /// Credentials to remove (absent ones are ignored).
        deletions: Vec<(String, String)>,
    },
    /// Adds and removes ACL bindings (CreateAcls / DeleteAcls; removals first).
    AlterAcls {
        /// Bindings to add (already present ones are kept once).
        create: Vec<AclEntry>,
        /// Bindings to remove (absent ones are ignored).
        delete: Vec<AclEntry>,
    },
    /// Sets or removes client quota keys (AlterClientQuotas, validated by the broker): value
    /// `None` removes the key.
    AlterClientQuotas {
        /// (entity, quota key, new value).
        changes: Vec<(QuotaEntity, String, Option<String>)>,
    },
    /// Stores a delegation token as the broker that took CreateDelegationToken,
    /// RenewDelegationToken or ExpireDelegationToken decided it (KIP-48).
    ///
    /// Errors: [`MetaError::DelegationTokenNotFound`] when `create` is false and the token is
    /// gone (expired or swept meanwhile: a renewal never brings a token back);
    /// [`MetaError::Invalid`] when `create` is true and the id is taken.
    PutDelegationToken {
        /// The token.
        token: DelegationToken,
        /// A new token (true) or a new expiry of a known one (false).
        create: bool,
    },
    /// Removes delegation tokens (ExpireDelegationToken with a negative period, or the sweep
    /// of expired ones); absent ids are ignored.
    RemoveDelegationTokens {
        /// Token ids.
        ids: Vec<String>,
    },
    /// Sets finalized feature levels (UpdateFeatures, validated by the broker): feature name
    /// to its new level (0 disables the feature).
    UpdateFeatures {
        /// The new levels.
        levels: BTreeMap<String, i16>,
    },
    /// Hands out a block of producer ids.
    AllocateProducerIds {
        /// Ids in the block.
        count: i64,
    },
    /// The objects of a deleted topic's remote segments are all deleted: its entry leaves
    /// [`MetadataImage::deleted_remote`].
    RemoteTopicDeleted {
        /// The deleted topic's id.
        topic_id: Uuid,
    },
    /// A change to a tiered partition's remote segments (KIP-405), from its leader: applied
    /// only while `leader_epoch` is the partition's current one and by the rules of
    /// [`RemoteLog::apply`] (docs/tiered-storage.md).
    RemoteSegment {
        /// Topic name.
        topic: String,
        /// Topic id: a change for a deleted and recreated topic of the same name is refused.
        topic_id: Uuid,
        /// Partition index.
        partition: i32,
        /// The leader epoch of the leader issuing it.
        leader_epoch: i32,
        /// The change.
        change: RemoteSegmentChange,
    },
}

/// What an applied command produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MetaOutcome {
    /// Applied (or a no-op).
    Done,
    /// A partition's state after an AlterIsr or election.
    Partition(PartitionState),
    /// The first id of an allocated producer-id block.
    ProducerIds {
        /// First id; the block is `[start, start + count)`.
        start: i64,
    },
}

/// Why a command was refused (each maps to a Kafka error code where the client sees it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum MetaError {
    /// TOPIC_ALREADY_EXISTS (36).
    #[error("topic `{0}` already exists")]
    TopicExists(String),
    /// UNKNOWN_TOPIC_OR_PARTITION (3).
    #[error("unknown topic or partition `{0}`")]
    UnknownTopic(String),
    /// INVALID_REPLICA_ASSIGNMENT (39).
    #[error("invalid replica assignment: {0}")]
    InvalidAssignment(String),
    /// FENCED_LEADER_EPOCH (74) / NOT_LEADER_OR_FOLLOWER (6): an AlterPartition from a leader
    /// that is no longer the leader.
    #[error("stale leader: {0}")]
    StaleLeader(String),
    /// INVALID_UPDATE_VERSION (108): an AlterPartition built on an older partition state.
    #[error("stale partition epoch: {0}")]
    StalePartitionEpoch(String),
    /// INELIGIBLE_REPLICA (107) / PREFERRED_LEADER_NOT_AVAILABLE (80).
    #[error("ineligible replica: {0}")]
    Ineligible(String),
    /// ELECTION_NOT_NEEDED (84).
    #[error("election not needed")]
    ElectionNotNeeded,
    /// NO_REASSIGNMENT_IN_PROGRESS (85).
    #[error("no reassignment in progress")]
    NoReassignment,
    /// BROKER_ID_NOT_REGISTERED (102) or a stale incarnation.
    #[error("broker {0} is not registered with that incarnation")]
    UnknownBroker(BrokerId),
    /// DELEGATION_TOKEN_NOT_FOUND (62).
    #[error("delegation token `{0}` not found")]
    DelegationTokenNotFound(String),
    /// INVALID_REQUEST (42): a command that cannot apply as it is.
    #[error("{0}")]
    Invalid(String),
    /// INVALID_CONFIG (40): a config change the cluster refuses (KAFKA-16540's rules for
    /// `min.insync.replicas` while ELR is on).
    #[error("{0}")]
    InvalidConfig(String),
}

impl PartitionState {
    /// Ends the leadership of a `quorum` partition ([`crate::quorum`]): leaderless in a new
    /// leader epoch (when it had a leader), [`Electing`] naming the leader that ends (or, when
    /// already leaderless, the one named before) and `wanted` ([`NO_LEADER`]: none). The
    /// caller moves the partition epoch on.
    pub(crate) fn end_leadership(&mut self, wanted: BrokerId) {
        let previous = match self.electing {
            Some(e) if self.leader == NO_LEADER => e.previous,
            _ => self.leader,
        };
        self.electing = Some(Electing { previous, wanted });
        if self.leader != NO_LEADER {
            self.leader = NO_LEADER;
            self.leader_epoch += 1;
        }
    }
}

impl MetadataImage {
    /// Notes that an entry written by Raft leader (`term`, `node`) was applied: a leader other
    /// than the last entry's starts the next [`leader_epoch`](Self::leader_epoch). Entries are
    /// applied in log order, where leader ids only grow, so every node counts the same epochs
    /// (from an image that predates the count, from its term at least).
    pub fn note_leader(&mut self, term: u64, node: u64) {
        if self.epoch_leader == Some((term, node)) {
            return;
        }
        let base = match self.epoch_leader {
            Some(_) => self.leader_epoch,
            None => self.leader_epoch.max(term),
        };
        self.leader_epoch = base + 1;
        self.epoch_leader = Some((term, node));
    }

    /// Live (registered, unfenced) brokers, by id.
    pub fn live_brokers(&self) -> impl Iterator<Item = &BrokerRegistration> {
        self.brokers.values().filter(|b| !b.fenced)
    }

    /// Whether `id` is registered and unfenced.
    pub fn is_live(&self, id: BrokerId) -> bool {
        self.brokers.get(&id).is_some_and(|b| !b.fenced)
    }

    /// The partition state of `topic`-`partition`.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionState> {
        self.topics
            .get(topic)?
            .partitions
            .get(usize::try_from(partition).ok()?)
    }

    /// Whether unclean leader election is allowed for `topic` (`unclean.leader.election.enable`):
    /// the topic's config, else the dynamic cluster-wide broker default (`kafka-configs
    /// --entity-type brokers --entity-default`), else the active controller's static setting
    /// (issue 28, item 8: the broker default was not read).
    pub fn unclean_allowed(&self, topic: &str) -> bool {
        self.topic_config(topic, "unclean.leader.election.enable")
            .map_or(self.unclean_default, |v| v == "true")
    }

    /// `key` as `topic` sets it, else as the dynamic cluster-wide broker default sets it
    /// (`kafka-configs --entity-type brokers --entity-default`); `None` when neither does (the
    /// active controller's static setting applies).
    fn topic_config(&self, topic: &str, key: &str) -> Option<&String> {
        self.topics
            .get(topic)
            .and_then(|t| t.configs.get(key))
            .or_else(|| self.broker_configs.get("").and_then(|c| c.get(key)))
    }

    /// Refuses, while ELR is on, a new config set `configs` of broker resource `resource`
    /// (`""`: the cluster-wide default) that alters a broker's `min.insync.replicas` or
    /// removes the cluster-wide one: KAFKA-16540's rules (Kafka 4.x
    /// `ConfigurationControlManager`), since brokers that disagree on which partitions are
    /// under `min.insync.replicas` break KIP-966's guarantee. Errors: [`MetaError::InvalidConfig`]
    /// with Kafka's messages (INVALID_CONFIG, 40).
    pub fn check_broker_min_isr(
        &self,
        resource: &str,
        configs: &BTreeMap<String, String>,
    ) -> Result<(), MetaError> {
        if !self.elr_enabled() {
            return Ok(());
        }
        let old = self
            .broker_configs
            .get(resource)
            .and_then(|c| c.get(MIN_INSYNC_REPLICAS));
        let new = configs.get(MIN_INSYNC_REPLICAS);
        if resource.is_empty() {
            if old.is_some() && new.is_none() {
                return Err(MetaError::InvalidConfig(
                    "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
                        .into(),
                ));
            }
        } else if new.is_some() {
            return Err(MetaError::InvalidConfig(
                "Broker-level min.insync.replicas cannot be altered while ELR is enabled.".into(),
            ));
        }
        Ok(())
    }

    /// Refuses a change of `topic`'s configs (applied already; `quorum_before` and
    /// `min_isr_before` are its policy and effective `min.insync.replicas` before it) that changes
    /// how a `replication.ack.policy=quorum` topic (issue 34) acknowledges or elects: its
    /// policy, or its effective `min.insync.replicas`. Its elections take `n - m + 1` claims
    /// because each acknowledged record is on `m` replicas; a record acknowledged under a
    /// smaller `m` than the one an election counts on may be on none of the claimants (the
    /// simulator's `--min-insync-changes` lost acknowledged records so). Kafka has no such
    /// mode, so nothing Kafka accepts is refused for `isr` topics.
    ///
    /// Errors: [`MetaError::InvalidConfig`] (INVALID_CONFIG, 40, to the client).
    fn check_quorum_topic_change(
        &self,
        topic: &str,
        quorum_before: bool,
        min_isr_before: Option<usize>,
    ) -> Result<(), MetaError> {
        let quorum_after = self.quorum_acks(topic);
        if quorum_before != quorum_after {
            return Err(MetaError::InvalidConfig(format!(
                "replication.ack.policy of topic {topic} cannot change after creation"
            )));
        }
        if quorum_after && self.min_isr_of(topic) != min_isr_before {
            return Err(MetaError::InvalidConfig(format!(
                "min.insync.replicas of topic {topic} cannot change after creation while its replication.ack.policy is quorum: its leader elections count on the value its records were acknowledged with"
            )));
        }
        Ok(())
    }

    /// Writes `topic`'s acknowledgement rules into its own configs where it sets none, so that
    /// no later change of a cluster-wide default (`kafka-configs --entity-default`, another
    /// controller's static `replication.ack.policy`) changes how it acknowledges or elects
    /// ([`Self::check_quorum_topic_change`] refuses changing them on the topic itself): a
    /// `quorum` topic gets `replication.ack.policy=quorum` and its `min.insync.replicas`; with
    /// `policy_too` an `isr` topic gets `replication.ack.policy=isr`.
    fn pin_ack_rules(&mut self, topic: &str, policy_too: bool) {
        let quorum = self.quorum_acks(topic);
        if !quorum && !policy_too {
            return;
        }
        let min_isr = quorum.then(|| self.min_insync_replicas(topic).to_string());
        if let Some(t) = self.topics.get_mut(topic) {
            t.configs
                .entry(ACK_POLICY.to_string())
                .or_insert_with(|| if quorum { "quorum" } else { "isr" }.to_string());
            if let Some(m) = min_isr {
                t.configs
                    .entry(MIN_INSYNC_REPLICAS.to_string())
                    .or_insert(m);
            }
        }
    }

    /// Before a cluster-wide default changes: every topic following it is pinned
    /// ([`Self::pin_ack_rules`]; `isr` topics only when the default `replication.ack.policy`
    /// changes, `policy_too`), so a `quorum` topic created before topics were pinned at
    /// creation keeps acknowledging and electing by the values its records were acknowledged
    /// with, and a changed default policy decides only for topics created after it.
    fn pin_before_default_change(&mut self, policy_too: bool) {
        let names: Vec<String> = self.topics.keys().cloned().collect();
        for t in names {
            self.pin_ack_rules(&t, policy_too);
        }
    }

    /// Whether the `min.insync.replicas` configs break KAFKA-16540's rules while ELR is on: no
    /// cluster-wide value, or a broker's own. The active controller then proposes
    /// [`MetaCommand::SetMinInsyncDefault`], whose [`apply`](Self::apply) repairs it.
    pub fn min_isr_configs_need_reset(&self) -> bool {
        self.elr_enabled()
            && (self
                .broker_configs
                .get("")
                .is_none_or(|c| !c.contains_key(MIN_INSYNC_REPLICAS))
                || self
                    .broker_configs
                    .iter()
                    .any(|(r, c)| !r.is_empty() && c.contains_key(MIN_INSYNC_REPLICAS)))
    }

    /// While ELR is on: writes the cluster-wide `min.insync.replicas` from the active
    /// controller's static value when absent, and removes every broker's own (Kafka's
    /// `maybeResetMinIsrConfig`, run when ELR is turned on and at bootstrap).
    fn reset_min_isr_configs(&mut self) {
        if !self.elr_enabled() || self.min_insync_default < 1 {
            return;
        }
        let default = self.min_insync_default.to_string();
        self.broker_configs
            .entry(String::new())
            .or_default()
            .entry(MIN_INSYNC_REPLICAS.to_string())
            .or_insert(default);
        for (resource, c) in self.broker_configs.iter_mut() {
            if !resource.is_empty() {
                c.remove(MIN_INSYNC_REPLICAS);
            }
        }
        self.broker_configs.retain(|_, c| !c.is_empty());
    }

    /// `topic`'s effective `min.insync.replicas`, `None` for a topic that does not exist.
    fn min_isr_of(&self, topic: &str) -> Option<usize> {
        self.topics
            .contains_key(topic)
            .then(|| self.effective_min_isr(topic))
    }

    /// Every topic's effective `min.insync.replicas`.
    fn min_isr_by_topic(&self) -> BTreeMap<String, usize> {
        self.topics
            .keys()
            .map(|t| (t.clone(), self.effective_min_isr(t)))
            .collect()
    }

    /// Clears the ELR of each topic whose effective `min.insync.replicas` is no longer what
    /// `before` says (KAFKA-16540).
    fn clear_elr_where_min_isr_changed(&mut self, before: &BTreeMap<String, usize>) {
        let changed: Vec<String> = before
            .iter()
            .filter(|(t, m)| self.min_isr_of(t).is_some_and(|now| now != **m))
            .map(|(t, _)| t.clone())
            .collect();
        for t in changed {
            self.clear_elr_of(&t);
        }
    }

    /// Clears the ELR and last known ELR of `topic`'s partitions (Kafka's `ClearElrRecord`
    /// for a topic): a replica's claim was made under the old `min.insync.replicas` and does
    /// not prove it holds the records committed under the new one. A partition that had any
    /// moves its partition epoch on.
    fn clear_elr_of(&mut self, topic: &str) {
        let Some(t) = self.topics.get_mut(topic) else {
            return;
        };
        for p in &mut t.partitions {
            if !p.elr.is_empty() || !p.last_known_elr.is_empty() {
                p.elr.clear();
                p.last_known_elr.clear();
                p.partition_epoch += 1;
            }
        }
    }

    /// Whether eligible leader replicas are on ([`ELR_FEATURE`] finalized at 1 or more; a
    /// cluster that never set it runs at [`ELR_DEFAULT_LEVEL`]).
    pub fn elr_enabled(&self) -> bool {
        self.finalized_features
            .get(ELR_FEATURE)
            .copied()
            .unwrap_or(ELR_DEFAULT_LEVEL)
            >= 1
    }

    /// Whether `topic` acknowledges `acks=all` records on a quorum (issue 34,
    /// `replication.ack.policy=quorum`): the topic's config, else the dynamic cluster-wide
    /// default, else the active controller's static one; `isr` (Kafka's rule) otherwise.
    pub fn quorum_acks(&self, topic: &str) -> bool {
        self.topic_config(topic, ACK_POLICY)
            .map_or(self.quorum_ack_default, |v| v == "quorum")
    }

    /// `topic`'s `min.insync.replicas` as the cluster decides it, at least 1: the topic's
    /// config, else the dynamic cluster-wide default, else the active controller's static one
    /// (Kafka's `ConfigurationControlManager.getTopicConfig` without the per-broker level,
    /// which KAFKA-16540 forbids while ELR is on). Every leader enforces this value for
    /// `acks=all` in a cluster and the controller keeps ELR by it (capped at the replication
    /// factor, [`Self::effective_min_isr`]), so both sides agree on which partitions are under
    /// it (KIP-966's invariant).
    pub fn min_insync_replicas(&self, topic: &str) -> i64 {
        self.topic_config(topic, MIN_INSYNC_REPLICAS)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(i64::from(self.min_insync_default))
            .max(1)
    }

    /// `topic`'s effective `min.insync.replicas` (Kafka's `getTopicEffectiveMinIsr`):
    /// [`Self::min_insync_replicas`], at least 1 and at most the replication factor.
    pub fn effective_min_isr(&self, topic: &str) -> usize {
        let configured = self.min_insync_replicas(topic);
        let rf = self
            .topics
            .get(topic)
            .and_then(|t| t.partitions.first())
            .map_or(1, |p| p.replicas.len().max(1));
        usize::try_from(configured.max(1)).unwrap_or(1).min(rf)
    }

    /// Whether broker `id`'s replica of `topic`-`partition` is offline (its log failed).
    pub fn replica_offline(&self, id: BrokerId, topic: &str, partition: i32) -> bool {
        self.brokers.get(&id).is_some_and(|b| {
            !b.offline_replicas.is_empty()
                && b.offline_replicas.contains(&(topic.to_string(), partition))
        })
    }

    /// Every offline replica, as `(broker, topic, partition)`.
    fn offline_set(&self) -> BTreeSet<(BrokerId, String, i32)> {
        self.brokers
            .values()
            .flat_map(|b| {
                b.offline_replicas
                    .iter()
                    .map(move |(t, p)| (b.id, t.clone(), *p))
            })
            .collect()
    }

    /// Applies `cmd`, committed at log index `offset`. Deterministic; see the module docs.
    ///
    /// Errors: the command does not fit the image (it changed nothing).
    pub fn apply(&mut self, cmd: &MetaCommand, offset: u64) -> Result<MetaOutcome, MetaError> {
        self.offset = offset;
        let outcome = self.apply_command(cmd, offset)?;
        self.forget_offline_replicas_removed();
        Ok(outcome)
    }

    /// Drops from each broker's [`BrokerRegistration::offline_replicas`] the replicas it no
    /// longer holds (a reassignment moved them away, the topic was deleted): the broker deletes
    /// such a log, and a replica assigned to it later is a new, healthy log. Without this a
    /// replica moved away and back stayed ineligible for the broker's whole run, although it
    /// fetched; a `quorum` partition whose longest claim it held could never elect (frieda-sim,
    /// seed 64373).
    fn forget_offline_replicas_removed(&mut self) {
        let removed: Vec<(BrokerId, (String, i32))> = self
            .brokers
            .iter()
            .flat_map(|(id, b)| {
                b.offline_replicas
                    .iter()
                    .filter(|(t, p)| {
                        !self
                            .partition(t, *p)
                            .is_some_and(|x| x.replicas.contains(id))
                    })
                    .map(move |r| (*id, r.clone()))
            })
            .collect();
        for (id, r) in removed {
            if let Some(b) = self.brokers.get_mut(&id) {
                b.offline_replicas.remove(&r);
            }
        }
    }

    fn apply_command(&mut self, cmd: &MetaCommand, offset: u64) -> Result<MetaOutcome, MetaError> {
        match cmd {
            MetaCommand::InitCluster { cluster_id } => {
                self.cluster_id.get_or_insert_with(|| cluster_id.clone());
                Ok(MetaOutcome::Done)
            }
            MetaCommand::RegisterBroker { registration } => {
                let mut r = registration.clone();
                r.fenced = false;
                r.epoch = offset;
                let id = r.id;
                // A new run of a live broker (it restarted within its session): its previous run
                // is fenced first, so what it led moves to an in-sync replica and its restarted
                // log, which may have lost unsynced records, rejoins as a follower.
                if let Some(old) = self.brokers.get_mut(&id) {
                    if old.incarnation != r.incarnation && !old.fenced {
                        old.fenced = true;
                        self.fence_in_partitions(id);
                    }
                }
                let unclean_shutdown = !r.clean_shutdown;
                self.brokers.insert(id, r);
                self.elect_where_offline(id, unclean_shutdown);
                Ok(MetaOutcome::Done)
            }
            MetaCommand::FenceBroker { id, incarnation } => {
                match self.brokers.get_mut(id) {
                    Some(b) if b.incarnation == *incarnation && !b.fenced => b.fenced = true,
                    Some(b) if b.incarnation == *incarnation => return Ok(MetaOutcome::Done),
                    _ => return Err(MetaError::UnknownBroker(*id)),
                }
                self.fence_in_partitions(*id);
                Ok(MetaOutcome::Done)
            }
            MetaCommand::UnregisterBroker { id } => {
                let Some(b) = self.brokers.get_mut(id) else {
                    return Err(MetaError::UnknownBroker(*id));
                };
                b.fenced = true;
                self.leave_partitions(*id, None, true);
                self.brokers.remove(id);
                Ok(MetaOutcome::Done)
            }
            MetaCommand::ReplicasOffline {
                id,
                incarnation,
                replicas,
            } => {
                match self.brokers.get_mut(id) {
                    Some(b) if b.incarnation == *incarnation => {
                        b.offline_replicas.extend(replicas.iter().cloned());
                    }
                    _ => return Err(MetaError::UnknownBroker(*id)),
                }
                let only: BTreeSet<(String, i32)> = replicas.iter().cloned().collect();
                self.leave_partitions(*id, Some(&only), false);
                Ok(MetaOutcome::Done)
            }
            MetaCommand::SetAckPolicyDefault { quorum } => {
                if self.quorum_ack_default != *quorum {
                    self.pin_before_default_change(true);
                }
                self.quorum_ack_default = *quorum;
                Ok(MetaOutcome::Done)
            }
            MetaCommand::ElectFromClaims {
                topic,
                partition,
                leader_epoch,
                leader,
            } => {
                let live = self.is_live(*leader);
                let offline = self.replica_offline(*leader, topic, *partition);
                let p = self.partition_mut(topic, *partition)?;
                if p.leader != NO_LEADER || p.leader_epoch != *leader_epoch {
                    return Err(MetaError::ElectionNotNeeded);
                }
                if !live || offline || !p.replicas.contains(leader) {
                    return Err(MetaError::Ineligible(format!(
                        "broker {leader} cannot lead {topic}-{partition}"
                    )));
                }
                if !p.isr.contains(leader) {
                    p.isr.push(*leader);
                    p.isr.sort_unstable();
                }
                p.electing = None;
                p.leader = *leader;
                p.leader_epoch += 1;
                p.partition_epoch += 1;
                Ok(MetaOutcome::Partition(p.clone()))
            }
            MetaCommand::SetUncleanDefault { enable } => {
                self.unclean_default = *enable;
                Ok(MetaOutcome::Done)
            }
            MetaCommand::SetMinInsyncDefault { min_insync } => {
                let before = self.min_isr_by_topic();
                self.pin_before_default_change(false);
                self.min_insync_default = *min_insync;
                // KAFKA-16540: with ELR on, the cluster-wide default decides and no broker
                // overrides it (what Kafka's activation records do at bootstrap).
                self.reset_min_isr_configs();
                self.clear_elr_where_min_isr_changed(&before);
                Ok(MetaOutcome::Done)
            }
            MetaCommand::UnfenceBroker { id, incarnation } => {
                match self.brokers.get_mut(id) {
                    Some(b) if b.incarnation == *incarnation => b.fenced = false,
                    _ => return Err(MetaError::UnknownBroker(*id)),
                }
                self.elect_where_offline(*id, false);
                Ok(MetaOutcome::Done)
            }
            MetaCommand::CreateTopic {
                name,
                id,
                configs,
                assignment,
            } => {
                if self.topics.contains_key(name) {
                    return Err(MetaError::TopicExists(name.clone()));
                }
                let partitions = assignment
                    .iter()
                    .map(|r| self.new_partition(r))
                    .collect::<Result<Vec<_>, _>>()?;
                if partitions.is_empty() {
                    return Err(MetaError::InvalidAssignment("no partitions".into()));
                }
                self.topics.insert(
                    name.clone(),
                    TopicImage {
                        id: *id,
                        configs: configs.clone(),
                        partitions,
                        remote: BTreeMap::new(),
                    },
                );
                // A new `quorum` topic keeps the rules it was created with.
                self.pin_ack_rules(name, false);
                Ok(MetaOutcome::Done)
            }
            MetaCommand::DeleteTopic { name } => match self.topics.remove(name) {
                Some(t) => {
                    if !t.remote.is_empty() && self.deleted_remote.len() < MAX_DELETED_REMOTE_TOPICS
                    {
                        self.deleted_remote.insert(t.id, name.clone());
                    }
                    Ok(MetaOutcome::Done)
                }
                None => Err(MetaError::UnknownTopic(name.clone())),
            },
            MetaCommand::CreatePartitions { name, assignment } => {
                let new = assignment
                    .iter()
                    .map(|r| self.new_partition(r))
                    .collect::<Result<Vec<_>, _>>()?;
                let t = self
                    .topics
                    .get_mut(name)
                    .ok_or_else(|| MetaError::UnknownTopic(name.clone()))?;
                t.partitions.extend(new);
                Ok(MetaOutcome::Done)
            }
            MetaCommand::SetBrokerConfigs { resource, configs } => {
                self.check_broker_min_isr(resource, configs)?;
                let before = self.min_isr_by_topic();
                if resource.is_empty() {
                    self.pin_before_default_change(configs.contains_key(ACK_POLICY));
                }
                if configs.is_empty() {
                    self.broker_configs.remove(resource);
                } else {
                    self.broker_configs
                        .insert(resource.clone(), configs.clone());
                }
                self.clear_elr_where_min_isr_changed(&before);
                Ok(MetaOutcome::Done)
            }
            MetaCommand::SetGroupConfigs { group, configs } => {
                if configs.is_empty() {
                    self.group_configs.remove(group);
                } else {
                    self.group_configs.insert(group.clone(), configs.clone());
                }
                Ok(MetaOutcome::Done)
            }
            MetaCommand::AlterScramCredentials { upserts, deletions } => {
                for (user, mechanism) in deletions {
                    if let Some(m) = self.scram_credentials.get_mut(user) {
                        m.remove(mechanism);
                        if m.is_empty() {
                            self.scram_credentials.remove(user);
                        }
                    }
                }
                for (user, mechanism, cred) in upserts {
                    self.scram_credentials
                        .entry(user.clone())
                        .or_default()
                        .insert(mechanism.clone(), cred.clone());
                }
                Ok(MetaOutcome::Done)
            }
            MetaCommand::PutDelegationToken { token, create } => {
                let known = self.delegation_tokens.contains_key(&token.token_id);
                if *create && known {
                    return Err(MetaError::Invalid(format!(
                        "delegation token id `{}` is taken",
                        token.token_id
                    )));
                }
                if !*create && !known {
                    return Err(MetaError::DelegationTokenNotFound(token.token_id.clone()));
                }
                self.delegation_tokens
                    .insert(token.token_id.clone(), token.clone());
                Ok(MetaOutcome::Done)
            }
            MetaCommand::RemoveDelegationTokens { ids } => {
                for id in ids {
                    self.delegation_tokens.remove(id);
                }
                Ok(MetaOutcome::Done)
            }
            MetaCommand::AlterClientQuotas { changes } => {
                for (entity, key, value) in changes {
                    self.client_quotas.set(entity, key, value.as_deref());
                }
                Ok(MetaOutcome::Done)
            }
            MetaCommand::UpdateFeatures { levels } => {
                let before = self.min_isr_by_topic();
                self.finalized_features
                    .extend(levels.iter().map(|(f, l)| (f.clone(), *l)));
                self.features_epoch = offset;
                // ELR turned on: the cluster-wide default is written, broker overrides go
                // (Kafka's `ConfigurationControlManager.maybeResetMinIsrConfig`).
                self.reset_min_isr_configs();
                self.clear_elr_where_min_isr_changed(&before);
                if !self.elr_enabled() {
                    // Kafka's ClearElrRecord: ELR turned off clears every claim.
                    for p in self.topics.values_mut().flat_map(|t| &mut t.partitions) {
                        if !p.elr.is_empty() || !p.last_known_elr.is_empty() {
                            p.elr.clear();
                            p.last_known_elr.clear();
                            p.partition_epoch += 1;
                        }
                    }
                }
                Ok(MetaOutcome::Done)
            }
            MetaCommand::AlterAcls { create, delete } => {
                for acl in delete {
                    self.acls.remove(acl);
                }
                self.acls.extend(create.iter().cloned());
                Ok(MetaOutcome::Done)
            }
            MetaCommand::SetTopicConfigs { name, configs } => {
                let was = self.min_isr_of(name);
                let quorum_was = self.quorum_acks(name);
                let t = self
                    .topics
                    .get_mut(name)
                    .ok_or_else(|| MetaError::UnknownTopic(name.clone()))?;
                let old = std::mem::replace(&mut t.configs, configs.clone());
                if let Err(e) = self.check_quorum_topic_change(name, quorum_was, was) {
                    if let Some(t) = self.topics.get_mut(name) {
                        t.configs = old;
                    }
                    return Err(e);
                }
                // KAFKA-16540: a claim made under another min.insync.replicas proves nothing.
                if self.min_isr_of(name) != was {
                    self.clear_elr_of(name);
                }
                Ok(MetaOutcome::Done)
            }
            MetaCommand::AlterIsr {
                topic,
                partition,
                leader,
                leader_epoch,
                partition_epoch,
                isr,
                new_isr_epochs,
            } => self.alter_isr(
                topic,
                *partition,
                (*leader, *leader_epoch, *partition_epoch),
                isr,
                new_isr_epochs,
            ),
            MetaCommand::ElectLeader {
                topic,
                partition,
                leader,
                unclean,
            } => {
                let live = self.live_set();
                let offline = self.replica_offline(*leader, topic, *partition);
                let quorum = self.quorum_acks(topic);
                let p = self.partition_mut(topic, *partition)?;
                if p.leader == *leader {
                    return Err(MetaError::ElectionNotNeeded);
                }
                if quorum && !*unclean {
                    // The ISR does not say who holds every acknowledged record: the leader's
                    // epoch ends and the replicas' claims decide ([`crate::quorum`]), `leader`
                    // first if its log holds everything acknowledged.
                    if offline || !live.contains(leader) || !p.replicas.contains(leader) {
                        return Err(MetaError::Ineligible(format!(
                            "broker {leader} is not a live replica"
                        )));
                    }
                    p.end_leadership(*leader);
                    p.partition_epoch += 1;
                    return Ok(MetaOutcome::Partition(p.clone()));
                }
                // Kafka's isValidNewLeader: in the ISR, or in the ELR when the ISR is empty.
                let from_elr = p.isr.is_empty() && p.elr.contains(leader);
                let eligible = !offline
                    && live.contains(leader)
                    && p.replicas.contains(leader)
                    && (p.isr.contains(leader) || from_elr || *unclean);
                if !eligible {
                    return Err(MetaError::Ineligible(format!(
                        "broker {leader} is not a live in-sync replica"
                    )));
                }
                if from_elr {
                    p.isr = vec![*leader];
                    p.elr.retain(|b| b != leader);
                } else if !p.isr.contains(leader) {
                    // Unclean: its log is the truth now, nothing else can claim to hold it.
                    p.isr = vec![*leader];
                    p.elr.clear();
                }
                p.last_known_elr.clear();
                p.electing = None;
                p.leader = *leader;
                p.leader_epoch += 1;
                p.partition_epoch += 1;
                Ok(MetaOutcome::Partition(p.clone()))
            }
            MetaCommand::Reassign {
                topic,
                partition,
                target,
            } => self.reassign(topic, *partition, target),
            MetaCommand::AllocateProducerIds { count } => {
                let start = self.next_producer_id;
                self.next_producer_id = start.saturating_add((*count).max(1));
                Ok(MetaOutcome::ProducerIds { start })
            }
            MetaCommand::RemoteTopicDeleted { topic_id } => {
                self.deleted_remote.remove(topic_id);
                Ok(MetaOutcome::Done)
            }
            MetaCommand::RemoteSegment {
                topic,
                topic_id,
                partition,
                leader_epoch,
                change,
            } => {
                let unknown = || MetaError::UnknownTopic(format!("{topic}-{partition}"));
                let t = self.topics.get_mut(topic).ok_or_else(unknown)?;
                if t.id != *topic_id {
                    return Err(unknown());
                }
                let current = t
                    .partitions
                    .get(usize::try_from(*partition).map_err(|_| unknown())?)
                    .ok_or_else(unknown)?
                    .leader_epoch;
                let mut log = t.remote.get(partition).cloned().unwrap_or_default();
                Arc::make_mut(&mut log)
                    .apply(change, *leader_epoch, current)
                    .map_err(|e| match e {
                        RemoteLogError::StaleLeaderEpoch { .. } => {
                            MetaError::StaleLeader(e.to_string())
                        }
                        e => MetaError::Invalid(e.to_string()),
                    })?;
                if log.is_empty() {
                    t.remote.remove(partition);
                } else {
                    t.remote.insert(*partition, log);
                }
                Ok(MetaOutcome::Done)
            }
        }
    }

    /// The remote segments of `topic`'s `partition` (KIP-405), if it has any.
    pub fn remote_log(&self, topic: &str, partition: i32) -> Option<&RemoteLog> {
        self.topics
            .get(topic)
            .and_then(|t| t.remote.get(&partition))
            .map(|r| r.as_ref())
    }

    fn live_set(&self) -> Vec<BrokerId> {
        self.live_brokers().map(|b| b.id).collect()
    }

    fn partition_mut(
        &mut self,
        topic: &str,
        partition: i32,
    ) -> Result<&mut PartitionState, MetaError> {
        self.topics
            .get_mut(topic)
            .and_then(|t| t.partitions.get_mut(usize::try_from(partition).ok()?))
            .ok_or_else(|| MetaError::UnknownTopic(format!("{topic}-{partition}")))
    }

    /// A new partition on `replicas`: ISR = the live ones, leader = the first live one.
    fn new_partition(&self, replicas: &[BrokerId]) -> Result<PartitionState, MetaError> {
        if replicas.is_empty() {
            return Err(MetaError::InvalidAssignment(
                "a partition with no replicas".into(),
            ));
        }
        let mut seen = replicas.to_vec();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != replicas.len() {
            return Err(MetaError::InvalidAssignment(format!(
                "duplicate replicas in {replicas:?}"
            )));
        }
        if let Some(b) = replicas.iter().find(|b| !self.brokers.contains_key(b)) {
            return Err(MetaError::InvalidAssignment(format!(
                "broker {b} is not registered"
            )));
        }
        let isr: Vec<BrokerId> = replicas
            .iter()
            .copied()
            .filter(|b| self.is_live(*b))
            .collect();
        Ok(PartitionState {
            replicas: replicas.to_vec(),
            leader: isr.first().copied().unwrap_or(NO_LEADER),
            isr,
            leader_epoch: 0,
            partition_epoch: 0,
            adding: Vec::new(),
            removing: Vec::new(),
            elr: Vec::new(),
            last_known_elr: Vec::new(),
            electing: None,
        })
    }

    /// `id` was fenced: it leaves every ISR with other members (Kafka keeps the last member so
    /// the partition can come back with it), and partitions it led get the first live ISR
    /// member (or none: offline; or, with unclean election allowed, the first live replica).
    fn fence_in_partitions(&mut self, id: BrokerId) {
        self.leave_partitions(id, None, false);
    }

    /// `id` leaves the ISR of every partition (`only`: of those listed) and its leaderships
    /// move, as in [`fence_in_partitions`](Self::fence_in_partitions), by Kafka's rules with
    /// eligible leader replicas ([`partition_change`]); with `leave_elr` it leaves their ELRs
    /// too. Replicas whose log is offline are never elected.
    fn leave_partitions(
        &mut self,
        id: BrokerId,
        only: Option<&BTreeSet<(String, i32)>>,
        leave_elr: bool,
    ) {
        self.change_partitions(
            |name, i, p| {
                only.is_none_or(|o| o.contains(&(name.to_string(), i)))
                    && (p.isr.contains(&id) || p.leader == id || p.elr.contains(&id))
            },
            Some(id),
            leave_elr.then_some(id),
            |p| p.isr.iter().copied().filter(|b| *b != id).collect(),
        );
    }

    /// Runs [`partition_change::change`] on every partition `select` picks, with the target ISR
    /// `target` gives; `leaving` is never acceptable as leader, `unclean_shutdown` leaves ELRs.
    fn change_partitions(
        &mut self,
        select: impl Fn(&str, i32, &PartitionState) -> bool,
        leaving: Option<BrokerId>,
        unclean_shutdown: Option<BrokerId>,
        target: impl Fn(&PartitionState) -> Vec<BrokerId>,
    ) {
        let live = self.live_set();
        let offline = self.offline_set();
        let elr_enabled = self.elr_enabled();
        let names: Vec<String> = self.topics.keys().cloned().collect();
        for name in names {
            let unclean = self.unclean_allowed(&name);
            let min_isr = self.effective_min_isr(&name);
            let quorum = self.quorum_acks(&name);
            let Some(t) = self.topics.get_mut(&name) else {
                continue;
            };
            for (i, p) in t.partitions.iter_mut().enumerate() {
                let i = i as i32;
                if !select(&name, i, p) {
                    continue;
                }
                let acceptable = |b: BrokerId| {
                    Some(b) != leaving
                        && live.contains(&b)
                        && !offline.contains(&(b, name.clone(), i))
                };
                let cx = Context {
                    min_isr,
                    elr_enabled: elr_enabled && !quorum,
                    acceptable: &acceptable,
                    unclean,
                    unclean_shutdown,
                    quorum,
                };
                let isr = target(p);
                partition_change::change(p, isr, &cx);
            }
        }
    }

    /// `id` became live: partitions without a leader that it can lead (it is in their ISR, in
    /// their ELR with the ISR empty, their last known leader, or unclean election is allowed
    /// and it is a replica) get a leader. `unclean_shutdown`: it restarted without a clean
    /// shutdown, so it leaves every ELR first (Kafka's `handleBrokerUncleanShutdown`).
    fn elect_where_offline(&mut self, id: BrokerId, unclean_shutdown: bool) {
        if unclean_shutdown {
            self.change_partitions(
                |_, _, p| p.elr.contains(&id),
                None,
                Some(id),
                |p| p.isr.clone(),
            );
        }
        self.change_partitions(
            |_, _, p| p.leader == NO_LEADER && p.replicas.contains(&id),
            None,
            None,
            |p| p.isr.clone(),
        );
    }

    /// AlterPartition: `(leader, leader_epoch, partition_epoch)` as the leader saw them.
    fn alter_isr(
        &mut self,
        topic: &str,
        partition: i32,
        (leader, leader_epoch, partition_epoch): (BrokerId, i32, i32),
        isr: &[BrokerId],
        new_isr_epochs: &[(BrokerId, u64)],
    ) -> Result<MetaOutcome, MetaError> {
        let live = self.live_set();
        let offline = self.offline_set();
        let quorum = self.quorum_acks(topic);
        let (min_isr, elr_enabled) = (self.effective_min_isr(topic), self.elr_enabled() && !quorum);
        let unclean = self.unclean_allowed(topic);
        // KIP-903: a replica the leader saw caught up under an older registration has
        // restarted since; its log may be shorter than what the leader counted.
        let stale_registration = new_isr_epochs
            .iter()
            .find(|(b, e)| self.brokers.get(b).map(|r| r.epoch) != Some(*e))
            .copied();
        let p = self.partition_mut(topic, partition)?;
        // Kafka's order: the leader and partition epochs first (FENCED_LEADER_EPOCH,
        // INVALID_UPDATE_VERSION), then whether the new members may join (INELIGIBLE_REPLICA).
        if p.leader != leader || p.leader_epoch != leader_epoch {
            return Err(MetaError::StaleLeader(format!(
                "{topic}-{partition}: leader {} epoch {}, asked by {leader} epoch {leader_epoch}",
                p.leader, p.leader_epoch
            )));
        }
        if p.partition_epoch != partition_epoch {
            return Err(MetaError::StalePartitionEpoch(format!(
                "{topic}-{partition}: partition epoch {}, asked with {partition_epoch}",
                p.partition_epoch
            )));
        }
        let all_replicas: Vec<BrokerId> = p.replicas.iter().chain(&p.adding).copied().collect();
        let ineligible = if let Some((b, e)) = stale_registration {
            Some(format!(
                "broker {b} registered again since the leader saw it caught up (broker epoch {e} is stale)"
            ))
        } else if !isr.contains(&leader) {
            Some("the ISR must contain the leader".into())
        } else {
            isr.iter()
                .find(|b| {
                    !all_replicas.contains(b)
                        || (**b != leader && !live.contains(b))
                        || (!p.isr.contains(b)
                            && offline.contains(&(**b, topic.to_string(), partition)))
                })
                // Kafka's INELIGIBLE_REPLICA: only live replicas may join the ISR.
                .map(|b| format!("broker {b} cannot join the ISR of {topic}-{partition}"))
        };
        if let Some(why) = ineligible {
            // The refusal moves the partition epoch on, so that no other copy of this ask (a
            // retry after a timeout, a request delayed on an old connection) can commit it
            // later: the leader drops its pending change on this answer and counts only the
            // committed ISR again, which a late commit of the old ask would silently undo
            // (frieda-sim seed 44251: a follower joined the ISR without records acknowledged
            // in between). Kafka has one AlterPartition in flight per partition instead.
            p.partition_epoch += 1;
            return Err(MetaError::Ineligible(why));
        }
        let acceptable = |b: BrokerId| {
            live.contains(&b) && !offline.contains(&(b, topic.to_string(), partition))
        };
        let cx = Context {
            min_isr,
            elr_enabled,
            acceptable: &acceptable,
            unclean,
            unclean_shutdown: None,
            quorum,
        };
        let epoch = p.partition_epoch;
        // The leader is in the new ISR and live: it stays; below min.insync.replicas the
        // replicas that leave keep their claim in the ELR.
        partition_change::change(p, isr.to_vec(), &cx);
        if p.partition_epoch == epoch {
            p.partition_epoch += 1;
        }
        complete_reassignment_if_in_sync(p, &live, quorum);
        Ok(MetaOutcome::Partition(p.clone()))
    }

    fn reassign(
        &mut self,
        topic: &str,
        partition: i32,
        target: &[BrokerId],
    ) -> Result<MetaOutcome, MetaError> {
        let registered: Vec<BrokerId> = self.brokers.keys().copied().collect();
        let live = self.live_set();
        let quorum = self.quorum_acks(topic);
        let p = self.partition_mut(topic, partition)?;
        if target.is_empty() {
            return Err(MetaError::InvalidAssignment("no replicas".into()));
        }
        if let Some(b) = target.iter().find(|b| !registered.contains(b)) {
            return Err(MetaError::InvalidAssignment(format!(
                "broker {b} is not registered"
            )));
        }
        let current: Vec<BrokerId> = p
            .replicas
            .iter()
            .copied()
            .filter(|b| !p.adding.contains(b))
            .collect();
        // Cancel (or a target equal to what is there): back to the original replicas.
        let original: Vec<BrokerId> = current
            .iter()
            .copied()
            .filter(|b| !p.adding.contains(b))
            .collect();
        let adding: Vec<BrokerId> = target
            .iter()
            .copied()
            .filter(|b| !original.contains(b))
            .collect();
        let removing: Vec<BrokerId> = original
            .iter()
            .copied()
            .filter(|b| !target.contains(b))
            .collect();
        let mut removing = removing;
        // Replicas an earlier reassignment was adding that this one drops. Kafka drops them at
        // once, ISR included; but one in the ISR may already count for the high watermark at a
        // leader that has not applied this change (a fetch it sent is in flight), and deleting
        // its log would leave an acks=all record on fewer replicas than acknowledged it (found by
        // frieda-sim, seed 76819). It stays, as a removing replica, until this reassignment
        // completes; the others leave now.
        removing.extend(
            p.adding
                .iter()
                .copied()
                .filter(|b| !target.contains(b) && p.isr.contains(b)),
        );
        let mut replicas = target.to_vec();
        replicas.extend(removing.iter().copied());
        // ISR ⊆ replicas: dropped replicas not in sync are not in the ISR anyway.
        let isr: Vec<BrokerId> = p
            .isr
            .iter()
            .copied()
            .filter(|b| replicas.contains(b))
            .collect();
        if isr.is_empty() {
            return Err(MetaError::InvalidAssignment(format!(
                "the reassignment of {topic}-{partition} to {target:?} would leave no in-sync replica"
            )));
        }
        p.elr.retain(|b| replicas.contains(b));
        p.last_known_elr.retain(|b| replicas.contains(b));
        p.replicas = replicas;
        p.isr = isr;
        p.adding = adding;
        p.removing = removing;
        p.partition_epoch += 1;
        if p.leader != NO_LEADER && !p.isr.contains(&p.leader) {
            reelect(p, &live, quorum);
        }
        complete_reassignment_if_in_sync(p, &live, quorum);
        Ok(MetaOutcome::Partition(p.clone()))
    }
}

/// Completes a reassignment in progress once every target replica is in the ISR (Kafka's
/// `PartitionReassignmentReplicas.maybeCompleteReassignment`: the ISR without the removing
/// replicas must contain every replica that stays): the removing replicas leave the replicas
/// and the ISR, and a removed leader's partition gets the first live ISR member. Until then the
/// removing replicas stay, so a record a stale leader counted on them is still on them.
fn complete_reassignment_if_in_sync(p: &mut PartitionState, live: &[BrokerId], quorum: bool) {
    if p.adding.is_empty() && p.removing.is_empty() {
        return;
    }
    let target: Vec<BrokerId> = p
        .replicas
        .iter()
        .copied()
        .filter(|b| !p.removing.contains(b))
        .collect();
    let isr: Vec<BrokerId> = p
        .isr
        .iter()
        .copied()
        .filter(|b| !p.removing.contains(b))
        .collect();
    if isr.is_empty() || target.is_empty() || !target.iter().all(|b| isr.contains(b)) {
        return;
    }
    let removing = std::mem::take(&mut p.removing);
    p.elr.retain(|b| !removing.contains(b));
    p.last_known_elr.retain(|b| !removing.contains(b));
    p.adding.clear();
    p.replicas = target;
    p.isr = isr;
    if removing.contains(&p.leader) || (p.leader == NO_LEADER && !quorum) {
        reelect(p, live, quorum);
    }
}

/// A new leader for `p`, whose leader has to go: the first live ISR member (or none), or for a
/// `quorum` partition none yet, the replicas' claims deciding ([`crate::quorum`]).
fn reelect(p: &mut PartitionState, live: &[BrokerId], quorum: bool) {
    if quorum {
        if p.leader != NO_LEADER {
            p.end_leadership(NO_LEADER);
        }
        return;
    }
    p.leader = p
        .replicas
        .iter()
        .copied()
        .find(|b| p.isr.contains(b) && live.contains(b))
        .unwrap_or(NO_LEADER);
    p.leader_epoch += 1;
}

#[cfg(test)]
#[path = "image_tests.rs"]
mod tests;
