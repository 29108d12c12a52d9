//! This broker as a member of a cluster: its handle on the metadata quorum (the image every
//! broker acts on, the active controller it forwards admin requests to), whether it may serve
//! yet (its image caught up with the controller's at registration) and whether it is fenced.
//! What the broker, the handlers and the drivers hold and ask; the drivers that change it
//! (heartbeats, the reconciler, the follower fetchers, ISR changes) are in [`crate::cluster`].
//!
//! - [`ClusterNode`]: the membership itself (readiness, fencing, the lease, the controller,
//!   producer-id blocks); [`LeaderHints`]: KIP-951 leader hints from its image.
//! - [`lease`]: the rule of the heartbeat lease (shared with the cluster simulator).
//! - [`clients`]: connections to other brokers for the coordinators' requests, over
//!   [`client`] (a small Kafka client, also the follower fetchers' and the controller
//!   listener's).
//!
//! The design (Kafka's ISR protocol over a Raft metadata log) is in `docs/cluster.md`.

pub mod client;
pub mod clients;
pub mod lease;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use frieda_meta::{
    BrokerId, ControllerError, ControllerReply, ControllerRequest, MetaError, MetadataImage,
    MetadataQuorum,
};
use kafka_protocol::error::ResponseError;
use tokio::sync::watch;
use uuid::Uuid;

use crate::config::ClusterConfig;

/// How long an admin request forwarded to the controller may take before REQUEST_TIMED_OUT.
pub const CONTROLLER_TIMEOUT: Duration = Duration::from_secs(10);

/// CONTROLLER_ID_NOT_REGISTERED (Kafka 4.4, KIP-1312), newer than the `kafka-protocol`
/// crate's error table.
pub const CONTROLLER_ID_NOT_REGISTERED: i16 = 136;

/// A refused controller request: the Kafka error and the controller's message.
#[derive(Debug, Clone)]
pub struct ClusterError {
    /// Error code for the client.
    pub code: ResponseError,
    /// Detail for `error_message`.
    pub message: String,
}

/// The Kafka error a client sees for a controller's refusal.
pub fn error_code(e: &ControllerError) -> ResponseError {
    match e {
        ControllerError::NotController { .. } | ControllerError::Unavailable(_) => {
            ResponseError::RequestTimedOut
        }
        ControllerError::Refused(_) => ResponseError::ClusterAuthorizationFailed,
        ControllerError::InvalidPartitions(_) => ResponseError::InvalidPartitions,
        ControllerError::Invalid(_) => ResponseError::InvalidRequest,
        ControllerError::DuplicateVoter(_) => ResponseError::DuplicateVoter,
        ControllerError::VoterNotFound(_) => ResponseError::VoterNotFound,
        ControllerError::ControllerNotRegistered(_) => {
            ResponseError::Unknown(CONTROLLER_ID_NOT_REGISTERED)
        }
        ControllerError::InvalidReplicationFactor(_) => ResponseError::InvalidReplicationFactor,
        ControllerError::Meta(m) => match m {
            MetaError::TopicExists(_) => ResponseError::TopicAlreadyExists,
            MetaError::UnknownTopic(_) => ResponseError::UnknownTopicOrPartition,
            MetaError::InvalidAssignment(_) => ResponseError::InvalidReplicaAssignment,
            MetaError::StaleLeader(_) => ResponseError::FencedLeaderEpoch,
            MetaError::StalePartitionEpoch(_) => ResponseError::InvalidUpdateVersion,
            MetaError::Ineligible(_) => ResponseError::EligibleLeadersNotAvailable,
            MetaError::ElectionNotNeeded => ResponseError::ElectionNotNeeded,
            MetaError::NoReassignment => ResponseError::NoReassignmentInProgress,
            MetaError::UnknownBroker(_) => ResponseError::BrokerIdNotRegistered,
            MetaError::DelegationTokenNotFound(_) => ResponseError::DelegationTokenNotFound,
            MetaError::Invalid(_) => ResponseError::InvalidRequest,
            MetaError::InvalidConfig(_) => ResponseError::InvalidConfig,
        },
    }
}

