//! `frieda-bench read`: consumers catching up on a backlog, as load next to a latency
//! measurement (issue 34's mixed-load cell). Each reader is one connection to the leader of
//! partition 0 that fetches from its own starting point (spread evenly over the backlog) up to
//! the high watermark, then starts again at the log start, until the time is up: a steady stream
//! of large reads of old data (a reader that caught up never follows the tail, even while
//! another producer appends to the partition). Batches are not decoded, only their headers walked (base offset at
//! byte 0, batch length at 8, last offset delta at 23; the record batch format, protocol guide
//! "Record Batch"), so the reader costs little CPU itself.

use crate::client::{topic_name, Conn};
use anyhow::{anyhow, Result};
use kafka_protocol::messages::{
    fetch_request::{FetchPartition, FetchTopic},
    BrokerId, FetchRequest,
};
use std::time::{Duration, Instant};

/// What the readers read.
#[derive(Debug, Default, serde::Serialize)]
pub struct ReadOut {
    /// Reader connections.
    pub readers: usize,
    /// Seconds read.
    pub secs: f64,
    /// Record batch bytes received, all readers.
    pub bytes: u64,
    /// Fetch requests answered.
    pub fetches: u64,
    /// MB/s (10^6 bytes) over all readers.
    pub mb_s: f64,
    /// Passes from the log start to the high watermark, all readers.
    pub wraps: u64,
    /// Failed fetches (an error code or a lost connection).
    pub errors: u64,
    /// The backlog: log end offset of partition 0 at the start.
    pub log_end_offset: i64,
}

/// The offset after the last complete batch in `records`, if any (headers only).
fn next_offset(records: &[u8]) -> Option<i64> {
    let mut pos = 0usize;
    let mut next = None;
    while records.len() >= pos + 27 {
        let base = i64::from_be_bytes(records[pos..pos + 8].try_into().ok()?);
        let len = i32::from_be_bytes(records[pos + 8..pos + 12].try_into().ok()?);
        let end = pos + 12 + usize::try_from(len).ok()?;
        if len < 15 || end > records.len() {
            break; // a partial batch at the end of the answer (max bytes reached)
        }
        let delta = i32::from_be_bytes(records[pos + 23..pos + 27].try_into().ok()?);
        next = Some(base + i64::from(delta) + 1);
        pos = end;
    }
    next
}

/// Runs `readers` backlog readers of partition 0 of `topic` for `secs` seconds, fetching up to
/// `max_bytes` per request (Kafka's consumer default `max.partition.fetch.bytes` is 1 MiB).
/// With `once` each reader stops at the next reader's start offset (the last at the log end):
/// one pass over the partition, ended early only by `secs`.
pub async fn run(
    bootstrap: &str,
    topic: &str,
    readers: usize,
    secs: f64,
    max_bytes: i32,
    once: bool,
) -> Result<ReadOut> {
    let timeout = Duration::from_secs(10);
    let mut boot = Conn::connect_any(bootstrap, timeout).await?;
    let meta = boot.metadata(topic).await?;
    let leader = meta
        .partitions
        .first()
        .map(|p| p.1)
        .ok_or_else(|| anyhow!("topic {topic} has no partitions"))?;
    let addr = meta
        .brokers
        .get(&leader)
        .ok_or_else(|| anyhow!("leader {leader} of {topic} not in metadata"))?
        .clone();
    let mut lead = Conn::connect(&addr, timeout).await?;
    let end = *lead
        .latest_offsets(topic, &[0])
        .await?
        .get(&0)
        .ok_or_else(|| anyhow!("no log end offset for {topic}-0"))?;
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for i in 0..readers {
        let conn = Conn::connect(&addr, timeout).await?;
        let start = end * i as i64 / readers.max(1) as i64;
        let stop = once.then(|| end * (i as i64 + 1) / readers.max(1) as i64);
        let topic = topic.to_string();
        tasks.push(tokio::spawn(reader(
            conn, topic, start, stop, deadline, max_bytes,
        )));
    }
    let t0 = Instant::now();
    let mut out = ReadOut {
        readers,
        log_end_offset: end,
        ..ReadOut::default()
    };
    for t in tasks {
        let (bytes, fetches, wraps, errors) = t.await?;
        out.bytes += bytes;
        out.fetches += fetches;
        out.wraps += wraps;
        out.errors += errors;
    }
    out.secs = t0.elapsed().as_secs_f64();
    out.mb_s = out.bytes as f64 / 1e6 / out.secs.max(1e-9);
    Ok(out)
}

/// One reader, from `offset` until `deadline` (or until `stop`, an offset, when given):
/// (bytes, fetches, wraps, errors).
async fn reader(
    mut conn: Conn,
    topic: String,
    mut offset: i64,
    stop: Option<i64>,
    deadline: Instant,
    max_bytes: i32,
) -> (u64, u64, u64, u64) {
    let (mut bytes, mut fetches, mut wraps, mut errors) = (0u64, 0u64, 0u64, 0u64);
    while Instant::now() < deadline && stop.is_none_or(|s| offset < s && wraps == 0) {
        let req = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(100)
            .with_min_bytes(1)
            .with_max_bytes(max_bytes)
            .with_isolation_level(0)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic_name(&topic))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_current_leader_epoch(-1)
                    .with_fetch_offset(offset)
                    .with_last_fetched_epoch(-1)
                    .with_log_start_offset(-1)
                    .with_partition_max_bytes(max_bytes)])]);
        let resp = match tokio::time::timeout(Duration::from_secs(30), conn.call(&req)).await {
            Ok(Ok(r)) => r,
            _ => {
                errors += 1;
                break;
            }
        };
        fetches += 1;
        let Some(pd) = resp.responses.first().and_then(|t| t.partitions.first()) else {
            errors += 1;
            continue;
        };
        if resp.error_code != 0 || pd.error_code != 0 {
            errors += 1;
            offset = 0;
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let records = pd.records.as_deref().unwrap_or(&[]);
        bytes += records.len() as u64;
        match next_offset(records) {
            // Caught up with the high watermark: from the start again, so that a reader never
            // turns into a tail reader of the partition while another producer appends to it
            Some(n) if n > offset && n < pd.high_watermark => offset = n,
            _ => {
                // at the high watermark (or an answer without a whole batch): from the start again
                offset = pd.log_start_offset.max(0);
                wraps += 1;
            }
        }
    }
    (bytes, fetches, wraps, errors)
}

#[cfg(test)]
mod tests {
    use super::next_offset;

    fn batch(base: i64, delta: i32, body: usize) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&base.to_be_bytes());
        b.extend_from_slice(&((49 - 12 + body) as i32).to_be_bytes());
        b.extend_from_slice(&[0u8; 11]); // leader epoch, magic, crc, attributes
        b.extend_from_slice(&delta.to_be_bytes());
        b.resize(49 + body, 0);
        b
    }

    #[test]
    fn walks_batch_headers_and_stops_at_a_partial_batch() {
        let mut r = batch(10, 4, 100);
        r.extend(batch(15, 9, 50));
        assert_eq!(next_offset(&r), Some(25));
        let cut = r.len() - 20;
        assert_eq!(next_offset(&r[..cut]), Some(15));
        assert_eq!(next_offset(&[]), None);
    }
}
