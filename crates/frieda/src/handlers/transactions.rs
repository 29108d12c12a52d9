//! Transaction APIs (KIP-98, KIP-664, KIP-890): AddPartitionsToTxn (24, v0-3 from producers,
//! v4-5 from partition leaders), AddOffsetsToTxn (25), EndTxn (26), WriteTxnMarkers (27, v1-2,
//! between brokers and from `kafka-transactions abort`), TxnOffsetCommit (28),
//! DescribeTransactions (65), ListTransactions (66), DescribeProducers (61). The state lives in
//! [`crate::coordinator::transaction`]; these functions translate requests and responses and
//! map errors to what each version's clients know (PRODUCER_FENCED from v2 of most of them,
//! TRANSACTION_ABORTABLE from AddPartitionsToTxn v5, EndTxn/AddOffsetsToTxn v4, TxnOffsetCommit
//! v4).

use std::sync::Arc;

use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::describe_transactions_response::{
    TopicData, TransactionState as DescribedTxn,
};
use kafka_protocol::messages::list_transactions_response::TransactionState as ListedTxn;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, DescribeProducersRequest, DescribeProducersResponse,
    DescribeTransactionsRequest, DescribeTransactionsResponse, EndTxnRequest, EndTxnResponse,
    ListTransactionsRequest, ListTransactionsResponse, ProducerId, TopicName, TransactionalId,
    TxnOffsetCommitRequest, TxnOffsetCommitResponse, WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
};

use super::{authorized, authorized_cluster, str_bytes, RequestContext};
use crate::broker::txn_markers::{write_marker_diskless, write_marker_locally, LocalMarker};
use crate::broker::txn_verify;
use crate::broker::Broker;
use crate::clock::now_ms;
use crate::coordinator::group::consumer::Committer;
use crate::coordinator::offsets::codec::OffsetValue;
use crate::coordinator::records::TxnProducer;
use crate::coordinator::transaction::{
    TopicPartition, TransactionCoordinators, TxnFilter, TxnState, TxnVersion,
};
use crate::security::acl::{op, resource};
use crate::storage::partition::ProducerCheck;
use crate::storage::topic::OFFSETS_TOPIC;

fn code(e: Option<E>) -> i16 {
    e.map_or(0, |e| e.code())
}

/// PRODUCER_FENCED (90) is known from `fenced_version` on; older clients get
/// INVALID_PRODUCER_EPOCH (47). TRANSACTION_ABORTABLE (120) from `abortable_version` on;
/// older ones INVALID_TXN_STATE (48).
fn for_version(e: E, version: i16, fenced_version: i16, abortable_version: i16) -> E {
    match e {
        E::ProducerFenced if version < fenced_version => E::InvalidProducerEpoch,
        E::TransactionAbortable if version < abortable_version => E::InvalidTxnState,
        other => other,
    }
}