/// A partition's current leader as KIP-951 tells clients: id, leader epoch, and its first
/// client endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderHint {
    /// Leader broker id.
    pub leader: BrokerId,
    /// Leader epoch.
    pub epoch: i32,
    /// Host of its client listener.
    pub host: String,
    /// Port.
    pub port: u16,
    /// `broker.rack`.
    pub rack: Option<String>,
}

/// Broker `b`'s endpoint of listener `listener` (clients are told the address of the listener
/// they came in on, as Kafka does); `None` if it has no such listener.
pub fn endpoint_on<'a>(
    b: &'a frieda_meta::BrokerRegistration,
    listener: &str,
) -> Option<&'a frieda_meta::Endpoint> {
    b.endpoints.iter().find(|e| e.name == listener)
}

/// KIP-951 leader hints for one response (Produce v10+, Fetch v16+): for each partition a
/// client reached on the wrong broker, its current leader and epoch; and once per leader its
/// endpoint, so the client goes there without a Metadata round trip.
pub struct LeaderHints<'a> {
    node: &'a ClusterNode,
    /// The listener the request came in on: endpoints are that listener's.
    listener: &'a str,
    image: Arc<MetadataImage>,
    /// One per leader named, in the order first named (at most the cluster's brokers).
    endpoints: Vec<LeaderHint>,
}

impl<'a> LeaderHints<'a> {
    /// Hints from `node`'s current metadata image, with endpoints of `listener`.
    pub fn new(node: &'a ClusterNode, listener: &'a str) -> Self {
        LeaderHints {
            image: node.image(),
            node,
            listener,
            endpoints: Vec::new(),
        }
    }

    /// The topic's name: `name`, or for a request by topic id (empty name) the name of the
    /// topic with `id`; `None` if unknown.
    pub fn topic_name(&self, name: &str, id: Uuid) -> Option<String> {
        if !name.is_empty() {
            return Some(name.to_string());
        }
        self.image
            .topics
            .iter()
            .find(|(_, t)| t.id == id)
            .map(|(n, _)| n.clone())
    }

    /// The current leader and leader epoch of `topic`'s `partition`, if it has one; its
    /// endpoint is remembered for [`endpoints`](Self::endpoints).
    pub fn leader(&mut self, topic: &str, partition: i32) -> Option<(BrokerId, i32)> {
        let hint = self.node.leader_hint(topic, partition, self.listener)?;
        let found = (hint.leader, hint.epoch);
        if !self.endpoints.iter().any(|e| e.leader == hint.leader) {
            self.endpoints.push(hint);
        }
        Some(found)
    }

    /// The endpoints of every leader named so far.
    pub fn endpoints(&self) -> &[LeaderHint] {
        &self.endpoints
    }
}

/// This broker's membership of the cluster.
pub struct ClusterNode {
    /// The metadata quorum (this node votes in it or learns from it).
    pub quorum: Arc<MetadataQuorum>,
    /// `node.id`.
    pub me: BrokerId,
    /// This process's run: a restart registers anew.
    pub incarnation: Uuid,
    /// Settings.
    pub config: ClusterConfig,
    /// Set once this broker's image has caught up with the controller's at its first
    /// successful heartbeat: before that it hosts nothing (its image may be stale).
    ready: AtomicBool,
    /// Fenced by the controller, or by itself after a session without an answered heartbeat:
    /// it leads nothing.
    fenced: AtomicBool,
    /// Bumped when `ready` or `fenced` changes (the reconciler re-applies the image).
    changed: watch::Sender<u64>,
    /// Until when (lease-clock ms, [`crate::clock::lease_ms`]) this broker is sure the
    /// controller has not fenced it: the send time of its last answered heartbeat plus
    /// `broker.session.timeout.ms`, renewed only once the reconciler has applied an image
    /// holding everything the controller had decided by its answer. The controller fences no earlier than a session
    /// after it *received* that heartbeat, so a leader that checks its lease before
    /// acknowledging never acknowledges after another broker took its partitions (a paused
    /// leader wakes up with an expired lease, and gets it back only with an image that shows
    /// the new leaders).
    lease: lease::Lease,
    /// The offset of the last image the reconciler applied (roles, replicas) in full.
    applied: watch::Sender<u64>,
    /// The current producer-id block `[next, end)` (KIP-730).
    producer_ids: tokio::sync::Mutex<(i64, i64)>,
    /// How connections to other brokers authenticate (the inter-broker listener's TLS and
    /// SASL settings), set once at start.
    inter_broker: std::sync::OnceLock<crate::security::client::ClientSecurity>,
    /// Connections to other brokers for the coordinators' requests.
    pub clients: clients::BrokerClients,
    /// The remote tier's reader and the remote-log runtime its reads run on, set once at
    /// start when tiered storage runs (followers restore producer state from it, KIP-405).
    remote_reader: std::sync::OnceLock<(
        Arc<crate::remote::reader::RemoteReader>,
        tokio::runtime::Handle,
    )>,
}

