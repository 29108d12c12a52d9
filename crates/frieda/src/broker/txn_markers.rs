//! Transaction markers on this broker's partitions: the [`MarkerWriter`] the transaction
//! coordinators use (markers for partitions led here are appended directly, the others sent to
//! their leaders as WriteTxnMarkers v2), and the append itself, shared with the WriteTxnMarkers
//! handler (Kafka's `KafkaApis.handleWriteTxnMarkersRequest`).

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use frieda_log::{ControlType, EndTxnMarker};
use frieda_meta::{BrokerId, NO_LEADER};
use futures::future::{join_all, BoxFuture};
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersRequest};
use kafka_protocol::protocol::StrBytes;

use super::Broker;
use crate::coordinator::transaction::{MarkerRequest, MarkerWriter, TopicPartition, TxnVersion};
use crate::diskless::coordinator::{DisklessPartition, TxnMarker};
use crate::diskless::driver::route::not_served;
use crate::storage::leader_append::{admit_produce, answer_produce};
use crate::storage::partition::Partition;
use crate::storage::topic::Topic;
use crate::storage::topic::OFFSETS_TOPIC;

/// WriteTxnMarkers version sent to other brokers (v2 carries the transaction version).
pub const WRITE_TXN_MARKERS_VERSION: i16 = 2;
/// How long a marker waits for its partition's in-sync replicas.
pub const MARKER_REPLICATION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a WriteTxnMarkers request to another broker may take.
const MARKER_REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// One marker to append here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalMarker {
    /// Producer id.
    pub producer_id: i64,
    /// Epoch the marker carries.
    pub producer_epoch: i16,
    /// Commit (true) or abort.
    pub commit: bool,
    /// The coordinator's epoch.
    pub coordinator_epoch: i32,
    /// Transactions v2: the epoch must be above the producer's.
    pub bumps_epoch: bool,
}

/// Appends `m` to partition `p` as its leader (acks=all, `min.insync.replicas`), then, on an
/// `__consumer_offsets` partition, applies or drops the producer's transactional offsets. A
/// broker whose lease ended while the marker waited for its replicas answers
/// NOT_LEADER_OR_FOLLOWER (the coordinator writes it again) and counts it as not replicated,
/// as the produce handler and the group coordinator's writes do.
///
/// Errors: NOT_LEADER_OR_FOLLOWER (6), NOT_ENOUGH_REPLICAS (19), INVALID_PRODUCER_EPOCH (47),
/// TRANSACTION_COORDINATOR_FENCED (52), KAFKA_STORAGE_ERROR (56), REQUEST_TIMED_OUT (7).
pub async fn write_marker_locally(
    broker: &Arc<Broker>,
    p: &Arc<Partition>,
    m: LocalMarker,
) -> Result<(), E> {
    let replicated = p.repl.is_replicated();
    let min_isr = p.produce_policy().min_insync_replicas;
    if replicated {
        admit_produce(&p.repl, broker.check_lease().is_ok(), true, min_isr)?;
    }
    let marker = EndTxnMarker {
        control: if m.commit {
            ControlType::Commit
        } else {
            ControlType::Abort
        },
        coordinator_epoch: m.coordinator_epoch,
    };
    let outcome = p
        .append_marker(m.producer_id, m.producer_epoch, marker, m.bumps_epoch)
        .await?;
    let waited = if replicated {
        let waited = p
            .repl
            .wait_replicated(
                outcome.last_offset,
                outcome.leader_epoch,
                min_isr,
                MARKER_REPLICATION_TIMEOUT,
            )
            .await;
        answer_produce(waited, broker.check_lease().is_ok())
    } else {
        Ok(())
    };
    if &*p.topic == OFFSETS_TOPIC {
        // In the log now: the group coordinator takes it in log order, and completes the
        // producer's transactional offsets only if it replicated (Kafka completes them for the
        // marker appends that succeeded; the coordinator writes a failed one again).
        broker.groups.land_marker(
            p.index,
            outcome.base_offset,
            m.producer_id,
            m.commit,
            waited.is_ok(),
        );
    }
    waited
}