/// AddPartitionsToTxn: v0-3 (a producer adds partitions; transactions v1), v4-5 (partition
/// leaders batch several transactions, `verify_only` asks without adding, KIP-890).
///
/// Errors per partition: UNKNOWN_TOPIC_OR_PARTITION (3) for a partition that does not exist
/// (the others OPERATION_NOT_ATTEMPTED, 55), INVALID_PRODUCER_ID_MAPPING (49),
/// PRODUCER_FENCED (90, v2+; else INVALID_PRODUCER_EPOCH), CONCURRENT_TRANSACTIONS (51),
/// TRANSACTION_ABORTABLE (v4+ verification), NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE.
pub async fn add_partitions(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let v = ctx.api_version;
    let resp = AddPartitionsToTxnResponse::default();
    if v <= 3 {
        let tps: Vec<TopicPartition> = req
            .v3_and_below_topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| (t.name.0.to_string(), *p)))
            .collect();
        // Kafka: a client needs WRITE on the transactional id and on every topic.
        let id = &req.v3_and_below_transactional_id.0;
        let denied = if !authorized(broker, ctx, op::WRITE, resource::TRANSACTIONAL_ID, id) {
            Some(
                tps.iter()
                    .map(|tp| (tp.clone(), Some(E::TransactionalIdAuthorizationFailed)))
                    .collect(),
            )
        } else {
            let refused: Vec<bool> = tps
                .iter()
                .map(|(t, _)| !authorized(broker, ctx, op::WRITE, resource::TOPIC, t))
                .collect();
            refused.contains(&true).then(|| {
                tps.iter()
                    .zip(refused)
                    .map(|(tp, no)| {
                        let e = if no {
                            E::TopicAuthorizationFailed
                        } else {
                            E::OperationNotAttempted
                        };
                        (tp.clone(), Some(e))
                    })
                    .collect::<Vec<_>>()
            })
        };
        if let Some(results) = denied {
            return resp.with_results_by_topic_v3_and_below(topic_results(results));
        }
        let results = add_one(
            broker,
            &req.v3_and_below_transactional_id.0,
            req.v3_and_below_producer_id.0,
            req.v3_and_below_producer_epoch,
            &tps,
            Mode::Add(TxnVersion::V1),
        )
        .await;
        let results = results
            .into_iter()
            .map(|(tp, e)| (tp, e.map(|e| for_version(e, v, 2, i16::MAX))))
            .collect();
        return resp.with_results_by_topic_v3_and_below(topic_results(results));
    }
    // Kafka: v4+ comes from partition leaders and needs CLUSTER_ACTION.
    if !authorized_cluster(broker, ctx, op::CLUSTER_ACTION) {
        return resp.with_error_code(E::ClusterAuthorizationFailed.code());
    }
    let mut out = Vec::with_capacity(req.transactions.len());
    for t in req.transactions {
        let tps: Vec<TopicPartition> = t
            .topics
            .iter()
            .flat_map(|x| x.partitions.iter().map(|p| (x.name.0.to_string(), *p)))
            .collect();
        let mode = if t.verify_only {
            Mode::Verify
        } else {
            // A partition leader adding for a transactions-v2 producer (Kafka's
            // transactionVersionForAddPartitionsToTxn: v4+ means TV2).
            Mode::Add(TxnVersion::V2)
        };
        let results = add_one(
            broker,
            &t.transactional_id.0,
            t.producer_id.0,
            t.producer_epoch,
            &tps,
            mode,
        )
        .await;
        let results = results
            .into_iter()
            .map(|(tp, e)| (tp, e.map(|e| for_version(e, v, 2, 5))))
            .collect();
        out.push(
            AddPartitionsToTxnResult::default()
                .with_transactional_id(t.transactional_id)
                .with_topic_results(topic_results(results)),
        );
    }
    resp.with_results_by_transaction(out)
}

enum Mode {
    Add(TxnVersion),
    Verify,
}

/// One transaction's partitions: unknown ones first (the rest OPERATION_NOT_ATTEMPTED, as
/// Kafka answers), then the coordinator.
async fn add_one(
    broker: &Arc<Broker>,
    id: &str,
    pid: i64,
    epoch: i16,
    tps: &[TopicPartition],
    mode: Mode,
) -> Vec<(TopicPartition, Option<E>)> {
    let unknown: Vec<&TopicPartition> = tps
        .iter()
        .filter(|(t, p)| !broker.partition_exists(t, *p))
        .collect();
    if !unknown.is_empty() {
        return tps
            .iter()
            .map(|tp| {
                let e = if unknown.contains(&tp) {
                    E::UnknownTopicOrPartition
                } else {
                    E::OperationNotAttempted
                };
                (tp.clone(), Some(e))
            })
            .collect();
    }
    let all = |e: Option<E>| tps.iter().map(|tp| (tp.clone(), e)).collect();
    match mode {
        Mode::Add(version) => {
            match broker
                .txns
                .add_partitions(id, pid, epoch, tps, version)
                .await
            {
                Ok(()) => all(None),
                Err(e) => all(Some(e)),
            }
        }
        Mode::Verify => match broker.txns.verify_partitions(id, pid, epoch, tps) {
            Ok(r) => r,
            Err(e) => all(Some(e)),
        },
    }
}

