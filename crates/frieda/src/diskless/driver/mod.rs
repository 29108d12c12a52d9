//! The drivers that run the sans-IO diskless pieces against a real partition and the bucket
//! (build plan steps 3-5): [`coordinator`] hosts the batch coordinator on a
//! `__diskless_coordinator` partition this broker leads, [`append`] uploads produced batches
//! and commits them, [`read`] answers a fetch from the coordinates and the objects.
//!
//! [`route`] says which coordinator a broker asks: the one loaded here, or the one on the leader
//! of the `__diskless_coordinator` partition, through Kafka's Envelope. Any broker takes
//! produces and fetches of every diskless partition (leaderless); [`served`] says which broker
//! Metadata names for a partition (one of the client's rack when its `client.id` says it).

pub mod append;
pub mod coordinator;
pub mod objects;
pub mod read;
pub mod route;
pub mod watch;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::diskless::append::AppendConfig;
use crate::diskless::config::DisklessConfig;
use crate::diskless::coordinator::{BatchCoordinator, DisklessPartition};
use crate::remote::quota::ByteRate;
use crate::remote::store::RemoteStore;

/// The `__diskless_coordinator` partition that coordinates `partition` (one partition for now).
pub fn coordinator_partition_for(_partition: DisklessPartition) -> i32 {
    0
}

/// How often the coordinators loaded here collect garbage (deleted topics, unreferenced
/// objects, orphans).
const GC_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// A diskless topic's retention: `retention.ms` and `retention.bytes` (per partition), -1 for
/// unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// `retention.ms`.
    pub ms: i64,
    /// `retention.bytes`.
    pub bytes: i64,
}

/// The diskless topics in the latest metadata image, by id, with their retention (`None`
/// before there is an image).
pub type LiveTopics =
    Arc<dyn Fn() -> Option<std::collections::HashMap<uuid::Uuid, Retention>> + Send + Sync>;

/// How often the coordinators loaded here look for partitions due for compaction.
const COMPACTION_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// The most runs one partition compacts per round (the next round goes on), so one busy
/// partition does not hold the others back.
const COMPACTIONS_PER_PARTITION_ROUND: usize = 8;

/// A broker's diskless service: its coordinators, its append path and the bucket.
pub struct Diskless {
    /// This broker's id.
    pub broker_id: i32,
    /// The settings.
    pub config: DisklessConfig,
    /// Coordinators loaded here.
    pub coordinators: Arc<coordinator::DisklessCoordinators>,
    /// The append path.
    pub appender: Arc<append::Appender>,
    /// The bucket.
    pub store: Arc<RemoteStore>,
    /// Reads of the objects for fetches, through the fetch cache (which the append path
    /// fills with what it uploads).
    pub objects: Arc<objects::ObjectReader>,
    /// The way to coordinators loaded on other brokers (`None`: only local ones).
    pub link: Option<Arc<dyn route::CoordinatorLink>>,
    /// Compaction's byte budget (`diskless.compaction.max.bytes.per.second`; `None`: none).
    pub compaction_budget: Option<ByteRate>,
    /// What compaction did on this broker since it started (the metrics' counters).
    pub compaction_stats: CompactionStats,
    /// The mirror of a coordinator on another broker, for waiting fetches.
    pub watch: Arc<watch::CoordinatorWatch>,
}

/// Counters of the compactions this broker made since it started (`/metrics`:
/// `frieda_diskless_compaction_*`).
#[derive(Debug, Default)]
pub struct CompactionStats {
    /// Runs decided (each one new object).
    pub runs: AtomicU64,
    /// Coordinates those runs replaced (each run's became one).
    pub coordinates: AtomicU64,
    /// Bytes of the objects written (bytes).
    pub bytes: AtomicU64,
    /// Compactions that failed (the bucket failed, or the decision was refused or not written);
    /// the next round tries again.
    pub failures: AtomicU64,
}

