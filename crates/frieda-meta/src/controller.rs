//! The active controller: the node that leads the Raft quorum decides, and the quorum makes the
//! decisions durable (every decision is a [`MetaCommand`] committed before anyone acts on it).
//!
//! Its duties (Kafka's `QuorumController`):
//! - broker sessions: brokers heartbeat every `broker.heartbeat.interval.ms`; an unknown or
//!   restarted broker is registered, a fenced one that heartbeats is unfenced, and one silent
//!   for `broker.session.timeout.ms` is fenced (leaders elected elsewhere for its partitions). A
//!   new controller gives every broker a full session before fencing it.
//! - topics: replica placement (striped over live brokers and their racks: `placement`),
//!   creation, deletion, new partitions, configs;
//! - partitions: ISR changes from leaders (AlterPartition), leader elections, reassignments;
//! - producer-id blocks (KIP-730) and the cluster id.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use uuid::Uuid;

use crate::housekeeping;
use crate::image::{BrokerId, MetaCommand, MetaError, MetaOutcome, MetadataImage, PartitionState};
use crate::leadership::{self, LeaderPlacement, PlacementConfig};
use crate::placement::place;
use crate::remote_log::RemoteSegmentChange;
pub use crate::sessions::{expired_sessions, heartbeat_commands, Heartbeat};
use crate::sessions::{BrokerSessions, HeartbeatDecision};
use crate::types::Raft;

/// Producer ids handed out per block (Kafka's `PRODUCER_ID_BLOCK_SIZE`).
pub const PRODUCER_ID_BLOCK: i64 = 1000;

/// How long a new active controller waits for its quorum to confirm it and its image to catch
/// up before it decides anything (retried at the next request or tick).
const READY_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the active controller waits for another voter to take its leadership over before
/// its own removal ([`Controller::hand_over`]).
const HAND_OVER_TIMEOUT: Duration = Duration::from_secs(10);

/// A request to the active controller.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ControllerRequest {
    /// A broker's heartbeat.
    Heartbeat(Heartbeat),
    /// CreateTopics: `assignment` given, or `partitions` x `replication_factor` placed here.
    CreateTopic {
        /// Name.
        name: String,
        /// Partitions (when no assignment).
        partitions: i32,
        /// Replication factor (when no assignment).
        replication_factor: i16,
        /// Explicit assignment.
        assignment: Option<Vec<Vec<BrokerId>>>,
        /// Explicit configs.
        configs: BTreeMap<String, String>,
        /// Check only.
        validate_only: bool,
    },
    /// DeleteTopics.
    DeleteTopic {
        /// Name.
        name: String,
    },
    /// CreatePartitions to `count`, placed here unless `assignment` (of the new ones) is given.
    CreatePartitions {
        /// Topic.
        name: String,
        /// New total.
        count: i32,
        /// Replicas of the new partitions.
        assignment: Option<Vec<Vec<BrokerId>>>,
        /// Check only.
        validate_only: bool,
    },
    /// A security change (SCRAM credentials, ACLs, client quotas, delegation tokens) already
    /// validated by the broker, proposed as it is: [`MetaCommand::AlterScramCredentials`],
    /// [`MetaCommand::AlterAcls`], [`MetaCommand::AlterClientQuotas`],
    /// [`MetaCommand::PutDelegationToken`] or [`MetaCommand::RemoveDelegationTokens`].
    AlterSecurity(MetaCommand),
    /// UpdateFeatures (KIP-584): new finalized levels, already validated by the broker.
    UpdateFeatures {
        /// Feature name to level.
        levels: BTreeMap<String, i16>,
    },
    /// (Incremental)AlterConfigs of a broker resource: its whole new dynamic config set.
    SetBrokerConfigs {
        /// `""` (cluster default) or a broker id.
        resource: String,
        /// Kafka broker key names and values (already validated by the broker).
        configs: BTreeMap<String, String>,
    },
    /// (Incremental)AlterConfigs of a group: its whole new config set (already validated by
    /// the broker; empty removes it).
    SetGroupConfigs {
        /// Group id.
        group: String,
        /// Kafka group config names and values.
        configs: BTreeMap<String, String>,
    },
    /// AlterConfigs of a topic.
    SetTopicConfigs {
        /// Topic.
        name: String,
        /// Explicit configs.
        configs: BTreeMap<String, String>,
    },
    /// AlterPartition from a partition leader.
    AlterIsr {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// Leader asking.
        leader: BrokerId,
        /// Its leader epoch.
        leader_epoch: i32,
        /// The partition epoch it saw.
        partition_epoch: i32,
        /// The ISR wanted.
        isr: Vec<BrokerId>,
        /// Broker epochs of the replicas it adds, as the leader saw them fetch (KIP-903).
        new_isr_epochs: Vec<(BrokerId, u64)>,
    },
    /// ElectLeaders: the preferred (first) replica, or (unclean) any live replica.
    ElectLeader {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// Preferred election (true) or unclean (false).
        preferred: bool,
    },
    /// AlterPartitionReassignments: a target, or `None` to cancel.
    Reassign {
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// Target replicas, or cancel.
        target: Option<Vec<BrokerId>>,
    },
    /// A block of producer ids (InitProducerId).
    AllocateProducerIds,
    /// UnregisterBroker (KIP-631, `kafka-cluster unregister --id`): removes the broker's
    /// registration (see [`MetaCommand::UnregisterBroker`]).
    UnregisterBroker {
        /// The broker.
        id: BrokerId,
    },
    /// A tiered partition leader's change to its remote segments (KIP-405; see
    /// [`MetaCommand::RemoteSegment`]).
    RemoteSegment {
        /// Topic.
        topic: String,
        /// Topic id.
        topic_id: Uuid,
        /// Partition.
        partition: i32,
        /// The leader's epoch.
        leader_epoch: i32,
        /// The change.
        change: RemoteSegmentChange,
    },
    /// A deleted topic's remote objects are all deleted (see
    /// [`MetaCommand::RemoteTopicDeleted`]).
    RemoteTopicDeleted {
        /// The deleted topic's id.
        topic_id: Uuid,
    },
    /// The quorum's state as the active controller sees it (DescribeQuorum).
    DescribeQuorum,
    /// AddRaftVoter (KIP-853, `kafka-metadata-quorum add-controller`): make `node`, an observer
    /// (learner) of the metadata log with its controller listener at `addr`, a voter.
    AddVoter {
        /// The controller's node id.
        node: u64,
        /// Its controller listener, `host:port`.
        addr: String,
    },
    /// RemoveRaftVoter (KIP-853, `kafka-metadata-quorum remove-controller`): `node` stops
    /// voting and stays an observer.
    RemoveVoter {
        /// The voter's node id.
        node: u64,
    },
    /// UnregisterController (KIP-1312, `kafka-cluster unregister-controller`): `node`, an
    /// observer of the metadata quorum (a Raft learner), leaves the quorum's membership.
    UnregisterController {
        /// The node id.
        node: u64,
    },
}