fn topic_results(results: Vec<(TopicPartition, Option<E>)>) -> Vec<AddPartitionsToTxnTopicResult> {
    let mut out: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    for ((topic, p), e) in results {
        let r = AddPartitionsToTxnPartitionResult::default()
            .with_partition_index(p)
            .with_partition_error_code(code(e));
        match out.iter_mut().find(|t| t.name.0.as_str() == topic) {
            Some(t) => t.results_by_partition.push(r),
            None => out.push(
                AddPartitionsToTxnTopicResult::default()
                    .with_name(TopicName(str_bytes(&topic)))
                    .with_results_by_partition(vec![r]),
            ),
        }
    }
    out
}

/// The number of `__consumer_offsets` partitions (the cluster's, or 1 on a single broker).
fn offsets_partitions(broker: &Broker) -> i32 {
    match broker.cluster() {
        Some(node) => node
            .image()
            .topics
            .get(OFFSETS_TOPIC)
            .map_or(0, |t| t.partitions.len() as i32),
        None => 1,
    }
}

/// AddOffsetsToTxn v0-4: adds the group's `__consumer_offsets` partition to the transaction
/// (transactions v1; v2 producers let TxnOffsetCommit add it).
///
/// Errors: as AddPartitionsToTxn; COORDINATOR_NOT_AVAILABLE while the offsets topic does not
/// exist.
pub async fn add_offsets(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    // Kafka: WRITE on the transactional id, READ on the group.
    if !authorized(
        broker,
        ctx,
        op::WRITE,
        resource::TRANSACTIONAL_ID,
        &req.transactional_id.0,
    ) {
        return AddOffsetsToTxnResponse::default()
            .with_error_code(E::TransactionalIdAuthorizationFailed.code());
    }
    if !authorized(broker, ctx, op::READ, resource::GROUP, &req.group_id.0) {
        return AddOffsetsToTxnResponse::default()
            .with_error_code(E::GroupAuthorizationFailed.code());
    }
    let n = offsets_partitions(broker);
    let result = if n == 0 {
        Err(E::CoordinatorNotAvailable)
    } else {
        let tp = TransactionCoordinators::offsets_partition(&req.group_id.0, n);
        broker
            .txns
            .add_partitions(
                &req.transactional_id.0,
                req.producer_id.0,
                req.producer_epoch,
                &[tp],
                TxnVersion::V1,
            )
            .await
    };
    AddOffsetsToTxnResponse::default().with_error_code(code(
        result.err().map(|e| for_version(e, ctx.api_version, 2, 4)),
    ))
}

/// EndTxn v0-5: commit or abort; v5 is transactions v2 (the epoch is bumped and answered).
///
/// Errors: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (v2+), CONCURRENT_TRANSACTIONS,
/// INVALID_TXN_STATE, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE.
pub async fn end_txn(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: EndTxnRequest,
) -> EndTxnResponse {
    let v = ctx.api_version;
    let version = if v >= 5 {
        TxnVersion::V2
    } else {
        TxnVersion::V1
    };
    let resp = EndTxnResponse::default();
    if !authorized(
        broker,
        ctx,
        op::WRITE,
        resource::TRANSACTIONAL_ID,
        &req.transactional_id.0,
    ) {
        let resp = resp.with_error_code(E::TransactionalIdAuthorizationFailed.code());
        return if v >= 5 {
            resp.with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1)
        } else {
            resp
        };
    }
    match broker
        .txns
        .end_txn(
            &req.transactional_id.0,
            req.producer_id.0,
            req.producer_epoch,
            req.committed,
            version,
        )
        .await
    {
        Ok((pid, epoch)) => {
            if v >= 5 {
                resp.with_producer_id(ProducerId(pid))
                    .with_producer_epoch(epoch)
            } else {
                resp
            }
        }
        Err(e) => {
            let resp = resp.with_error_code(for_version(e, v, 2, 4).code());
            if v >= 5 {
                resp.with_producer_id(ProducerId(-1))
                    .with_producer_epoch(-1)
            } else {
                resp
            }
        }
    }
}

