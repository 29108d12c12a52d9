//! The producer side: N connections, each with a pipelined writer (up to `max_in_flight`
//! Produce requests outstanding) and a reader matching responses in order.
//!
//! Open loop: producer `p` of `P` schedules its record `j` at `start + (j*P + p) / rate`, so
//! the aggregate offered load is evenly spaced. The latency of a record is its ack time minus
//! its *scheduled* time: when the broker (or the connection's in-flight window) stalls, records
//! keep falling due and the wait is charged to them (no coordinated omission). With
//! `--rate 0` the writer sends as fast as the in-flight window allows, each request carrying
//! one full batch per partition, and latency is ack time minus the time the batch was built.

use crate::batch::{key_partition, record_encoded_len, BatchBuilder, HEADER_LEN};
use crate::client::{decode_header, encode_request, read_frame};
use crate::pacer::Pacer;
use crate::stats::{Errors, Latency};
use anyhow::{anyhow, Result};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    produce_request::{PartitionProduceData, TopicProduceData},
    ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::Decodable;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Semaphore};

#[derive(Clone, Debug)]
pub struct ProduceCfg {
    pub acks: i16,
    pub record_size: usize,
    pub keys: u64,
    pub producers: usize,
    /// Aggregate records/s; 0 = unthrottled.
    pub rate: f64,
    pub max_in_flight: usize,
    pub linger: Duration,
    pub batch_bytes: usize,
    pub batch_records: Option<usize>,
    pub warmup: Duration,
    pub duration: Duration,
    pub tick: Duration,
    pub request_timeout: Duration,
    pub drain: Duration,
    /// e2e: first 8 bytes of each value = scheduled send time, ns since the Unix epoch (BE).
    pub embed_timestamp: bool,
    /// Keep latency per scheduled second and acknowledgements per 10 ms (see `Timeline`).
    pub timeline: bool,
    /// Interior phase edges, seconds after the start of the measured window: the measured
    /// records are also split into phases by scheduled time (e.g. before/during/after a pause).
    pub phase_edges: Vec<f64>,
}

/// Latency over time, opt-in (`--timeline`): what a paused follower does to acks=all.
/// Records are placed by their scheduled time (unthrottled: the time their batch was built).
pub struct Timeline {
    /// Latency histogram (2 significant digits) per scheduled second since `start`.
    per_sec: Vec<std::sync::Mutex<hdrhistogram::Histogram<u64>>>,
    /// Acknowledged records per 10 ms of acknowledgement time since `start`.
    acks_10ms: Vec<AtomicU64>,
    /// Phase edges in seconds after `measure_from`, including 0 and the duration.
    pub edges: Vec<f64>,
    /// Measured records' latency per phase.
    phases: Vec<std::sync::Mutex<Latency>>,
}

pub const ACK_BUCKET_MS: u64 = 10;

impl Timeline {
    fn new(cfg: &ProduceCfg) -> Timeline {
        let secs = (cfg.warmup + cfg.duration).as_secs_f64().ceil() as usize + 1;
        let buckets = ((cfg.warmup + cfg.duration + cfg.drain).as_millis() as u64 / ACK_BUCKET_MS
            + 2) as usize;
        let mut edges = vec![0.0];
        let d = cfg.duration.as_secs_f64();
        for &e in &cfg.phase_edges {
            if e > *edges.last().unwrap() && e < d {
                edges.push(e);
            }
        }
        edges.push(d);
        Timeline {
            per_sec: (0..secs)
                .map(|_| {
                    std::sync::Mutex::new(
                        hdrhistogram::Histogram::new_with_bounds(
                            1,
                            crate::stats::MAX_TRACKABLE_US,
                            2,
                        )
                        .expect("histogram bounds"),
                    )
                })
                .collect(),
            acks_10ms: (0..buckets).map(|_| AtomicU64::new(0)).collect(),
            phases: (0..edges.len() - 1)
                .map(|_| std::sync::Mutex::new(Latency::new()))
                .collect(),
            edges,
        }
    }

    /// Index of the phase holding a record scheduled `s` seconds after `measure_from`.
    fn phase_of(&self, s: f64) -> usize {
        let n = self.phases.len();
        (1..n)
            .take_while(|&i| s >= self.edges[i])
            .count()
            .min(n - 1)
    }

