//! The process's own metrics, named as every Prometheus client library's process collector
//! names them (so the usual dashboards and alerts apply): CPU seconds, resident and virtual
//! memory, open and maximum file descriptors, start time, threads; read from `/proc/self`
//! with the `procfs` crate at scrape time. And `frieda_build_info`, the version and git
//! commit built (the Prometheus `*_build_info` convention; Kafka's JMX `app-info` says the
//! same).

use super::{family, Labels};
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// The version built (`Cargo.toml`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git commit built, 12 hex digits (`unknown` when built outside a git checkout; see
/// `build.rs`).
pub const REVISION: &str = env!("FRIEDA_REVISION");

/// What `/proc/self` says, read once per scrape.
struct ProcessSample {
    cpu_seconds: f64,
    resident_bytes: u64,
    virtual_bytes: u64,
    threads: i64,
    start_time_seconds: f64,
    open_fds: Option<usize>,
    max_fds: Option<u64>,
}

fn sample() -> Option<ProcessSample> {
    let me = procfs::process::Process::myself().ok()?;
    let stat = me.stat().ok()?;
    let ticks = procfs::ticks_per_second() as f64;
    let max_fds = me
        .limits()
        .ok()
        .and_then(|l| match l.max_open_files.soft_limit {
            procfs::process::LimitValue::Value(v) => Some(v),
            procfs::process::LimitValue::Unlimited => None,
        });
    Some(ProcessSample {
        cpu_seconds: (stat.utime + stat.stime) as f64 / ticks,
        resident_bytes: stat.rss * procfs::page_size(),
        virtual_bytes: stat.vsize,
        threads: stat.num_threads,
        start_time_seconds: start_time_seconds(stat.starttime as f64 / ticks),
        open_fds: me.fd_count().ok(),
        max_fds,
    })
}

/// The process's start, Unix seconds, fixed at the first scrape: the wall clock now less the
/// time since the process started (`/proc/uptime` less `starttime`, both on the boot-time
/// clock). Not `btime + starttime`: `btime` in `/proc/stat` is whole seconds and drifts from
/// the wall clock as NTP adjusts it over a long uptime (measured: 1 s after 10 h here).
fn start_time_seconds(started_after_boot_s: f64) -> f64 {
    use procfs::Current;
    static START: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *START.get_or_init(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let uptime = procfs::Uptime::current().map(|u| u.uptime).unwrap_or(0.0);
        now - (uptime - started_after_boot_s)
    })
}

/// Writes one unlabelled gauge family per `(name, help, value)` that has a value.
fn gauges_present(
    e: &mut DescriptorEncoder,
    gauges: &[(&str, &str, Option<f64>)],
) -> Result<(), std::fmt::Error> {
    for (name, help, value) in gauges {
        if let Some(v) = value {
            let none: Labels = Vec::new();
            family(
                e,
                name,
                help,
                MetricType::Gauge,
                [(none, ConstGauge::new(*v))],
            )?;
        }
    }
    Ok(())
}