/// WriteTxnMarkers v1-2: appends each marker to the partitions this broker leads (acks=all),
/// and for a diskless topic's partitions writes it at their batch coordinator (any broker
/// can), and answers per partition. From transaction coordinators, and from `kafka-transactions
/// abort` (Admin.abortTransaction) for a hanging transaction.
///
/// Errors per partition: UNKNOWN_TOPIC_OR_PARTITION (3), NOT_LEADER_OR_FOLLOWER (6),
/// NOT_ENOUGH_REPLICAS (19), INVALID_PRODUCER_EPOCH (47), TRANSACTION_COORDINATOR_FENCED (52),
/// KAFKA_STORAGE_ERROR (56).
pub async fn write_txn_markers(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: WriteTxnMarkersRequest,
) -> WriteTxnMarkersResponse {
    let v = ctx.api_version;
    // Kafka: ALTER or CLUSTER_ACTION on the cluster (coordinators and `kafka-transactions abort`).
    let allowed = authorized_cluster(broker, ctx, op::ALTER)
        || authorized_cluster(broker, ctx, op::CLUSTER_ACTION);
    let mut markers = Vec::with_capacity(req.markers.len());
    for m in req.markers {
        let local = LocalMarker {
            producer_id: m.producer_id.0,
            producer_epoch: m.producer_epoch,
            commit: m.transaction_result,
            coordinator_epoch: m.coordinator_epoch,
            bumps_epoch: v >= 2 && m.transaction_version >= 2,
        };
        let mut topics = Vec::with_capacity(m.topics.len());
        for t in m.topics {
            let topic = broker.topic(&t.name.0);
            let writes = t.partition_indexes.iter().map(|&index| {
                let topic = topic.clone();
                let broker = broker.clone();
                async move {
                    // a diskless partition's marker goes to its batch coordinator
                    let diskless = topic
                        .as_ref()
                        .filter(|t| t.configs.read().is_diskless(&broker.topic_defaults()));
                    let r = match (diskless, topic.as_ref().map(|t| t.replica(index))) {
                        _ if !allowed => Err(E::ClusterAuthorizationFailed),
                        (Some(t), _) => write_marker_diskless(&broker, t, index, local).await,
                        (None, None) => Err(E::UnknownTopicOrPartition),
                        (None, Some(Err(e))) => Err(e),
                        (None, Some(Ok(p))) if !p.repl.is_leader_or_sole() => {
                            Err(E::NotLeaderOrFollower)
                        }
                        (None, Some(Ok(p))) => write_marker_locally(&broker, &p, local).await,
                    };
                    if let Err(e) = &r {
                        tracing::debug!(producer_id = local.producer_id, partition = index, error = ?e,
                            "a transaction marker was refused");
                    }
                    WritableTxnMarkerPartitionResult::default()
                        .with_partition_index(index)
                        .with_error_code(code(r.err()))
                }
            });
            let partitions = futures::future::join_all(writes).await;
            topics.push(
                WritableTxnMarkerTopicResult::default()
                    .with_name(t.name)
                    .with_partitions(partitions),
            );
        }
        markers.push(
            WritableTxnMarkerResult::default()
                .with_producer_id(m.producer_id)
                .with_topics(topics),
        );
    }
    WriteTxnMarkersResponse::default().with_markers(markers)
}