    fn record_ack(&self, ctx_start: Instant, ack: Instant, n: u64) {
        let i =
            (ack.saturating_duration_since(ctx_start).as_millis() as u64 / ACK_BUCKET_MS) as usize;
        if let Some(b) = self.acks_10ms.get(i.min(self.acks_10ms.len() - 1)) {
            b.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Records `n` records scheduled at `sched_s` seconds after `start` with latency `us`.
    fn record_sec(&self, sched_s: f64, us: u64, n: u64) {
        let i = (sched_s.max(0.0) as usize).min(self.per_sec.len() - 1);
        let v = us.clamp(1, crate::stats::MAX_TRACKABLE_US);
        let _ = self.per_sec[i].lock().unwrap().record_n(v, n);
    }

    fn record_phase(&self, measured_s: f64, us: u64, n: u64) {
        let i = self.phase_of(measured_s);
        let v = us.clamp(1, crate::stats::MAX_TRACKABLE_US);
        let _ = self.phases[i].lock().unwrap().hist.record_n(v, n);
    }

    /// The summary: per measured second, the phases, and every gap of at least `min_gap_ms`
    /// without a single acknowledgement between the first and the last acknowledgement after
    /// `measure_from`.
    pub fn summarize(&self, ctx: &Ctx, min_gap_ms: u64) -> crate::stats::TimelineOut {
        use crate::stats::{GapOut, PhaseOut, SecondOut};
        let warm = ctx.cfg.warmup.as_secs_f64();
        let mut per_second = Vec::new();
        for (i, h) in self.per_sec.iter().enumerate() {
            let h = h.lock().unwrap();
            let t = i as f64 - warm;
            if h.is_empty() || t + 1.0 <= 0.0 {
                continue;
            }
            per_second.push(SecondOut {
                t_s: t,
                records: h.len(),
                p50_us: h.value_at_quantile(0.5),
                p99_us: h.value_at_quantile(0.99),
                p999_us: h.value_at_quantile(0.999),
                max_us: h.max(),
            });
        }
        let from = ((ctx.measure_from - ctx.start).as_millis() as u64 / ACK_BUCKET_MS) as usize;
        let counts: Vec<u64> = self
            .acks_10ms
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .collect();
        let first = (from..counts.len()).find(|&i| counts[i] > 0);
        let last = (from..counts.len()).rev().find(|&i| counts[i] > 0);
        let mut gaps = Vec::new();
        let mut longest = 0u64;
        if let (Some(a), Some(b)) = (first, last) {
            let mut run_start = None;
            for (i, &c) in counts.iter().enumerate().take(b + 1).skip(a) {
                if c == 0 {
                    run_start.get_or_insert(i);
                } else if let Some(st) = run_start.take() {
                    let ms = (i - st) as u64 * ACK_BUCKET_MS;
                    longest = longest.max(ms);
                    if ms >= min_gap_ms {
                        gaps.push(GapOut {
                            from_s: ((st - from) as u64 * ACK_BUCKET_MS) as f64 / 1000.0,
                            ms,
                        });
                    }
                }
            }
        }
        let phases = self
            .phases
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let l = l.lock().unwrap();
                let mut s = crate::stats::Summary::default();
                s.fill_latency(&l);
                PhaseOut {
                    from_s: self.edges[i],
                    to_s: self.edges[i + 1],
                    records: s.records,
                    p50_us: s.p50_us,
                    p99_us: s.p99_us,
                    p999_us: s.p999_us,
                    p9999_us: s.p9999_us,
                    max_us: s.max_us,
                }
            })
            .collect();
        crate::stats::TimelineOut {
            ack_bucket_ms: ACK_BUCKET_MS,
            longest_ack_gap_ms: longest,
            ack_gaps: gaps,
            phases,
            per_second,
        }
    }
}

/// Live counters for the progress line.
#[derive(Default)]
pub struct Live {
    pub acked: AtomicU64,
    pub errors: AtomicU64,
    pub max_us: AtomicU64,
    pub requests: AtomicU64,
    pub consumed: AtomicU64,
}

pub struct Ctx {
    pub cfg: ProduceCfg,
    pub topic: TopicName,
    pub partitions: Vec<i32>,
    pub leader: String,
    pub version: i16,
    pub start: Instant,
    pub start_unix_ns: u64,
    pub measure_from: Instant,
    pub end: Instant,
    /// No new sends after this (end + drain).
    pub hard_end: Instant,
    /// Records per partition batch.
    pub cap: usize,
    pub live: Arc<Live>,
    pub timeline: Option<Timeline>,
}