impl ClusterNode {
    /// A node on `quorum`.
    pub fn new(
        quorum: Arc<MetadataQuorum>,
        me: BrokerId,
        config: ClusterConfig,
    ) -> Arc<ClusterNode> {
        Arc::new_cyclic(|weak| ClusterNode {
            quorum,
            me,
            incarnation: frieda_meta::controller::random_uuid(),
            config,
            ready: AtomicBool::new(false),
            fenced: AtomicBool::new(true),
            changed: watch::Sender::new(0),
            lease: lease::Lease::new(),
            applied: watch::Sender::new(0),
            producer_ids: tokio::sync::Mutex::new((0, 0)),
            inter_broker: std::sync::OnceLock::new(),
            clients: clients::BrokerClients::new(weak.clone()),
            remote_reader: std::sync::OnceLock::new(),
        })
    }

    /// Sets the remote tier's reader and the runtime its reads run on (once, at start).
    pub fn set_remote_reader(
        &self,
        reader: Arc<crate::remote::reader::RemoteReader>,
        runtime: tokio::runtime::Handle,
    ) {
        let _ = self.remote_reader.set((reader, runtime));
    }

    /// The remote tier's reader and its runtime, when tiered storage runs.
    pub fn remote_reader(
        &self,
    ) -> Option<&(
        Arc<crate::remote::reader::RemoteReader>,
        tokio::runtime::Handle,
    )> {
        self.remote_reader.get()
    }

    /// Sets how connections to other brokers authenticate (once, at start).
    pub fn set_inter_broker_security(&self, security: crate::security::client::ClientSecurity) {
        let _ = self.inter_broker.set(security);
    }

    /// How connections to other brokers authenticate (plain TCP until set).
    pub fn inter_broker_security(&self) -> crate::security::client::ClientSecurity {
        self.inter_broker.get().cloned().unwrap_or_default()
    }