/// TxnOffsetCommit v0-6: offsets committed in the producer's transaction, visible once it
/// commits. v5 (transactions v2) adds the group's offsets partition to the transaction; older
/// versions need AddOffsetsToTxn first (verified when `transaction.partition.verification.enable`).
/// v6 (Kafka 4.4) names topics by id (KIP-516), as OffsetCommit v10 does.
///
/// Errors per partition: UNKNOWN_TOPIC_ID (100) for an id no topic has (v6),
/// UNKNOWN_TOPIC_OR_PARTITION (3) for a partition that does not exist
/// (only the others are committed, as Kafka's `KafkaApis.handleTxnOffsetCommitRequest` does),
/// NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15),
/// ILLEGAL_GENERATION (22), UNKNOWN_MEMBER_ID (25), FENCED_INSTANCE_ID (82),
/// INVALID_PRODUCER_EPOCH (47) / PRODUCER_FENCED, INVALID_TXN_STATE (48) /
/// TRANSACTION_ABORTABLE (v4+) when the partition was not added to the transaction,
/// CONCURRENT_TRANSACTIONS (51).
pub async fn txn_offset_commit(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    mut req: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let v = ctx.api_version;
    // v6 names topics by id: from here on each is named by the topic it is (an empty name for
    // an id no topic has; those partitions answer UNKNOWN_TOPIC_ID).
    let mut unknown_ids = std::collections::HashSet::new();
    if v >= 6 {
        for t in &mut req.topics {
            match broker.topic_by_id(&t.topic_id) {
                Some(topic) => t.name = TopicName(str_bytes(&topic.name)),
                None => {
                    unknown_ids.insert(t.topic_id);
                }
            }
        }
    }
    let group = req.group_id.0.to_string();
    let id = req.transactional_id.0.to_string();
    let now = now_ms();
    // Kafka: WRITE on the transactional id, READ on the group (either refuses every
    // partition), READ on each topic.
    let refused_all = if !authorized(broker, ctx, op::WRITE, resource::TRANSACTIONAL_ID, &id) {
        Some(E::TransactionalIdAuthorizationFailed)
    } else if !authorized(broker, ctx, op::READ, resource::GROUP, &group) {
        Some(E::GroupAuthorizationFailed)
    } else {
        None
    };
    let unknown: std::collections::HashMap<(String, i32), E> = req
        .topics
        .iter()
        .flat_map(|t| {
            let id_unknown = unknown_ids.contains(&t.topic_id);
            let readable = !id_unknown
                && authorized(broker, ctx, op::READ, resource::TOPIC, t.name.0.as_str());
            t.partitions.iter().map(move |p| {
                (
                    (t.name.0.to_string(), p.partition_index),
                    readable,
                    id_unknown,
                )
            })
        })
        .filter_map(|((topic, p), readable, id_unknown)| {
            let e = if let Some(e) = refused_all {
                e
            } else if id_unknown {
                E::UnknownTopicId
            } else if !readable {
                E::TopicAuthorizationFailed
            } else if !broker.partition_exists(&topic, p) {
                E::UnknownTopicOrPartition
            } else {
                return None;
            };
            Some(((topic, p), e))
        })
        .collect();
    let entries: Vec<((String, i32), OffsetValue)> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .filter(|p| !unknown.contains_key(&(t.name.0.to_string(), p.partition_index)))
                .map(|p| {
                    (
                        (t.name.0.to_string(), p.partition_index),
                        OffsetValue {
                            offset: p.committed_offset,
                            leader_epoch: if v >= 2 { p.committed_leader_epoch } else { -1 },
                            metadata: p
                                .committed_metadata
                                .as_ref()
                                .map(|m| m.to_string())
                                .unwrap_or_default(),
                            commit_timestamp: now,
                        },
                    )
                })
        })
        .collect();
    let mut result: Result<(), E> = Ok(());
    let mut check = ProducerCheck::PLAIN;
    let producer = TxnProducer {
        id: req.producer_id.0,
        epoch: req.producer_epoch,
    };
    let n = offsets_partitions(broker);
    let coordinator = broker.groups.for_group(&group);
    if entries.is_empty() {
        // Nothing to commit: the transaction is left as it is.
    } else if n == 0 {
        result = Err(E::CoordinatorNotAvailable);
    } else if let Err(e) = &coordinator {
        result = Err(*e);
    } else if v >= 5 || broker.config.transactions.partition_verification {
        // KIP-890: the verification starts on the offsets partition before the transaction
        // coordinator is asked, so a marker of the transaction landing in between voids it and
        // the late commit is refused (INVALID_TXN_STATE) instead of opening a transaction that
        // no marker ends (its offsets pending for ever: UNSTABLE_OFFSET_COMMIT to every
        // require_stable OffsetFetch).
        if let Ok(c) = &coordinator {
            check = ProducerCheck::verified(c.offsets.begin_txn_verification(producer, v >= 5));
        }
        let tp = TransactionCoordinators::offsets_partition(&group, n);
        let failed = txn_verify::add_or_verify(
            broker,
            &id,
            req.producer_id.0,
            req.producer_epoch,
            &[tp],
            v >= 5,
        )
        .await;
        if let Some(&e) = failed.values().next() {
            result = Err(match e {
                E::NetworkException | E::CoordinatorLoadInProgress | E::NotCoordinator => {
                    E::CoordinatorNotAvailable
                }
                other => other,
            });
        }
    }
    if result.is_ok() {
        let generation = if v >= 3 { req.generation_id } else { -1 };
        let member = if v >= 3 {
            req.member_id.to_string()
        } else {
            String::new()
        };
        let instance = if v >= 3 {
            req.group_instance_id.as_ref().map(|s| s.to_string())
        } else {
            None
        };
        let committer = Committer {
            member_id: &member,
            epoch: generation,
            instance_id: instance.as_deref(),
            transactional: true,
            version: v,
        };
        let topic_ids = |name: &str| broker.topic(name).map(|t| t.id);
        result = broker
            .groups
            .txn_commit(&group, producer, committer, entries, &topic_ids, check)
            .await;
    }
    // Kafka's TxnOffsetCommitRequest.supportsStaleMemberEpochError: v6 and later.
    let error = result.err().map(|e| match for_version(e, v, 2, 4) {
        E::StaleMemberEpoch if v < 6 => E::IllegalGeneration,
        other => other,
    });
    let topics = req
        .topics
        .into_iter()
        .map(|t| {
            let name = t.name.0.to_string();
            TxnOffsetCommitResponseTopic::default()
                .with_name(if v >= 6 { TopicName::default() } else { t.name })
                .with_topic_id(t.topic_id)
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            let error = unknown
                                .get(&(name.clone(), p.partition_index))
                                .copied()
                                .or(error);
                            TxnOffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(code(error))
                        })
                        .collect(),
                )
        })
        .collect();
    TxnOffsetCommitResponse::default().with_topics(topics)
}