impl Ctx {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: ProduceCfg,
        topic: &str,
        partitions: Vec<i32>,
        leader: String,
        version: i16,
        live: Arc<Live>,
    ) -> Ctx {
        let start = Instant::now() + Duration::from_millis(50);
        let start_unix_ns = unix_ns_now() + 50_000_000;
        let measure_from = start + cfg.warmup;
        let end = measure_from + cfg.duration;
        let key_len = if cfg.keys > 0 {
            Some(key_bytes(0).len())
        } else {
            None
        };
        let per_record = record_encoded_len(key_len, cfg.record_size, 1000);
        let cap = cfg
            .batch_records
            .unwrap_or_else(|| (cfg.batch_bytes.saturating_sub(HEADER_LEN) / per_record).max(1))
            .max(1);
        let timeline = if cfg.timeline {
            Some(Timeline::new(&cfg))
        } else {
            None
        };
        Ctx {
            hard_end: end + cfg.drain,
            timeline,
            cfg,
            topic: crate::client::topic_name(topic),
            partitions,
            leader,
            version,
            start,
            start_unix_ns,
            measure_from,
            end,
            cap,
            live,
        }
    }

    fn unthrottled(&self) -> bool {
        self.cfg.rate <= 0.0
    }

    /// Scheduled time of producer p's record j, as ns after `start`.
    #[inline]
    fn sched_ns(&self, p: usize, j: u64) -> f64 {
        (j as f64 * self.cfg.producers as f64 + p as f64) * 1e9 / self.cfg.rate
    }

    fn sched(&self, p: usize, j: u64) -> Instant {
        self.start + Duration::from_nanos(self.sched_ns(p, j) as u64)
    }

    /// Records of producer p scheduled before `t` (rate mode).
    fn due(&self, p: usize, t: Instant) -> u64 {
        if t < self.start {
            return 0;
        }
        let x = (t - self.start).as_secs_f64() * self.cfg.rate - p as f64;
        if x < 0.0 {
            0
        } else {
            (x / self.cfg.producers as f64).floor() as u64 + 1
        }
    }

    /// Number of records in producer p's schedule (rate mode).
    fn total(&self, p: usize) -> u64 {
        let x = (self.cfg.warmup + self.cfg.duration).as_secs_f64() * self.cfg.rate - p as f64;
        if x <= 0.0 {
            0
        } else {
            (x / self.cfg.producers as f64).ceil() as u64
        }
    }

    /// First measured record of producer p (rate mode).
    fn first_measured(&self, p: usize) -> u64 {
        let x = self.cfg.warmup.as_secs_f64() * self.cfg.rate - p as f64;
        if x <= 0.0 {
            0
        } else {
            (x / self.cfg.producers as f64).ceil() as u64
        }
    }

    /// Partition index (into `partitions`) of producer p's record j: Kafka's murmur2 of the key
    /// when keyed, otherwise "sticky": `cap` consecutive records per partition, then the next,
    /// as Kafka's uniform sticky partitioner fills one batch before switching.
    #[inline]
    fn partition_of(&self, p: usize, j: u64) -> usize {
        let n = self.partitions.len();
        if self.cfg.keys > 0 {
            key_partition(&key_bytes(self.key_index(p, j)), n)
        } else {
            ((j / self.cap as u64) as usize + p) % n
        }
    }

    #[inline]
    fn key_index(&self, p: usize, j: u64) -> u64 {
        (j * self.cfg.producers as u64 + p as u64) % self.cfg.keys.max(1)
    }

    pub fn unix_ns_of(&self, t: Instant) -> u64 {
        if t >= self.start {
            self.start_unix_ns + (t - self.start).as_nanos() as u64
        } else {
            self.start_unix_ns - (self.start - t).as_nanos() as u64
        }
    }
}

