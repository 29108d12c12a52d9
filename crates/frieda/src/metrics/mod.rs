//! The Prometheus metrics endpoint (`metrics.listen`, issue 16): HTTP `GET /metrics` answers
//! in the OpenMetrics 1.0 text format, encoded by `prometheus-client`.
//!
//! Everything is read at scrape time: the request counters and stage histograms of
//! [`crate::stats`], the log flush histogram of `frieda_log::stats`, and gauges taken from the
//! broker's state (partitions, groups, the metadata image). Names follow Kafka's JMX metrics as
//! the Prometheus JMX exporter spells them, so dashboards built for Kafka translate; the full
//! list with the JMX name each maps to is in `docs/metrics.md`. The process's own metrics
//! (`process_*`) and `frieda_build_info` come from [`process`].

mod http;
mod process;

pub use http::{bind, serve};
pub use process::{REVISION, VERSION};

use crate::broker::Broker;
use crate::replication::Role;
use crate::stats::{bucket_bound_us, HistogramSnapshot, Stage, BUCKETS, MAX_VERSIONS};
use kafka_protocol::messages::ApiKey;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The scrape: every metric of one broker.
pub fn render(broker: &Arc<Broker>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(BrokerCollector(broker.clone())));
    let mut out = String::with_capacity(64 * 1024);
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
        tracing::warn!(error = %e, "encoding the metrics failed");
    }
    out
}

struct BrokerCollector(Arc<Broker>);

impl std::fmt::Debug for BrokerCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BrokerCollector")
    }
}

/// A histogram read from a [`HistogramSnapshot`], in seconds.
struct Histogram(HistogramSnapshot);

impl EncodeMetric for Histogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let buckets: Vec<(f64, u64)> = (0..BUCKETS)
            .map(|i| {
                let bound = bucket_bound_us(i);
                // prometheus-client writes `+Inf` for f64::MAX.
                let le = if bound == u64::MAX {
                    f64::MAX
                } else {
                    bound as f64 / 1e6
                };
                (le, self.0.buckets[i])
            })
            .collect();
        encoder.encode_histogram::<NoLabelSet>(
            self.0.sum_ns as f64 / 1e9,
            self.0.count,
            &buckets,
            None,
        )
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