/// DescribeTransactions v0 (KIP-664): the state of each id coordinated here.
///
/// Errors per id: TRANSACTIONAL_ID_NOT_FOUND (105), NOT_COORDINATOR (16),
/// COORDINATOR_NOT_AVAILABLE (15).
pub async fn describe_transactions(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let states = req
        .transactional_ids
        .into_iter()
        .map(|id| {
            let out = DescribedTxn::default().with_transactional_id(id.clone());
            // Kafka: DESCRIBE on the id; partitions of topics not described are left out.
            let found = if authorized(broker, ctx, op::DESCRIBE, resource::TRANSACTIONAL_ID, &id.0)
            {
                broker.txns.describe(&id.0)
            } else {
                Err(E::TransactionalIdAuthorizationFailed)
            };
            match found {
                Err(e) => out
                    .with_error_code(e.code())
                    .with_transaction_state(str_bytes(""))
                    .with_producer_id(ProducerId(-1))
                    .with_producer_epoch(-1),
                Ok(d) => {
                    let mut topics: Vec<TopicData> = Vec::new();
                    for (t, p) in &d.partitions {
                        if !authorized(broker, ctx, op::DESCRIBE, resource::TOPIC, t) {
                            continue;
                        }
                        match topics.iter_mut().find(|x| x.topic.0.as_str() == t) {
                            Some(x) => x.partitions.push(*p),
                            None => topics.push(
                                TopicData::default()
                                    .with_topic(TopicName(str_bytes(t)))
                                    .with_partitions(vec![*p]),
                            ),
                        }
                    }
                    out.with_transaction_state(str_bytes(d.state.name()))
                        .with_transaction_timeout_ms(d.timeout_ms)
                        .with_transaction_start_time_ms(d.start_ms)
                        .with_producer_id(ProducerId(d.producer_id))
                        .with_producer_epoch(d.producer_epoch)
                        .with_topics(topics)
                }
            }
        })
        .collect();
    DescribeTransactionsResponse::default().with_transaction_states(states)
}