pub fn unix_ns_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn key_bytes(k: u64) -> [u8; 10] {
    // fixed width so every key has the same size: "k000000042"
    let mut out = *b"k000000000";
    let mut v = k;
    for i in (1..10).rev() {
        out[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    out
}

/// One Produce request in flight.
struct Sent {
    corr: i32,
    first: u64,
    n: u64,
    /// unthrottled mode: when the batch was built (the records' "scheduled" time)
    created: Instant,
    sent_at: Instant,
}

#[derive(Default)]
pub struct ProducerOut {
    pub lat: Latency,
    /// Round trips of measured requests (written to answered), µs.
    pub rtt: Latency,
    pub errors: Errors,
    pub requests: u64,
    pub records_sent: u64,
    pub measured_acked: u64,
    pub last_measured_ack: Option<Instant>,
}

impl ProducerOut {
    pub fn merge(&mut self, o: ProducerOut) {
        self.lat.merge(&o.lat);
        self.rtt.merge(&o.rtt);
        self.errors.merge(&o.errors);
        self.requests += o.requests;
        self.records_sent += o.records_sent;
        self.measured_acked += o.measured_acked;
        self.last_measured_ack = match (self.last_measured_ack, o.last_measured_ack) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Producer p's progress through its schedule.
struct Gen {
    p: usize,
    next: u64,
    total: u64,
}

/// Runs all producers to completion.
pub async fn run_producers(ctx: Arc<Ctx>) -> ProducerOut {
    let mut handles = Vec::new();
    for p in 0..ctx.cfg.producers {
        let ctx = ctx.clone();
        handles.push(tokio::spawn(async move { producer(ctx, p).await }));
    }
    let mut out = ProducerOut::default();
    for h in handles {
        match h.await {
            Ok(o) => out.merge(o),
            Err(e) => out.errors.note(format!("producer task failed: {e}")),
        }
    }
    out
}

async fn producer(ctx: Arc<Ctx>, p: usize) -> ProducerOut {
    let mut out = ProducerOut::default();
    let total = if ctx.unthrottled() {
        u64::MAX
    } else {
        ctx.total(p)
    };
    let mut gen = Gen { p, next: 0, total };
    let pacer = match Pacer::new() {
        Ok(x) => x,
        Err(e) => {
            out.errors.note(format!("timerfd: {e}"));
            return out;
        }
    };
    // Connect before the schedule starts.
    loop {
        let now = Instant::now();
        let finished = if ctx.unthrottled() {
            now >= ctx.end
        } else {
            gen.next >= gen.total
        };
        if finished || now >= ctx.hard_end {
            break;
        }
        match connect(&ctx.leader).await {
            Ok(stream) => {
                if let Err(e) = session(&ctx, &mut gen, &mut out, &pacer, stream).await {
                    out.errors.note(format!("producer {p}: {e:#}"));
                    // a broker that accepts and drops connections must not make us spin
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            Err(e) => {
                out.errors.connect_failures += 1;
                out.errors.note(format!("producer {p} connect: {e:#}"));
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
    if !ctx.unthrottled() && gen.next < gen.total {
        let unsent = gen.total - gen.next;
        out.errors.unsent_records += unsent;
        ctx.live.errors.fetch_add(unsent, Ordering::Relaxed);
    }
    out.records_sent = gen.next;
    out
}

async fn connect(addr: &str) -> Result<TcpStream> {
    // The handshake (ApiVersions) is not needed for produce: versions were negotiated by the
    // control connection. A plain connect keeps reconnects cheap.
    let s = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr))
        .await
        .map_err(|_| anyhow!("connect timeout"))??;
    s.set_nodelay(true)?;
    Ok(s)
}

/// One connection's life: a writer (this task) and a reader (spawned).
async fn session(
    ctx: &Arc<Ctx>,
    gen: &mut Gen,
    out: &mut ProducerOut,
    pacer: &Pacer,
    stream: TcpStream,
) -> Result<()> {
    let (rd, wr) = stream.into_split();
    let sem = Arc::new(Semaphore::new(ctx.cfg.max_in_flight));
    let (tx, rx) = mpsc::unbounded_channel::<Sent>();
    let reader = if ctx.cfg.acks != 0 {
        let (ctx2, sem2) = (ctx.clone(), sem.clone());
        let p = gen.p;
        Some(tokio::spawn(
            async move { reader(ctx2, p, rd, rx, sem2).await },
        ))
    } else {
        drop(rx);
        None
    };
    let res = writer(ctx, gen, out, pacer, wr, &tx, &sem).await;
    drop(tx);
    if let Some(r) = reader {
        match r.await {
            Ok(o) => out.merge(o),
            Err(e) => out.errors.note(format!("reader task: {e}")),
        }
    }
    res
}

async fn writer(
    ctx: &Arc<Ctx>,
    gen: &mut Gen,
    out: &mut ProducerOut,
    pacer: &Pacer,
    mut wr: OwnedWriteHalf,
    tx: &mpsc::UnboundedSender<Sent>,
    sem: &Arc<Semaphore>,
) -> Result<()> {
    let p = gen.p;
    let unthrottled = ctx.unthrottled();
    let cap_total = (ctx.cap * ctx.partitions.len()) as u64;
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut corr: i32 = 0;
    let mut last_send: Option<Instant> = None;
    let fill_byte = b'x';
    loop {
        let now = Instant::now();
        if now >= ctx.hard_end {
            return Ok(());
        }
        let due = if unthrottled {
            if now >= ctx.end {
                return Ok(());
            }
            gen.next + cap_total
        } else {
            if gen.next >= gen.total {
                return Ok(());
            }
            ctx.due(p, now).min(gen.total)
        };
        let pending = due.saturating_sub(gen.next);
        if pending == 0 {
            let mut wake = ctx.sched(p, gen.next);
            if let Some(l) = last_send {
                wake = wake.max(l + ctx.cfg.tick);
            }
            pacer.sleep_until(wake).await?;
            continue;
        }
        if !unthrottled {
            if !ctx.cfg.linger.is_zero() && pending < cap_total {
                let ready = ctx.sched(p, gen.next) + ctx.cfg.linger;
                if now < ready {
                    pacer.sleep_until(ready).await?;
                    continue;
                }
            }
            if let Some(l) = last_send {
                if now < l + ctx.cfg.tick {
                    pacer.sleep_until(l + ctx.cfg.tick).await?;
                    continue;
                }
            }
        }
        // A free slot in the in-flight window; records keep falling due while we wait.
        match sem.acquire().await {
            Ok(permit) => permit.forget(),
            Err(_) => return Err(anyhow!("connection closed by reader")),
        }
        let now = Instant::now();
        let due = if unthrottled {
            gen.next + cap_total
        } else {
            ctx.due(p, now).min(gen.total)
        };
        let base_ts_ms = (ctx.unix_ns_of(now) / 1_000_000) as i64;
        let (n, batches) = build_batches(ctx, p, gen.next, due, now, base_ts_ms, fill_byte);
        let req = ProduceRequest::default()
            .with_acks(ctx.cfg.acks)
            .with_timeout_ms(ctx.cfg.request_timeout.as_millis() as i32)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(ctx.topic.clone())
                .with_partition_data(
                    batches
                        .into_iter()
                        .map(|(pi, b)| {
                            PartitionProduceData::default()
                                .with_index(ctx.partitions[pi])
                                .with_records(Some(b))
                        })
                        .collect(),
                )]);
        corr = corr.wrapping_add(1);
        buf.clear();
        encode_request(&mut buf, corr, ctx.version, &req)?;
        let sent = Sent {
            corr,
            first: gen.next,
            n,
            created: now,
            sent_at: now,
        };
        let first = gen.next;
        gen.next += n;
        out.requests += 1;
        ctx.live.requests.fetch_add(1, Ordering::Relaxed);
        last_send = Some(now);
        if ctx.cfg.acks != 0 {
            if tx.send(sent).is_err() {
                out.errors.connection_lost_records += n;
                ctx.live.errors.fetch_add(n, Ordering::Relaxed);
                return Err(anyhow!("reader gone"));
            }
            if let Err(e) = wr.write_all(&buf).await {
                // the reader counts the in-flight records (including these) as lost
                return Err(anyhow!("write: {e}"));
            }
        } else {
            if let Err(e) = wr.write_all(&buf).await {
                out.errors.connection_lost_records += n;
                ctx.live.errors.fetch_add(n, Ordering::Relaxed);
                return Err(anyhow!("write: {e}"));
            }
            // acks=0: "acknowledged" when written to the socket
            let t = Instant::now();
            account_ok(ctx, p, first, n, now, t, out);
            sem.add_permits(1);
        }
    }
}

/// Builds one batch per partition from records [from, due), stopping when a partition's batch
/// is full. Returns (records taken, [(partition index, batch bytes)]).
fn build_batches(
    ctx: &Ctx,
    p: usize,
    from: u64,
    due: u64,
    now: Instant,
    base_ts_ms: i64,
    fill: u8,
) -> (u64, Vec<(usize, Bytes)>) {
    let np = ctx.partitions.len();
    let mut builders: Vec<Option<BatchBuilder>> = (0..np).map(|_| None).collect();
    let size = ctx.cfg.record_size;
    let unthrottled = ctx.unthrottled();
    let mut j = from;
    while j < due {
        let pi = ctx.partition_of(p, j);
        let b = builders[pi].get_or_insert_with(|| {
            BatchBuilder::new(base_ts_ms, ctx.cap.min((due - j) as usize) * (size + 24))
        });
        if b.count() as usize >= ctx.cap {
            break;
        }
        let key = if ctx.cfg.keys > 0 {
            Some(key_bytes(ctx.key_index(p, j)))
        } else {
            None
        };
        let ts_ns = if unthrottled {
            ctx.unix_ns_of(now)
        } else {
            ctx.start_unix_ns + ctx.sched_ns(p, j) as u64
        };
        let embed = ctx.cfg.embed_timestamp && size >= 8;
        b.push_with(
            (ts_ns / 1_000_000) as i64,
            key.as_ref().map(|k| &k[..]),
            size,
            |buf| {
                if embed {
                    buf.put_u64(ts_ns);
                    buf.put_bytes(fill, size - 8);
                } else {
                    buf.put_bytes(fill, size);
                }
            },
        );
        j += 1;
    }
    let batches = builders
        .into_iter()
        .enumerate()
        .filter_map(|(i, b)| b.filter(|b| !b.is_empty()).map(|b| (i, b.finish())))
        .collect();
    (j - from, batches)
}

/// Records the latencies of records [first, first+n) acknowledged at `ack`.
fn account_ok(
    ctx: &Ctx,
    p: usize,
    first: u64,
    n: u64,
    created: Instant,
    ack: Instant,
    out: &mut ProducerOut,
) {
    account(ctx, p, first, n, created, ack, out, None);
}

#[allow(clippy::too_many_arguments)]
fn account(
    ctx: &Ctx,
    p: usize,
    first: u64,
    n: u64,
    created: Instant,
    ack: Instant,
    out: &mut ProducerOut,
    failed: Option<&HashMap<i32, i16>>,
) {
    let mut ok = 0u64;
    let mut max_us = 0u64;
    let mut measured_any = false;
    let tl = ctx.timeline.as_ref();
    if ctx.unthrottled() {
        let measured = created >= ctx.measure_from && created < ctx.end;
        let lat_us = (ack - created).as_micros() as u64;
        let ok_before = ok;
        for j in first..first + n {
            if let Some(f) = failed {
                let pid = ctx.partitions[ctx.partition_of(p, j)];
                if let Some(&code) = f.get(&pid) {
                    out.errors.code(code, 1);
                    ctx.live.errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
            ok += 1;
            if measured {
                out.lat.record_us(lat_us);
                out.measured_acked += 1;
                measured_any = true;
            }
        }
        max_us = lat_us;
        if let Some(tl) = tl {
            let k = ok - ok_before;
            if k > 0 {
                let s = created.saturating_duration_since(ctx.start).as_secs_f64();
                tl.record_sec(s, lat_us, k);
                if measured {
                    tl.record_phase(s - ctx.cfg.warmup.as_secs_f64(), lat_us, k);
                }
            }
        }
    } else {
        let first_measured = ctx.first_measured(p);
        let ack_ns = (ack - ctx.start).as_nanos() as f64;
        let warm = ctx.cfg.warmup.as_secs_f64();
        // the timeline's histograms are locked once per second (and phase) the response spans
        let mut sec_lock: Option<(
            usize,
            std::sync::MutexGuard<'_, hdrhistogram::Histogram<u64>>,
        )> = None;
        let mut phase_lock: Option<(usize, std::sync::MutexGuard<'_, Latency>)> = None;
        for j in first..first + n {
            if let Some(f) = failed {
                let pid = ctx.partitions[ctx.partition_of(p, j)];
                if let Some(&code) = f.get(&pid) {
                    out.errors.code(code, 1);
                    ctx.live.errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
            ok += 1;
            let sched_ns = ctx.sched_ns(p, j);
            let us = ((ack_ns - sched_ns) / 1000.0).max(1.0) as u64;
            max_us = max_us.max(us);
            if j >= first_measured {
                out.lat.record_us(us);
                out.measured_acked += 1;
                measured_any = true;
            }
            if let Some(tl) = tl {
                let s = sched_ns / 1e9;
                let si = (s as usize).min(tl.per_sec.len() - 1);
                let pi = if j >= first_measured {
                    Some(tl.phase_of(s - warm))
                } else {
                    None
                };
                // Locks are taken in one order (second, then phase) and all released before
                // another is taken, so producers cannot deadlock each other.
                let held_pi = phase_lock.as_ref().map(|x| x.0);
                if sec_lock.as_ref().map(|x| x.0) != Some(si) || (pi.is_some() && held_pi != pi) {
                    drop(phase_lock.take());
                    drop(sec_lock.take());
                    sec_lock = Some((si, tl.per_sec[si].lock().unwrap()));
                    if let Some(pi) = pi {
                        phase_lock = Some((pi, tl.phases[pi].lock().unwrap()));
                    }
                }
                let v = us.min(crate::stats::MAX_TRACKABLE_US);
                if let Some((_, h)) = sec_lock.as_mut() {
                    let _ = h.record(v);
                }
                if pi.is_some() {
                    if let Some((_, l)) = phase_lock.as_mut() {
                        l.record_us(us);
                    }
                }
            }
        }
        drop(phase_lock);
        drop(sec_lock);
    }
    if let (Some(tl), true) = (tl, ok > 0) {
        tl.record_ack(ctx.start, ack, ok);
    }
    if measured_any {
        out.last_measured_ack = Some(ack);
    }
    ctx.live.acked.fetch_add(ok, Ordering::Relaxed);
    ctx.live.max_us.fetch_max(max_us, Ordering::Relaxed);
}

async fn reader(
    ctx: Arc<Ctx>,
    p: usize,
    mut rd: OwnedReadHalf,
    mut rx: mpsc::UnboundedReceiver<Sent>,
    sem: Arc<Semaphore>,
) -> ProducerOut {
    let mut out = ProducerOut::default();
    let mut failed: HashMap<i32, i16> = HashMap::new();
    while let Some(s) = rx.recv().await {
        let deadline = tokio::time::Instant::from_std(s.sent_at + ctx.cfg.request_timeout);
        let res = tokio::time::timeout_at(deadline, read_frame(&mut rd)).await;
        let ack = Instant::now();
        let frame = match res {
            Err(_) => {
                lose(
                    &ctx,
                    p,
                    &mut out,
                    s,
                    &mut rx,
                    &sem,
                    true,
                    "request timed out".into(),
                );
                break;
            }
            Ok(Err(e)) => {
                lose(
                    &ctx,
                    p,
                    &mut out,
                    s,
                    &mut rx,
                    &sem,
                    false,
                    format!("read: {e:#}"),
                );
                break;
            }
            Ok(Ok(f)) => f,
        };
        match decode_produce(frame, ctx.version, s.corr, &mut failed) {
            Ok(()) => {
                if s.sent_at >= ctx.measure_from && s.sent_at < ctx.end {
                    out.rtt.record(ack.saturating_duration_since(s.sent_at));
                }
                account(
                    &ctx,
                    p,
                    s.first,
                    s.n,
                    s.created,
                    ack,
                    &mut out,
                    if failed.is_empty() {
                        None
                    } else {
                        Some(&failed)
                    },
                );
                sem.add_permits(1);
            }
            Err(e) => {
                out.errors.protocol_errors += 1;
                lose(
                    &ctx,
                    p,
                    &mut out,
                    s,
                    &mut rx,
                    &sem,
                    false,
                    format!("bad produce response: {e:#}"),
                );
                break;
            }
        }
    }
    out
}

/// Decodes a ProduceResponse; fills `failed` with partition -> error code for failed partitions.
fn decode_produce(
    mut frame: Bytes,
    version: i16,
    corr: i32,
    failed: &mut HashMap<i32, i16>,
) -> Result<()> {
    failed.clear();
    let got = decode_header::<ProduceRequest>(&mut frame, version)?;
    if got != corr {
        return Err(anyhow!("correlation id {got}, expected {corr}"));
    }
    let resp = ProduceResponse::decode(&mut frame, version)?;
    for t in &resp.responses {
        for pr in &t.partition_responses {
            if pr.error_code != 0 {
                failed.insert(pr.index, pr.error_code);
            }
        }
    }
    Ok(())
}

/// The connection failed: this request and every one queued behind it are lost.
#[allow(clippy::too_many_arguments)]
fn lose(
    ctx: &Ctx,
    p: usize,
    out: &mut ProducerOut,
    s: Sent,
    rx: &mut mpsc::UnboundedReceiver<Sent>,
    sem: &Semaphore,
    timeout: bool,
    msg: String,
) {
    sem.close();
    rx.close();
    out.errors.note(format!("producer {p}: {msg}"));
    // every failed record counts, warm-up included
    let mut lost = s.n;
    while let Ok(s) = rx.try_recv() {
        lost += s.n;
    }
    if timeout {
        out.errors.timeout_records += lost;
    } else {
        out.errors.connection_lost_records += lost;
    }
    ctx.live.errors.fetch_add(lost, Ordering::Relaxed);
}

/// Prints a progress line to stderr every `every` until `stop` is set.
pub fn spawn_progress(
    live: Arc<Live>,
    every: Duration,
    label: String,
    start: Instant,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut last = (0u64, 0u64, Instant::now());
        loop {
            tokio::time::sleep(every).await;
            let acked = live.acked.load(Ordering::Relaxed);
            let consumed = live.consumed.load(Ordering::Relaxed);
            let errors = live.errors.load(Ordering::Relaxed);
            let max = live.max_us.swap(0, Ordering::Relaxed);
            let now = Instant::now();
            let dt = (now - last.2).as_secs_f64();
            let t = now.saturating_duration_since(start).as_secs_f64();
            let mut line = format!(
                "[{label}] t={t:>5.1}s acked {:>9.0}/s (total {acked}) max latency {:.2} ms errors {errors} requests {}",
                (acked - last.0) as f64 / dt,
                max as f64 / 1000.0,
                live.requests.load(Ordering::Relaxed)
            );
            if consumed > 0 {
                line += &format!(" consumed {:.0}/s", (consumed - last.1) as f64 / dt);
            }
            eprintln!("{line}");
            last = (acked, consumed, now);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(rate: f64, producers: usize, partitions: usize, keys: u64) -> Ctx {
        let cfg = ProduceCfg {
            acks: -1,
            record_size: 100,
            keys,
            producers,
            rate,
            max_in_flight: 5,
            linger: Duration::ZERO,
            batch_bytes: 16384,
            batch_records: None,
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs(2),
            tick: Duration::from_micros(100),
            request_timeout: Duration::from_secs(30),
            drain: Duration::from_secs(5),
            embed_timestamp: true,
            timeline: true,
            phase_edges: vec![0.5, 1.5],
        };
        Ctx::new(
            cfg,
            "t",
            (0..partitions as i32).collect(),
            "127.0.0.1:1".into(),
            9,
            Arc::new(Live::default()),
        )
    }

    #[test]
    fn schedule_covers_the_offered_load() {
        let c = ctx(1000.0, 3, 1, 0);
        let total: u64 = (0..3).map(|p| c.total(p)).sum();
        assert_eq!(total, 3000); // 3 s × 1000 rec/s
        let measured: u64 = (0..3).map(|p| c.total(p) - c.first_measured(p)).sum();
        assert_eq!(measured, 2000);
        // records are evenly interleaved: producer p's record j at (3j+p) ms
        assert_eq!(c.sched_ns(1, 2), 7e6);
        assert_eq!(c.due(0, c.start), 1);
        assert_eq!(c.due(1, c.start), 0);
        assert_eq!(c.due(2, c.start + Duration::from_micros(8_500)), 3); // 2, 5, 8 ms
    }

    #[test]
    fn batches_are_valid_and_sticky() {
        let c = ctx(1000.0, 1, 4, 0);
        assert!(c.cap > 100 && c.cap < 160, "cap {}", c.cap);
        let (n, batches) = build_batches(&c, 0, 0, (c.cap * 4 + 10) as u64, c.start, 0, b'x');
        // one full batch per partition, the rest waits for the next request
        assert_eq!(n, (c.cap * 4) as u64);
        assert_eq!(batches.len(), 4);
        for (_, b) in &batches {
            let d = crate::batch::decode_batches(b).unwrap();
            assert_eq!(d[0].records.len(), c.cap);
            let v = d[0].records[0].value.as_ref().unwrap();
            assert_eq!(v.len(), 100);
            // embedded scheduled send time
            let ts = u64::from_be_bytes(v[..8].try_into().unwrap());
            assert!(ts >= c.start_unix_ns);
        }
    }

    #[test]
    fn keyed_records_use_murmur2() {
        let c = ctx(1000.0, 2, 8, 100);
        let (_, batches) = build_batches(&c, 1, 0, 50, c.start, 0, b'x');
        let mut seen = 0;
        for (pi, b) in &batches {
            for r in &crate::batch::decode_batches(b).unwrap()[0].records {
                assert_eq!(key_partition(r.key.as_ref().unwrap(), 8), *pi);
                seen += 1;
            }
        }
        assert_eq!(seen, 50);
    }

    #[test]
    fn timeline_phases_and_ack_gaps() {
        // 1000 rec/s, 1 s warm-up, 2 s measured, phase edges at 0.5 and 1.5 s
        let c = ctx(1000.0, 1, 1, 0);
        let tl = c.timeline.as_ref().unwrap();
        assert_eq!(tl.edges, vec![0.0, 0.5, 1.5, 2.0]);
        let mut out = ProducerOut::default();
        // every record of the measured window acknowledged 1 ms after its schedule, except
        // those scheduled in [1.5, 2.0) s of the window (2.5-3.0 s of the run), which wait
        // for one acknowledgement at 3.2 s: a 700 ms stretch without acks
        for j in 1000..2500u64 {
            let ack = c.start + Duration::from_micros(j * 1000 + 1000);
            account_ok(&c, 0, j, 1, ack, ack, &mut out);
        }
        account_ok(
            &c,
            0,
            2500,
            500,
            c.start,
            c.start + Duration::from_millis(3200),
            &mut out,
        );
        let t = tl.summarize(&c, 100);
        assert_eq!(t.phases.len(), 3);
        assert_eq!(
            t.phases.iter().map(|p| p.records).collect::<Vec<_>>(),
            vec![500, 1000, 500]
        );
        assert!(t.phases[1].max_us <= 1001, "{:?}", t.phases[1]);
        assert!(t.phases[2].max_us >= 699_000, "{:?}", t.phases[2]);
        assert!(
            (690..=710).contains(&t.longest_ack_gap_ms),
            "{}",
            t.longest_ack_gap_ms
        );
        assert_eq!(t.ack_gaps.len(), 1);
        assert!(
            (t.ack_gaps[0].from_s - 1.5).abs() < 0.02,
            "{:?}",
            t.ack_gaps
        );
        assert_eq!(t.per_second.len(), 2);
        assert_eq!(t.per_second[0].records, 1000);
        assert!(t.per_second[1].max_us >= 690_000);
    }

    #[test]
    fn open_loop_latency_charges_from_schedule() {
        let c = ctx(1000.0, 1, 1, 0);
        let mut out = ProducerOut::default();
        // records 1000..1010 scheduled at 1000..1009 ms, acknowledged at 1020 ms
        let ack = c.start + Duration::from_millis(1020);
        account_ok(&c, 0, 1000, 10, ack, ack, &mut out);
        assert_eq!(out.lat.count(), 10);
        assert_eq!(out.lat.hist.min(), 11_000);
        assert!((out.lat.hist.max() as i64 - 20_000).abs() < 20);
        // warm-up records are not measured
        let mut out2 = ProducerOut::default();
        account_ok(&c, 0, 0, 10, ack, ack, &mut out2);
        assert_eq!(out2.lat.count(), 0);
    }
}