impl ControllerRequest {
    /// The request's name, for log lines (`Heartbeat`, `AlterSecurity`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            ControllerRequest::Heartbeat(_) => "Heartbeat",
            ControllerRequest::CreateTopic { .. } => "CreateTopic",
            ControllerRequest::DeleteTopic { .. } => "DeleteTopic",
            ControllerRequest::CreatePartitions { .. } => "CreatePartitions",
            ControllerRequest::AlterSecurity(_) => "AlterSecurity",
            ControllerRequest::UpdateFeatures { .. } => "UpdateFeatures",
            ControllerRequest::SetBrokerConfigs { .. } => "SetBrokerConfigs",
            ControllerRequest::SetGroupConfigs { .. } => "SetGroupConfigs",
            ControllerRequest::SetTopicConfigs { .. } => "SetTopicConfigs",
            ControllerRequest::AlterIsr { .. } => "AlterIsr",
            ControllerRequest::ElectLeader { .. } => "ElectLeader",
            ControllerRequest::Reassign { .. } => "Reassign",
            ControllerRequest::AllocateProducerIds => "AllocateProducerIds",
            ControllerRequest::UnregisterBroker { .. } => "UnregisterBroker",
            ControllerRequest::RemoteSegment { .. } => "RemoteSegment",
            ControllerRequest::RemoteTopicDeleted { .. } => "RemoteTopicDeleted",
            ControllerRequest::DescribeQuorum => "DescribeQuorum",
            ControllerRequest::AddVoter { .. } => "AddVoter",
            ControllerRequest::RemoveVoter { .. } => "RemoveVoter",
            ControllerRequest::UnregisterController { .. } => "UnregisterController",
        }
    }
}

/// The controller's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ControllerReply {
    /// Done.
    Done,
    /// A heartbeat's answer: whether the broker is fenced now, and how far the metadata log
    /// was applied when the controller answered (a starting broker serves once its own image
    /// has caught up with it, as Kafka's brokers wait for their registration's offset).
    Heartbeat {
        /// Fenced (it must not lead anything).
        fenced: bool,
        /// The controller's applied metadata offset.
        offset: u64,
    },
    /// A partition's new state.
    Partition(PartitionState),
    /// A producer-id block `[start, start + count)`.
    ProducerIds {
        /// First id.
        start: i64,
        /// Ids in the block.
        count: i64,
    },
    /// The quorum's state.
    Quorum(crate::QuorumStatus),
    /// The command was committed and applied at this metadata offset (the log index): a
    /// caller that decides on its own image next waits until that image has reached it
    /// ([`crate::MetadataImage::offset`]).
    Committed {
        /// The command's log index.
        offset: u64,
    },
}

/// Why the controller did not do it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ControllerError {
    /// This node is not the active controller (NOT_CONTROLLER, 41): try `leader`.
    #[error("not the active controller (leader: {leader:?})")]
    NotController {
        /// The leader's node id, if known.
        leader: Option<u64>,
    },
    /// The image refused the change.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// INVALID_PARTITIONS (37).
    #[error("invalid partitions: {0}")]
    InvalidPartitions(String),
    /// INVALID_REPLICATION_FACTOR (38).
    #[error("invalid replication factor: {0}")]
    InvalidReplicationFactor(String),
    /// The quorum could not commit (REQUEST_TIMED_OUT / NOT_CONTROLLER for the client).
    #[error("the metadata quorum is unavailable: {0}")]
    Unavailable(String),
    /// The active controller refused this node's request: its principal may not send quorum
    /// requests there (CLUSTER_AUTHORIZATION_FAILED for the client). Not retried.
    #[error("refused by the active controller: {0}")]
    Refused(String),
    /// A request the controller does not take (INVALID_REQUEST, 42).
    #[error("{0}")]
    Invalid(String),
    /// AddRaftVoter of a node that already votes (DUPLICATE_VOTER, 126).
    #[error("{0}")]
    DuplicateVoter(String),
    /// RemoveRaftVoter of a node that does not vote (VOTER_NOT_FOUND, 127).
    #[error("{0}")]
    VoterNotFound(String),
    /// UnregisterController of a node the quorum does not have (CONTROLLER_ID_NOT_REGISTERED,
    /// 136).
    #[error("{0}")]
    ControllerNotRegistered(String),
}