/// ListTransactions v0-2 (KIP-664, KIP-994 duration, KIP-1152 pattern): the ids coordinated
/// here; unknown state names are echoed in `unknown_state_filters`.
pub async fn list_transactions(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ListTransactionsRequest,
) -> ListTransactionsResponse {
    let v = ctx.api_version;
    let mut unknown = Vec::new();
    let mut states = Vec::new();
    for s in &req.state_filters {
        match TxnState::from_name(s) {
            Some(st) => states.push(st),
            None => unknown.push(s.clone()),
        }
    }
    if !unknown.is_empty() && states.is_empty() {
        // Only unknown states asked for: nothing can match them.
        return ListTransactionsResponse::default().with_unknown_state_filters(unknown);
    }
    let filter = TxnFilter {
        states,
        producer_ids: req.producer_id_filters.iter().map(|p| p.0).collect(),
        duration_ms: if v >= 1 { req.duration_filter } else { -1 },
        pattern: if v >= 2 {
            req.transactional_id_pattern.as_ref().map(|p| p.to_string())
        } else {
            None
        },
    };
    let listed = broker
        .txns
        .list(&filter)
        .into_iter()
        .filter(|l| {
            authorized(
                broker,
                ctx,
                op::DESCRIBE,
                resource::TRANSACTIONAL_ID,
                &l.transactional_id,
            )
        })
        .map(|l| {
            ListedTxn::default()
                .with_transactional_id(TransactionalId(str_bytes(&l.transactional_id)))
                .with_producer_id(ProducerId(l.producer_id))
                .with_transaction_state(str_bytes(l.state.name()))
        })
        .collect();
    ListTransactionsResponse::default()
        .with_unknown_state_filters(unknown)
        .with_transaction_states(listed)
}

/// DescribeProducers v0 (KIP-664): the producers of partitions this broker holds a replica of,
/// leader or follower (their epochs, last sequences and open transactions' first offsets, for
/// `kafka-transactions describe-producers`, `find-hanging` and `abort`). A diskless topic's
/// partitions are answered by any broker, from their batch coordinator.
///
/// Errors per partition: TOPIC_AUTHORIZATION_FAILED (29) without READ on the topic,
/// UNKNOWN_TOPIC_OR_PARTITION (3), NOT_LEADER_OR_FOLLOWER (6) when this broker holds no replica
/// with an open log (a diskless partition: while its batch coordinator is not reached).
pub async fn describe_producers(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        // Kafka: READ on the topic.
        let readable = authorized(broker, ctx, op::READ, resource::TOPIC, &t.name.0);
        let topic = broker.topic(&t.name.0);
        let diskless = topic
            .as_ref()
            .is_some_and(|t| t.configs.read().is_diskless(&broker.topic_defaults()));
        let mut partitions = Vec::with_capacity(t.partition_indexes.len());
        for &index in &t.partition_indexes {
            let out = PartitionResponse::default().with_partition_index(index);
            let found = match &topic {
                _ if !readable => Err(E::TopicAuthorizationFailed),
                None => Err(E::UnknownTopicOrPartition),
                Some(t) if diskless => diskless_producers(broker, t, index).await,
                // Any replica with a log answers, as Kafka's `Partition.activeProducerState`
                // (`kafka-transactions find-hanging --broker-id` asks every replica).
                Some(t) => t
                    .replica(index)
                    .and_then(|p| p.describe_producers().ok_or(E::NotLeaderOrFollower)),
            };
            partitions.push(match found {
                Err(e) => out.with_error_code(e.code()),
                Ok(producers) => out.with_active_producers(
                    producers
                        .into_iter()
                        .map(|s| {
                            ProducerState::default()
                                .with_producer_id(ProducerId(s.producer_id))
                                .with_producer_epoch(i32::from(s.epoch))
                                .with_last_sequence(s.last_sequence)
                                .with_last_timestamp(s.last_timestamp)
                                .with_coordinator_epoch(s.coordinator_epoch)
                                .with_current_txn_start_offset(s.current_txn_start_offset)
                        })
                        .collect(),
                ),
            });
        }
        topics.push(
            TopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions),
        );
    }
    DescribeProducersResponse::default().with_topics(topics)
}

/// The producers partition `index` of diskless topic `topic` remembers, asked of its batch
/// coordinator.
///
/// Errors: UNKNOWN_TOPIC_OR_PARTITION (3) for an index the topic lacks; NOT_LEADER_OR_FOLLOWER
/// (6) while no coordinator serves it (loading, moving, not reached).
async fn diskless_producers(
    broker: &Broker,
    topic: &crate::storage::topic::Topic,
    index: i32,
) -> Result<Vec<frieda_log::ProducerInfo>, E> {
    use crate::diskless::driver::route::not_served;
    let (partition, _, host) = super::fetch_diskless::diskless_host(broker, topic, index)?;
    host.producers(partition).await.map_err(not_served)
}
