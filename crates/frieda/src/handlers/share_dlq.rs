//! The dead-letter queue of share groups (KIP-1191, Kafka 4.4, `share.version` 2): a record a
//! consumer rejected, or one archived because its delivery count reached
//! `share.delivery.count.limit`, is written to the group's `errors.deadletterqueue.topic.name`
//! (a group config) when it has one.
//!
//! As Kafka's `ShareGroupDLQStateManager` writes them: one DLQ record per archived offset,
//! timestamped now, to partition `source partition % DLQ partitions`, uncompressed, with the
//! headers `__dlq.errors.topic`, `__dlq.errors.partition`, `__dlq.errors.offset`,
//! `__dlq.errors.group`, `__dlq.errors.delivery.count` and `__dlq.errors.message` (UTF-8
//! strings); its key, value and headers are the original record's only with
//! `errors.deadletterqueue.copy.record.enable=true` (else null key and value). The DLQ topic
//! must have the topic config `errors.deadletterqueue.group.enable=true` and a name starting
//! with the broker's `errors.deadletterqueue.topic.name.prefix` (`dlq.`); a missing one is
//! created (with that config) only with `errors.deadletterqueue.auto.create.topics.enable`.
//! Otherwise, or when the write fails, the records stay archived and a warning is logged
//! ("Failed to write to DLQ, proceeding to ARCHIVED regardless", as Kafka).
//!
//! When: right after the acknowledgement that archived them is durable (the ShareAcknowledge
//! or ShareFetch answer waits for the DLQ write), and for records archived by an expired lock,
//! at the share-partition's next fetch or acknowledgement. Frieda writes them after the archived
//! state is durable, not before (Kafka persists an intermediate ARCHIVING state first): a crash
//! between the two leaves the record archived without its DLQ copy.

use super::share_source::ShareSource;
use super::str_bytes;
use crate::broker::Broker;
use crate::coordinator::share::partition::ArchiveReason;
use crate::coordinator::share::{GroupShareConfig, ShareKey};
use bytes::{Bytes, BytesMut};
use frieda_log::BatchHeader;
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Most DLQ records in one batch.
const MAX_BATCH_RECORDS: usize = 500;
/// Most bytes of source log read to copy the original records.
const COPY_READ_BYTES: usize = 8 << 20;
/// How long a DLQ write may take (the acknowledgement waits for it).
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Produce version of a DLQ write to another broker (topic names, not ids).
const PRODUCE_VERSION: i16 = 11;

/// Kafka's cause message for a reason.
fn message(reason: ArchiveReason) -> &'static str {
    match reason {
        ArchiveReason::Rejected => "Offset rejected by client.",
        ArchiveReason::DeliveryLimit => "Offset delivery count exceeded the threshold.",
    }
}

