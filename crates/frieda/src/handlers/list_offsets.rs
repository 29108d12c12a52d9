//! ListOffsets (key 2, v1-11): earliest (-2), latest (-1), max timestamp (-3, KIP-734),
//! earliest local (-4, KIP-1005: the local log start; earliest is the whole log's, remote tier
//! included), latest tiered (-5, KIP-1005) and earliest pending upload (-6, KIP-1023; v11) as
//! Kafka's `UnifiedLog.fetchOffsetByTimestamp` answers them (offset -1, leader epoch -1, no
//! error on a topic without tiered storage), and offset by timestamp.

use super::{authorized, RequestContext};
use crate::broker::Broker;
use crate::remote::reader::{self, ReadError};
use crate::remote::store::SegmentKey;
use crate::remote::RemoteAccess;
use crate::security::acl::{op, resource};
use crate::storage::partition::Partition;
use frieda_log::LogError;
use frieda_meta::image::TopicImage;
use frieda_meta::remote_log::{RemoteLog, RemoteSegment};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use std::sync::Arc;
use std::time::Duration;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;
const EARLIEST_PENDING_UPLOAD: i64 = -6;

/// Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION (3); UNSUPPORTED_VERSION (35) for a
/// negative timestamp below -6 (as Kafka 4.3.1); in a cluster NOT_LEADER_OR_FOLLOWER
/// (6), FENCED_LEADER_EPOCH (74), UNKNOWN_LEADER_EPOCH (75); KAFKA_STORAGE_ERROR (56) when a
/// timestamp lookup cannot read the log; OFFSET_NOT_AVAILABLE (78; LEADER_NOT_AVAILABLE (5)
/// before v5) for latest, max timestamp and a timestamp lookup finding nothing readable while
/// a new leader's high watermark is below its epoch start (KIP-207). A timestamp past every
/// record, or MAX_TIMESTAMP on an empty partition, gives offset -1 and timestamp -1, as in
/// Kafka. MAX_TIMESTAMP returns the
/// earliest record carrying the largest timestamp (Kafka's `RecordBatch.offsetOfMaxTimestamp`).
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ListOffsetsRequest,
) -> ListOffsetsResponse {
    // leader_epoch exists from v4; encoding a set field in an older version is an error.
    let epoch = |e: i32| if ctx.api_version >= 4 { e } else { -1 };
    // v2+: read_committed consumers see offsets below the last stable offset only (KIP-98).
    let read_committed = ctx.api_version >= 2 && req.isolation_level == 1;
    // How long lookups in the remote tier may take, for the whole request (Kafka's
    // `DelayedRemoteListOffsets`): the request's `timeout_ms` (v10+, KIP-1075) when positive,
    // else `remote.list.offsets.request.timeout.ms`.
    let deadline = broker.remote().map(|access| {
        let wait = if ctx.api_version >= 10 && req.timeout_ms > 0 {
            Duration::from_millis(req.timeout_ms as u64)
        } else {
            access.list_offsets_wait
        };
        tokio::time::Instant::now() + wait
    });
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        // Kafka: DESCRIBE on the topic (TOPIC_AUTHORIZATION_FAILED per partition).
        let topic = if authorized(
            broker,
            ctx,
            op::DESCRIBE,
            resource::TOPIC,
            t.name.0.as_str(),
        ) {
            broker
                .topic(t.name.0.as_str())
                .ok_or(ResponseError::UnknownTopicOrPartition)
        } else {
            Err(ResponseError::TopicAuthorizationFailed)
        };
        // A diskless topic's offsets are its batch coordinator's (issue 60).
        if let Some(dt) = topic
            .as_ref()
            .ok()
            .filter(|dt| dt.configs.read().is_diskless(&broker.topic_defaults()))
        {
            let mut partitions = Vec::with_capacity(t.partitions.len());
            for lp in &t.partitions {
                let resp = ListOffsetsPartitionResponse::default()
                    .with_partition_index(lp.partition_index)
                    .with_timestamp(-1)
                    .with_offset(-1)
                    .with_leader_epoch(epoch(-1));
                partitions.push(
                    match diskless_offset(
                        broker,
                        dt,
                        lp.partition_index,
                        lp.timestamp,
                        read_committed,
                    )
                    .await
                    {
                        Ok(Some((offset, ts))) => resp.with_offset(offset).with_timestamp(ts),
                        Ok(None) => resp,
                        Err(code) => resp.with_error_code(code.code()),
                    },
                );
            }
            topics.push(
                ListOffsetsTopicResponse::default()
                    .with_name(t.name)
                    .with_partitions(partitions),
            );
            continue;
        }
        // Tiered storage on for this topic (Kafka's `remoteLogEnabled`), and the remote
        // segments the metadata image knows.
        let tiered = broker.config.tiered.enabled
            && topic
                .as_ref()
                .is_ok_and(|t| t.configs.read().get("remote.storage.enable") == Some("true"));
        let image = broker.cluster().filter(|_| tiered).map(|n| n.image());
        // Lookups by timestamp over the remote tier: the topic's copies, the reader, and the
        // request's deadline.
        let remote_lookup = image
            .as_ref()
            .zip(broker.remote())
            .and_then(|(image, access)| {
                Some(RemoteLookup {
                    topic: image.topics.get(t.name.0.as_str())?,
                    access,
                    deadline,
                })
            });
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for lp in t.partitions {
            let resp = ListOffsetsPartitionResponse::default()
                .with_partition_index(lp.partition_index)
                .with_timestamp(-1)
                .with_offset(-1)
                .with_leader_epoch(epoch(-1));
            let found = topic
                .as_ref()
                .map_err(|e| *e)
                .and_then(|t| t.replica(lp.partition_index))
                .and_then(|p| {
                    let client_epoch = if ctx.api_version >= 4 {
                        lp.current_leader_epoch
                    } else {
                        -1
                    };
                    p.repl.check_leader(client_epoch)?;
                    broker.check_lease()?;
                    Ok(p)
                });
            let p = match found {
                Ok(p) => p,
                Err(code) => {
                    partitions.push(resp.with_error_code(code.code()));
                    continue;
                }
            };
            let resp = resp.with_leader_epoch(epoch(p.repl.leader_epoch()));
            let upper = if read_committed {
                p.last_stable_offset()
            } else {
                p.high_watermark()
            };
            // A new leader whose high watermark is still below its epoch's start does not know
            // yet where the acknowledged records end: "latest", and a lookup that finds nothing
            // below it, answer OFFSET_NOT_AVAILABLE (v5+; LEADER_NOT_AVAILABLE before), both
            // retriable, instead of an offset below one already given out (KIP-207). Only
            // for clients (replica id -1), as Kafka.
            let lagging = (req.replica_id.0 == -1)
                .then(|| p.repl.high_watermark_lagging())
                .flatten()
                .map(|(hw, start)| {
                    tracing::debug!(topic = %p.topic, partition = p.index, hw, epoch_start = start,
                        "ListOffsets: high watermark below the epoch start");
                    if ctx.api_version >= 5 {
                        ResponseError::OffsetNotAvailable
                    } else {
                        ResponseError::LeaderNotAvailable
                    }
                });
            let found: Result<Option<(i64, i64)>, ResponseError> = match lp.timestamp {
                LATEST => lagging.map_or(Ok(Some((upper, -1))), Err),
                EARLIEST => Ok(Some((p.total_log_start_offset(), -1))),
                EARLIEST_LOCAL => Ok(Some((p.log_start_offset(), -1))),
                MAX_TIMESTAMP => {
                    let reader = p.reader().clone();
                    let local = lookup(&p, move || {
                        Ok(reader.max_timestamp()?.map(|(ts, off)| (off, ts)))
                    })
                    .await;
                    // Over the remote tier too: the copy with the largest timestamp, when it
                    // starts below the local log and its timestamp is not below the local
                    // one (the earliest record carrying the largest timestamp wins).
                    let remote = remote_lookup.as_ref().and_then(|r| {
                        let log = r.log(&p)?;
                        let s = reader::segment_for_max_timestamp(log, r.log_start(&p))?;
                        let wins = match &local {
                            Ok(Some((_, local_ts))) => s.max_timestamp_ms >= *local_ts,
                            _ => true,
                        };
                        (wins && s.start_offset < p.log_start_offset()).then(|| s.clone())
                    });
                    match (remote, remote_lookup.as_ref()) {
                        (Some(s), Some(r)) => match r.run(&p, s, Lookup::MaxTimestamp).await {
                            Ok(None) => local,
                            found => found,
                        },
                        _ => local,
                    }
                }
                ts if ts >= 0 => {
                    // Kafka's `UnifiedLog.fetchOffsetByTimestamp` on a tiered partition
                    // (`RemoteLogManager.findOffsetByTimestamp`): the first copy whose largest
                    // timestamp reaches `ts`; searched in the bucket when it starts below the
                    // local log, else (and when it has no such record) in the local log.
                    let remote = remote_lookup.as_ref().and_then(|r| {
                        let s = reader::segment_for_timestamp(r.log(&p)?, ts, r.log_start(&p))?;
                        (s.start_offset < p.log_start_offset()).then(|| s.clone())
                    });
                    let found = match (remote, remote_lookup.as_ref()) {
                        (Some(s), Some(r)) => r.run(&p, s, Lookup::Timestamp(ts)).await,
                        _ => Ok(None),
                    };
                    match found {
                        Ok(None) => {
                            let reader = p.reader().clone();
                            lookup(&p, move || reader.offset_for_timestamp(ts)).await
                        }
                        found => found,
                    }
                }
                // Without tiered storage: no such offset, and no epoch (Kafka's answer).
                LATEST_TIERED | EARLIEST_PENDING_UPLOAD if image.is_none() => {
                    partitions.push(resp.with_leader_epoch(epoch(-1)));
                    continue;
                }
                LATEST_TIERED | EARLIEST_PENDING_UPLOAD => {
                    let remote = image.as_ref().and_then(|i| i.remote_log(&p.topic, p.index));
                    // The highest offset ever copied (kept when retention deleted its
                    // copy: Kafka's `highestOffsetInRemoteStorage`).
                    let copied = remote.and_then(|r| r.copied_upto());
                    let (offset, offset_epoch) = match (lp.timestamp, copied) {
                        // The last copied offset, with the epoch of its batch (-1 once its
                        // copy is gone).
                        (LATEST_TIERED, Some(upto)) => {
                            let e = remote.and_then(|r| r.finished_holding(upto)).and_then(|s| {
                                s.segment_epochs.iter().rev().find(|(_, o)| *o <= upto)
                            });
                            (upto, e.map_or(-1, |(e, _)| *e))
                        }
                        (LATEST_TIERED, None) => (-1, -1),
                        // The first offset not copied yet.
                        (_, Some(upto)) => (
                            (upto + 1).max(p.total_log_start_offset()),
                            p.repl.leader_epoch(),
                        ),
                        // Nothing copied yet: the log start, if the local log still starts
                        // there (Kafka: -1 when it does not know of earlier copies).
                        (_, None) if p.log_start_offset() == p.total_log_start_offset() => {
                            (p.log_start_offset(), p.repl.leader_epoch())
                        }
                        (_, None) => (-1, -1),
                    };
                    partitions.push(
                        resp.with_offset(offset)
                            .with_leader_epoch(epoch(offset_epoch)),
                    );
                    continue;
                }
                _ => Err(ResponseError::UnsupportedVersion),
            };
            // A record found by timestamp must be readable: below the high watermark (or the
            // last stable offset), as Kafka's `fetchOffsetByTimestamp` bounds it.
            let found = found
                .map(|f| f.filter(|(offset, ts)| (*ts < 0 && *offset <= upper) || *offset < upper))
                .and_then(|f| match (f, lagging) {
                    (None, Some(e))
                        if lp.timestamp != EARLIEST && lp.timestamp != EARLIEST_LOCAL =>
                    {
                        Err(e)
                    }
                    (f, _) => Ok(f),
                });
            partitions.push(match found {
                Ok(Some((offset, ts))) => resp.with_offset(offset).with_timestamp(ts),
                Ok(None) => resp,
                Err(code) => resp
                    .with_error_code(code.code())
                    .with_leader_epoch(epoch(-1)),
            });
        }
        topics.push(
            ListOffsetsTopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions),
        );
    }
    ListOffsetsResponse::default().with_topics(topics)
}