impl Diskless {
    /// The service of broker `broker_id` over `store`; its append timer runs on the current
    /// runtime, and so does the garbage collection of the coordinators loaded here (`live`:
    /// which diskless topics exist; `None`: no collection). `link` reaches coordinators on
    /// other brokers (`None`: only the ones loaded here serve).
    pub fn start(
        broker_id: i32,
        config: DisklessConfig,
        store: Arc<RemoteStore>,
        live: Option<LiveTopics>,
        link: Option<Arc<dyn route::CoordinatorLink>>,
    ) -> Arc<Diskless> {
        let coordinators = Arc::new(coordinator::DisklessCoordinators::default());
        let mut objects = objects::ObjectReader::new(
            store.clone(),
            config.fetch_cache_max_bytes,
            config.fetch_cache_block_bytes,
        );
        if let (true, Some(link)) = (config.fetch_cache_affinity, &link) {
            objects = objects.with_peers(link.clone());
        }
        let objects = Arc::new(objects);
        let appender = append::Appender::new(
            AppendConfig {
                broker_id,
                commit_interval_ms: config.commit_interval_ms,
                buffer_max_bytes: config.buffer_max_bytes,
                upload_max_attempts: config.upload_max_attempts,
                ..AppendConfig::default()
            },
            objects.clone(),
            coordinators.clone(),
            link.clone(),
            config.commit_max_age_ms,
        );
        tokio::spawn(appender.clone().run());
        let compaction_budget = config.compaction_max_bytes_per_second.map(ByteRate::new);
        let service = Arc::new(Diskless {
            broker_id,
            compaction_budget,
            compaction_stats: CompactionStats::default(),
            watch: Arc::default(),
            coordinators,
            appender,
            objects,
            config,
            store,
            link,
        });
        if let Some(live) = live {
            tokio::spawn(collect_garbage(Arc::downgrade(&service), live));
            tokio::spawn(compact(Arc::downgrade(&service)));
        }
        service
    }

    /// The coordinator serving `partition`: loaded here, or on the broker leading its
    /// `__diskless_coordinator` partition.
    ///
    /// Errors: as [`route::resolve`].
    pub fn coordinator(
        &self,
        partition: DisklessPartition,
    ) -> Result<route::CoordinatorRef, kafka_protocol::error::ResponseError> {
        route::resolve(
            &self.coordinators,
            self.link.as_ref(),
            coordinator_partition_for(partition),
        )
    }

    /// Answers a request another broker sent in an Envelope: a block of an object this broker
    /// owns in their rack ([`objects::ObjectReader::serve_block`]), else a call to the
    /// coordinator loaded here ([`route::serve`]).
    ///
    /// Errors: theirs.
    pub async fn serve(
        &self,
        request: crate::diskless::wire::CoordinatorRequest,
    ) -> Result<crate::diskless::wire::Answer, kafka_protocol::error::ResponseError> {
        use crate::diskless::wire::{Answer, Call};
        match request.call {
            Call::Block {
                object,
                index,
                block_bytes,
            } => self
                .objects
                .serve_block(object, index, block_bytes)
                .await
                .map(Answer::Block),
            _ => route::serve(&self.coordinators, request).await,
        }
    }

    /// An empty coordinator with this broker's bounds, to load into.
    pub fn new_coordinator(&self) -> BatchCoordinator {
        BatchCoordinator::new(self.config.max_batches_per_partition)
            .with_max_commit_age(self.config.commit_max_age_ms)
            // each load hands out verification tokens of its own (a new leader's do not match
            // the old one's)
            .with_token_epoch(rand::random())
    }
}