/// Writes the records of share-partition `key` (on `source`) just archived to the group's DLQ,
/// if `share.version` >= 2 and the group has one; a failure is logged, never returned.
pub(super) async fn publish(
    broker: &Arc<Broker>,
    key: &ShareKey,
    source: &ShareSource,
    archived: Vec<(i64, ArchiveReason, u16)>,
    config: &GroupShareConfig,
) {
    let Some(dlq) = config.dlq_topic.as_deref() else {
        return;
    };
    if archived.is_empty() || !broker.features.share_dlq_enabled() {
        return;
    }
    let (group, topic, index) = (&key.0, &key.1, key.2);
    let originals = if config.dlq_copy_record {
        originals(source, &archived).await
    } else {
        BTreeMap::new()
    };
    let now = crate::clock::now_ms();
    let records: Vec<Record> = archived
        .iter()
        .map(|(offset, reason, count)| {
            let original = originals.get(offset);
            let mut headers = original.map(|r| r.headers.clone()).unwrap_or_default();
            for (k, v) in [
                ("__dlq.errors.topic", topic.clone()),
                ("__dlq.errors.partition", index.to_string()),
                ("__dlq.errors.offset", offset.to_string()),
                ("__dlq.errors.group", group.clone()),
                ("__dlq.errors.delivery.count", count.to_string()),
                ("__dlq.errors.message", message(*reason).to_string()),
            ] {
                headers.insert(StrBytes::from_string(k.to_string()), Some(Bytes::from(v)));
            }
            Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: 0,
                sequence: -1,
                timestamp: now,
                key: original.and_then(|r| r.key.clone()),
                value: original.and_then(|r| r.value.clone()),
                headers,
            }
        })
        .collect();
    let t = match dlq_topic(broker, group, dlq).await {
        Ok(t) => t,
        Err(why) => {
            tracing::warn!(
                group,
                topic,
                partition = index,
                dlq,
                archived = archived.len(),
                "Failed to write to DLQ, proceeding to ARCHIVED regardless: {why}"
            );
            return;
        }
    };
    let dest = index.rem_euclid(t.partition_count().max(1));
    for chunk in records.chunks(MAX_BATCH_RECORDS) {
        let mut recs = chunk.to_vec();
        for (i, r) in recs.iter_mut().enumerate() {
            r.offset = i as i64;
        }
        let mut buf = BytesMut::new();
        if let Err(e) = RecordBatchEncoder::encode(
            &mut buf,
            recs.iter(),
            &RecordEncodeOptions {
                version: 2,
                compression: Compression::None,
            },
        ) {
            tracing::warn!(group, dlq, error = %e, "DLQ batch not encoded: the records stay archived");
            return;
        }
        if let Err(e) = write(broker, dlq, dest, buf).await {
            tracing::warn!(group, topic, partition = index, dlq, dlq_partition = dest, error = ?e,
                "Failed to write to DLQ, proceeding to ARCHIVED regardless.");
            return;
        }
    }
    tracing::debug!(
        group,
        topic,
        partition = index,
        dlq,
        records = archived.len(),
        "wrote archived share records to the DLQ"
    );
}

/// The dead-letter topic `dlq` of `group`, checked as Kafka 4.4's
/// `ShareGroupDLQStateManager.validateDlqTopic`: it must carry
/// `errors.deadletterqueue.group.enable=true`; a missing one is created (with it) only with
/// `errors.deadletterqueue.auto.create.topics.enable`; its name must start with
/// `errors.deadletterqueue.topic.name.prefix`. Errors: Kafka's message.
async fn dlq_topic(
    broker: &Arc<Broker>,
    group: &str,
    dlq: &str,
) -> Result<Arc<crate::storage::topic::Topic>, String> {
    let settings = broker.groups.shares.config();
    let t = match broker.topic(dlq) {
        Some(t) => t,
        None if !settings.dlq_auto_create => {
            return Err(format!(
                "DLQ topic does not exist and auto create is disabled on cluster for share group: {group}, topic: {dlq}."
            ))
        }
        None => {
            let configs = [(
                "errors.deadletterqueue.group.enable".to_string(),
                Some("true".to_string()),
            )];
            match broker.create_topic(dlq, -1, -1, None, &configs, false).await {
                Ok(t) => t,
                Err(e) if e.code == E::TopicAlreadyExists => broker
                    .topic(dlq)
                    .ok_or_else(|| format!("DLQ topic {dlq} raced away"))?,
                Err(e) => return Err(format!("creating the DLQ topic {dlq}: {}", e.message)),
            }
        }
    };
    let enabled = t
        .configs
        .read()
        .0
        .get("errors.deadletterqueue.group.enable")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if !enabled {
        return Err(format!(
            "DLQ is not enabled on configured DLQ topic for share group: {group}, topic: {dlq}."
        ));
    }
    let prefix = &settings.dlq_topic_prefix;
    if !prefix.is_empty() && !dlq.starts_with(prefix.as_str()) {
        return Err(format!(
            "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: {group}, topic: {dlq}, prefix: {prefix}."
        ));
    }
    Ok(t)
}