/// ListOffsets on partition `index` of diskless topic `topic`, from its batch coordinator:
/// earliest and earliest local are its log start, latest its high watermark (`read_committed`:
/// its last stable offset), max timestamp and timestamps read the batch the coordinates point
/// to; the tiered ones (-5, -6) have no offset.
///
/// Errors: UNKNOWN_TOPIC_OR_PARTITION (3); NOT_LEADER_OR_FOLLOWER (6) while no coordinator
/// serves it (loading, moving, not reached); UNSUPPORTED_VERSION (35) below -6; the read's.
async fn diskless_offset(
    broker: &Broker,
    topic: &crate::storage::topic::Topic,
    index: i32,
    timestamp: i64,
    read_committed: bool,
) -> Result<Option<(i64, i64)>, ResponseError> {
    use super::fetch_diskless::diskless_host;
    use crate::diskless::driver::read::{offset_for_time, TimeLookup};
    use crate::diskless::driver::route::not_served;
    let (partition, diskless, host) = diskless_host(broker, topic, index)?;
    let offsets = host.offsets(partition).await.map_err(not_served)?;
    match timestamp {
        LATEST if read_committed => Ok(Some((offsets.last_stable_offset, -1))),
        LATEST => Ok(Some((offsets.high_watermark, -1))),
        EARLIEST | EARLIEST_LOCAL => Ok(Some((offsets.log_start, -1))),
        LATEST_TIERED | EARLIEST_PENDING_UPLOAD => Ok(None),
        MAX_TIMESTAMP => offset_for_time(&host, &diskless.objects, partition, TimeLookup::Max)
            .await
            .map_err(not_served),
        ts if ts >= 0 => offset_for_time(
            &host,
            &diskless.objects,
            partition,
            TimeLookup::AtOrAfter(ts),
        )
        .await
        .map_err(not_served),
        _ => Err(ResponseError::UnsupportedVersion),
    }
}