/// The controller error for a Raft write that failed (a command, a learner, a membership
/// change): NotController naming the leader openraft knows when this node does not lead,
/// else Unavailable.
fn write_error(
    e: openraft::error::RaftError<u64, openraft::error::ClientWriteError<u64, openraft::BasicNode>>,
) -> ControllerError {
    match e {
        openraft::error::RaftError::APIError(
            openraft::error::ClientWriteError::ForwardToLeader(f),
        ) => ControllerError::NotController {
            leader: f.leader_id,
        },
        e => ControllerError::Unavailable(e.to_string()),
    }
}

/// Settings of the controller.
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    /// `broker.session.timeout.ms`: a broker silent this long is fenced.
    pub session_timeout: Duration,
    /// How often preferred leaders are restored (`None`: never).
    pub leader_rebalance_interval: Option<Duration>,
    /// `leader.imbalance.per.broker.percentage`.
    pub leader_imbalance_percentage: u32,
    /// `leader.placement` and its settings ([`crate::leadership`]).
    pub placement: PlacementConfig,
    /// This node's static `unclean.leader.election.enable` (the default below topic configs
    /// and the dynamic cluster-wide default, while this node is the active controller).
    pub unclean_leader_election: bool,
    /// This node's static `min.insync.replicas` (the default below topic configs and the
    /// dynamic cluster-wide default, while this node is the active controller; KIP-966 keeps
    /// ELR by it).
    pub min_insync_replicas: i32,
    /// This node's static `replication.ack.policy` is `quorum` (the default below topic
    /// configs and the dynamic cluster-wide default, while this node is the active
    /// controller; issue 34).
    pub quorum_acks: bool,
}

/// The controller; acts only while its node leads the quorum.
pub struct Controller {
    raft: Raft,
    node_id: u64,
    image: watch::Receiver<Arc<MetadataImage>>,
    config: ControllerConfig,
    /// Broker sessions and quorum-partition claims (sans-IO, shared with the simulator).
    sessions: Mutex<BrokerSessions>,
    /// The origin of the ms clock `sessions` is kept on.
    started: Instant,
    /// The term this node last led in (sessions restart when it changes).
    led_term: Mutex<Option<u64>>,
    /// The term [`ready`](Self::ready) confirmed.
    ready_term: Mutex<Option<u64>>,
    /// Set while this node hands its leadership over ([`hand_over`](Self::hand_over)): it
    /// decides nothing.
    handing_over: std::sync::atomic::AtomicBool,
    /// One decision at a time (placement reads the image the last decision left).
    decide: tokio::sync::Mutex<()>,
    /// When preferred leaders were last checked.
    last_rebalance: Mutex<Instant>,
    /// Each broker's last reported leader cost (µs) and when it came (measured placement).
    costs: Mutex<HashMap<BrokerId, (u64, Instant)>>,
    /// When measured placement last planned.
    last_placement: Mutex<Instant>,
    /// When the leaderships moved in the last minute were moved (at most
    /// `leader.placement.max.moves.per.minute` entries).
    recent_moves: Mutex<VecDeque<Instant>>,
    /// When each quorum peer last acknowledged this node's entries (DescribeQuorum's
    /// timestamps), recorded by this node's Raft network.
    pub(crate) contacts: Arc<crate::network::Reachability>,
}

impl Controller {
    /// A controller for the node `node_id` of `raft`, reading applied images from `image`.
    pub fn new(
        raft: Raft,
        node_id: u64,
        image: watch::Receiver<Arc<MetadataImage>>,
        contacts: Arc<crate::network::Reachability>,
        config: ControllerConfig,
    ) -> Controller {
        Controller {
            raft,
            node_id,
            image,
            contacts,
            config,
            sessions: Mutex::new(BrokerSessions::default()),
            started: Instant::now(),
            led_term: Mutex::new(None),
            ready_term: Mutex::new(None),
            handing_over: std::sync::atomic::AtomicBool::new(false),
            decide: tokio::sync::Mutex::new(()),
            last_rebalance: Mutex::new(Instant::now()),
            costs: Mutex::new(HashMap::new()),
            last_placement: Mutex::new(Instant::now()),
            recent_moves: Mutex::new(VecDeque::new()),
        }
    }

    /// The term this node leads in, if it leads as a voter. A leader that its own removal
    /// took out of the voters decides nothing more (KIP-853: the removed leader resigns): a
    /// voter change it started could leave the only remaining voter without the entries the
    /// others hold, and no node able to win an election (`frieda-sim --quorum` seed 647).
    fn leading(&self) -> Option<u64> {
        let m = self.raft.metrics().borrow().clone();
        let voter = m
            .membership_config
            .membership()
            .voter_ids()
            .any(|v| v == self.node_id);
        let handing_over = self.handing_over.load(std::sync::atomic::Ordering::Acquire);
        (m.current_leader == Some(self.node_id)
            && m.state == openraft::ServerState::Leader
            && voter
            && !handing_over)
            .then_some(m.current_term)
    }