/// Every [`GC_INTERVAL`] while the service lives: each coordinator loaded here forgets the
/// topics the metadata deleted, applies retention (time and bytes), deletes the objects no batch names (after
/// `diskless.object.delete.delay.ms`) and sweeps orphans (after `diskless.orphan.grace.ms`);
/// every `producer.id.expiration.check.interval.ms`, it expires producers.
async fn collect_garbage(service: std::sync::Weak<Diskless>, live: LiveTopics) {
    let expiry_every = match service.upgrade() {
        Some(d) => {
            std::time::Duration::from_millis(d.config.producer_id_expiration_check_interval_ms)
        }
        None => return,
    };
    let mut last_expiry = std::time::Instant::now();
    loop {
        tokio::time::sleep(GC_INTERVAL).await;
        let Some(d) = service.upgrade() else {
            return;
        };
        let Some(host) = d.coordinators.get(0) else {
            continue;
        };
        if let Some(topics) = live() {
            let ids = topics.keys().copied().collect();
            if let Err(e) = host.forget_deleted_topics(&ids).await {
                tracing::debug!(error = ?e, "diskless topic deletions not recorded yet");
                continue;
            }
            for (id, r) in &topics {
                if let Err(e) = host
                    .apply_retention(*id, crate::clock::now_ms(), r.ms, r.bytes)
                    .await
                {
                    tracing::debug!(error = ?e, topic_id = %id, "diskless retention not applied yet");
                }
            }
        }
        if last_expiry.elapsed() >= expiry_every {
            last_expiry = std::time::Instant::now();
            let expiration_ms = d.config.producer_id_expiration_ms;
            match host
                .expire_producers(crate::clock::now_ms(), expiration_ms)
                .await
            {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    producers = n,
                    expiration_ms,
                    "diskless partitions forgot producers idle longer than producer.id.expiration.ms"
                ),
                Err(e) => tracing::debug!(error = ?e, "diskless producer expiry not recorded yet"),
            }
        }
        match host
            .collect_garbage(
                &d.store,
                d.config.object_delete_delay_ms,
                d.config.orphan_grace_ms,
            )
            .await
        {
            Ok((0, 0)) => {}
            Ok((deleted, swept)) => {
                tracing::info!(deleted, swept, "diskless objects deleted from the bucket")
            }
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "diskless garbage collection failed")
            }
        }
    }
}

/// Every [`COMPACTION_INTERVAL`] while the service lives: each coordinator loaded here compacts
/// the partitions that are due (`diskless.compaction.max.bytes`, `diskless.compaction.max.age.ms`;
/// [`coordinator::HostedCoordinator::compact`]), one partition after another, within the byte
/// budget (`diskless.compaction.max.bytes.per.second`; crowded partitions past it).
async fn compact(service: std::sync::Weak<Diskless>) {
    let mut round = 0usize;
    loop {
        tokio::time::sleep(COMPACTION_INTERVAL).await;
        let Some(d) = service.upgrade() else {
            return;
        };
        let Some(host) = d.coordinators.get(0) else {
            continue;
        };
        let policy = crate::diskless::coordinator::CompactionPolicy {
            max_bytes: d.config.compaction_max_bytes,
            max_age_ms: d.config.compaction_max_age_ms,
        };
        let (mut runs, mut coordinates, mut bytes, mut crowded) = (0usize, 0usize, 0u64, 0usize);
        // from a partition one further each round, so none has the budget first every time
        round = round.wrapping_add(1);
        let mut partitions = host.partitions();
        if !partitions.is_empty() {
            let first = round % partitions.len();
            partitions.rotate_left(first);
        }
        'partitions: for partition in partitions {
            for _ in 0..COMPACTIONS_PER_PARTITION_ROUND {
                match host
                    .compact(
                        &d.store,
                        partition,
                        &policy,
                        d.compaction_budget.as_ref(),
                        d.broker_id,
                    )
                    .await
                {
                    Ok(Some(c)) => {
                        runs += 1;
                        coordinates += c.coordinates;
                        bytes += c.bytes;
                        crowded += usize::from(c.crowded);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        if !host.is_active() {
                            break 'partitions; // no longer the coordinator's leader
                        }
                        d.compaction_stats.failures.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(topic_id = %partition.topic_id,
                            partition = partition.partition, error = %e,
                            "diskless compaction failed; the other partitions go on, this one next round");
                        break;
                    }
                }
            }
        }
        if runs > 0 {
            // the counters move with the log line, once a round
            let stats = &d.compaction_stats;
            stats.runs.fetch_add(runs as u64, Ordering::Relaxed);
            stats
                .coordinates
                .fetch_add(coordinates as u64, Ordering::Relaxed);
            stats.bytes.fetch_add(bytes, Ordering::Relaxed);
            tracing::info!(
                runs,
                coordinates,
                bytes,
                crowded,
                "diskless compaction: runs of batches rewritten into objects of their partition"
            );
        }
    }
}

/// Whether `topic` is a diskless topic (`diskless.enable=true`, set at creation).
pub fn is_diskless(topic: &frieda_meta::TopicImage) -> bool {
    topic
        .configs
        .get(crate::diskless::config::DISKLESS_ENABLE)
        .is_some_and(|v| v == "true")
}