/// Runs a lookup that reads the log on a blocking thread: `(offset, timestamp)` or nothing.
async fn lookup(
    p: &Partition,
    f: impl FnOnce() -> Result<Option<(i64, i64)>, LogError> + Send + 'static,
) -> Result<Option<(i64, i64)>, ResponseError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(LogError::Offline)) => Err(ResponseError::KafkaStorageError),
        Ok(Err(e)) => {
            tracing::error!(topic = %p.topic, partition = p.index, error = %e, "offset lookup failed");
            Err(ResponseError::KafkaStorageError)
        }
        Err(_) => Err(ResponseError::UnknownServerError),
    }
}

/// What the lookups of one topic of a ListOffsets need of the remote tier.
struct RemoteLookup<'a> {
    /// The topic in the metadata image: its id and its partitions' copies.
    topic: &'a TopicImage,
    /// The reader and the remote-log runtime.
    access: &'a RemoteAccess,
    /// When the request's lookups in the remote tier time out.
    deadline: Option<tokio::time::Instant>,
}

/// A lookup in one copy.
#[derive(Clone, Copy)]
enum Lookup {
    /// The first record with a timestamp at or after this (ms).
    Timestamp(i64),
    /// The earliest record carrying the copy's largest timestamp.
    MaxTimestamp,
}

