//! ShareFetch (78, v1-2) and ShareAcknowledge (79, v1-2) of KIP-932 share groups, at Kafka
//! 4.4.0's versions: a member fetches records of the partitions this broker leads through its
//! share session ([`crate::coordinator::share::session`]); each record it gets is acquired for it
//! (locked for `group.share.record.lock.duration.ms`) and comes back as whole record batches with
//! the `AcquiredRecords` ranges it holds; acknowledgements (accept, release, reject, renew, gap)
//! ride on ShareFetch or go alone in ShareAcknowledge. Check order as Kafka 4.4's `KafkaApis`:
//! `share.version`, group id, GROUP READ, member id, the session epoch, then TOPIC READ per
//! partition; acknowledgement batches are validated as `KafkaApis.validateAcknowledgementBatches`.

use super::share_groups::valid_member_id;
use super::share_source::{ShareSource, SourceError, DISKLESS_POLL};
use super::share_state;
use super::{authorized, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::coordinator::offsets::codec::ShareStateValue;
use crate::coordinator::share::partition::{
    AckType, AcquiredRange, ReadSpan, SharePartition, ShareSnapshot,
};
use crate::coordinator::share::session::{FetchContext, SessionPartition, FINAL_EPOCH};
use crate::coordinator::share::{AutoOffsetReset, GroupShareConfig, ShareKey, SharedPartition};
use crate::security::acl;
use bytes::{Bytes, BytesMut};
use frieda_log::{BatchHeader, FetchData};
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::share_acknowledge_response as ack_resp;
use kafka_protocol::messages::share_fetch_response::{
    AcquiredRecords, LeaderIdAndEpoch, NodeEndpoint, PartitionData, ShareFetchableTopicResponse,
};
use kafka_protocol::messages::{
    BrokerId, ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest,
    ShareFetchResponse,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The most a ShareFetch reads of one partition's log per acquisition (bytes).
const READ_BUDGET_BYTES: usize = 1 << 20;

/// The least a ShareFetch reads of one partition's log per acquisition (bytes), and what it
/// reads before it knows the partition's bytes per record.
const MIN_READ_BYTES: usize = 16 << 10;

/// The longest a ShareFetch waits for records (ms), whatever it asks.
const MAX_WAIT_CAP_MS: i32 = 30_000;

/// One acknowledgement batch off the wire: (first, last, types).
type AckBatch = (i64, i64, Vec<i8>);

/// Kafka's `validateAcknowledgementBatches` for one partition's batches: INVALID_REQUEST (42)
/// for a batch whose last offset is before its first, one that starts before the previous
/// batch's last offset, no types, a type count that is neither 1 nor the range's length, an
/// unknown type, or RENEW (4) without `IsRenewAck` (or before v2).
fn validate_batches(batches: &[AckBatch], version: i16, renew: bool) -> Result<(), E> {
    let max_type = if version >= 2 { 4 } else { 3 };
    let mut prev_last = -1i64;
    for (first, last, types) in batches {
        if first > last || *first < prev_last || types.is_empty() {
            return Err(E::InvalidRequest);
        }
        if types.len() > 1 && (*last as i128 - *first as i128) != types.len() as i128 - 1 {
            return Err(E::InvalidRequest);
        }
        if types
            .iter()
            .any(|t| *t < 0 || *t > max_type || (*t == 4 && !renew))
        {
            return Err(E::InvalidRequest);
        }
        prev_last = *last;
    }
    Ok(())
}

/// Applies `member`'s acknowledgement `batches` of `group`'s share-partition `topic`/`index`,
/// and writes the share-partition's durable state before answering (so an acknowledged record
/// is never delivered again, also after a failover).
///
/// Errors: UNKNOWN_TOPIC_OR_PARTITION (3) when no share-partition of the group is kept here (it
/// never fetched here, or this broker no longer leads the partition), NOT_LEADER_OR_FOLLOWER (6)
/// when this broker is not the leader, the share-partition's (INVALID_RECORD_STATE, 121), and the
/// state write's (COORDINATOR_NOT_AVAILABLE, FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH).
async fn acknowledge(
    broker: &Arc<Broker>,
    (group, member): (&str, &str),
    topic: &str,
    index: i32,
    batches: &[AckBatch],
    config: &GroupShareConfig,
) -> Result<(), E> {
    if batches.is_empty() {
        return Ok(());
    }
    let t = broker.topic(topic).ok_or(E::UnknownTopicOrPartition)?;
    let p = t.replica(index)?;
    p.repl.check_leader(-1)?;
    let source = ShareSource::of(broker, &t, p)?;
    let shares = &broker.groups.shares;
    let key = (group.to_string(), topic.to_string(), index);
    let entry = shares
        .get(&key, source.p.repl.leader_epoch())
        .ok_or(E::UnknownTopicOrPartition)?;
    // Stage the outcomes, then write: acknowledgements staged while another write is in flight
    // go out together in the next one (a group commit), each answered once a write that
    // includes it succeeded.
    let now = now_ms();
    let (mut result, mine) = {
        let mut state = entry.state.lock();
        let mut result = Ok(());
        for (first, last, types) in batches {
            let types: Vec<AckType> = types
                .iter()
                .filter_map(|t| AckType::from_wire(*t))
                .collect();
            if let Err(e) = state.stage_acknowledge(member, *first, *last, &types, now) {
                result = Err(e);
            }
        }
        (result, state.stage_gen())
    };
    let mut outcome = entry.persist.lock().await;
    let (durable, failed) = *outcome;
    if durable >= mine {
        return result;
    }
    if failed >= mine {
        return Err(E::CoordinatorNotAvailable);
    }
    let (snapshot, upto) = {
        let state = entry.state.lock();
        (state.snapshot(), state.stage_gen())
    };
    let value = ShareStateValue {
        state_epoch: entry.state_epoch,
        leader_epoch: entry.leader_epoch,
        start_offset: snapshot.start_offset,
        batches: snapshot.batches,
    };
    match share_state::write(broker, group, entry.topic_id, index, value).await {
        Ok(()) => {
            entry.state.lock().commit_pending_upto(upto);
            outcome.0 = upto;
        }
        Err(e) => {
            // Not durable: the records stay the members', and come back when their lock expires.
            entry.state.lock().rollback_pending_upto(upto);
            outcome.1 = upto;
            tracing::warn!(group, topic, partition = index, error = ?e, "share-partition state not written: the acknowledgement fails");
            if matches!(e, E::FencedStateEpoch | E::FencedLeaderEpoch) {
                shares.forget(&key);
            } else if !shares.sessions.lock().has_member(group, member) {
                // Its session closed while the write was in flight: what it holds goes back
                // now, not when the locks expire.
                shares.release_member(group, member, &[(topic.to_string(), index)]);
            }
            result = Err(e);
        }
    }
    drop(outcome);
    if result.is_err() {
        // Released, forgotten or rolled back: rare, and maybe for other share-partitions too.
        shares.changed.notify_waiters();
    }
    // Only this share-partition's waiting fetches: the global `changed` woke every waiting
    // fetch of every group on each acknowledgement.
    entry.acknowledged.notify_waiters();
    let archived = entry.state.lock().take_archived();
    super::share_dlq::publish(broker, &key, &source, archived, config).await;
    result
}

/// The share-partition of `key` for this leadership of `p`: kept here, else loaded from its
/// durable state, else started where `share.auto.offset.reset` says (and that start written, so
/// a new leader starts there too).
async fn load(
    broker: &Broker,
    source: &ShareSource,
    key: &ShareKey,
    topic_id: Uuid,
    config: &GroupShareConfig,
) -> Result<SharedPartition, E> {
    let shares = &broker.groups.shares;
    let leader_epoch = source.p.repl.leader_epoch();
    if let Some(e) = shares.get(key, leader_epoch) {
        return Ok(e);
    }
    let _loading = shares.loading.lock().await;
    if let Some(e) = shares.get(key, leader_epoch) {
        return Ok(e);
    }
    let (group, index) = (&key.0, key.2);
    let stored = share_state::read(broker, group, topic_id, index, leader_epoch).await?;
    let (state, state_epoch) = match stored {
        Some(v) => {
            let snapshot = ShareSnapshot {
                start_offset: v.start_offset,
                batches: v.batches,
            };
            (
                SharePartition::restore(&snapshot, config.partition.clone()),
                v.state_epoch,
            )
        }
        None => {
            let offsets = source.offsets().await?;
            let start = match config.auto_offset_reset {
                AutoOffsetReset::Earliest => offsets.log_start,
                AutoOffsetReset::Latest => offsets.high_watermark,
                AutoOffsetReset::ByDurationMs(ms) => {
                    let ts = crate::clock::now_ms().saturating_sub(ms);
                    let hw = offsets.high_watermark;
                    source
                        .offset_for_timestamp(ts)
                        .await
                        .map_or(hw, |offset| offset.min(hw))
                }
            };
            let value = ShareStateValue {
                state_epoch: 0,
                leader_epoch,
                start_offset: start,
                batches: Vec::new(),
            };
            share_state::write(broker, group, topic_id, index, value).await?;
            (SharePartition::new(start, config.partition.clone()), 0)
        }
    };
    Ok(shares.insert(key, state, topic_id, leader_epoch, state_epoch))
}

fn now_ms() -> u64 {
    crate::clock::now_ms().max(0) as u64
}

/// The batches of a log read: each batch's bytes and span, `deliverable` unless it is a control
/// batch or (with `read_committed`) a batch of an aborted transaction.
fn batches_of(chunks: &[Bytes], aborted: &[(i64, i64)]) -> Vec<(Bytes, ReadSpan)> {
    let mut aborted: Vec<(i64, i64)> = aborted.to_vec();
    aborted.sort_by_key(|a| a.1);
    let mut next_aborted = 0usize;
    let mut open_aborted: BTreeSet<i64> = BTreeSet::new();
    let mut out = Vec::new();
    for chunk in chunks {
        let mut at = 0usize;
        while at < chunk.len() {
            let Ok(h) = BatchHeader::parse(&chunk[at..]) else {
                break;
            };
            let size = h.total_size();
            if size == 0 || at + size > chunk.len() {
                break;
            }
            while next_aborted < aborted.len() && aborted[next_aborted].1 <= h.base_offset {
                open_aborted.insert(aborted[next_aborted].0);
                next_aborted += 1;
            }
            let in_aborted = h.is_transactional() && open_aborted.contains(&h.producer_id);
            if h.is_control() {
                open_aborted.remove(&h.producer_id);
            }
            out.push((
                chunk.slice(at..at + size),
                ReadSpan {
                    first: h.base_offset,
                    last: h.last_offset(),
                    deliverable: !h.is_control() && !in_aborted,
                },
            ));
            at += size;
        }
    }
    out
}

/// What one partition's fetch produced.
struct Acquired {
    records: Bytes,
    ranges: Vec<AcquiredRange>,
    /// Nothing could be acquired (the window is full, or no record is there yet) while the
    /// fetching member itself holds acquired records (see `ShareSessions::held_wait`).
    blocked_by_own: bool,
}

impl Acquired {
    fn none() -> Self {
        Acquired {
            records: Bytes::new(),
            ranges: Vec::new(),
            blocked_by_own: false,
        }
    }
}

/// Reads `p` for `group`'s share-partition and acquires what it can for `member`: at most
/// `max_records` records, about `max_bytes` bytes (at least one batch). With `ask_held`, an
/// empty answer says whether `member` holds acquired records there ([`Acquired::blocked_by_own`];
/// a scan of the window, which a fetch needs only until it has its `held_wait`).
async fn acquire(
    broker: &Arc<Broker>,
    source: &ShareSource,
    key: &ShareKey,
    (member, ask_held): (&str, bool),
    (max_records, max_bytes): (usize, usize),
    config: &GroupShareConfig,
) -> Result<Acquired, E> {
    let read_committed = config.read_committed;
    let topic_id = broker
        .topic(&key.1)
        .map(|t| t.id)
        .ok_or(E::UnknownTopicOrPartition)?;
    let entry = load(broker, source, key, topic_id, config).await?;
    let archived = {
        let mut state = entry.state.lock();
        if *state.config() != config.partition {
            state.set_config(config.partition.clone());
        }
        state.take_archived()
    };
    // Archived by expired locks since the last look: to the dead-letter queue.
    super::share_dlq::publish(broker, key, source, archived, config).await;
    // One fetch at a time reads and acquires: with 16 consumers on one partition, the fetches
    // woken by an acknowledgement all read the same records and one acquired them (15.6k reads,
    // 0.85 GB, per 1M records delivered).
    let _turn = entry.acquiring.lock().await;
    let offsets = source.offsets().await?;
    let (from, span) = {
        let mut state = entry.state.lock();
        state.on_log_start(offsets.log_start);
        match state.fetch_span(max_records) {
            Some(s) => s,
            None => {
                return Ok(Acquired {
                    blocked_by_own: ask_held && state.holds(member),
                    ..Acquired::none()
                })
            }
        }
    };
    let limit = if read_committed {
        offsets.last_stable_offset
    } else {
        offsets.high_watermark
    };
    if from >= limit {
        return Ok(Acquired {
            blocked_by_own: ask_held && entry.state.lock().holds(member),
            ..Acquired::none()
        });
    }
    // A fetch acquires at most `max_records`, and only as many as the window has room or
    // Available records for (`span` offsets from `from`): read about that many records' bytes
    // (at the bytes per record of the last read), not the whole `MaxBytes` (50 MiB by
    // default) nor a fixed budget. A fixed 1 MiB read per fetch cost 12-33x the bytes
    // delivered and most of the broker's CPU with 16 consumers (zeroed buffers, page faults,
    // copies). The first batch comes whole anyway (KIP-74).
    let per_record = entry.bytes_per_record.load(Ordering::Relaxed) as usize;
    let cap = READ_BUDGET_BYTES.min(max_bytes.max(1));
    let span = (from, from + span as i64);
    let (data, aborted) =
        match read_span(source, span, limit, per_record, cap, read_committed).await {
            Ok(d) => d,
            Err(SourceError::OutOfRange) => {
                if let Ok(offsets) = source.offsets().await {
                    entry.state.lock().on_log_start(offsets.log_start);
                }
                return Ok(Acquired::none());
            }
            Err(SourceError::Failed(e)) => return Err(e),
        };
    if data.next_offset > data.first_offset && data.bytes > 0 {
        let per = data.bytes as u64 / (data.next_offset - data.first_offset) as u64;
        entry
            .bytes_per_record
            .store(per.clamp(1, u32::MAX as u64) as u32, Ordering::Relaxed);
    }
    let batches = batches_of(&data.chunks, &aborted);
    let spans: Vec<ReadSpan> = batches.iter().map(|(_, s)| *s).collect();
    let ranges = entry
        .state
        .lock()
        .acquire(member, &spans, max_records, now_ms());
    let (Some(lo), Some(hi)) = (
        ranges.first().map(|r| r.first),
        ranges.last().map(|r| r.last),
    ) else {
        return Ok(Acquired {
            ranges,
            ..Acquired::none()
        });
    };
    // Whole batches, only those holding acquired records (Kafka's `maybeSliceFetchRecords`).
    let mut buf = BytesMut::new();
    for (bytes, span) in &batches {
        if span.last >= lo && span.first <= hi {
            buf.extend_from_slice(bytes);
        }
    }
    Ok(Acquired {
        records: buf.freeze(),
        ranges,
        blocked_by_own: false,
    })
}

/// Reads `source` from `from` (up to `limit`, exclusive) until the batches returned cover
/// `until` (exclusive) or `cap` bytes are read: each read asks for the rest of the span at
/// `per_record` bytes per record (+25%; [`MIN_READ_BYTES`] when unknown) and returns whole
/// batches (at least one), so a span whose batches are larger than the estimate takes another
/// read rather than coming back short. With `read_committed`, also the aborted transactions
/// overlapping the batches read, as (producer id, first offset).
///
/// Errors: [`SourceError::OutOfRange`] below the log start; the read's.
async fn read_span(
    source: &ShareSource,
    (from, until): (i64, i64),
    limit: i64,
    per_record: usize,
    cap: usize,
    read_committed: bool,
) -> Result<(FetchData, Vec<(i64, i64)>), SourceError> {
    let until = until.min(limit);
    let mut data: Option<FetchData> = None;
    let mut aborted: Vec<(i64, i64)> = Vec::new();
    loop {
        let at = data.as_ref().map_or(from, |d| d.next_offset);
        let read_so_far = data.as_ref().map_or(0, |d| d.bytes);
        let rest = usize::try_from(until - at).unwrap_or(0).max(1);
        let budget = if per_record == 0 {
            MIN_READ_BYTES
        } else {
            rest.saturating_mul(per_record)
                .saturating_add(rest.saturating_mul(per_record) / 4)
                .max(MIN_READ_BYTES)
        }
        .min(cap.saturating_sub(read_so_far).max(1));
        let read = source.read(at, budget, limit, read_committed).await?;
        for a in read.aborted {
            if !aborted.contains(&a) {
                aborted.push(a);
            }
        }
        let more = read.data;
        let d = match data.take() {
            None => more,
            Some(mut d) => {
                if more.chunks.is_empty() {
                    return Ok((d, aborted));
                }
                d.bytes += more.bytes;
                d.next_offset = more.next_offset;
                d.chunks.extend(more.chunks);
                d
            }
        };
        if d.chunks.is_empty() || d.next_offset >= until || d.bytes >= cap {
            return Ok((d, aborted));
        }
        data = Some(d);
    }
}

/// Whether an error sends the client to the partition's new leader.
fn moved(code: i16) -> bool {
    code == E::NotLeaderOrFollower.code() || code == E::FencedLeaderEpoch.code()
}

/// The current leader and epoch of `topic_id`/`index` as the image knows them, and the leader's
/// endpoint on the request's listener (for `CurrentLeader` and `NodeEndpoints`, as KafkaApis
/// fills them for NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH); `(-1, -1)` when unknown.
fn leader_hint(
    hints: &mut Option<crate::membership::LeaderHints<'_>>,
    topic_id: Uuid,
    index: i32,
) -> (i32, i32) {
    let Some(h) = hints.as_mut() else {
        return (-1, -1);
    };
    let Some(name) = h.topic_name("", topic_id) else {
        return (-1, -1);
    };
    h.leader(&name, index).unwrap_or((-1, -1))
}

/// The checks both APIs start with, in KafkaApis' order: `share.version` (UNSUPPORTED_VERSION),
/// a group id (INVALID_REQUEST), READ on the group (GROUP_AUTHORIZATION_FAILED), a valid member id
/// (INVALID_REQUEST). Returns (group, member), or the top-level error with Kafka's message.
fn check_member(
    broker: &Broker,
    ctx: &RequestContext,
    group_id: Option<&kafka_protocol::messages::GroupId>,
    member_id: Option<&kafka_protocol::protocol::StrBytes>,
) -> Result<(String, String), (E, Option<&'static str>)> {
    if !broker.features.share_groups_enabled() {
        return Err((E::UnsupportedVersion, None));
    }
    let Some(group) = group_id.map(|g| g.0.to_string()) else {
        return Err((E::InvalidRequest, Some("Invalid group id in the request.")));
    };
    if !authorized(broker, ctx, acl::op::READ, acl::resource::GROUP, &group) {
        return Err((E::GroupAuthorizationFailed, None));
    }
    let member = member_id.map(|m| m.to_string()).unwrap_or_default();
    if !valid_member_id(&member) {
        return Err((E::InvalidRequest, Some("Invalid member id in the request.")));
    }
    Ok((group, member))
}

/// One partition's acknowledgement batches, as both APIs answer them: UNKNOWN_TOPIC_ID (100)
/// for an unknown topic id (`topic` `None`), TOPIC_AUTHORIZATION_FAILED (29) without READ, the
/// batches' validation ([`validate_batches`]), then [`acknowledge`].
#[allow(clippy::too_many_arguments)]
async fn acknowledge_partition(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    group: &str,
    member: &str,
    topic: Option<&str>,
    index: i32,
    batches: &[AckBatch],
    renew: bool,
    config: &GroupShareConfig,
) -> Result<(), E> {
    let topic = topic.ok_or(E::UnknownTopicId)?;
    if !authorized(broker, ctx, acl::op::READ, acl::resource::TOPIC, topic) {
        return Err(E::TopicAuthorizationFailed);
    }
    validate_batches(batches, ctx.api_version, renew)?;
    // KIP-1222: a group may turn RENEW off (`share.renew.acknowledge.enable`).
    if !config.renew_enabled && batches.iter().any(|(_, _, types)| types.contains(&4)) {
        return Err(E::InvalidRecordState);
    }
    // On its own task, so it runs to the end even when the request is dropped (its connection
    // went while the state write was in flight): a staged acknowledgement is then written or
    // rolled back, never left staged, where no member, session close or lock expiry reaches
    // its records.
    let task = {
        let (broker, group, member) = (broker.clone(), group.to_string(), member.to_string());
        let (topic, batches, config) = (topic.to_string(), batches.to_vec(), config.clone());
        tokio::spawn(async move {
            acknowledge(&broker, (&group, &member), &topic, index, &batches, &config).await
        })
    };
    task.await.unwrap_or_else(|e| {
        tracing::error!(group, topic, partition = index, error = %e, "acknowledgement task failed");
        Err(E::UnknownServerError)
    })
}

/// ShareFetch: acknowledges what the request carries, then acquires records of every partition
/// of the member's share session that this broker leads, waiting up to `MaxWaitMs` for some.
/// A diskless topic's partitions (issue 60) are served by their leader in the metadata image
/// too, which reads their records through the diskless read path ([`ShareSource`]).
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ShareFetchRequest,
) -> ShareFetchResponse {
    let top = |e: E, message: Option<&str>| {
        ShareFetchResponse::default()
            .with_error_code(e.code())
            .with_error_message(message.map(str_bytes))
    };
    let (group, member) =
        match check_member(broker, ctx, req.group_id.as_ref(), req.member_id.as_ref()) {
            Ok(ids) => ids,
            Err((e, message)) => return top(e, message),
        };
    let renew = ctx.api_version >= 2 && req.is_renew_ack;
    if renew
        && (req.max_bytes != 0
            || req.min_bytes != 0
            || req.max_records != 0
            || req.max_wait_ms != 0)
    {
        return top(
            E::InvalidRequest,
            Some("maxBytes, minBytes, maxRecords and maxWaitMs must be set to 0 if isRenewAck is true."),
        );
    }
    let has_acks = req.topics.iter().any(|t| {
        t.partitions
            .iter()
            .any(|p| !p.acknowledgement_batches.is_empty())
    });
    let added: Vec<SessionPartition> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_id, p.partition_index))
        })
        .collect();
    let forgotten: Vec<SessionPartition> = req
        .forgotten_topics_data
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p)))
        .collect();
    let context = broker.groups.shares.sessions.lock().fetch(
        ctx.peer,
        &group,
        &member,
        req.share_session_epoch,
        &added,
        &forgotten,
        has_acks,
    );
    let context = match context {
        Ok(c) => c,
        Err(e) => return top(e, None),
    };
    let config = broker.share_config_of(&group);
    let lock_ms = config.partition.lock_duration_ms as i32;

    // Results by (topic id, partition).
    let mut out: BTreeMap<(Uuid, i32), PartitionData> = BTreeMap::new();
    let name_of = |id: &Uuid| broker.topic_by_id(id).map(|t| t.name.to_string());
    // Acknowledgements first.
    for t in &req.topics {
        for p in &t.partitions {
            if p.acknowledgement_batches.is_empty() {
                continue;
            }
            let batches: Vec<AckBatch> = p
                .acknowledgement_batches
                .iter()
                .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))
                .collect();
            let name = name_of(&t.topic_id);
            let result = acknowledge_partition(
                broker,
                ctx,
                &group,
                &member,
                name.as_deref(),
                p.partition_index,
                &batches,
                req.is_renew_ack,
                &config,
            )
            .await;
            let pd = PartitionData::default()
                .with_partition_index(p.partition_index)
                .with_records(Some(Bytes::new()));
            let pd = match result {
                Ok(()) => pd,
                Err(e) => pd.with_acknowledge_error_code(e.code()),
            };
            out.insert((t.topic_id, p.partition_index), pd);
        }
    }
    let partitions = match context {
        FetchContext::Final => {
            broker
                .groups
                .shares
                .close_session(&group, &member, &name_of);
            Vec::new()
        }
        FetchContext::Fetch(_) if renew => Vec::new(),
        FetchContext::Fetch(ps) => ps,
    };
    let max_records = req.max_records.max(0) as usize;
    let max_bytes = if req.max_bytes <= 0 {
        broker.config.fetch_max_bytes
    } else {
        (req.max_bytes as usize).min(broker.config.fetch_max_bytes)
    };
    if !partitions.is_empty() && max_records > 0 {
        let wait = Duration::from_millis(req.max_wait_ms.clamp(0, MAX_WAIT_CAP_MS) as u64);
        let started = Instant::now();
        let mut deadline = started + wait;
        // Whether this fetch once acquired nothing while its member held acquired records of its
        // own (then its wait is at most `ShareSessions::held_wait`, asked once).
        let mut held = false;
        loop {
            // Arm the wake-ups before looking, so nothing arriving in between is missed: a
            // record appended after its partition was looked at but before the wait began would
            // otherwise wait for the next append, or for `MaxWaitMs` when none follows.
            let changed = broker.groups.shares.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let mut live: Vec<((Uuid, i32), String, ShareSource)> = Vec::new();
            for (id, index) in &partitions {
                let slot = (*id, *index);
                let found = name_of(id).ok_or(E::UnknownTopicId).and_then(|name| {
                    if !authorized(broker, ctx, acl::op::READ, acl::resource::TOPIC, &name) {
                        return Err(E::TopicAuthorizationFailed);
                    }
                    let t = broker.topic(&name).ok_or(E::UnknownTopicOrPartition)?;
                    let p = t.replica(*index)?;
                    p.repl.check_leader(-1)?;
                    Ok((name, ShareSource::of(broker, &t, p)?))
                });
                match found {
                    Ok((name, p)) => live.push((slot, name, p)),
                    Err(e) => {
                        out.entry(slot)
                            .or_insert_with(|| {
                                PartitionData::default()
                                    .with_partition_index(*index)
                                    .with_records(Some(Bytes::new()))
                            })
                            .error_code = e.code();
                    }
                }
            }
            // A diskless partition's records arrive unannounced: looked at again every
            // `DISKLESS_POLL`.
            let polled = live.iter().any(|(_, _, s)| s.is_diskless());
            let mut arrivals: Vec<_> = live
                .iter()
                .filter(|(_, _, s)| !s.is_diskless())
                .map(|(_, _, s)| Box::pin(s.p.data_arrived()))
                .collect();
            for a in &mut arrivals {
                a.as_mut().enable();
            }
            // The share-partitions' own wake-ups (acknowledgements), armed on the entries kept
            // now; one loaded or replaced by this pass is armed on the next (below).
            let keys: Vec<ShareKey> = live
                .iter()
                .map(|(slot, name, _)| (group.clone(), name.clone(), slot.1))
                .collect();
            let armed: Vec<Option<SharedPartition>> = keys
                .iter()
                .map(|k| broker.groups.shares.current(k))
                .collect();
            let mut acknowledged: Vec<_> = armed
                .iter()
                .flatten()
                .map(|e| Box::pin(e.acknowledged.notified()))
                .collect();
            for a in &mut acknowledged {
                a.as_mut().enable();
            }
            let mut got_any = false;
            let mut own_block = false;
            let mut left = max_records;
            for ((slot, _, source), key) in live.iter().zip(&keys) {
                if left == 0 {
                    break;
                }
                let index = slot.1;
                let entry = out.entry(*slot).or_insert_with(|| {
                    PartitionData::default()
                        .with_partition_index(index)
                        .with_records(Some(Bytes::new()))
                });
                let asked = (member.as_str(), !held);
                match acquire(broker, source, key, asked, (left, max_bytes), &config).await {
                    Ok(a) if !a.ranges.is_empty() => {
                        got_any = true;
                        let n: i64 = a.ranges.iter().map(|r| r.last - r.first + 1).sum();
                        left = left.saturating_sub(n as usize);
                        entry.records = Some(a.records);
                        entry.acquired_records = a
                            .ranges
                            .iter()
                            .map(|r| {
                                AcquiredRecords::default()
                                    .with_first_offset(r.first)
                                    .with_last_offset(r.last)
                                    .with_delivery_count(r.delivery_count as i16)
                            })
                            .collect();
                    }
                    Ok(a) => own_block |= a.blocked_by_own,
                    Err(e) => entry.error_code = e.code(),
                }
            }
            if own_block && !held {
                held = true;
                let wait = broker
                    .groups
                    .shares
                    .sessions
                    .lock()
                    .held_wait(&group, &member);
                deadline = deadline.min(started + wait);
            }
            if got_any || live.is_empty() || Instant::now() >= deadline {
                break;
            }
            let rearm =
                keys.iter()
                    .zip(&armed)
                    .any(|(k, a)| match (a, broker.groups.shares.current(k)) {
                        (Some(a), Some(now)) => !Arc::ptr_eq(a, &now),
                        (None, now) => now.is_some(),
                        (Some(_), None) => false,
                    });
            if rearm {
                continue;
            }
            let any_arrival = async {
                if arrivals.is_empty() {
                    std::future::pending::<()>().await;
                } else {
                    futures::future::select_all(arrivals).await;
                }
            };
            let poll = async {
                if polled {
                    tokio::time::sleep(DISKLESS_POLL).await;
                } else {
                    std::future::pending::<()>().await;
                }
            };
            let any_acknowledged = async {
                if acknowledged.is_empty() {
                    std::future::pending::<()>().await;
                } else {
                    futures::future::select_all(acknowledged).await;
                }
            };
            let woke = tokio::time::timeout_at(deadline.into(), async {
                tokio::select! {
                    _ = any_arrival => {}
                    _ = poll => {}
                    _ = any_acknowledged => {}
                    _ = &mut changed => {}
                }
            })
            .await;
            if woke.is_err() {
                break;
            }
        }
        // The session closed while this fetch acquired (its connection went, or the member
        // left): what it acquired goes back now, not when the locks expire.
        if !broker
            .groups
            .shares
            .sessions
            .lock()
            .has_member(&group, &member)
        {
            let named: Vec<(String, i32)> = partitions
                .iter()
                .filter_map(|(id, index)| name_of(id).map(|n| (n, *index)))
                .collect();
            broker.groups.shares.release_member(&group, &member, &named);
        }
    }
    let mut hints = broker
        .cluster()
        .map(|node| crate::membership::LeaderHints::new(node, &ctx.session.listener));
    let mut topics: BTreeMap<Uuid, Vec<PartitionData>> = BTreeMap::new();
    for ((id, index), mut pd) in out {
        if moved(pd.error_code) {
            let (leader, epoch) = leader_hint(&mut hints, id, index);
            pd.current_leader = LeaderIdAndEpoch::default()
                .with_leader_id(leader)
                .with_leader_epoch(epoch);
        } else {
            pd.current_leader = LeaderIdAndEpoch::default()
                .with_leader_id(-1)
                .with_leader_epoch(-1);
        }
        topics.entry(id).or_default().push(pd);
    }
    let endpoints = hints
        .map(|h| {
            h.endpoints()
                .iter()
                .map(|e| {
                    NodeEndpoint::default()
                        .with_node_id(BrokerId(e.leader))
                        .with_host(str_bytes(&e.host))
                        .with_port(i32::from(e.port))
                        .with_rack(e.rack.as_deref().map(str_bytes))
                })
                .collect()
        })
        .unwrap_or_default();
    ShareFetchResponse::default()
        .with_node_endpoints(endpoints)
        .with_acquisition_lock_timeout_ms(lock_ms)
        .with_responses(
            topics
                .into_iter()
                .map(|(id, ps)| {
                    ShareFetchableTopicResponse::default()
                        .with_topic_id(id)
                        .with_partitions(ps)
                })
                .collect(),
        )
}

