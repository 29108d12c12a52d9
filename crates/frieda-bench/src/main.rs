//! `frieda-bench`: a load generator for Kafka-protocol brokers (Frieda, Apache Kafka, ...).
//!
//! Its own pipelined Kafka client on tokio + `kafka-protocol`: open-loop fixed-rate produce
//! latency (coordinated-omission corrected), unthrottled throughput, produce→consume latency,
//! producer-count trajectories, the machine roofs the trajectories are plotted against, and a
//! wire observer that measures any broker from its traffic (`observe`).

mod batch;
mod client;
mod e2e;
mod observe;
mod pacer;
mod procstat;
mod produce;
mod read;
mod roof;
mod stats;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use client::PartitionDetail;
use produce::{Ctx, Live, ProduceCfg, ProducerOut};
use stats::Summary;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "frieda-bench",
    version,
    about = "Load generator for Kafka-protocol brokers"
)]
struct Cli {
    /// Tokio worker threads for the load generator.
    #[arg(long, global = true, default_value_t = 2)]
    threads: usize,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// N producers at a fixed offered rate (open loop) or unthrottled (--rate 0).
    Produce(Common),
    /// Produce at a fixed rate with the send time in each value, consume with a Fetch loop,
    /// report produce→consume latency.
    E2e {
        #[command(flatten)]
        common: Common,
        /// Fetch max wait (long poll), ms.
        #[arg(long, default_value_t = 500)]
        fetch_max_wait_ms: i32,
    },
    /// Unthrottled produce at each producer count in turn; one JSON line per step.
    Trajectory {
        #[command(flatten)]
        common: Common,
        #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64")]
        producers_list: Vec<usize>,
    },
    /// Backlog readers: N connections fetching partition 0 of a topic from spread-out offsets to
    /// the log end and around again, for a time (load for the mixed-load cell); JSON with MB/s.
    Read {
        #[arg(long, default_value = "127.0.0.1:9092")]
        bootstrap: String,
        #[arg(long)]
        topic: String,
        #[arg(long, default_value_t = 4)]
        readers: usize,
        #[arg(long, default_value_t = 30.0)]
        secs: f64,
        /// Fetch max bytes (per request and partition), bytes.
        #[arg(long, default_value_t = 1 << 20)]
        max_bytes: i32,
        /// Each reader reads its share of the partition (from its start offset to the next
        /// reader's) once and stops: a pass over the backlog that no cache has seen yet.
        #[arg(long)]
        once: bool,
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Create a topic (CreateTopics) and wait until all its partitions have a leader.
    CreateTopic {
        #[arg(long, default_value = "127.0.0.1:9092")]
        bootstrap: String,
        #[arg(long)]
        topic: String,
        #[arg(long, default_value_t = 1)]
        partitions: usize,
        #[arg(long, default_value_t = 1)]
        replication_factor: i16,
        #[arg(long = "topic-config", value_parser = parse_kv)]
        topic_config: Vec<(String, String)>,
    },
    /// Delete topics (DeleteTopics), e.g. after a scenario, to give the disk back.
    DeleteTopic {
        #[arg(long, default_value = "127.0.0.1:9092")]
        bootstrap: String,
        #[arg(long, required = true)]
        topic: Vec<String>,
    },
    /// A cluster's state as JSON: brokers, the active controller (DescribeQuorum), and a topic's
    /// partitions with leader, epoch, replicas and ISR. Can wait for a full ISR, or watch.
    Describe {
        /// Comma-separated bootstrap list (the first that answers is asked).
        #[arg(long, default_value = "127.0.0.1:9092")]
        bootstrap: String,
        #[arg(long)]
        topic: Option<String>,
        /// Wait (up to this long) until every partition of --topic has all its replicas in the
        /// ISR and Metadata lists at least --brokers brokers; exit 1 if that does not happen.
        #[arg(long)]
        wait_isr_full_secs: Option<f64>,
        /// With --wait-isr-full-secs: the number of registered brokers to wait for.
        #[arg(long, default_value_t = 0)]
        brokers: usize,
        /// Poll Metadata for this long and write a JSON line whenever leader, ISR or the broker
        /// set changes (and on errors); the connection is re-made after an error.
        #[arg(long)]
        watch_secs: Option<f64>,
        #[arg(long, default_value_t = 200)]
        interval_ms: u64,
        /// Output file (default stdout).
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Measure a broker from its traffic alone (FSObserver): capture packets on an interface
    /// (AF_PACKET; needs root or CAP_NET_RAW), match requests to responses by correlation id,
    /// report per-API latency percentiles (µs), sizes and per-client rates.
    Observe {
        /// Interface to capture on.
        #[arg(long, default_value = "lo")]
        interface: String,
        /// Broker port (repeat for several brokers).
        #[arg(long = "port", required = true)]
        ports: Vec<u16>,
        /// Capture duration, s.
        #[arg(long, default_value_t = 10.0)]
        secs: f64,
        /// Live per-API lines on stderr every this many seconds (0: none).
        #[arg(long, default_value_t = 1.0)]
        every: f64,
        /// Write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Loopback TCP bandwidth (a roof for the roofline plot).
    RoofNet {
        #[arg(long, default_value_t = 3.0)]
        secs: f64,
        #[arg(long, default_value_t = 1)]
        streams: usize,
        #[arg(long, default_value_t = 65536)]
        write_size: usize,
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// The machine's wake-up floor: a do-nothing loopback echo at a fixed rate, and 100 µs
    /// sleeps' overshoot (percentiles in µs).
    RoofWake {
        #[arg(long, default_value_t = 5.0)]
        secs: f64,
        #[arg(long, default_value_t = 10000)]
        rate: u64,
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Sequential write bandwidth with fdatasync in a directory (a roof for the roofline plot).
    RoofDisk {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value_t = 1024)]
        mb: usize,
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

#[derive(Args, Clone, Debug)]
struct Common {
    /// Bootstrap broker host:port.
    #[arg(long, default_value = "127.0.0.1:9092")]
    bootstrap: String,
    #[arg(long, default_value = "frieda-bench")]
    topic: String,
    /// Create the topic (CreateTopics) with --partitions; an existing topic is fine.
    #[arg(long)]
    create_topic: bool,
    #[arg(long, default_value_t = 1)]
    partitions: usize,
    #[arg(long, default_value_t = 1)]
    replication_factor: i16,
    /// Topic config for --create-topic, repeatable: --topic-config flush.messages=1
    #[arg(long = "topic-config", value_parser = parse_kv)]
    topic_config: Vec<(String, String)>,
    /// 0, 1 or all (-1).
    #[arg(long, default_value = "all", value_parser = parse_acks)]
    acks: i16,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    record_size: usize,
    /// Number of distinct keys (0 = no keys, sticky partitioning; else murmur2(key) % partitions).
    #[arg(long, default_value_t = 0)]
    keys: u64,
    /// Producers (one connection each); the rate is split evenly between them.
    #[arg(long, default_value_t = 1)]
    producers: usize,
    /// Aggregate offered rate, records/s; 0 = unthrottled (throughput mode).
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// Produce requests in flight per connection (Kafka's max.in.flight.requests.per.connection).
    #[arg(long, default_value_t = 5)]
    max_in_flight: usize,
    /// Wait up to this long for a batch to fill (Kafka's linger.ms, in µs).
    #[arg(long, default_value_t = 0)]
    linger_us: u64,
    /// Max bytes per partition batch (Kafka's batch.size).
    #[arg(long, default_value_t = 16384)]
    batch_bytes: usize,
    /// Max records per partition batch (overrides --batch-bytes).
    #[arg(long)]
    batch_records: Option<usize>,
    #[arg(long, default_value_t = 2.0)]
    warmup_secs: f64,
    #[arg(long, default_value_t = 10.0)]
    duration_secs: f64,
    /// Pacing granularity: a producer sends at most once per tick, all records due by then.
    #[arg(long, default_value_t = 100)]
    tick_us: u64,
    #[arg(long, default_value_t = 30000)]
    request_timeout_ms: u64,
    /// After the schedule ends, keep sending a backlog for at most this long; the rest is "unsent".
    #[arg(long, default_value_t = 30.0)]
    drain_secs: f64,
    /// Write the summary as JSON (trajectory: one JSON line per step).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Broker process ids (comma-separated or repeated; every broker of a cluster): their CPU
    /// time (summed) and RSS over the measured window go into the summary.
    #[arg(long, value_delimiter = ',')]
    broker_pid: Vec<u32>,
    /// Keep latency per scheduled second and every stretch without acknowledgements (JSON
    /// `timeline`).
    #[arg(long)]
    timeline: bool,
    /// Stop this process (SIGSTOP) --pause-at-secs into the measured window and continue it
    /// (SIGCONT) --pause-secs later; implies --timeline, with the measured records split into
    /// before / during / after the pause by scheduled time.
    #[arg(long)]
    pause_pid: Option<u32>,
    #[arg(long, default_value_t = 20.0)]
    pause_at_secs: f64,
    #[arg(long, default_value_t = 20.0)]
    pause_secs: f64,
    /// Broker label for the report ("frieda", "kafka").
    #[arg(long, default_value = "")]
    broker: String,
    /// Scenario label for the report.
    #[arg(long, default_value = "")]
    label: String,
    /// Progress line on stderr every N seconds (0 = none).
    #[arg(long, default_value_t = 5.0)]
    progress_secs: f64,
    /// No human summary on stdout.
    #[arg(long)]
    quiet: bool,
}

fn parse_acks(s: &str) -> Result<i16, String> {
    match s {
        "all" | "-1" => Ok(-1),
        "0" => Ok(0),
        "1" => Ok(1),
        _ => Err(format!("acks must be 0, 1 or all, not {s}")),
    }
}

fn parse_kv(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("expected key=value, got {s}"))
}

impl Common {
    fn cfg(&self, embed_timestamp: bool) -> ProduceCfg {
        ProduceCfg {
            acks: self.acks,
            record_size: self.record_size,
            keys: self.keys,
            producers: self.producers.max(1),
            rate: self.rate.max(0.0),
            max_in_flight: self.max_in_flight.max(1),
            linger: Duration::from_micros(self.linger_us),
            batch_bytes: self.batch_bytes,
            batch_records: self.batch_records,
            warmup: Duration::from_secs_f64(self.warmup_secs),
            duration: Duration::from_secs_f64(self.duration_secs.max(0.1)),
            tick: Duration::from_micros(self.tick_us),
            request_timeout: Duration::from_millis(self.request_timeout_ms),
            drain: Duration::from_secs_f64(self.drain_secs),
            embed_timestamp,
            timeline: self.timeline || self.pause_pid.is_some(),
            phase_edges: if self.pause_pid.is_some() {
                vec![self.pause_at_secs, self.pause_at_secs + self.pause_secs]
            } else {
                vec![]
            },
        }
    }

    fn base_summary(&self, mode: &str, cfg: &ProduceCfg, partitions: usize) -> Summary {
        Summary {
            mode: mode.into(),
            label: self.label.clone(),
            broker: self.broker.clone(),
            bootstrap: self.bootstrap.clone(),
            topic: self.topic.clone(),
            acks: cfg.acks,
            record_size: cfg.record_size,
            keys: cfg.keys,
            partitions,
            producers: cfg.producers,
            offered_rate: cfg.rate,
            max_in_flight: cfg.max_in_flight,
            linger_us: self.linger_us,
            batch_bytes: self.batch_bytes,
            tick_us: self.tick_us,
            warmup_s: self.warmup_secs,
            duration_s: self.duration_secs,
            started_at_unix: produce::unix_ns_now() as f64 / 1e9,
            ..Default::default()
        }
    }
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    if let Cmd::Produce(c) | Cmd::E2e { common: c, .. } | Cmd::Trajectory { common: c, .. } =
        &cli.cmd
    {
        if c.pause_pid.is_some()
            && (c.pause_at_secs < 0.0
                || c.pause_secs <= 0.0
                || c.pause_at_secs + c.pause_secs > c.duration_secs)
        {
            bail!("the pause (--pause-at-secs {} + --pause-secs {}) must lie inside the measured window (--duration-secs {})",
                c.pause_at_secs, c.pause_secs, c.duration_secs);
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cli.threads.max(1))
        .enable_all()
        .build()?;
    match cli.cmd {
        Cmd::Produce(c) => {
            let s = rt.block_on(run_produce(&c, c.producers, "produce"))?;
            emit(&c, &s, false)?;
        }
        Cmd::E2e {
            common,
            fetch_max_wait_ms,
        } => {
            let s = rt.block_on(run_e2e(&common, fetch_max_wait_ms))?;
            emit(&common, &s, false)?;
        }
        Cmd::Trajectory {
            common,
            producers_list,
        } => {
            if let Some(j) = &common.json {
                std::fs::write(j, b"").with_context(|| format!("writing {}", j.display()))?;
            }
            let mut c = common.clone();
            c.rate = 0.0;
            for (i, n) in producers_list.iter().enumerate() {
                if i > 0 {
                    c.create_topic = false;
                }
                let s = rt.block_on(run_produce(&c, *n, "trajectory"))?;
                emit(&c, &s, true)?;
            }
        }
        Cmd::CreateTopic {
            bootstrap,
            topic,
            partitions,
            replication_factor,
            topic_config,
        } => {
            let (leader, meta, _) = rt.block_on(client::prepare_topic(
                &bootstrap,
                &topic,
                true,
                partitions,
                replication_factor,
                &topic_config,
            ))?;
            println!(
                "topic {topic}: {} partitions, leader {leader}",
                meta.partitions.len()
            );
        }
        Cmd::DeleteTopic { bootstrap, topic } => {
            rt.block_on(async {
                let mut c = client::Conn::connect_any(&bootstrap, Duration::from_secs(10)).await?;
                for t in &topic {
                    let code = c.delete_topic(t).await?;
                    println!(
                        "topic {t}: {}",
                        if code == 0 {
                            "deleted"
                        } else {
                            "did not exist"
                        }
                    );
                }
                anyhow::Ok(())
            })?;
        }
        Cmd::Describe {
            bootstrap,
            topic,
            wait_isr_full_secs,
            brokers,
            watch_secs,
            interval_ms,
            json,
        } => {
            let ok = rt.block_on(describe(
                &bootstrap,
                topic.as_deref(),
                wait_isr_full_secs,
                brokers,
                watch_secs,
                interval_ms,
                json,
            ))?;
            if !ok {
                std::process::exit(1);
            }
        }
        Cmd::Observe {
            interface,
            ports,
            secs,
            every,
            json,
        } => {
            let r = observe::run(&observe::ObserveCfg {
                interface,
                ports,
                secs,
                every,
            })?;
            print!("{}", observe::human(&r));
            if let Some(j) = json {
                std::fs::write(j, serde_json::to_string(&r)? + "\n")?;
            }
        }
        Cmd::RoofNet {
            secs,
            streams,
            write_size,
            json,
        } => {
            let r = roof::net(secs, streams, write_size)?;
            let line = serde_json::to_string(&r)?;
            println!("{line}");
            if let Some(j) = json {
                std::fs::write(j, line + "\n")?;
            }
        }
        Cmd::Read {
            bootstrap,
            topic,
            readers,
            secs,
            max_bytes,
            once,
            json,
        } => {
            let r = rt.block_on(read::run(
                &bootstrap, &topic, readers, secs, max_bytes, once,
            ))?;
            let line = serde_json::to_string(&r)?;
            println!("{line}");
            if let Some(j) = json {
                std::fs::write(j, line + "\n")?;
            }
        }
        Cmd::RoofWake { secs, rate, json } => {
            let r = roof::wake(secs, rate)?;
            let line = serde_json::to_string(&r)?;
            println!("{line}");
            if let Some(j) = json {
                std::fs::write(j, line + "\n")?;
            }
        }
        Cmd::RoofDisk { dir, mb, json } => {
            let r = roof::disk(&dir, mb)?;
            let line = serde_json::to_string(&r)?;
            println!("{line}");
            if let Some(j) = json {
                std::fs::write(j, line + "\n")?;
            }
        }
    }
    Ok(())
}

fn emit(c: &Common, s: &Summary, append_line: bool) -> Result<()> {
    if !c.quiet {
        print!("{}", s.human());
    }
    if append_line {
        let line = serde_json::to_string(s)?;
        println!("{line}");
        if let Some(j) = &c.json {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(j)?;
            writeln!(f, "{line}")?;
        }
    } else if let Some(j) = &c.json {
        std::fs::write(j, serde_json::to_string_pretty(s)? + "\n")
            .with_context(|| format!("writing {}", j.display()))?;
    }
    std::io::stdout().flush()?;
    Ok(())
}

/// Connects, prepares the topic and builds the run context.
async fn setup(
    c: &Common,
    producers: usize,
    embed: bool,
) -> Result<(Arc<Ctx>, client::ApiVersions, client::TopicMeta)> {
    if embed && c.record_size < 8 {
        bail!("e2e needs --record-size >= 8 (the send timestamp lives in the value)");
    }
    let (leader, meta, versions) = client::prepare_topic(
        &c.bootstrap,
        &c.topic,
        c.create_topic,
        c.partitions,
        c.replication_factor,
        &c.topic_config,
    )
    .await?;
    let version = versions.pick::<kafka_protocol::messages::ProduceRequest>()?;
    let mut cfg = c.cfg(embed);
    cfg.producers = producers.max(1);
    let partitions: Vec<i32> = meta.partitions.iter().map(|p| p.0).collect();
    let live = Arc::new(Live::default());
    let ctx = Arc::new(Ctx::new(cfg, &c.topic, partitions, leader, version, live));
    Ok((ctx, versions, meta))
}

struct Window {
    sampler: Option<Arc<procstat::BrokerSampler>>,
    client_cpu_start: Arc<std::sync::Mutex<f64>>,
    machine_cpu_start: Arc<std::sync::Mutex<Option<(f64, Instant)>>>,
    marker: tokio::task::JoinHandle<()>,
    progress: Option<tokio::task::JoinHandle<()>>,
    pauser: Option<Pauser>,
}

/// SIGSTOP / SIGCONT of a process at fixed times of the run, on its own thread (the tokio
/// workers may be busy). The process is always continued: when the run ends early, or when
/// this is dropped.
struct Pauser {
    state: Arc<std::sync::Mutex<stats::PauseOut>>,
    cancel: Option<std::sync::mpsc::Sender<()>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Pauser {
    fn start(pid: u32, measure_from: Instant, at_s: f64, secs: f64) -> Pauser {
        let state = Arc::new(std::sync::Mutex::new(stats::PauseOut {
            pid,
            at_s,
            secs,
            ..Default::default()
        }));
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let st = state.clone();
        let handle = std::thread::spawn(move || {
            use std::sync::mpsc::RecvTimeoutError;
            let since = |t: Instant| {
                (t.saturating_duration_since(measure_from).as_secs_f64() * 1000.0).round() / 1000.0
            };
            let at = measure_from + Duration::from_secs_f64(at_s);
            if rx.recv_timeout(at.saturating_duration_since(Instant::now()))
                != Err(RecvTimeoutError::Timeout)
            {
                return; // cancelled before the pause
            }
            // SAFETY: kill has no memory-safety preconditions.
            if unsafe { libc::kill(pid as i32, libc::SIGSTOP) } != 0 {
                st.lock().unwrap().error =
                    Some(format!("SIGSTOP: {}", std::io::Error::last_os_error()));
                return;
            }
            {
                let mut g = st.lock().unwrap();
                g.stopped_at_s = Some(since(Instant::now()));
                g.stopped_at_unix = Some(produce::unix_ns_now() as f64 / 1e9);
            }
            let until = at + Duration::from_secs_f64(secs);
            let _ = rx.recv_timeout(until.saturating_duration_since(Instant::now()));
            // SAFETY: as above.
            if unsafe { libc::kill(pid as i32, libc::SIGCONT) } != 0 {
                st.lock().unwrap().error =
                    Some(format!("SIGCONT: {}", std::io::Error::last_os_error()));
            }
            let mut g = st.lock().unwrap();
            g.continued_at_s = Some(since(Instant::now()));
            g.continued_at_unix = Some(produce::unix_ns_now() as f64 / 1e9);
        });
        Pauser {
            state,
            cancel: Some(tx),
            handle: Some(handle),
        }
    }

    /// Continues the process now if it is still stopped; returns what happened.
    fn finish(mut self) -> stats::PauseOut {
        self.stop_thread();
        self.state.lock().unwrap().clone()
    }

    fn stop_thread(&mut self) {
        if let Some(c) = self.cancel.take() {
            let _ = c.send(());
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Pauser {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// Starts broker sampling at the end of warm-up, and the progress line.
fn open_window(c: &Common, ctx: &Arc<Ctx>, label: String) -> Window {
    let sampler = if c.broker_pid.is_empty() {
        None
    } else {
        Some(Arc::new(procstat::BrokerSampler::start(&c.broker_pid)))
    };
    let client_cpu_start = Arc::new(std::sync::Mutex::new(
        procstat::cpu_seconds("self").unwrap_or(0.0),
    ));
    let machine_cpu_start = Arc::new(std::sync::Mutex::new(None));
    let marker = {
        let (s, cc, mc, at) = (
            sampler.clone(),
            client_cpu_start.clone(),
            machine_cpu_start.clone(),
            ctx.measure_from,
        );
        tokio::spawn(async move {
            tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
            if let Some(s) = s {
                s.mark();
            }
            *cc.lock().unwrap() = procstat::cpu_seconds("self").unwrap_or(0.0);
            *mc.lock().unwrap() = procstat::machine_busy_seconds().map(|x| (x, Instant::now()));
        })
    };
    let pauser = c
        .pause_pid
        .map(|pid| Pauser::start(pid, ctx.measure_from, c.pause_at_secs, c.pause_secs));
    let progress = if c.progress_secs > 0.0 {
        Some(produce::spawn_progress(
            ctx.live.clone(),
            Duration::from_secs_f64(c.progress_secs),
            label,
            ctx.start,
        ))
    } else {
        None
    };
    Window {
        sampler,
        client_cpu_start,
        machine_cpu_start,
        marker,
        progress,
        pauser,
    }
}

fn close_window(w: Window, s: &mut Summary, records_for_cpu: u64) {
    if let Some(p) = w.pauser {
        s.pause = Some(p.finish());
    }
    if let Some(p) = w.progress {
        p.abort();
    }
    let marked = w.marker.is_finished();
    w.marker.abort();
    let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
    s.client_cpu_s =
        procstat::cpu_seconds("self").unwrap_or(0.0) - *w.client_cpu_start.lock().unwrap();
    if let Some(sm) = w.sampler {
        let procs = sm.finish();
        let cpus: Vec<f64> = procs.iter().filter_map(|p| p.1).collect();
        let cpu = if marked && cpus.len() == procs.len() && !cpus.is_empty() {
            Some(cpus.iter().sum::<f64>())
        } else {
            None
        };
        s.broker_cpu_s = cpu.map(r3);
        if let Some(cpu) = cpu {
            if records_for_cpu > 0 {
                s.broker_cpu_s_per_million = Some(r3(cpu / records_for_cpu as f64 * 1e6));
            }
        }
        let rss: Vec<u64> = procs.iter().filter_map(|p| p.2).collect();
        s.broker_rss_max_kb = if rss.is_empty() {
            None
        } else {
            Some(rss.iter().sum())
        };
        if procs.len() > 1 {
            s.broker_procs = procs
                .iter()
                .map(|(pid, cpu, rss)| stats::BrokerProc {
                    pid: pid.parse().unwrap_or(0),
                    cpu_s: if marked { cpu.map(r3) } else { None },
                    rss_max_kb: *rss,
                })
                .collect();
        }
    }
    if let (Some((m0, t0)), Some(m1)) = (
        *w.machine_cpu_start.lock().unwrap(),
        procstat::machine_busy_seconds(),
    ) {
        let m = m1 - m0;
        s.machine_cpu_s = Some(r3(m));
        s.window_s = Some(r3(t0.elapsed().as_secs_f64()));
        s.other_cpu_s = Some(r3(
            (m - s.broker_cpu_s.unwrap_or(0.0) - s.client_cpu_s).max(0.0)
        ));
    }
}

fn versions_map(v: &client::ApiVersions) -> std::collections::BTreeMap<String, i16> {
    use kafka_protocol::messages::*;
    let mut m = std::collections::BTreeMap::new();
    if let Ok(x) = v.pick::<ProduceRequest>() {
        m.insert("produce".into(), x);
    }
    if let Ok(x) = v.pick::<FetchRequest>() {
        m.insert("fetch".into(), x);
    }
    if let Ok(x) = v.pick::<MetadataRequest>() {
        m.insert("metadata".into(), x);
    }
    m
}

fn finish_produce_summary(s: &mut Summary, ctx: &Ctx, out: &ProducerOut) {
    s.fill_latency(&out.lat);
    if out.rtt.count() > 0 {
        s.request_rtt_us = Some(stats::RttOut::of(&out.rtt));
    }
    s.errors = out.errors.record_total();
    s.error_detail = out.errors.clone();
    s.requests = out.requests;
    s.sent_total = out.records_sent;
    s.acked_total = ctx.live.acked.load(Ordering::Relaxed);
    s.records_per_request = if out.requests > 0 {
        (out.records_sent as f64 / out.requests as f64 * 10.0).round() / 10.0
    } else {
        0.0
    };
    let span = if ctx.cfg.rate > 0.0 {
        let last = out
            .last_measured_ack
            .map(|t| t.saturating_duration_since(ctx.measure_from))
            .unwrap_or_default();
        last.max(ctx.cfg.duration)
    } else {
        ctx.cfg.duration
    };
    s.throughput_rps = (out.measured_acked as f64 / span.as_secs_f64()).round();
    s.throughput_mb_s =
        (s.throughput_rps * ctx.cfg.record_size as f64 / 1e6 * 1000.0).round() / 1000.0;
    if let Some(tl) = &ctx.timeline {
        s.timeline = Some(tl.summarize(ctx, 100));
    }
}

async fn run_produce(c: &Common, producers: usize, mode: &str) -> Result<Summary> {
    let (ctx, versions, meta) = setup(c, producers, false).await?;
    let mut s = c.base_summary(mode, &ctx.cfg, meta.partitions.len());
    s.api_versions = versions_map(&versions);
    let label = if c.label.is_empty() {
        format!("{mode} {}p", producers)
    } else {
        c.label.clone()
    };
    let w = open_window(c, &ctx, label);
    let out = produce::run_producers(ctx.clone()).await;
    finish_produce_summary(&mut s, &ctx, &out);
    close_window(w, &mut s, out.measured_acked);
    Ok(s)
}

async fn run_e2e(c: &Common, fetch_max_wait_ms: i32) -> Result<Summary> {
    let mut c = c.clone();
    if c.rate <= 0.0 {
        bail!("e2e needs a fixed --rate (records/s)");
    }
    let (ctx, versions, meta) = setup(&c, c.producers, true).await?;
    c.partitions = meta.partitions.len();
    // Consumer connection and its start offsets, before anything is produced.
    let mut conn = client::Conn::connect(&ctx.leader, Duration::from_secs(10)).await?;
    let offsets = conn.latest_offsets(&c.topic, &ctx.partitions).await?;
    let stop = Arc::new(e2e::Stop::default());
    let consumer = tokio::spawn(e2e::consume(
        ctx.clone(),
        conn,
        offsets,
        fetch_max_wait_ms,
        stop.clone(),
    ));
    let mut s = c.base_summary("e2e", &ctx.cfg, meta.partitions.len());
    s.api_versions = versions_map(&versions);
    let label = if c.label.is_empty() {
        "e2e".to_string()
    } else {
        c.label.clone()
    };
    let w = open_window(&c, &ctx, label);
    let out = produce::run_producers(ctx.clone()).await;
    stop.expected
        .store(ctx.live.acked.load(Ordering::Relaxed), Ordering::Release);
    stop.done.store(true, Ordering::Release);
    let t = Instant::now();
    let cons = consumer.await?;
    let _ = t;
    // produce→ack summary of the same run
    let mut pa = c.base_summary("e2e-produce-ack", &ctx.cfg, meta.partitions.len());
    finish_produce_summary(&mut pa, &ctx, &out);
    pa.percentiles.clear();
    // end-to-end summary
    s.fill_latency(&cons.lat);
    let mut errors = out.errors.clone();
    errors.merge(&cons.errors);
    let missing = out.measured_acked.saturating_sub(cons.measured);
    if missing > 0 {
        errors.note(format!(
            "{missing} acknowledged measured records were not consumed"
        ));
        *errors
            .fetch_errors
            .entry("not consumed".into())
            .or_default() += missing;
    }
    s.errors = errors.record_total() + missing;
    s.error_detail = errors;
    s.requests = out.requests;
    s.records_per_request = pa.records_per_request;
    let span = cons
        .last_measured
        .map(|t| t.saturating_duration_since(ctx.measure_from))
        .unwrap_or_default()
        .max(ctx.cfg.duration);
    s.throughput_rps = (cons.measured as f64 / span.as_secs_f64()).round();
    s.throughput_mb_s =
        (s.throughput_rps * ctx.cfg.record_size as f64 / 1e6 * 1000.0).round() / 1000.0;
    close_window(w, &mut s, cons.measured);
    s.produce_ack = Some(Box::new(pa));
    Ok(s)
}

/// `describe`: one JSON document, or wait for a full ISR, or watch ISR changes.
#[allow(clippy::too_many_arguments)]
async fn describe(
    bootstrap: &str,
    topic: Option<&str>,
    wait_isr_full_secs: Option<f64>,
    want_brokers: usize,
    watch_secs: Option<f64>,
    interval_ms: u64,
    json: Option<PathBuf>,
) -> Result<bool> {
    let mut out: Box<dyn Write> = match &json {
        Some(p) => {
            Box::new(std::fs::File::create(p).with_context(|| format!("writing {}", p.display()))?)
        }
        None => Box::new(std::io::stdout()),
    };
    let t0 = Instant::now();
    let now_unix = || (produce::unix_ns_now() as f64 / 1e6).round() / 1e3;
    // one snapshot: brokers, controller id, the topic's partitions
    async fn snap(
        c: &mut client::Conn,
        topic: Option<&str>,
    ) -> Result<(
        std::collections::BTreeMap<i32, String>,
        i32,
        Vec<PartitionDetail>,
    )> {
        match topic {
            Some(t) => {
                let m = c.metadata(t).await?;
                Ok((m.brokers, m.controller_id, m.detail))
            }
            None => {
                let (b, ctl) = c.brokers().await?;
                Ok((b, ctl, vec![]))
            }
        }
    }
    if let Some(w) = watch_secs {
        let end = t0 + Duration::from_secs_f64(w);
        let mut conn: Option<client::Conn> = None;
        let mut last: Option<(Vec<i32>, Vec<PartitionDetail>)> = None;
        let mut last_err: Option<String> = None;
        while Instant::now() < end {
            if conn.is_none() {
                match client::Conn::connect_any(bootstrap, Duration::from_secs(2)).await {
                    Ok(c) => conn = Some(c),
                    Err(e) => {
                        let msg = format!("{e:#}");
                        if last_err.as_ref() != Some(&msg) {
                            writeln!(
                                out,
                                "{}",
                                serde_json::json!({"t_unix": now_unix(), "error": msg})
                            )?;
                            last_err = Some(msg);
                        }
                    }
                }
            }
            if let Some(c) = conn.as_mut() {
                match tokio::time::timeout(Duration::from_secs(2), snap(c, topic)).await {
                    Ok(Ok((b, _, d))) => {
                        let ids: Vec<i32> = b.keys().copied().collect();
                        let d: Vec<PartitionDetail> = d;
                        let cur = (ids.clone(), d.clone());
                        if last.as_ref() != Some(&cur) {
                            writeln!(
                                out,
                                "{}",
                                serde_json::json!({"t_unix": now_unix(), "brokers": ids, "partitions": d})
                            )?;
                            out.flush()?;
                            last = Some(cur);
                        }
                        last_err = None;
                    }
                    Ok(Err(e)) => {
                        writeln!(
                            out,
                            "{}",
                            serde_json::json!({"t_unix": now_unix(), "error": format!("{e:#}")})
                        )?;
                        conn = None;
                    }
                    Err(_) => {
                        writeln!(
                            out,
                            "{}",
                            serde_json::json!({"t_unix": now_unix(), "error": "metadata timed out (2 s)"})
                        )?;
                        conn = None;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(interval_ms)).await;
        }
        out.flush()?;
        return Ok(true);
    }
    let deadline = wait_isr_full_secs.map(|w| t0 + Duration::from_secs_f64(w));
    loop {
        let res: Result<serde_json::Value> = async {
            let mut c = client::Conn::connect_any(bootstrap, Duration::from_secs(5)).await?;
            let (b, ctl, d) = snap(&mut c, topic).await?;
            let q = c.describe_quorum().await;
            let full = b.len() >= want_brokers
                && (topic.is_none()
                    || (!d.is_empty()
                        && d.iter().all(|p| {
                            p.error_code == 0 && p.leader >= 0 && {
                                let mut r = p.replicas.clone();
                                let mut i = p.isr.clone();
                                r.sort();
                                i.sort();
                                r == i
                            }
                        })));
            Ok(serde_json::json!({
                "t_unix": now_unix(),
                "bootstrap": c.addr,
                "brokers": b,
                "controller_id": ctl,
                "quorum": q.as_ref().ok(),
                "quorum_error": q.as_ref().err().map(|e| format!("{e:#}")),
                "topic": topic,
                "partitions": d,
                "isr_full": full,
            }))
        }
        .await;
        let done_waiting = match (&res, deadline) {
            (_, None) => true,
            (Ok(v), Some(_)) if v["isr_full"] == serde_json::Value::Bool(true) => true,
            (_, Some(d)) => Instant::now() >= d,
        };
        if done_waiting {
            let ok = match &res {
                Ok(v) => deadline.is_none() || v["isr_full"] == serde_json::Value::Bool(true),
                Err(_) => false,
            };
            match res {
                Ok(v) => writeln!(out, "{}", serde_json::to_string(&v)?)?,
                Err(e) => writeln!(
                    out,
                    "{}",
                    serde_json::json!({"t_unix": now_unix(), "error": format!("{e:#}")})
                )?,
            }
            out.flush()?;
            return Ok(ok);
        }
        tokio::time::sleep(Duration::from_millis(interval_ms)).await;
    }
}
