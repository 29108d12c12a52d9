//! Committed offsets: OffsetCommit (8) v2-10, OffsetFetch (9) v1-10 (several groups from v8,
//! topics by id from v10),
//! OffsetDelete (47) v0. Storage and group checks live in [`crate::coordinator`].

use super::{authorized, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::clock::now_ms;
use crate::coordinator::group::consumer::Committer;
use crate::coordinator::offsets::codec::OffsetValue;
use crate::security::acl::{op, resource};
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
    OffsetFetchRequest, OffsetFetchResponse, TopicName,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

/// A topic named in an OffsetCommit/OffsetFetch request: by name before v10, by topic id
/// (KIP-516) from v10 (Kafka 4.3, KAFKA-14690). `None` for an id no topic has.
fn topic_named(broker: &Broker, version: i16, name: &TopicName, id: &Uuid) -> Option<String> {
    if version >= 10 {
        broker.topic_by_id(id).map(|t| t.name.to_string())
    } else {
        Some(name.0.to_string())
    }
}

/// OffsetCommit v2-10 (v10 names topics by id). Per partition: UNKNOWN_TOPIC_ID (100) for an
/// unknown topic id (v10), UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE, or the
/// group's verdict (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS,
/// FENCED_INSTANCE_ID, STALE_MEMBER_EPOCH and UNSUPPORTED_VERSION below v9 for consumer-protocol
/// members (KIP-848, KIP-1251), INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE, KAFKA_STORAGE_ERROR).
pub async fn commit(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let max_meta = broker.groups.config().offset_metadata_max_bytes;
    let now = now_ms();
    // (topic as the request named it: name, id; partition; early error)
    let mut results: Vec<(&TopicName, Uuid, i32, Option<E>)> = Vec::new();
    let mut entries = Vec::new();
    // Kafka: READ on the group (every partition GROUP_AUTHORIZATION_FAILED), READ on each topic.
    let group_ok = authorized(broker, ctx, op::READ, resource::GROUP, &req.group_id.0);
    for t in &req.topics {
        let topic = topic_named(broker, ctx.api_version, &t.name, &t.topic_id);
        let topic_ok = topic
            .as_deref()
            .is_some_and(|n| authorized(broker, ctx, op::READ, resource::TOPIC, n));
        for p in &t.partitions {
            let meta = p.committed_metadata.as_deref().unwrap_or("");
            let early = match topic.as_deref() {
                None => Some(E::UnknownTopicId),
                Some(_) if !group_ok => Some(E::GroupAuthorizationFailed),
                Some(_) if !topic_ok => Some(E::TopicAuthorizationFailed),
                Some(n) if !broker.partition_exists(n, p.partition_index) => {
                    Some(E::UnknownTopicOrPartition)
                }
                Some(_) if meta.len() > max_meta => Some(E::OffsetMetadataTooLarge),
                Some(_) => None,
            };
            if let (None, Some(n)) = (early, topic.as_deref()) {
                entries.push((
                    (n.to_string(), p.partition_index),
                    OffsetValue {
                        offset: p.committed_offset,
                        leader_epoch: if ctx.api_version >= 6 {
                            p.committed_leader_epoch
                        } else {
                            -1
                        },
                        metadata: meta.to_string(),
                        commit_timestamp: now,
                    },
                ));
            }
            results.push((&t.name, t.topic_id, p.partition_index, early));
        }
    }
    let verdict = if entries.is_empty() {
        Ok(())
    } else {
        let committer = Committer {
            member_id: &req.member_id,
            epoch: req.generation_id_or_member_epoch,
            instance_id: req.group_instance_id.as_deref(),
            transactional: false,
            version: ctx.api_version,
        };
        let topic_ids = |name: &str| broker.topic(name).map(|t| t.id);
        broker
            .groups
            .commit(&req.group_id.0, committer, entries, &topic_ids)
            .await
    };
    let mut topics: Vec<OffsetCommitResponseTopic> = Vec::new();
    for (name, id, partition, early) in results {
        let e = early.or(verdict.err());
        let part = OffsetCommitResponsePartition::default()
            .with_partition_index(partition)
            .with_error_code(e.map_or(0, |e| e.code()));
        match topics.last_mut() {
            Some(t) if t.name == *name && t.topic_id == id => t.partitions.push(part),
            _ => topics.push(
                OffsetCommitResponseTopic::default()
                    .with_name(name.clone())
                    .with_topic_id(id)
                    .with_partitions(vec![part]),
            ),
        }
    }
    OffsetCommitResponse::default().with_topics(topics)
}

/// A partition's committed offset as OffsetFetch answers it: the offset (if any), or
/// UNSTABLE_OFFSET_COMMIT (88) when `require_stable` was asked and a transactional commit of
/// it waits for its transaction (KIP-447).
type Found = Result<Option<OffsetValue>, E>;

/// Committed offsets of one topic, by partition.
type TopicOffsets = (String, Vec<(i32, Found)>);

/// The committed offsets asked for (`None`: all of the group's), by topic.
///
/// Errors: NOT_COORDINATOR (16) / COORDINATOR_NOT_AVAILABLE (15) when the group's coordinator
/// is not here.
fn lookup(
    broker: &Broker,
    ctx: &RequestContext,
    group: &str,
    wanted: Option<Vec<(String, Vec<i32>)>>,
    require_stable: bool,
) -> Result<Vec<TopicOffsets>, E> {
    // Kafka: DESCRIBE on the group; topics not described are left out of an all-topics answer
    // and get TOPIC_AUTHORIZATION_FAILED when named.
    if !authorized(broker, ctx, op::DESCRIBE, resource::GROUP, group) {
        return Err(E::GroupAuthorizationFailed);
    }
    let may_see = |t: &str| authorized(broker, ctx, op::DESCRIBE, resource::TOPIC, t);
    let coordinator = broker.groups.for_group(group)?;
    let found = |t: &str, p: i32, v: Option<OffsetValue>| -> Found {
        if require_stable && coordinator.offsets.has_pending(group, t, p) {
            Err(E::UnstableOffsetCommit)
        } else {
            Ok(v)
        }
    };
    Ok(match wanted {
        Some(topics) => topics
            .into_iter()
            .map(|(t, parts)| {
                let visible = may_see(&t);
                let found = parts
                    .into_iter()
                    .map(|p| {
                        if visible {
                            (p, found(&t, p, coordinator.offsets.get(group, &t, p)))
                        } else {
                            (p, Err(E::TopicAuthorizationFailed))
                        }
                    })
                    .collect();
                (t, found)
            })
            .collect(),
        None => {
            let mut by_topic: BTreeMap<String, Vec<(i32, Found)>> = BTreeMap::new();
            for ((t, p), v) in coordinator.offsets.group_offsets(group) {
                if !may_see(&t) {
                    continue;
                }
                let f = found(&t, p, Some(v));
                by_topic.entry(t).or_default().push((p, f));
            }
            by_topic.into_iter().collect()
        }
    })
}

/// OffsetFetch v1-10 (v10 names topics by id). Partitions with no committed offset get offset
/// -1 and no error; v10: an unknown topic id gets UNKNOWN_TOPIC_ID (100) per partition.
pub async fn fetch(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: OffsetFetchRequest,
) -> OffsetFetchResponse {
    let v = ctx.api_version;
    if v >= 8 {
        let groups = req
            .groups
            .iter()
            .map(|g| {
                // v10: topics by id; an id no topic has gets UNKNOWN_TOPIC_ID per partition.
                let mut unknown_ids: Vec<(Uuid, Vec<i32>)> = Vec::new();
                let wanted = g.topics.as_ref().map(|ts| {
                    ts.iter()
                        .filter_map(|t| match topic_named(broker, v, &t.name, &t.topic_id) {
                            Some(n) => Some((n, t.partition_indexes.clone())),
                            None => {
                                unknown_ids.push((t.topic_id, t.partition_indexes.clone()));
                                None
                            }
                        })
                        .collect()
                });
                let found = match lookup(broker, ctx, &g.group_id.0, wanted, req.require_stable) {
                    Ok(found) => found,
                    Err(e) => {
                        return OffsetFetchResponseGroup::default()
                            .with_group_id(g.group_id.clone())
                            .with_error_code(e.code())
                    }
                };
                let unknown = unknown_ids.into_iter().map(|(id, parts)| {
                    let errors = parts
                        .into_iter()
                        .map(|p| (p, Err(E::UnknownTopicId)))
                        .collect::<Vec<(i32, Found)>>();
                    (String::new(), Some(id), errors)
                });
                let topics = found
                    .into_iter()
                    .filter_map(|(t, parts)| {
                        // v10 answers by id: offsets of a topic deleted since are left out.
                        let id = if v >= 10 {
                            Some(broker.topic(&t)?.id)
                        } else {
                            None
                        };
                        Some((t, id, parts))
                    })
                    .chain(unknown)
                    .map(|(t, id, parts)| {
                        OffsetFetchResponseTopics::default()
                            .with_name(TopicName(str_bytes(&t)))
                            .with_topic_id(id.unwrap_or_default())
                            .with_partitions(
                                parts
                                    .into_iter()
                                    .map(|(p, o)| {
                                        let err = o.as_ref().err().map_or(0, |e| e.code());
                                        let (offset, epoch, meta) =
                                            o.ok().flatten().map_or((-1, -1, String::new()), |o| {
                                                (o.offset, o.leader_epoch, o.metadata)
                                            });
                                        OffsetFetchResponsePartitions::default()
                                            .with_partition_index(p)
                                            .with_committed_offset(offset)
                                            .with_committed_leader_epoch(epoch)
                                            .with_metadata(Some(str_bytes(&meta)))
                                            .with_error_code(err)
                                    })
                                    .collect(),
                            )
                    })
                    .collect();
                OffsetFetchResponseGroup::default()
                    .with_group_id(g.group_id.clone())
                    .with_topics(topics)
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let wanted = req.topics.as_ref().map(|ts| {
        ts.iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
            .collect()
    });
    let require_stable = v >= 7 && req.require_stable;
    let found = match lookup(broker, ctx, &req.group_id.0, wanted, require_stable) {
        Ok(found) => found,
        Err(e) if v >= 2 => return OffsetFetchResponse::default().with_error_code(e.code()),
        Err(e) => {
            // v1 has no top-level error: every partition asked for carries it.
            let topics = req
                .topics
                .iter()
                .flatten()
                .map(|t| {
                    OffsetFetchResponseTopic::default()
                        .with_name(t.name.clone())
                        .with_partitions(
                            t.partition_indexes
                                .iter()
                                .map(|p| {
                                    OffsetFetchResponsePartition::default()
                                        .with_partition_index(*p)
                                        .with_committed_offset(-1)
                                        .with_metadata(Some(str_bytes("")))
                                        .with_error_code(e.code())
                                })
                                .collect(),
                        )
                })
                .collect();
            return OffsetFetchResponse::default().with_topics(topics);
        }
    };
    let topics = found
        .into_iter()
        .map(|(t, parts)| {
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(str_bytes(&t)))
                .with_partitions(
                    parts
                        .into_iter()
                        .map(|(p, o)| {
                            let err = o.as_ref().err().map_or(0, |e| e.code());
                            let (offset, epoch, meta) =
                                o.ok().flatten().map_or((-1, -1, String::new()), |o| {
                                    (o.offset, o.leader_epoch, o.metadata)
                                });
                            OffsetFetchResponsePartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(offset)
                                .with_committed_leader_epoch(if v >= 5 { epoch } else { -1 })
                                .with_metadata(Some(str_bytes(&meta)))
                                .with_error_code(err)
                        })
                        .collect(),
                )
        })
        .collect();
    OffsetFetchResponse::default().with_topics(topics)
}

/// OffsetDelete v0. Group errors: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, INVALID_GROUP_ID;
/// per partition: GROUP_SUBSCRIBED_TO_TOPIC, UNKNOWN_TOPIC_OR_PARTITION.
pub async fn delete(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    // Kafka: DELETE on the group, READ on each topic.
    if !authorized(broker, ctx, op::DELETE, resource::GROUP, &req.group_id.0) {
        return OffsetDeleteResponse::default().with_error_code(E::GroupAuthorizationFailed.code());
    }
    let mut parts = Vec::new();
    let mut unknown = Vec::new();
    for t in &req.topics {
        let topic_ok = authorized(broker, ctx, op::READ, resource::TOPIC, t.name.0.as_str());
        for p in &t.partitions {
            let tp = (t.name.0.to_string(), p.partition_index);
            if !topic_ok {
                unknown.push((tp, E::TopicAuthorizationFailed));
            } else if broker.partition_exists(&tp.0, tp.1) {
                parts.push(tp);
            } else {
                unknown.push((tp, E::UnknownTopicOrPartition));
            }
        }
    }
    let results = match broker.groups.delete_offsets(&req.group_id.0, parts).await {
        Ok(r) => r,
        Err(e) => return OffsetDeleteResponse::default().with_error_code(e.code()),
    };
    let mut topics: Vec<OffsetDeleteResponseTopic> = Vec::new();
    let all = results
        .into_iter()
        .chain(unknown.into_iter().map(|(tp, e)| (tp, Some(e))));
    for ((topic, partition), e) in all {
        let part = OffsetDeleteResponsePartition::default()
            .with_partition_index(partition)
            .with_error_code(e.map_or(0, |e| e.code()));
        match topics.iter_mut().find(|t| *t.name.0 == *topic) {
            Some(t) => t.partitions.push(part),
            None => topics.push(
                OffsetDeleteResponseTopic::default()
                    .with_name(TopicName(str_bytes(&topic)))
                    .with_partitions(vec![part]),
            ),
        }
    }
    OffsetDeleteResponse::default().with_topics(topics)
}