type Labels = Vec<(&'static str, String)>;

/// One metric family: a name, help, type and its labelled values (one value with no labels is
/// written without braces).
fn family<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    metric_type: MetricType,
    values: impl IntoIterator<Item = (Labels, M)>,
) -> Result<(), std::fmt::Error> {
    let values: Vec<(Labels, M)> = values.into_iter().collect();
    if values.is_empty() {
        return Ok(());
    }
    let mut family = encoder.encode_descriptor(name, help, None, metric_type)?;
    if values.len() == 1 && values[0].0.is_empty() {
        return values[0].1.encode(family);
    }
    for (labels, value) in values {
        value.encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

fn api_name(key: i16) -> String {
    ApiKey::try_from(key).map_or_else(|_| key.to_string(), |k| format!("{k:?}"))
}

/// Per local partition: (topic, partition, the partition).
fn local_partitions(
    broker: &Broker,
) -> Vec<(String, i32, Arc<crate::storage::partition::Partition>)> {
    let mut out = Vec::new();
    for t in broker.topics() {
        for p in t.local_partitions() {
            out.push((t.name.to_string(), p.index, p));
        }
    }
    out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    out
}

fn tp(topic: &str, partition: i32) -> Labels {
    vec![
        ("topic", topic.to_string()),
        ("partition", partition.to_string()),
    ]
}

impl Collector for BrokerCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let broker = &self.0;
        let stats = &broker.stats;
        let apis: Vec<(i16, &crate::stats::ApiStats)> = stats.apis().collect();

        // Requests (kafka.network:type=RequestMetrics).
        family(
            &mut e,
            "kafka_network_requests",
            "Requests answered, by API and version (RequestsPerSec).",
            MetricType::Counter,
            apis.iter().flat_map(|(k, a)| {
                (0..MAX_VERSIONS).filter_map(move |v| {
                    let n = a.requests[v].load(Ordering::Relaxed);
                    (n > 0).then(|| {
                        (
                            vec![("request", api_name(*k)), ("version", v.to_string())],
                            ConstCounter::new(n),
                        )
                    })
                })
            }),
        )?;
        let per_api = |count: fn(&crate::stats::ApiStats) -> &std::sync::atomic::AtomicU64| {
            apis.iter()
                .map(|(k, a)| {
                    (
                        vec![("request", api_name(*k))],
                        ConstCounter::new(count(a).load(Ordering::Relaxed)),
                    )
                })
                .collect::<Vec<_>>()
        };
        family(
            &mut e,
            "kafka_network_request_errors",
            "Requests that closed their connection (malformed body, response not encodable).",
            MetricType::Counter,
            per_api(|a| &a.errors),
        )?;
        family(
            &mut e,
            "kafka_network_request_bytes",
            "Request bytes received, size prefix included (RequestBytes).",
            MetricType::Counter,
            per_api(|a| &a.request_bytes),
        )?;
        family(
            &mut e,
            "kafka_network_response_bytes",
            "Response bytes written, size prefix included.",
            MetricType::Counter,
            per_api(|a| &a.response_bytes),
        )?;
        family(
            &mut e,
            "kafka_network_request_duration_seconds",
            "Time requests spent in each stage: queue, decode, local, append, remote, encode, \
             response_queue, send, and total (Kafka's RequestQueueTimeMs, LocalTimeMs, \
             RemoteTimeMs, ResponseQueueTimeMs, ResponseSendTimeMs, TotalTimeMs).",
            MetricType::Histogram,
            apis.iter().flat_map(|(k, a)| {
                Stage::ALL.into_iter().filter_map(move |s| {
                    let snap = a.stages[s as usize].snapshot();
                    (snap.count > 0).then(|| {
                        (
                            vec![("request", api_name(*k)), ("stage", s.label().to_string())],
                            Histogram(snap),
                        )
                    })
                })
            }),
        )?;

        // Connections (kafka.server:type=socket-server-metrics).
        family(
            &mut e,
            "kafka_server_socket_server_metrics_connection_count",
            "Open client connections.",
            MetricType::Gauge,
            [(
                vec![],
                ConstGauge::new(stats.connections.load(Ordering::Relaxed)),
            )],
        )?;
        family(
            &mut e,
            "kafka_server_socket_server_metrics_connection_creation",
            "Client connections accepted since start.",
            MetricType::Counter,
            [(
                vec![],
                ConstCounter::new(stats.connections_accepted.load(Ordering::Relaxed)),
            )],
        )?;

        // Authentication (socket-server-metrics successful/failed-authentication-total).
        family(
            &mut e,
            "kafka_server_socket_server_metrics_successful_authentication",
            "Successful authentications (TLS handshakes on SSL listeners, SASL exchanges) since start.",
            MetricType::Counter,
            [(
                vec![],
                ConstCounter::new(stats.authentications.load(Ordering::Relaxed)),
            )],
        )?;
        family(
            &mut e,
            "kafka_server_socket_server_metrics_failed_authentication",
            "Failed authentications (refused TLS handshakes, wrong SASL credentials or mechanism) since start.",
            MetricType::Counter,
            [(
                vec![],
                ConstCounter::new(stats.authentication_failures.load(Ordering::Relaxed)),
            )],
        )?;

        // The log (kafka.log:type=Log, LogFlushStats).
        family(
            &mut e,
            "kafka_log_log_flush_duration_seconds",
            "Partition log flushes (fdatasync of its files) of this process (LogFlushRateAndTimeMs).",
            MetricType::Histogram,
            [(vec![], Histogram(frieda_log::stats::LOG_FLUSH.snapshot()))],
        )?;
        // Where Fetch reads came from (page-cache misses: source="disk").
        let fr = &frieda_log::stats::FETCH_READS;
        let sources = [
            ("tail_cache", &fr.tail_cache),
            ("page_cache", &fr.page_cache),
            ("disk", &fr.disk),
            ("unknown", &fr.unknown),
        ];
        family(
            &mut e,
            "frieda_log_fetch_reads",
            "Fetch reads by source: the in-memory tail cache, the page cache, or the device (a page-cache miss, found with preadv2 RWF_NOWAIT); unknown on file systems without RWF_NOWAIT.",
            MetricType::Counter,
            sources.map(|(src, c)| {
                (
                    vec![("source", src.to_string())],
                    ConstCounter::new(c.0.load(Ordering::Relaxed)),
                )
            }),
        )?;
        family(
            &mut e,
            "frieda_log_fetch_read_bytes",
            "Bytes Fetch read, by source (as frieda_log_fetch_reads).",
            MetricType::Counter,
            sources.map(|(src, c)| {
                (
                    vec![("source", src.to_string())],
                    ConstCounter::new(c.1.load(Ordering::Relaxed)),
                )
            }),
        )?;
        family(
            &mut e,
            "frieda_fetch_zero_copy_bytes",
            "Bytes of consumers' Fetch responses sent from the segment files with sendfile, not copied (fetch.zero.copy).",
            MetricType::Counter,
            [(
                vec![],
                ConstCounter::new(
                    crate::storage::zero_copy::SENT_BYTES.load(Ordering::Relaxed),
                ),
            )],
        )?;
        let parts = local_partitions(broker);
        let per_partition = |f: &dyn Fn(&crate::storage::partition::Partition) -> i64| {
            parts
                .iter()
                .map(|(t, i, p)| (tp(t, *i), ConstGauge::new(f(p))))
                .collect::<Vec<_>>()
        };
        family(
            &mut e,
            "kafka_log_log_log_end_offset",
            "Log end offset of each partition replica on this broker (LogEndOffset).",
            MetricType::Gauge,
            per_partition(&|p| p.reader().log_end_offset()),
        )?;
        family(
            &mut e,
            "kafka_log_log_log_start_offset",
            "Log start offset of each partition replica on this broker (LogStartOffset).",
            MetricType::Gauge,
            per_partition(&|p| p.reader().log_start_offset()),
        )?;
        family(
            &mut e,
            "kafka_cluster_partition_high_watermark",
            "High watermark of each partition replica on this broker.",
            MetricType::Gauge,
            per_partition(&|p| p.high_watermark()),
        )?;
        // Segments and their bytes, read once per partition for both families.
        let segments: Vec<(Labels, usize, u64)> = parts
            .iter()
            .map(|(t, i, p)| {
                let (n, bytes) = p.reader().segment_stats();
                (tp(t, *i), n, bytes)
            })
            .collect();
        family(
            &mut e,
            "kafka_log_log_size",
            "Bytes of record batches in each partition replica's segments (Size).",
            MetricType::Gauge,
            segments
                .iter()
                .map(|(l, _, bytes)| (l.clone(), ConstGauge::new(*bytes as i64))),
        )?;
        family(
            &mut e,
            "kafka_log_log_num_log_segments",
            "Segments of each partition replica (NumLogSegments).",
            MetricType::Gauge,
            segments
                .iter()
                .map(|(l, n, _)| (l.clone(), ConstGauge::new(*n as i64))),
        )?;

        // Replication (kafka.server:type=ReplicaManager, kafka.cluster:type=Partition).
        let mut leaders = 0i64;
        let mut under_count = 0i64;
        let mut under = Vec::new();
        for (t, i, p) in &parts {
            match p.repl.role() {
                Role::Sole => leaders += 1,
                Role::Leader(l) => {
                    leaders += 1;
                    let lacking = l.replicas.iter().any(|r| !l.isr.contains(r));
                    under_count += i64::from(lacking);
                    under.push((tp(t, *i), ConstGauge::new(i64::from(lacking))));
                }
                _ => {}
            }
        }
        family(
            &mut e,
            "kafka_server_replicamanager_partition_count",
            "Partition replicas on this broker (PartitionCount).",
            MetricType::Gauge,
            [(vec![], ConstGauge::new(parts.len() as i64))],
        )?;
        family(
            &mut e,
            "kafka_server_replicamanager_leader_count",
            "Partitions this broker leads (LeaderCount).",
            MetricType::Gauge,
            [(vec![], ConstGauge::new(leaders))],
        )?;
        family(
            &mut e,
            "kafka_server_replicamanager_under_replicated_partitions",
            "Partitions led here with an assigned replica outside the ISR (UnderReplicatedPartitions).",
            MetricType::Gauge,
            [(vec![], ConstGauge::new(under_count))],
        )?;
        family(
            &mut e,
            "kafka_cluster_partition_under_replicated",
            "1 for a partition led here whose ISR lacks an assigned replica (UnderReplicated).",
            MetricType::Gauge,
            under,
        )?;
        if let Some(node) = broker.cluster() {
            let image = node.image();
            let offline = image
                .topics
                .values()
                .flat_map(|t| &t.partitions)
                .filter(|p| p.leader == frieda_meta::NO_LEADER)
                .count();
            family(
                &mut e,
                "kafka_controller_kafkacontroller_offline_partitions_count",
                "Partitions without a leader in this node's metadata image (OfflinePartitionsCount; \
                 every node reports it, Kafka only the active controller).",
                MetricType::Gauge,
                [(vec![], ConstGauge::new(offline as i64))],
            )?;
        }

        // Consumer groups coordinated here: committed offsets and lag where this broker holds
        // the partition (its high watermark).
        let hw: std::collections::HashMap<(String, i32), i64> = parts
            .iter()
            .map(|(t, i, p)| ((t.clone(), *i), p.high_watermark()))
            .collect();
        let mut committed = Vec::new();
        let mut lag = Vec::new();
        for c in broker.groups.all() {
            for g in c.list(&[]) {
                for ((topic, partition), v) in c.offsets.group_offsets(&g.group_id) {
                    let labels = || {
                        vec![
                            ("group", g.group_id.clone()),
                            ("topic", topic.clone()),
                            ("partition", partition.to_string()),
                        ]
                    };
                    committed.push((labels(), ConstGauge::new(v.offset)));
                    if let Some(end) = hw.get(&(topic.clone(), partition)) {
                        lag.push((labels(), ConstGauge::new((end - v.offset).max(0))));
                    }
                }
            }
        }
        committed.sort_by(|a, b| a.0.cmp(&b.0));
        lag.sort_by(|a, b| a.0.cmp(&b.0));
        family(
            &mut e,
            "kafka_consumergroup_current_offset",
            "Committed offset per group and partition, for groups coordinated by this broker.",
            MetricType::Gauge,
            committed,
        )?;
        family(
            &mut e,
            "kafka_consumergroup_lag",
            "High watermark minus committed offset, where this broker holds the partition.",
            MetricType::Gauge,
            lag,
        )?;
        // Share groups (KIP-932): the share-partitions this broker keeps (it leads their
        // partitions), as Kafka's SharePartitionMetrics and the lag of DescribeShareGroupOffsets.
        let mut in_flight = Vec::new();
        let mut acquired = Vec::new();
        let mut start = Vec::new();
        let mut share_lag = Vec::new();
        let mut archived = Vec::new();
        for ((group, topic, partition), entry) in broker.groups.shares.all() {
            let labels = vec![
                ("group", group.clone()),
                ("topic", topic.clone()),
                ("partition", partition.to_string()),
            ];
            let state = entry.state.lock();
            in_flight.push((labels.clone(), ConstGauge::new(state.in_flight() as i64)));
            acquired.push((labels.clone(), ConstGauge::new(state.acquired() as i64)));
            start.push((labels.clone(), ConstGauge::new(state.start_offset())));
            if let Some(end) = hw.get(&(topic.clone(), partition)) {
                let lag = end - state.start_offset() - state.completed_in_flight();
                share_lag.push((labels.clone(), ConstGauge::new(lag.max(0))));
            }
            archived.push((labels, ConstCounter::new(state.archived_total())));
        }
        for v in [&mut in_flight, &mut acquired, &mut start, &mut share_lag] {
            v.sort_by(|a, b| a.0.cmp(&b.0));
        }
        archived.sort_by(|a, b| a.0.cmp(&b.0));
        family(
            &mut e,
            "kafka_server_sharepartitionmetrics_inflightmessagecount",
            "Records in a share-partition's in-flight window (SharePartitionMetrics InFlightMessageCount).",
            MetricType::Gauge,
            in_flight,
        )?;
        family(
            &mut e,
            "frieda_share_partition_acquired_records",
            "Records of a share-partition acquired by a consumer (under an acquisition lock).",
            MetricType::Gauge,
            acquired,
        )?;
        family(
            &mut e,
            "frieda_share_partition_start_offset",
            "A share-partition's start offset: every record below it was acknowledged or archived.",
            MetricType::Gauge,
            start,
        )?;
        family(
            &mut e,
            "frieda_share_partition_lag",
            "Records of a share-partition not yet acknowledged or archived (high watermark minus start offset minus those done above it; DescribeShareGroupOffsets' lag).",
            MetricType::Gauge,
            share_lag,
        )?;
        family(
            &mut e,
            "frieda_share_partition_archived_records",
            "Records a share-partition archived (rejected, or at share.delivery.count.limit).",
            MetricType::Counter,
            archived,
        )?;
        diskless(broker, &mut e)?;
        process::encode(&mut e)
    }
}