/// The rack a client names in its `client.id` for diskless routing: the value of a
/// `diskless_az=<rack>` item, or Inkless's `inkless_az=<rack>`, where items are separated by
/// `,` or spaces (Inkless's pattern `(^|[ ,])inkless_az=([^=, ]*)`: Kafka's Metadata request
/// carries no rack, KIP-1123 would add `client.rack` to producers).
pub fn client_rack(client_id: &str) -> Option<&str> {
    client_id
        .split([',', ' '])
        .find_map(|item| {
            item.strip_prefix("diskless_az=")
                .or_else(|| item.strip_prefix("inkless_az="))
        })
        .filter(|rack| !rack.is_empty() && !rack.contains('='))
}

/// One of `brokers` (not empty) for partition `index` of topic `topic_id`: consecutive
/// partitions go to consecutive brokers, from a start that depends on the topic.
fn spread(brokers: &[i32], topic_id: uuid::Uuid, index: i32) -> i32 {
    let start = topic_id.as_u64_pair().0 ^ topic_id.as_u64_pair().1;
    let at = start.wrapping_add(index as u64) % brokers.len() as u64;
    brokers[at as usize]
}

/// Where a client's diskless partitions are served from, worked out once per request from the
/// metadata image: the live brokers of the client's rack (from its `client_id`, see
/// [`client_rack`]) and all live brokers.
pub struct Routing<'a> {
    image: &'a frieda_meta::MetadataImage,
    in_rack: Vec<i32>,
    live: Vec<i32>,
}

impl<'a> Routing<'a> {
    /// The routing of a client with `client_id` on `image`.
    pub fn new(image: &'a frieda_meta::MetadataImage, client_id: Option<&str>) -> Routing<'a> {
        let in_rack = client_id
            .and_then(client_rack)
            .map(|rack| {
                image
                    .live_brokers()
                    .filter(|b| b.rack.as_deref() == Some(rack))
                    .map(|b| b.id)
                    .collect()
            })
            .unwrap_or_default();
        Routing {
            image,
            in_rack,
            live: image.live_brokers().map(|b| b.id).collect(),
        }
    }

    /// The image it was worked out on.
    pub fn image(&self) -> &'a frieda_meta::MetadataImage {
        self.image
    }

    /// Partition `p` (index `index`) of `topic` as clients are told it (Metadata,
    /// DescribeTopicPartitions, the leader hints of KIP-951). A diskless partition has no
    /// leader of its own: any live broker takes its produces and fetches, so it is told with
    /// one broker as its leader and only replica, chosen as Inkless does (docs/diskless.md,
    /// "Leaderless produce"): one of the client's rack when a live broker is there, else the
    /// partition's leader in the image while it is live (the controller spreads and moves
    /// them), else one of the live brokers; the epoch is the image's. Any other partition as
    /// the image has it.
    pub fn served<'p>(
        &self,
        topic: &frieda_meta::TopicImage,
        index: i32,
        p: &'p frieda_meta::PartitionState,
    ) -> std::borrow::Cow<'p, frieda_meta::PartitionState> {
        if !is_diskless(topic) {
            return std::borrow::Cow::Borrowed(p);
        }
        let leader = if !self.in_rack.is_empty() {
            spread(&self.in_rack, topic.id, index)
        } else if self.image.is_live(p.leader) {
            p.leader
        } else if self.live.is_empty() {
            frieda_meta::NO_LEADER
        } else {
            spread(&self.live, topic.id, index)
        };
        let mut routed = p.clone();
        routed.leader = leader;
        routed.isr = vec![leader];
        routed.replicas = vec![leader];
        std::borrow::Cow::Owned(routed)
    }
}

/// One partition as [`Routing::served`] tells it (a single lookup; a request about many
/// partitions makes one [`Routing`]).
pub fn served<'p>(
    image: &frieda_meta::MetadataImage,
    topic: &frieda_meta::TopicImage,
    index: i32,
    p: &'p frieda_meta::PartitionState,
    client_id: Option<&str>,
) -> std::borrow::Cow<'p, frieda_meta::PartitionState> {
    Routing::new(image, client_id).served(topic, index, p)
}

#[cfg(test)]
mod tests;