    /// The term this node leads in, once it is ready to decide in it: leadership confirmed by
    /// a quorum and everything committed before applied to its image (openraft's
    /// `ensure_linearizable`), as Kafka's new active controller first replays the log to its
    /// committed end. A leader that restarted and resumed its term at once (no election while it
    /// was away) would otherwise decide on the image of its last snapshot: fence brokers whose
    /// registrations it has not applied yet, elect from stale ISRs (tests/jepsen rolling seed
    /// 2025). `None` while not leading or not caught up.
    async fn ready(&self) -> Option<u64> {
        let term = self.leading()?;
        if *self.ready_term.lock() == Some(term) {
            return Some(term);
        }
        match tokio::time::timeout(READY_TIMEOUT, self.raft.ensure_linearizable()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::debug!(term, error = %e, "not ready to decide: leadership not confirmed");
                return None;
            }
            Err(_) => return None,
        }
        if self.leading() != Some(term) {
            return None;
        }
        self.on_term(term);
        *self.ready_term.lock() = Some(term);
        Some(term)
    }

    /// Milliseconds on the clock the broker sessions are kept on (monotonic, from this
    /// controller's start).
    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Restarts broker sessions when this node starts leading a new term (a new controller
    /// gives every registered broker a full session).
    fn on_term(&self, term: u64) {
        let mut led = self.led_term.lock();
        if *led == Some(term) {
            return;
        }
        *led = Some(term);
        let image = self.image.borrow().clone();
        self.sessions.lock().new_term(&image, self.now_ms());
        tracing::info!(term, "this node is the active controller");
    }

    /// Commits a command and returns what applying it gave.
    async fn propose(&self, cmd: MetaCommand) -> Result<MetaOutcome, ControllerError> {
        self.propose_at(cmd).await.map(|(outcome, _)| outcome)
    }

    /// [`Self::propose`], also giving the log index the command was committed at.
    async fn propose_at(&self, cmd: MetaCommand) -> Result<(MetaOutcome, u64), ControllerError> {
        match self.raft.client_write(cmd).await {
            Ok(resp) => {
                let index = resp.log_id.index;
                resp.data
                    .map(|outcome| (outcome, index))
                    .map_err(ControllerError::Meta)
            }
            Err(e) => Err(write_error(e)),
        }
    }

    /// The membership of the metadata log (voters and learners) as this node knows it.
    fn membership(&self) -> openraft::Membership<u64, openraft::BasicNode> {
        self.raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .clone()
    }

    /// Handles a request if this node is the active controller.
    ///
    /// Errors: [`ControllerError::NotController`] elsewhere; see each request.
    pub async fn handle(&self, req: ControllerRequest) -> Result<ControllerReply, ControllerError> {
        if self.ready().await.is_none() {
            return Err(ControllerError::NotController {
                leader: self.raft.metrics().borrow().current_leader,
            });
        }
        match req {
            ControllerRequest::DescribeQuorum => {
                // A read: no decision, no lock.
                return Ok(ControllerReply::Quorum(crate::quorum_status(
                    &self.raft,
                    self.node_id,
                    &self.image.borrow(),
                    &self.contacts,
                )));
            }
            // Raft's own membership changes, not image decisions: no lock (adding a voter
            // waits for it to catch up).
            ControllerRequest::AddVoter { node, addr } => return self.add_voter(node, addr).await,
            ControllerRequest::RemoveVoter { node } => return self.remove_voter(node).await,
            ControllerRequest::UnregisterController { node } => {
                return self.unregister_controller(node).await
            }
            _ => {}
        }
        let _one = self.decide.lock().await;
        let image = self.image.borrow().clone();
        match req {
            ControllerRequest::DescribeQuorum => Ok(ControllerReply::Quorum(crate::quorum_status(
                &self.raft,
                self.node_id,
                &self.image.borrow(),
                &self.contacts,
            ))),
            ControllerRequest::AddVoter { .. }
            | ControllerRequest::RemoveVoter { .. }
            | ControllerRequest::UnregisterController { .. } => {
                Err(ControllerError::Invalid("answered above".into()))
            }
            ControllerRequest::Heartbeat(hb) => self.heartbeat(hb).await,
            ControllerRequest::CreateTopic {
                name,
                partitions,
                replication_factor,
                assignment,
                configs,
                validate_only,
            } => {
                if image.topics.contains_key(&name) {
                    return Err(MetaError::TopicExists(name).into());
                }
                let assignment = match assignment {
                    Some(a) => a,
                    None => place(&image, &name, 0, partitions, replication_factor)?,
                };
                if validate_only {
                    return Ok(ControllerReply::Done);
                }
                self.propose(MetaCommand::CreateTopic {
                    name,
                    id: random_uuid(),
                    configs,
                    assignment,
                })
                .await?;
                Ok(ControllerReply::Done)
            }
            ControllerRequest::DeleteTopic { name } => {
                self.propose(MetaCommand::DeleteTopic { name }).await?;
                Ok(ControllerReply::Done)
            }
            ControllerRequest::CreatePartitions {
                name,
                count,
                assignment,
                validate_only,
            } => {
                let t = image
                    .topics
                    .get(&name)
                    .ok_or_else(|| MetaError::UnknownTopic(name.clone()))?;
                let current = t.partitions.len() as i32;
                if count <= current {
                    return Err(ControllerError::InvalidPartitions(format!(
                        "topic currently has {current} partitions, {count} would not be an increase"
                    )));
                }
                let rf = t.partitions[0].replicas.len() as i16;
                let assignment = match assignment {
                    Some(a) if a.len() as i32 == count - current => a,
                    Some(a) => {
                        return Err(ControllerError::InvalidPartitions(format!(
                            "{} assignments for {} new partitions",
                            a.len(),
                            count - current
                        )))
                    }
                    None => place(&image, &name, current, count - current, rf)?,
                };
                if validate_only {
                    return Ok(ControllerReply::Done);
                }
                self.propose(MetaCommand::CreatePartitions { name, assignment })
                    .await?;
                Ok(ControllerReply::Done)
            }
            ControllerRequest::AlterSecurity(cmd) => {
                if !matches!(
                    cmd,
                    MetaCommand::AlterScramCredentials { .. }
                        | MetaCommand::AlterAcls { .. }
                        | MetaCommand::AlterClientQuotas { .. }
                        | MetaCommand::PutDelegationToken { .. }
                        | MetaCommand::RemoveDelegationTokens { .. }
                ) {
                    return Err(ControllerError::Invalid(
                        "AlterSecurity carries only SCRAM, ACL, client quota and delegation token changes".into(),
                    ));
                }
                self.propose(cmd).await?;
                Ok(ControllerReply::Done)
            }
            ControllerRequest::UpdateFeatures { levels } => {
                self.propose(MetaCommand::UpdateFeatures { levels }).await?;
                Ok(ControllerReply::Done)
            }
            ControllerRequest::UnregisterBroker { id } => {
                self.propose(MetaCommand::UnregisterBroker { id }).await?;
                // Its session goes with it: a broker that still runs registers anew.
                self.sessions.lock().unregistered(id);
                Ok(ControllerReply::Done)
            }
            ControllerRequest::SetBrokerConfigs { resource, configs } => {
                // KAFKA-16540's refusals before anything is written (`apply` refuses too).
                self.image
                    .borrow()
                    .check_broker_min_isr(&resource, &configs)
                    .map_err(ControllerError::Meta)?;
                self.propose(MetaCommand::SetBrokerConfigs { resource, configs })
                    .await?;
                Ok(ControllerReply::Done)
            }
            ControllerRequest::SetGroupConfigs { group, configs } => {
                self.propose(MetaCommand::SetGroupConfigs { group, configs })
                    .await?;
                Ok(ControllerReply::Done)
            }
            ControllerRequest::SetTopicConfigs { name, configs } => {
                self.propose(MetaCommand::SetTopicConfigs { name, configs })
                    .await?;
                Ok(ControllerReply::Done)
            }
            ControllerRequest::AlterIsr {
                topic,
                partition,
                leader,
                leader_epoch,
                partition_epoch,
                isr,
                new_isr_epochs,
            } => match self
                .propose(MetaCommand::AlterIsr {
                    topic,
                    partition,
                    leader,
                    leader_epoch,
                    partition_epoch,
                    isr,
                    new_isr_epochs,
                })
                .await?
            {
                MetaOutcome::Partition(p) => Ok(ControllerReply::Partition(p)),
                _ => Ok(ControllerReply::Done),
            },
            ControllerRequest::RemoteSegment {
                topic,
                topic_id,
                partition,
                leader_epoch,
                change,
            } => {
                let (_, offset) = self
                    .propose_at(MetaCommand::RemoteSegment {
                        topic,
                        topic_id,
                        partition,
                        leader_epoch,
                        change,
                    })
                    .await?;
                Ok(ControllerReply::Committed { offset })
            }
            ControllerRequest::RemoteTopicDeleted { topic_id } => {
                self.propose(MetaCommand::RemoteTopicDeleted { topic_id })
                    .await?;
                Ok(ControllerReply::Done)
            }
            ControllerRequest::ElectLeader {
                topic,
                partition,
                preferred,
            } => {
                let cmd = election(&image, &topic, partition, preferred)?;
                match self.propose(cmd).await? {
                    MetaOutcome::Partition(p) => Ok(ControllerReply::Partition(p)),
                    _ => Ok(ControllerReply::Done),
                }
            }
            ControllerRequest::Reassign {
                topic,
                partition,
                target,
            } => {
                let p = image
                    .partition(&topic, partition)
                    .ok_or_else(|| MetaError::UnknownTopic(format!("{topic}-{partition}")))?;
                let target = match target {
                    Some(t) => t,
                    None if p.adding.is_empty() && p.removing.is_empty() => {
                        return Err(MetaError::NoReassignment.into())
                    }
                    None => p
                        .replicas
                        .iter()
                        .copied()
                        .filter(|b| !p.adding.contains(b))
                        .collect(),
                };
                match self
                    .propose(MetaCommand::Reassign {
                        topic,
                        partition,
                        target,
                    })
                    .await?
                {
                    MetaOutcome::Partition(p) => Ok(ControllerReply::Partition(p)),
                    _ => Ok(ControllerReply::Done),
                }
            }
            ControllerRequest::AllocateProducerIds => match self
                .propose(MetaCommand::AllocateProducerIds {
                    count: PRODUCER_ID_BLOCK,
                })
                .await?
            {
                MetaOutcome::ProducerIds { start } => Ok(ControllerReply::ProducerIds {
                    start,
                    count: PRODUCER_ID_BLOCK,
                }),
                _ => Err(ControllerError::Unavailable("no producer ids".into())),
            },
        }
    }

    async fn heartbeat(&self, hb: Heartbeat) -> Result<ControllerReply, ControllerError> {
        // An answer renews the broker's lease: it must come from a controller a quorum still
        // follows, not from a deposed leader that has not noticed yet (e.g. one resumed after a
        // pause, answering its own broker's heartbeat).
        if let Err(e) = self.raft.ensure_linearizable().await {
            return Err(ControllerError::NotController {
                leader: self.raft.metrics().borrow().current_leader,
            })
            .inspect_err(
                |_| tracing::debug!(error = %e, "heartbeat refused: leadership not confirmed"),
            );
        }
        // What the confirmation applied: the registration decision below must see it.
        let fresh = self.image.borrow().clone();
        let HeartbeatDecision { commands, fenced } =
            self.sessions.lock().heartbeat(&fresh, &hb, self.now_ms());
        if fenced {
            for cmd in commands {
                self.propose(cmd).await?;
            }
            return Ok(ControllerReply::Heartbeat {
                fenced: true,
                offset: self.image.borrow().offset,
            });
        }
        match hb.leader_cost_us {
            Some(c) => self.costs.lock().insert(hb.id, (c, Instant::now())),
            None => self.costs.lock().remove(&hb.id),
        };
        for cmd in commands {
            let what = match &cmd {
                MetaCommand::RegisterBroker { .. } => "registered broker",
                MetaCommand::ReplicasOffline { .. } => {
                    "the broker's offline replicas leave their ISRs and leaderships"
                }
                _ => "unfenced broker",
            };
            self.propose(cmd).await?;
            tracing::info!(broker = hb.id, incarnation = %hb.incarnation, "{what}");
        }
        let image = self.image.borrow().clone();
        if self.sessions.lock().record_claims(&image, &hb) {
            self.elect_from_claims().await;
        }
        self.ensure_learner(hb.id, &hb.raft_addr).await;
        Ok(ControllerReply::Heartbeat {
            fenced: false,
            offset: self.image.borrow().offset,
        })
    }

    /// Makes observer `node` a voter: it is added as a learner first if the metadata log does
    /// not know it yet (openraft then waits until it has caught up), then the voter set grows
    /// by it through a joint configuration (Raft's membership change, openraft
    /// `change_membership`), committed before the answer.
    ///
    /// Errors: DuplicateVoter when it already votes; Unavailable when the change does not
    /// commit (no quorum, or another change in progress).
    async fn add_voter(&self, node: u64, addr: String) -> Result<ControllerReply, ControllerError> {
        let membership = self.membership();
        if membership.voter_ids().any(|v| v == node) {
            return Err(ControllerError::DuplicateVoter(format!(
                "node {node} is already a voter of the metadata quorum"
            )));
        }
        if membership.get_node(&node).is_none() {
            self.raft
                .add_learner(node, openraft::BasicNode { addr: addr.clone() }, true)
                .await
                .map_err(write_error)?;
        }
        let change = openraft::ChangeMembers::AddVoterIds(std::collections::BTreeSet::from([node]));
        self.raft
            .change_membership(change, true)
            .await
            .map_err(write_error)?;
        tracing::info!(node, addr = %addr, "added a voter to the metadata quorum");
        Ok(ControllerReply::Done)
    }

    /// Removes voter `node` from the voter set (it stays a learner, as Kafka's removed
    /// controller stays an observer), committed before the answer.
    ///
    /// Errors: VoterNotFound when it does not vote; Invalid for the last voter; NotController
    /// (or Unavailable) when it is this node, which hands its leadership over first.
    async fn remove_voter(&self, node: u64) -> Result<ControllerReply, ControllerError> {
        let voters: Vec<u64> = self.membership().voter_ids().collect();
        if !voters.contains(&node) {
            return Err(ControllerError::VoterNotFound(format!(
                "node {node} is not a voter of the metadata quorum (voters: {voters:?})"
            )));
        }
        if voters.len() == 1 {
            return Err(ControllerError::Invalid(format!(
                "node {node} is the only voter of the metadata quorum"
            )));
        }
        if node == self.node_id {
            // The active controller does not remove itself: the configuration without it would
            // be appended on this node first, and if it lost its leadership before the
            // remaining voters had that entry, they would need its vote while it, outside its
            // latest configuration, never stands for election and refuses them its vote for
            // their shorter logs (openraft 0.9; frieda-sim --quorum seed 1200). It hands the
            // leadership over, and the caller's retry reaches the new controller, which
            // removes this node as a follower.
            return Err(self.hand_over().await);
        }
        let change =
            openraft::ChangeMembers::RemoveVoters(std::collections::BTreeSet::from([node]));
        self.raft
            .change_membership(change, true)
            .await
            .map_err(write_error)?;
        tracing::info!(node, "removed a voter from the metadata quorum");
        Ok(ControllerReply::Done)
    }

    /// Removes observer `node` (a Raft learner: a broker-only node, or a controller removed from
    /// the voter set) from the quorum's membership, committed before the answer: the metadata
    /// log is no longer replicated to it and DescribeQuorum no longer lists it. A node that
    /// still runs is added again at its next heartbeat ([`ensure_learner`](Self::ensure_learner)),
    /// as Kafka's `ControllerRegistrationManager` registers an unregistered live controller
    /// again (KIP-1312); the use is a node gone for good.
    ///
    /// Errors: Invalid for this node ("Controller cannot unregister itself while it is
    /// active.", Kafka's `QuorumController` message) and for a voter (Kafka documents that a
    /// controller leaves the voter set first; Frieda enforces it); ControllerNotRegistered for
    /// a node the membership does not have; NotController / Unavailable when the change does
    /// not commit here.
    async fn unregister_controller(&self, node: u64) -> Result<ControllerReply, ControllerError> {
        if node == self.node_id {
            return Err(ControllerError::Invalid(
                "Controller cannot unregister itself while it is active.".into(),
            ));
        }
        let membership = self.membership();
        if membership.get_node(&node).is_none() {
            return Err(ControllerError::ControllerNotRegistered(format!(
                "Controller ID {node} is not currently registered."
            )));
        }
        if membership.voter_ids().any(|v| v == node) {
            return Err(ControllerError::Invalid(format!(
                "Controller {node} is a voter of the metadata quorum: remove it from the voter set first (kafka-metadata-quorum remove-controller)"
            )));
        }
        let change = openraft::ChangeMembers::RemoveNodes(std::collections::BTreeSet::from([node]));
        self.raft
            .change_membership(change, false)
            .await
            .map_err(write_error)?;
        tracing::info!(node, "unregistered an observer of the metadata quorum");
        Ok(ControllerReply::Done)
    }

    /// Stops leading so that another voter is elected: decides nothing and sends no heartbeats
    /// until this node no longer leads or [`HAND_OVER_TIMEOUT`] passed. Returns the error to
    /// answer the request that asked for it with: NotController (naming the new leader when
    /// known), or Unavailable when no other voter took over in time (they are down or cut off).
    async fn hand_over(&self) -> ControllerError {
        use std::sync::atomic::Ordering;
        /// Leads normally again when dropped, also when the request is cancelled mid-way.
        struct Resume<'a>(&'a Controller);
        impl Drop for Resume<'_> {
            fn drop(&mut self) {
                self.0.raft.runtime_config().heartbeat(true);
                self.0.handing_over.store(false, Ordering::Release);
            }
        }
        self.handing_over.store(true, Ordering::Release);
        self.raft.runtime_config().heartbeat(false);
        let resume = Resume(self);
        tracing::info!(
            node = self.node_id,
            "handing the leadership of the metadata quorum over before this node's removal"
        );
        let mut metrics = self.raft.metrics();
        let moved = tokio::time::timeout(
            HAND_OVER_TIMEOUT,
            metrics.wait_for(|m| m.state != openraft::ServerState::Leader),
        )
        .await
        .is_ok_and(|r| r.is_ok());
        drop(resume);
        if moved {
            let leader = self
                .raft
                .metrics()
                .borrow()
                .current_leader
                .filter(|l| *l != self.node_id);
            ControllerError::NotController { leader }
        } else {
            ControllerError::Unavailable(format!(
                "node {} could not hand its leadership over within {} s (are the other voters up?)",
                self.node_id,
                HAND_OVER_TIMEOUT.as_secs()
            ))
        }
    }

    /// A broker-only node gets the metadata log as a Raft learner.
    async fn ensure_learner(&self, id: BrokerId, addr: &str) {
        let Ok(node) = u64::try_from(id) else { return };
        let known = self
            .raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .get_node(&node)
            .is_some();
        if known {
            return;
        }
        let raft = self.raft.clone();
        let addr = addr.to_string();
        tokio::spawn(async move {
            match raft
                .add_learner(node, openraft::BasicNode { addr }, false)
                .await
            {
                Ok(_) => tracing::info!(node, "added a broker-only node as a learner"),
                Err(e) => tracing::warn!(node, error = %e, "adding a learner failed"),
            }
        });
    }

    /// One round of the controller's own work: name the cluster, fence silent brokers. Called
    /// every few hundred milliseconds by [`run`](Self::run).
    async fn tick(&self) {
        if self.ready().await.is_none() {
            return;
        }
        let image = self.image.borrow().clone();
        let defaults = housekeeping::Defaults {
            unclean_leader_election: self.config.unclean_leader_election,
            quorum_acks: self.config.quorum_acks,
            min_insync_replicas: self.config.min_insync_replicas,
        };
        let commands = housekeeping::tick(
            &image,
            defaults,
            &self.sessions.lock(),
            (
                self.now_ms(),
                self.config.session_timeout.as_millis() as u64,
            ),
            || base64_url(random_uuid().as_bytes()),
        );
        for cmd in commands {
            let what = match &cmd {
                MetaCommand::FenceBroker { id, .. } => {
                    let _one = self.decide.lock().await;
                    tracing::warn!(broker = id, "broker session expired: fencing it");
                    if let Err(e) = self.propose(cmd.clone()).await {
                        tracing::warn!(broker = id, error = %e, "fencing failed");
                    }
                    continue;
                }
                MetaCommand::SetUncleanDefault { .. } => {
                    "recording unclean.leader.election.enable failed"
                }
                MetaCommand::SetAckPolicyDefault { .. } => {
                    "recording replication.ack.policy failed"
                }
                MetaCommand::SetMinInsyncDefault { .. } => "recording min.insync.replicas failed",
                MetaCommand::InitCluster { .. } => "naming the cluster failed",
                _ => "controller tick command failed",
            };
            if let Err(e) = self.propose(cmd).await {
                tracing::warn!(error = %e, "{what}");
            }
        }
    }

    /// Elects the leaders of leaderless `quorum` partitions the recorded claims allow
    /// ([`crate::quorum::elections`]). The caller holds `decide` (requests are handled under
    /// it).
    async fn elect_from_claims(&self) {
        let image = self.image.borrow().clone();
        let commands = self.sessions.lock().elections(&image);
        for cmd in commands {
            if let MetaCommand::ElectFromClaims {
                topic,
                partition,
                leader,
                leader_epoch,
            } = &cmd
            {
                tracing::info!(
                    topic,
                    partition,
                    leader,
                    leader_epoch,
                    "quorum partition: leader elected from the replicas' claims"
                );
            }
            if let Err(e) = self.propose(cmd).await {
                tracing::debug!(error = %e, "election from claims skipped");
            }
        }
    }

    /// Gives leadership back to preferred replicas (Kafka's auto leader rebalance): for each
    /// broker whose preferred partitions are led elsewhere for more than
    /// `leader.imbalance.per.broker.percentage` of them, each such partition where the broker
    /// is live and in sync is elected back to it.
    async fn rebalance_leaders(&self) {
        let Some(every) = self.config.leader_rebalance_interval else {
            return;
        };
        if !due(&self.last_rebalance, every) {
            return;
        }
        let image = self.image.borrow().clone();
        let imbalances = housekeeping::preferred_leader_elections(
            &image,
            self.config.leader_imbalance_percentage,
        );
        for housekeeping::Imbalance {
            broker,
            percent: pct,
            partitions: moves,
        } in imbalances
        {
            tracing::info!(
                broker,
                partitions = moves.len(),
                imbalance_pct = pct,
                "giving leadership back to the preferred replica"
            );
            for (topic, partition) in moves {
                let _one = self.decide.lock().await;
                let result = self
                    .propose(MetaCommand::ElectLeader {
                        topic: topic.clone(),
                        partition,
                        leader: broker,
                        unclean: false,
                    })
                    .await;
                if let Err(e) = result {
                    tracing::debug!(topic, partition, error = %e, "preferred leader election skipped");
                }
            }
        }
    }

    /// Measured leader placement (issue 33): every `leader.placement.check.interval.ms`, the
    /// moves [`leadership::plan_moves`] asks for with the costs the brokers reported within a
    /// session timeout, within what is left of the per-minute budget; each is a leader
    /// election (refused by the image if the target left the ISR meanwhile).
    async fn place_leaders(&self) {
        let placement = self.config.placement;
        if !due(&self.last_placement, placement.check_interval) {
            return;
        }
        let costs: BTreeMap<BrokerId, u64> = self
            .costs
            .lock()
            .iter()
            .filter(|(_, (_, at))| at.elapsed() < self.config.session_timeout)
            .map(|(b, (c, _))| (*b, *c))
            .collect();
        let budget = {
            let mut recent = self.recent_moves.lock();
            while recent
                .front()
                .is_some_and(|t| t.elapsed() >= Duration::from_secs(60))
            {
                recent.pop_front();
            }
            (placement.max_moves_per_minute as usize).saturating_sub(recent.len())
        };
        if budget == 0 {
            return;
        }
        let image = self.image.borrow().clone();
        for m in leadership::plan_moves(&image, &costs, budget) {
            let _one = self.decide.lock().await;
            let result = self
                .propose(MetaCommand::ElectLeader {
                    topic: m.topic.clone(),
                    partition: m.partition,
                    leader: m.to,
                    unclean: false,
                })
                .await;
            match result {
                Ok(_) => {
                    self.recent_moves.lock().push_back(Instant::now());
                    leadership::MOVES[m.reason as usize].fetch_add(1, Ordering::Relaxed);
                    tracing::info!(
                        topic = m.topic,
                        partition = m.partition,
                        from = m.from,
                        to = m.to,
                        reason = m.reason.label(),
                        gap_us = m.gap_us,
                        from_cost_us = costs.get(&m.from),
                        to_cost_us = costs.get(&m.to),
                        "leader placement: moved the leadership"
                    );
                }
                Err(e) => {
                    tracing::debug!(topic = m.topic, partition = m.partition, error = %e,
                        "leader placement: move skipped");
                }
            }
        }
    }

    /// Runs the controller's periodic work until `stop` turns true.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    self.tick().await;
                    if self.ready().await.is_some() {
                        {
                            let _one = self.decide.lock().await;
                            self.elect_from_claims().await;
                        }
                        if self.config.placement.mode == LeaderPlacement::Measured {
                            self.place_leaders().await;
                        } else {
                            self.rebalance_leaders().await;
                        }
                    }
                }
                _ = stop.changed() => return,
            }
        }
    }
}