/// The original records at the archived offsets (for `copy.record.enable`), read from `source`
/// (a local log, or a diskless partition through its batch coordinator and the bucket).
async fn originals(
    source: &ShareSource,
    archived: &[(i64, ArchiveReason, u16)],
) -> BTreeMap<i64, Record> {
    let wanted: std::collections::BTreeSet<i64> = archived.iter().map(|a| a.0).collect();
    let (Some(&lo), Some(&hi)) = (wanted.first(), wanted.last()) else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    let Ok(offsets) = source.offsets().await else {
        return out;
    };
    let limit = offsets.high_watermark;
    let mut at = lo;
    while at <= hi && at < limit {
        let Ok(read) = source.read(at, COPY_READ_BYTES, limit, false).await else {
            break;
        };
        let data = read.data;
        if data.chunks.is_empty() || data.next_offset <= at {
            break;
        }
        for chunk in &data.chunks {
            let mut b = chunk.clone();
            let Ok(sets) = RecordBatchDecoder::decode_all(&mut b) else {
                continue;
            };
            for r in sets.into_iter().flat_map(|s| s.records) {
                if wanted.contains(&r.offset) {
                    out.insert(r.offset, r);
                }
            }
        }
        at = data.next_offset;
    }
    out
}

/// Appends one batch to partition `index` of the DLQ topic `dlq`, on this broker if it leads
/// it, else through its leader (Produce, acks=all).
async fn write(broker: &Arc<Broker>, dlq: &str, index: i32, buf: BytesMut) -> Result<(), E> {
    let t = broker.topic(dlq).ok_or(E::UnknownTopicOrPartition)?;
    let local = t
        .replica(index)
        .and_then(|p| p.repl.check_leader(-1).map(|_| p));
    match local {
        Ok(p) => {
            // As a producer's acks=all write: refused while this leader may be fenced or too few
            // replicas are in sync, acknowledged once `min.insync.replicas` have it.
            let lease = broker.cluster().map(|n| n.as_ref());
            let min_isr = p.produce_policy().min_insync_replicas;
            super::produce::check_append(&p, lease, true, min_isr)?;
            let header = BatchHeader::parse(&buf).map_err(|_| E::CorruptMessage)?;
            let outcome = p.append(buf, header).await?;
            if p.repl.is_replicated() {
                let waited = p
                    .repl
                    .wait_replicated(
                        outcome.last_offset,
                        outcome.leader_epoch,
                        min_isr,
                        WRITE_TIMEOUT,
                    )
                    .await;
                let lease_holds = lease.is_none_or(|n| n.holds_lease());
                crate::storage::leader_append::answer_produce(waited, lease_holds)?;
            }
            Ok(())
        }
        Err(E::NotLeaderOrFollower) => {
            let node = broker.cluster().ok_or(E::NotLeaderOrFollower)?;
            let leader = node
                .image()
                .partition(dlq, index)
                .map(|p| p.leader)
                .filter(|l| *l >= 0)
                .ok_or(E::LeaderNotAvailable)?;
            let req = ProduceRequest::default()
                .with_acks(-1)
                .with_timeout_ms(WRITE_TIMEOUT.as_millis() as i32)
                .with_topic_data(vec![TopicProduceData::default()
                    .with_name(TopicName(str_bytes(dlq)))
                    .with_partition_data(vec![PartitionProduceData::default()
                        .with_index(index)
                        .with_records(Some(buf.freeze()))])]);
            let resp = node
                .clients
                .call(leader, PRODUCE_VERSION, &req, WRITE_TIMEOUT)
                .await
                .map_err(|_| E::RequestTimedOut)?;
            let code = resp
                .responses
                .iter()
                .flat_map(|t| t.partition_responses.iter())
                .map(|p| p.error_code)
                .next()
                .unwrap_or(E::UnknownServerError.code());
            match code {
                0 => Ok(()),
                c => Err(E::try_from_code(c).unwrap_or(E::UnknownServerError)),
            }
        }
        Err(e) => Err(e),
    }
}