impl RemoteLookup<'_> {
    /// The partition's copies, if any.
    fn log(&self, p: &Partition) -> Option<&RemoteLog> {
        self.topic.remote.get(&p.index).map(|r| &**r)
    }

    /// The partition's log start offset as the metadata image knows it (Kafka's
    /// `logStartOffset`, the `startingOffset` of its remote lookups): the offset DeleteRecords
    /// moved it to, if any, else 0; the readable copies are the rest of the bound (retention
    /// takes copies out of them before it deletes them). Not the partition's
    /// [`Partition::total_log_start_offset`], whose view of the copies is refreshed
    /// periodically and, right after a local segment is deleted, may still say the local start.
    fn log_start(&self, p: &Partition) -> i64 {
        self.log(p)
            .and_then(RemoteLog::log_start)
            .unwrap_or(0)
            .max(p.tiered.deleted_below())
            .max(0)
    }

    /// Runs `what` in the copy `segment` on the remote-log runtime and waits for it until the
    /// request's deadline: `(offset, timestamp)`, or nothing found. Errors: REQUEST_TIMED_OUT
    /// (7) past the deadline (Kafka's `DelayedRemoteListOffsets.onExpiration`),
    /// KAFKA_STORAGE_ERROR (56) when the bucket fails or a copy does not parse (logged).
    async fn run(
        &self,
        p: &Partition,
        segment: RemoteSegment,
        what: Lookup,
    ) -> Result<Option<(i64, i64)>, ResponseError> {
        let (topic, topic_id, partition) = (p.topic.to_string(), self.topic.id, p.index);
        let reader = self.access.reader.clone();
        let start = self.log_start(p);
        let job = self.access.runtime.spawn(async move {
            let key = SegmentKey {
                topic: &topic,
                topic_id,
                partition,
                base_offset: segment.start_offset,
                segment_id: segment.id,
            };
            match what {
                Lookup::Timestamp(ts) => {
                    reader.offset_for_timestamp(&key, &segment, ts, start).await
                }
                Lookup::MaxTimestamp => reader.max_timestamp(&key, &segment, start).await,
            }
        });
        let done = match self.deadline {
            Some(d) => tokio::time::timeout_at(d, job).await,
            None => Ok(job.await),
        };
        match done {
            Ok(Ok(Ok(found))) => Ok(found),
            Ok(Ok(Err(e @ (ReadError::Store(_) | ReadError::Corrupt(_))))) => {
                tracing::warn!(topic = %p.topic, partition = p.index, error = %e, "offset lookup in the remote tier failed");
                Err(ResponseError::KafkaStorageError)
            }
            Ok(Err(e)) => {
                tracing::error!(topic = %p.topic, partition = p.index, error = %e, "offset lookup task in the remote tier failed");
                Err(ResponseError::KafkaStorageError)
            }
            Err(_) => {
                tracing::debug!(topic = %p.topic, partition = p.index, "offset lookup in the remote tier timed out");
                Err(ResponseError::RequestTimedOut)
            }
        }
    }
}