    /// The latest applied metadata image.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.quorum.image()
    }

    /// Whether the current image names this broker, unfenced, the leader of partition `index`
    /// of `topic` (the reconciler may not have taken the role yet).
    pub fn led_here(&self, topic: &str, index: i32) -> bool {
        !self.is_fenced()
            && usize::try_from(index).is_ok_and(|i| {
                self.image()
                    .topics
                    .get(topic)
                    .and_then(|t| t.partitions.get(i))
                    .is_some_and(|p| p.leader == self.me)
            })
    }

    /// Whether this broker serves its image yet.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Whether this broker is fenced (leads nothing).
    pub fn is_fenced(&self) -> bool {
        self.fenced.load(Ordering::Acquire)
    }

    pub(crate) fn set_ready(&self) {
        if !self.ready.swap(true, Ordering::AcqRel) {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    pub(crate) fn set_fenced(&self, fenced: bool) {
        if self.fenced.swap(fenced, Ordering::AcqRel) != fenced {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// The reconciler applied the image of metadata offset `offset` in full.
    pub(crate) fn set_applied(&self, offset: u64) {
        self.applied.send_if_modified(|a| {
            let moved = offset > *a;
            *a = (*a).max(offset);
            moved
        });
    }

    /// Waits (up to `timeout`) until the reconciler has applied an image at `offset` or later:
    /// the partitions' roles then say what the metadata said at that offset.
    pub async fn wait_applied(&self, offset: u64, timeout: Duration) -> bool {
        let mut rx = self.applied.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|a| *a >= offset))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Whether this broker's lease (see the field) still holds.
    pub fn holds_lease(&self) -> bool {
        self.lease.holds(crate::clock::lease_ms())
    }

    /// A heartbeat sent at `sent_ms` (monotonic) was answered unfenced.
    pub(crate) fn renew_lease(&self, sent_ms: u64) {
        self.lease
            .renew(sent_ms, self.config.broker_session_timeout_ms);
    }

    /// Bumped whenever readiness or fencing changes.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The active controller's id (Metadata's `controller_id`), -1 if none is known.
    pub fn controller_id(&self) -> i32 {
        self.quorum
            .leader()
            .and_then(|l| i32::try_from(l).ok())
            .unwrap_or(-1)
    }

    /// `host:port` where other brokers reach broker `id` (followers fetch, transaction markers):
    /// its endpoint of `inter.broker.listener.name`, else its first client listener.
    pub fn address_of(&self, id: BrokerId) -> Option<String> {
        let image = self.image();
        let b = image.brokers.get(&id)?;
        let e = match &self.config.inter_broker_listener_name {
            Some(name) => b.endpoints.iter().find(|e| &e.name == name)?,
            None => b.endpoints.first()?,
        };
        Some(if e.host.contains(':') {
            format!("[{}]:{}", e.host, e.port)
        } else {
            format!("{}:{}", e.host, e.port)
        })
    }

    /// Where a client of `listener` should go for `topic`'s `partition` (KIP-951); `None`
    /// without a live leader (or one without that listener).
    pub fn leader_hint(&self, topic: &str, partition: i32, listener: &str) -> Option<LeaderHint> {
        let image = self.image();
        let t = image.topics.get(topic)?;
        let p = t.partitions.get(usize::try_from(partition).ok()?)?;
        // as clients are told it (a diskless partition: the broker that serves it)
        let p = crate::diskless::driver::served(&image, t, partition, p, None);
        let b = image.brokers.get(&p.leader).filter(|b| !b.fenced)?;
        let e = endpoint_on(b, listener)?;
        Some(LeaderHint {
            leader: p.leader,
            epoch: p.leader_epoch,
            host: e.host.clone(),
            port: e.port,
            rack: b.rack.clone(),
        })
    }

    /// Sends a request to the active controller (forwarded if another node leads the quorum).
    ///
    /// Errors: the controller's refusal as a Kafka error ([`error_code`]), REQUEST_TIMED_OUT
    /// when no controller answered within `timeout`.
    pub async fn controller(
        &self,
        req: ControllerRequest,
        timeout: Duration,
    ) -> Result<ControllerReply, ClusterError> {
        self.quorum
            .request(req, timeout)
            .await
            .map_err(|e| ClusterError {
                code: error_code(&e),
                message: e.to_string(),
            })
    }

    /// Waits (up to `timeout`) until this broker's image satisfies `done`, e.g. shows a topic
    /// the controller just created, so a following Metadata request sees it.
    pub async fn wait_for(&self, timeout: Duration, done: impl Fn(&MetadataImage) -> bool) -> bool {
        self.quorum.wait_for(timeout, done).await.is_some()
    }

    /// The next producer id (InitProducerId), from a block the controller hands out.
    ///
    /// Errors: COORDINATOR_NOT_AVAILABLE when no block can be had from the controller.
    pub async fn next_producer_id(&self) -> Result<i64, ResponseError> {
        let mut block = self.producer_ids.lock().await;
        if block.0 >= block.1 {
            match self
                .controller(ControllerRequest::AllocateProducerIds, CONTROLLER_TIMEOUT)
                .await
            {
                Ok(ControllerReply::ProducerIds { start, count }) => {
                    *block = (start, start + count)
                }
                Ok(other) => {
                    tracing::warn!(reply = ?other, "unexpected answer to a producer-id request");
                    return Err(ResponseError::CoordinatorNotAvailable);
                }
                Err(e) => {
                    tracing::warn!(error = %e.message, "no producer-id block from the controller");
                    return Err(ResponseError::CoordinatorNotAvailable);
                }
            }
        }
        let id = block.0;
        block.0 += 1;
        Ok(id)
    }
}