/// Diskless topics (issue 60, docs/diskless.md): what compaction did on this broker, its fetch
/// cache's hits, misses and GETs, and the
/// coordinates each partition holds at the coordinators loaded here (so an operator sees a
/// partition nearing `diskless.coordinator.max.batches.per.partition`, where its produces are
/// refused KAFKA_STORAGE_ERROR). Nothing on a broker without the diskless service.
fn diskless(broker: &Broker, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let Some(d) = broker.diskless() else {
        return Ok(());
    };
    let stats = &d.compaction_stats;
    let counters = [
        (
            "frieda_diskless_compaction_runs",
            "Compactions decided here: runs of a partition's batches rewritten into one object.",
            &stats.runs,
        ),
        (
            "frieda_diskless_compaction_coordinates",
            "Batch coordinates those compactions replaced (each run's became one).",
            &stats.coordinates,
        ),
        (
            "frieda_diskless_compaction_bytes",
            "Bytes of the objects compaction wrote.",
            &stats.bytes,
        ),
        (
            "frieda_diskless_compaction_failures",
            "Compactions that failed (the bucket, or the decision refused or not written); tried again.",
            &stats.failures,
        ),
    ];
    let (hits, misses, gets) = d.objects.cache_counts();
    let peers = d.objects.peer_counts();
    let counters = counters.map(|(name, help, v)| (name, help, v.load(Ordering::Relaxed)));
    let cache = [
        (
            "frieda_diskless_fetch_cache_hits",
            "Blocks of diskless objects reads found in the fetch cache (diskless.fetch.cache.*).",
            hits,
        ),
        (
            "frieda_diskless_fetch_cache_misses",
            "Blocks of diskless objects reads did not find in the fetch cache.",
            misses,
        ),
        (
            "frieda_diskless_fetch_cache_gets",
            "GETs of blocks of diskless objects for reads (a miss finding the block's GET under way waits for it).",
            gets,
        ),
        (
            "frieda_diskless_fetch_cache_peer_reads",
            "Blocks of diskless objects this broker got from their owner in its rack instead of the bucket (diskless.fetch.cache.affinity.enable).",
            peers.reads,
        ),
        (
            "frieda_diskless_fetch_cache_peer_fallbacks",
            "Blocks asked of their owner in the rack that it did not give (down, paused, or the bucket failed there); GET here instead.",
            peers.fallbacks,
        ),
        (
            "frieda_diskless_fetch_cache_peer_served",
            "Blocks of diskless objects this broker served to other brokers of its rack as their owner.",
            peers.served,
        ),
    ];
    for (name, help, v) in counters.into_iter().chain(cache) {
        family(
            e,
            name,
            help,
            MetricType::Counter,
            [(Labels::new(), ConstCounter::new(v))],
        )?;
    }
    let mut coordinates = Vec::new();
    let mut refused = Vec::new();
    for index in d.coordinators.indexes() {
        let Some(host) = d.coordinators.get(index) else {
            continue;
        };
        for (p, n, r) in host.coordinate_counts() {
            let topic = broker
                .topic_by_id(&p.topic_id)
                .map_or_else(|| p.topic_id.to_string(), |t| t.name.to_string());
            coordinates.push((tp(&topic, p.partition), ConstGauge::new(n as i64)));
            refused.push((tp(&topic, p.partition), ConstCounter::new(r)));
        }
    }
    family(
        e,
        "frieda_diskless_partition_coordinates",
        "Batch coordinates a diskless partition holds at its coordinator (loaded here); produces are refused KAFKA_STORAGE_ERROR at diskless.coordinator.max.batches.per.partition.",
        MetricType::Gauge,
        coordinates,
    )?;
    family(
        e,
        "frieda_diskless_partition_refused_at_bound",
        "Batches and transaction markers of a diskless partition its coordinator (loaded here) refused KAFKA_STORAGE_ERROR because the partition held diskless.coordinator.max.batches.per.partition coordinates (producers resend them); from 0 when the coordinator is loaded.",
        MetricType::Counter,
        refused,
    )
}