/// Writes `m` on partition `index` of diskless topic `topic` at its batch coordinator, from
/// any broker (no broker leads a diskless partition; issue 60, docs/diskless.md, "Idempotence
/// and transactions").
///
/// Errors: UNKNOWN_TOPIC_OR_PARTITION (3) for a partition the topic lacks;
/// NOT_LEADER_OR_FOLLOWER (6) on a broker without the diskless service or while no coordinator
/// serves the partition (loading, moving, not reached: the transaction coordinator retries);
/// INVALID_PRODUCER_EPOCH (47), TRANSACTION_COORDINATOR_FENCED (52), KAFKA_STORAGE_ERROR (56)
/// from the coordinator.
pub async fn write_marker_diskless(
    broker: &Broker,
    topic: &Topic,
    index: i32,
    m: LocalMarker,
) -> Result<(), E> {
    if index < 0 || index >= topic.partition_count() {
        return Err(E::UnknownTopicOrPartition);
    }
    let partition = DisklessPartition {
        topic_id: topic.id,
        partition: index,
    };
    let diskless = broker.diskless().ok_or(E::NotLeaderOrFollower)?;
    let marker = TxnMarker {
        producer_id: m.producer_id,
        producer_epoch: m.producer_epoch,
        coordinator_epoch: m.coordinator_epoch,
        commit: m.commit,
    };
    let written = match diskless.coordinator(partition) {
        Ok(host) => host.marker(partition, marker, m.bumps_epoch).await,
        Err(e) => Err(e),
    };
    written.map(|_| ()).map_err(not_served)
}

/// The topic of `tp` when it is diskless.
fn diskless_topic(broker: &Broker, tp: &TopicPartition) -> Option<Arc<Topic>> {
    broker
        .topic(&tp.0)
        .filter(|t| t.configs.read().is_diskless(&broker.topic_defaults()))
}

/// Where a partition's marker goes.
enum Target {
    Local(Arc<Partition>),
    /// A diskless partition: its batch coordinator, from here.
    Diskless(Arc<Topic>),
    Remote(BrokerId),
    /// The topic no longer exists: no marker is due.
    Gone,
    /// No leader right now: retried.
    Unavailable(E),
}

fn target(broker: &Broker, tp: &TopicPartition) -> Target {
    if let Some(topic) = diskless_topic(broker, tp) {
        return Target::Diskless(topic);
    }
    let local = broker
        .topic(&tp.0)
        .and_then(|t| t.replica(tp.1).ok())
        .filter(|p| p.repl.is_leader_or_sole());
    let Some(node) = broker.cluster() else {
        return match (local, broker.topic(&tp.0)) {
            (Some(p), _) => Target::Local(p),
            (None, None) => Target::Gone,
            (None, Some(_)) => Target::Unavailable(E::UnknownTopicOrPartition),
        };
    };
    let image = node.image();
    let Some(t) = image.topics.get(&tp.0) else {
        return Target::Gone;
    };
    let Some(ps) = usize::try_from(tp.1).ok().and_then(|i| t.partitions.get(i)) else {
        return Target::Gone;
    };
    if ps.leader == NO_LEADER {
        Target::Unavailable(E::LeaderNotAvailable)
    } else if ps.leader == node.me {
        match local {
            Some(p) => Target::Local(p),
            None => Target::Unavailable(E::NotLeaderOrFollower),
        }
    } else {
        Target::Remote(ps.leader)
    }
}

/// The coordinators' marker writer on this broker.
pub struct BrokerMarkers {
    broker: Weak<Broker>,
}

impl BrokerMarkers {
    /// The writer of `broker`.
    pub fn new(broker: &Arc<Broker>) -> Self {
        BrokerMarkers {
            broker: Arc::downgrade(broker),
        }
    }
}

