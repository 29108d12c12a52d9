//! The consumer side of `e2e`: a Fetch loop (long poll, `max_wait_ms`) from the log end offsets
//! taken before the producers start. Each value starts with its record's scheduled send time
//! (ns since the Unix epoch); end-to-end latency = time the consumer decoded it − that time.

use crate::batch::decode_batches;
use crate::client::{topic_name, Conn};
use crate::produce::{unix_ns_now, Ctx};
use crate::stats::{Errors, Latency};
use kafka_protocol::messages::{
    fetch_request::{FetchPartition, FetchTopic},
    BrokerId, FetchRequest,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct ConsumerOut {
    pub lat: Latency,
    pub errors: Errors,
    pub consumed_total: u64,
    pub measured: u64,
    pub last_measured: Option<Instant>,
}

/// Signals from the producer side: set `done` when all producers finished and `expected` to
/// the number of records they got acknowledged (all, including warm-up).
#[derive(Default)]
pub struct Stop {
    pub done: AtomicBool,
    pub expected: AtomicU64,
}

pub async fn consume(
    ctx: Arc<Ctx>,
    mut conn: Conn,
    mut offsets: HashMap<i32, i64>,
    max_wait_ms: i32,
    stop: Arc<Stop>,
) -> ConsumerOut {
    let mut out = ConsumerOut::default();
    let from_ns = ctx.unix_ns_of(ctx.measure_from);
    let end_ns = ctx.unix_ns_of(ctx.end);
    let mut done_at: Option<Instant> = None;
    loop {
        if stop.done.load(Ordering::Acquire) {
            let t = *done_at.get_or_insert_with(Instant::now);
            if out.consumed_total >= stop.expected.load(Ordering::Acquire)
                || t.elapsed() > Duration::from_secs(10)
            {
                break;
            }
        }
        let topic = FetchTopic::default()
            .with_topic(topic_name(&topic_str(&ctx)))
            .with_partitions(
                ctx.partitions
                    .iter()
                    .map(|&p| {
                        FetchPartition::default()
                            .with_partition(p)
                            .with_current_leader_epoch(-1)
                            .with_fetch_offset(*offsets.get(&p).unwrap_or(&0))
                            .with_last_fetched_epoch(-1)
                            .with_log_start_offset(-1)
                            .with_partition_max_bytes(1 << 20)
                    })
                    .collect(),
            );
        let req = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(max_wait_ms)
            .with_min_bytes(1)
            .with_max_bytes(50 << 20)
            .with_isolation_level(0)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![topic]);
        let resp = match tokio::time::timeout(
            Duration::from_millis(max_wait_ms as u64) + ctx.cfg.request_timeout,
            conn.call(&req),
        )
        .await
        {
            Err(_) => {
                *out.errors.fetch_errors.entry("timeout".into()).or_default() += 1;
                break;
            }
            Ok(Err(e)) => {
                *out.errors
                    .fetch_errors
                    .entry("connection".into())
                    .or_default() += 1;
                out.errors.note(format!("fetch: {e:#}"));
                break;
            }
            Ok(Ok(r)) => r,
        };
        if resp.error_code != 0 {
            *out.errors
                .fetch_errors
                .entry(format!("code {}", resp.error_code))
                .or_default() += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        for t in resp.responses {
            for pd in t.partitions {
                if pd.error_code != 0 {
                    let name = kafka_protocol::ResponseError::try_from_code(pd.error_code)
                        .map(|e| format!("{e:?}({})", pd.error_code))
                        .unwrap_or_else(|| format!("code {}", pd.error_code));
                    *out.errors.fetch_errors.entry(name).or_default() += 1;
                    continue;
                }
                let Some(records) = pd.records else { continue };
                if records.is_empty() {
                    continue;
                }
                let now_ns = unix_ns_now();
                let now = Instant::now();
                let batches = match decode_batches(&records) {
                    Ok(b) => b,
                    Err(e) => {
                        *out.errors
                            .fetch_errors
                            .entry("corrupt batch".into())
                            .or_default() += 1;
                        out.errors
                            .note(format!("fetch partition {}: {e:#}", pd.partition_index));
                        continue;
                    }
                };
                let off = offsets.entry(pd.partition_index).or_insert(0);
                for b in &batches {
                    for r in &b.records {
                        if r.offset < *off {
                            continue;
                        }
                        out.consumed_total += 1;
                        let Some(v) = &r.value else { continue };
                        if v.len() < 8 {
                            continue;
                        }
                        let ts = u64::from_be_bytes(v[..8].try_into().unwrap());
                        if ts >= from_ns && ts < end_ns {
                            out.lat.record_us(now_ns.saturating_sub(ts) / 1000);
                            out.measured += 1;
                            out.last_measured = Some(now);
                        }
                    }
                    *off = (*off).max(b.next_offset());
                }
                ctx.live
                    .consumed
                    .store(out.consumed_total, Ordering::Relaxed);
            }
        }
    }
    out
}

fn topic_str(ctx: &Ctx) -> String {
    ctx.topic.0.as_str().to_string()
}