/// ShareAcknowledge: applies acknowledgements in the member's share session; epoch -1 then
/// closes the session and releases what the member still holds.
pub async fn acknowledge_handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ShareAcknowledgeRequest,
) -> ShareAcknowledgeResponse {
    let top = |e: E, message: Option<&str>| {
        ShareAcknowledgeResponse::default()
            .with_error_code(e.code())
            .with_error_message(message.map(str_bytes))
    };
    let (group, member) =
        match check_member(broker, ctx, req.group_id.as_ref(), req.member_id.as_ref()) {
            Ok(ids) => ids,
            Err((e, message)) => return top(e, message),
        };
    let epoch = req.share_session_epoch;
    if let Err(e) = broker
        .groups
        .shares
        .sessions
        .lock()
        .acknowledge(&group, &member, epoch)
    {
        return top(e, None);
    }
    let config = broker.share_config_of(&group);
    let name_of = |id: &Uuid| broker.topic_by_id(id).map(|t| t.name.to_string());
    let mut hints = broker
        .cluster()
        .map(|node| crate::membership::LeaderHints::new(node, &ctx.session.listener));
    let mut responses = Vec::new();
    for t in &req.topics {
        let name = name_of(&t.topic_id);
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in &t.partitions {
            let batches: Vec<AckBatch> = p
                .acknowledgement_batches
                .iter()
                .map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()))
                .collect();
            let result = acknowledge_partition(
                broker,
                ctx,
                &group,
                &member,
                name.as_deref(),
                p.partition_index,
                &batches,
                req.is_renew_ack,
                &config,
            )
            .await;
            let pd = ack_resp::PartitionData::default().with_partition_index(p.partition_index);
            let pd = match result {
                Ok(()) => pd,
                Err(e) => pd.with_error_code(e.code()),
            };
            let (leader, epoch) = if moved(pd.error_code) {
                leader_hint(&mut hints, t.topic_id, p.partition_index)
            } else {
                (-1, -1)
            };
            partitions.push(
                pd.with_current_leader(
                    ack_resp::LeaderIdAndEpoch::default()
                        .with_leader_id(leader)
                        .with_leader_epoch(epoch),
                ),
            );
        }
        responses.push(
            ack_resp::ShareAcknowledgeTopicResponse::default()
                .with_topic_id(t.topic_id)
                .with_partitions(partitions),
        );
    }
    if epoch == FINAL_EPOCH {
        broker
            .groups
            .shares
            .close_session(&group, &member, &name_of);
    }
    let endpoints = hints
        .map(|h| {
            h.endpoints()
                .iter()
                .map(|e| {
                    ack_resp::NodeEndpoint::default()
                        .with_node_id(BrokerId(e.leader))
                        .with_host(str_bytes(&e.host))
                        .with_port(i32::from(e.port))
                        .with_rack(e.rack.as_deref().map(str_bytes))
                })
                .collect()
        })
        .unwrap_or_default();
    ShareAcknowledgeResponse::default()
        .with_node_endpoints(endpoints)
        .with_acquisition_lock_timeout_ms(config.partition.lock_duration_ms as i32)
        .with_responses(responses)
}