impl MarkerWriter for BrokerMarkers {
    fn write(
        &self,
        req: MarkerRequest,
    ) -> BoxFuture<'static, Vec<(TopicPartition, Result<(), E>)>> {
        let broker = self.broker.upgrade();
        Box::pin(async move {
            let Some(broker) = broker else {
                return req
                    .partitions
                    .into_iter()
                    .map(|tp| (tp, Err(E::CoordinatorNotAvailable)))
                    .collect();
            };
            let m = LocalMarker {
                producer_id: req.producer_id,
                producer_epoch: req.producer_epoch,
                commit: req.commit,
                coordinator_epoch: req.coordinator_epoch,
                bumps_epoch: req.version.bumps_epoch(),
            };
            let mut out = Vec::with_capacity(req.partitions.len());
            let mut local = Vec::new();
            let mut diskless = Vec::new();
            let mut remote: HashMap<BrokerId, Vec<TopicPartition>> = HashMap::new();
            for tp in req.partitions {
                match target(&broker, &tp) {
                    Target::Local(p) => local.push((tp, p)),
                    Target::Diskless(t) => diskless.push((tp, t)),
                    Target::Remote(b) => remote.entry(b).or_default().push(tp),
                    Target::Gone => out.push((tp, Err(E::UnknownTopicOrPartition))),
                    Target::Unavailable(e) => out.push((tp, Err(e))),
                }
            }
            let locals = local.into_iter().map(|(tp, p)| {
                let broker = broker.clone();
                async move { (tp, write_marker_locally(&broker, &p, m).await) }
            });
            let remotes = remote.into_iter().map(|(to, parts)| {
                let broker = broker.clone();
                async move { send(&broker, to, m, req.version, parts).await }
            });
            let bucket = diskless.into_iter().map(|(tp, topic)| {
                let broker = broker.clone();
                async move {
                    let r = write_marker_diskless(&broker, &topic, tp.1, m).await;
                    (tp, r)
                }
            });
            let (l, r, d) = futures::join!(join_all(locals), join_all(remotes), join_all(bucket));
            out.extend(l);
            out.extend(r.into_iter().flatten());
            out.extend(d);
            out
        })
    }
}

/// Sends one WriteTxnMarkers request for `parts` to broker `to`.
async fn send(
    broker: &Arc<Broker>,
    to: BrokerId,
    m: LocalMarker,
    version: TxnVersion,
    parts: Vec<TopicPartition>,
) -> Vec<(TopicPartition, Result<(), E>)> {
    let Some(node) = broker.cluster() else {
        return parts
            .into_iter()
            .map(|tp| (tp, Err(E::NotLeaderOrFollower)))
            .collect();
    };
    let mut by_topic: Vec<(String, Vec<i32>)> = Vec::new();
    for (t, p) in &parts {
        match by_topic.iter_mut().find(|(n, _)| n == t) {
            Some((_, ps)) => ps.push(*p),
            None => by_topic.push((t.clone(), vec![*p])),
        }
    }
    let marker = WritableTxnMarker::default()
        .with_producer_id(ProducerId(m.producer_id))
        .with_producer_epoch(m.producer_epoch)
        .with_transaction_result(m.commit)
        .with_coordinator_epoch(m.coordinator_epoch)
        .with_transaction_version(version.level() as i8)
        .with_topics(
            by_topic
                .into_iter()
                .map(|(t, ps)| {
                    WritableTxnMarkerTopic::default()
                        .with_name(TopicName(StrBytes::from_string(t)))
                        .with_partition_indexes(ps)
                })
                .collect(),
        );
    let req = WriteTxnMarkersRequest::default().with_markers(vec![marker]);
    match node
        .clients
        .call(to, WRITE_TXN_MARKERS_VERSION, &req, MARKER_REQUEST_TIMEOUT)
        .await
    {
        Ok(resp) => {
            let mut answered: HashMap<TopicPartition, E> = HashMap::new();
            let mut ok: Vec<TopicPartition> = Vec::new();
            for r in resp.markers {
                for t in r.topics {
                    for p in t.partitions {
                        let tp = (t.name.0.to_string(), p.partition_index);
                        match E::try_from_code(p.error_code) {
                            None => ok.push(tp),
                            Some(e) => {
                                answered.insert(tp, e);
                            }
                        }
                    }
                }
            }
            parts
                .into_iter()
                .map(|tp| {
                    let r = if ok.contains(&tp) {
                        Ok(())
                    } else {
                        Err(answered.remove(&tp).unwrap_or(E::UnknownServerError))
                    };
                    (tp, r)
                })
                .collect()
        }
        Err(e) => {
            tracing::debug!(to, error = %e, "WriteTxnMarkers failed; retried");
            parts
                .into_iter()
                .map(|tp| (tp, Err(E::NetworkException)))
                .collect()
        }
    }
}