/// Whether periodic work last done at `*last` is due again after `every`; if so, `*last` becomes
/// now.
fn due(last: &Mutex<Instant>, every: Duration) -> bool {
    let mut last = last.lock();
    if last.elapsed() < every {
        return false;
    }
    *last = Instant::now();
    true
}

/// The ElectLeaders command for `topic`-`partition`: the preferred (first) replica, or for an
/// unclean election a live in-sync replica if any, else any live replica. Pure (see
/// [`heartbeat_commands`]); the image still validates it when applied.
///
/// Errors: UNKNOWN_TOPIC_OR_PARTITION, or INELIGIBLE_REPLICA when no replica is live.
pub fn election(
    image: &MetadataImage,
    topic: &str,
    partition: i32,
    preferred: bool,
) -> Result<MetaCommand, MetaError> {
    let p = image
        .partition(topic, partition)
        .ok_or_else(|| MetaError::UnknownTopic(format!("{topic}-{partition}")))?;
    let leader = if preferred {
        p.replicas[0]
    } else {
        p.replicas
            .iter()
            .copied()
            .find(|b| p.isr.contains(b) && image.is_live(*b))
            .or_else(|| p.replicas.iter().copied().find(|b| image.is_live(*b)))
            .ok_or_else(|| MetaError::Ineligible("no live replica".into()))?
    };
    Ok(MetaCommand::ElectLeader {
        topic: topic.to_string(),
        partition,
        leader,
        unclean: !preferred,
    })
}

/// Kafka's cluster ids and its text form of topic ids: URL-safe base64 without padding (22
/// characters for a UUID).
pub fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A new random id (topic id, cluster id, directory id, incarnation id) as Kafka's
/// `Uuid.randomUuid` makes one: never the all-zero id, and never one whose text form
/// ([`base64_url`]) starts with `-`, which command-line tools would take for an option
/// (`kafka-metadata-quorum remove-controller --controller-directory-id -d4m...` failed).
pub fn random_uuid() -> uuid::Uuid {
    loop {
        let id = uuid::Uuid::new_v4();
        if !id.is_nil() && !base64_url(id.as_bytes()).starts_with('-') {
            return id;
        }
    }
}

/// The 16 bytes of a UUID written by [`base64_url`], `None` if `text` is not one.
pub fn base64_url_uuid(text: &str) -> Option<[u8; 16]> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()?
        .try_into()
        .ok()
}