/// Writes the `process_*` families (none when `/proc/self` cannot be read) and
/// `frieda_build_info`.
pub(super) fn encode(e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let none = || -> Labels { Vec::new() };
    if let Some(p) = sample() {
        family(
            e,
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            MetricType::Counter,
            [(none(), ConstCounter::new(p.cpu_seconds))],
        )?;
        let gauges: [(&str, &str, Option<f64>); 6] = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                Some(p.resident_bytes as f64),
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                Some(p.virtual_bytes as f64),
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                p.open_fds.map(|n| n as f64),
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors (the soft limit).",
                p.max_fds.map(|n| n as f64),
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                Some(p.start_time_seconds),
            ),
            (
                "process_threads",
                "Number of OS threads in the process.",
                Some(p.threads as f64),
            ),
        ];
        gauges_present(e, &gauges)?;
    }
    let budget = frieda_log::limits::open_files_budget();
    gauges_present(
        e,
        &[
            (
                "frieda_log_segment_files_open",
                "Segment files the log holds open (3 per segment: .log, .index, .timeindex).",
                Some(frieda_log::limits::open_segment_files() as f64),
            ),
            (
                "frieda_log_segment_files_budget",
                "Most segment files the log may hold open (log.segment.files.max); unset when unbounded.",
                (budget != usize::MAX).then_some(budget as f64),
            ),
        ],
    )?;
    let cost = &crate::cluster::leader_cost::LEADER_COST;
    gauges_present(
        e,
        &[
            (
                "frieda_leader_cost_microseconds",
                "What it costs this broker to lead, smoothed (stall + fsync; sent to the controller for leader.placement=measured).",
                cost.cost_us().map(|v| v as f64),
            ),
            (
                "frieda_leader_cost_stall_microseconds",
                "90th percentile of how late a task of the request runtime woke in the last window.",
                cost.stall_us().map(|v| v as f64),
            ),
            (
                "frieda_leader_cost_fsync_microseconds",
                "99th percentile of the log flushes of the last window (0 without flushes).",
                cost.fsync_us().map(|v| v as f64),
            ),
        ],
    )?;
    family(
        e,
        "frieda_leader_placement_moves",
        "Leaderships this node moved as the active controller under leader.placement=measured, by reason.",
        MetricType::Counter,
        frieda_meta::leadership::MoveReason::ALL.map(|r| {
            (
                vec![("reason", r.label().to_string())],
                ConstCounter::new(
                    frieda_meta::leadership::MOVES[r as usize]
                        .load(std::sync::atomic::Ordering::Relaxed),
                ),
            )
        }),
    )?;
    let remote = &crate::tiering::STATS;
    for (name, help, v) in [
        (
            "frieda_remote_copy_bytes",
            "Bytes of segment files this broker uploaded to remote storage (Kafka's RemoteCopyBytesPerSec, as a total).",
            &remote.copied_bytes,
        ),
        (
            "frieda_remote_copy_segments",
            "Segments whose copy to remote storage this broker finished.",
            &remote.copied_segments,
        ),
        (
            "frieda_remote_copy_errors",
            "Remote copy rounds that stopped on an error (object store, metadata, local read); retried next round.",
            &remote.copy_errors,
        ),
        (
            "frieda_remote_deleted_segments",
            "Remote copies this broker deleted from the bucket: unfinished, abandoned or expired by retention.",
            &remote.deleted_segments,
        ),
        (
            "frieda_remote_expired_segments",
            "Remote copies this broker deleted because the topic's retention.ms or retention.bytes expired them.",
            &remote.expired_segments,
        ),
        (
            "frieda_remote_fetch_requests",
            "Reads from remote storage for fetches below a partition's local log (Kafka's RemoteFetchRequestsPerSec, as a total).",
            &crate::remote::READS.requests,
        ),
        (
            "frieda_remote_fetch_bytes",
            "Bytes of record batches read from remote storage for fetches (Kafka's RemoteFetchBytesPerSec, as a total).",
            &crate::remote::READS.bytes,
        ),
        (
            "frieda_remote_fetch_errors",
            "Reads from remote storage that failed: the fetch answered KAFKA_STORAGE_ERROR for that partition (Kafka's RemoteFetchErrorsPerSec, as a total).",
            &crate::remote::READS.errors,
        ),
        (
            "frieda_remote_fetch_micros",
            "Microseconds the reads from remote storage took, summed; divided by frieda_remote_fetch_requests_total, the mean read time.",
            &crate::remote::READS.micros,
        ),
        (
            "frieda_remote_chunk_cache_hits",
            "Chunks of remote segments found in the local chunk cache (rsm.config.fetch.chunk.cache.*).",
            &crate::remote::READS.cache_hits,
        ),
        (
            "frieda_remote_chunk_cache_misses",
            "Chunks of remote segments not in the chunk cache, fetched from the bucket.",
            &crate::remote::READS.cache_misses,
        ),
    ] {
        family(
            e,
            name,
            help,
            MetricType::Counter,
            [(
                Vec::<(&str, String)>::new(),
                ConstCounter::new(v.load(std::sync::atomic::Ordering::Relaxed)),
            )],
        )?;
    }
    for (name, help, v) in [
        (
            "frieda_remote_copy_lag_segments",
            "Closed segments of the tiered partitions this broker leads that may be copied but are not yet (Kafka's RemoteCopyLagSegments), at the end of the last copy round.",
            &remote.copy_lag_segments,
        ),
        (
            "frieda_remote_copy_lag_bytes",
            "Their bytes (Kafka's RemoteCopyLagBytes).",
            &remote.copy_lag_bytes,
        ),
    ] {
        family(
            e,
            name,
            help,
            MetricType::Gauge,
            [(
                Vec::<(&str, String)>::new(),
                ConstGauge::new(v.load(std::sync::atomic::Ordering::Relaxed) as i64),
            )],
        )?;
    }
    family(
        e,
        "frieda_build_info",
        "The version and git commit of the running binary; always 1.",
        MetricType::Gauge,
        [(
            vec![
                ("version", VERSION.to_string()),
                ("revision", REVISION.to_string()),
            ],
            ConstGauge::new(1i64),
        )],
    )
}
