//! Broker configuration: defaults embedded, overridden by a config file, `--override key=value`
//! arguments and the command line's flags.
//!
//! The file is Kafka's Java-properties `server.properties` (any name not ending in `.toml`; Kafka
//! 4.4's shipped KRaft file starts a broker unchanged) or TOML (`*.toml`), both with Kafka's
//! property names (see [`file`]). In TOML, dotted names may be written quoted
//! (`"retention.ms" = 60000`) or as dotted keys (`retention.ms = 60000`); both mean the same.
//! Topic-level names (`retention.ms`, `segment.bytes`, ...) set the defaults of every topic; a
//! topic's own overrides (CreateTopics configs, AlterConfigs) win over them.

pub mod file;

use crate::coordinator::group::CoordinatorConfig;
use crate::coordinator::transaction::TxnConfig;
use crate::logging::{LogOutput, Rotation};
use crate::security::config::SecurityConfig;
use crate::security::SecurityProtocol;
use crate::storage::topic_config::{TopicConfigs, TOPIC_CONFIG_KEYS};
pub use crate::storage::writer::AppendMode;
use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

/// One listener endpoint in Kafka's syntax, `NAME://host:port` (`listeners`,
/// `advertised.listeners`; Kafka's `SocketServerConfigs`): an empty host means every interface
/// when bound, and the machine's host name when advertised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Listener name, upper-cased (`PLAINTEXT`).
    pub name: String,
    /// Host name or address; may be empty.
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Endpoint {
    /// Parses `NAME://host:port` (Kafka's pattern `^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)`,
    /// IPv6 literals in brackets) or a bare `host:port` (a `PLAINTEXT` listener, for `--listen`).
    ///
    /// Errors: a message naming the entry (Kafka: "Unable to parse ... to a broker endpoint").
    pub fn parse(entry: &str) -> anyhow::Result<Endpoint> {
        let entry = entry.trim();
        let (name, rest) = match entry.split_once("://") {
            Some((n, r)) => (n.to_ascii_uppercase(), r),
            None => ("PLAINTEXT".to_string(), entry),
        };
        let bad = || {
            anyhow::anyhow!(
                "unable to parse `{entry}` to a broker endpoint (expected NAME://host:port)"
            )
        };
        let (host, port) = rest.rsplit_once(':').ok_or_else(bad)?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let host_ok = host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-%._:".contains(c));
        if name.is_empty() || !host_ok {
            return Err(bad());
        }
        let port: u16 = port.parse().map_err(|_| bad())?;
        Ok(Endpoint {
            name,
            host: host.to_string(),
            port,
        })
    }

    /// Parses a comma-separated list; names must be unique.
    pub fn parse_list(text: &str) -> anyhow::Result<Vec<Endpoint>> {
        let list = text
            .split(',')
            .filter(|e| !e.trim().is_empty())
            .map(Endpoint::parse)
            .collect::<anyhow::Result<Vec<_>>>()?;
        if list.is_empty() {
            bail!("no listener given");
        }
        for (i, e) in list.iter().enumerate() {
            if list[..i].iter().any(|o| o.name == e.name) {
                bail!(
                    "each listener must have a different name: `{}` twice",
                    e.name
                );
            }
        }
        Ok(list)
    }

    /// The socket address to bind: the host resolved (first address), or every IPv4 interface
    /// for an empty host.
    ///
    /// Errors: a host name that does not resolve.
    pub fn bind_addr(&self) -> anyhow::Result<SocketAddr> {
        if self.host.is_empty() {
            return Ok(SocketAddr::from(([0, 0, 0, 0], self.port)));
        }
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .with_context(|| format!("resolving listener host `{}`", self.host))?
            .next()
            .with_context(|| format!("listener host `{}` has no address", self.host))
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.name, self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.name, self.host, self.port)
        }
    }
}

/// Everything the broker needs to start. Units are in the field names' docs.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Where the broker listens (`listeners`, Kafka's syntax, or `listen` = `host:port`),
    /// default `PLAINTEXT://127.0.0.1:9092`. Each maps to a security protocol
    /// (`listener.security.protocol.map`: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).
    pub listeners: Vec<Endpoint>,
    /// What Metadata tells clients to connect to (`advertised.listeners`); by default the
    /// listeners themselves (an empty host becomes this machine's host name).
    pub advertised_listeners: Option<Vec<Endpoint>>,
    /// `listener.security.protocol.map`: listener name -> security protocol. Default: each
    /// protocol name maps to itself.
    pub security_protocol_map: BTreeMap<String, String>,
    /// TLS, SASL and authorization settings (`ssl.*`, `sasl.*`, `authorizer.class.name`, ...).
    pub security: SecurityConfig,
    /// Root of the partition directories and topic metadata (`data.dir`), default `./frieda-data`.
    pub data_dir: PathBuf,
    /// This broker's id in Metadata and DescribeCluster (`node.id`), default 1.
    pub node_id: i32,
    /// Partitions of an auto-created topic or a CreateTopics with -1 partitions (`num.partitions`), default 1.
    pub num_partitions: i32,
    /// Create unknown topics named in Metadata requests (`auto.create.topics.enable`), default true.
    pub auto_create_topics: bool,
    /// Largest request frame accepted, bytes (`socket.request.max.bytes`), default 100 MiB as in Kafka.
    /// A larger frame length closes the connection.
    pub max_request_bytes: usize,
    /// Requests of one connection being processed at once (`max.inflight.requests.per.connection`),
    /// default 64. The connection stops reading when it is reached (backpressure).
    pub max_inflight_per_connection: usize,
    /// Open client connections accepted at once (`max.connections`), default 10000.
    pub max_connections: usize,
    /// A connection with no request in flight that receives no request for this long is closed
    /// (`connections.max.idle.ms`, Kafka's name and default: 600000). A client that stops reading
    /// its responses is closed when no response could be handed to its socket for this long.
    pub connections_max_idle_ms: u64,
    /// Time allowed to receive the rest of a request once its first byte arrived
    /// (`request.read.timeout.ms`), default 30000: a peer trickling a request a byte at a time
    /// (slowloris) is closed when it runs out.
    pub request_read_timeout_ms: u64,
    /// SO_SNDBUF of client connections, bytes (`socket.send.buffer.bytes`); default -1: the
    /// operating system's (autotuned). Kafka's default is 102400.
    pub socket_send_buffer_bytes: Option<u32>,
    /// SO_RCVBUF of client connections, bytes (`socket.receive.buffer.bytes`); default -1: the
    /// operating system's (autotuned). Kafka's default is 102400.
    pub socket_receive_buffer_bytes: Option<u32>,
    /// Bytes of requests being read or processed, summed over every connection and every
    /// request size (`queued.max.request.bytes`), default 512 MiB; -1 for no limit (Kafka's
    /// default). One eighth is kept for requests up to 64 KiB, so large requests cannot starve
    /// heartbeats. A connection whose next request does not fit waits (stops reading its socket)
    /// until others finish. A request larger than its share takes the whole share.
    pub queued_max_request_bytes: usize,
    /// Threads that append to partition logs and fsync them (`log.writer.threads`), default 1.
    pub log_writer_threads: usize,
    /// The backlog read lane (`backlog.read.threads`, default 2; `backlog.read.priority`,
    /// `idle` (default), `low` or `normal`; `backlog.read.max.bytes.per.second`, consumers'
    /// bytes per second from it, default 0 = no budget): reads that miss the tail cache run
    /// there, at that CPU priority ([`crate::storage::backlog`]).
    pub backlog: crate::storage::backlog::BacklogConfig,
    /// Tiered storage (`remote.log.storage.system.enable`, `remote.log.manager.*`, the object
    /// store's `rsm.config.*` keys; [`crate::remote::config`]).
    pub tiered: crate::remote::config::TieredConfig,
    /// Diskless topics (`diskless.*`, issue 60): see [`crate::diskless::config::DisklessConfig`].
    pub diskless: crate::diskless::config::DisklessConfig,
    /// The bulk-append lane (`bulk.append.min.bytes`, default 65536, -1 for none;
    /// `bulk.append.priority`, `low` (default), `idle` or `normal`): produced batches this
    /// large are appended there ([`crate::storage::bulk`]).
    pub bulk: crate::storage::bulk::BulkConfig,
    /// Tokio worker threads serving the network (`num.network.threads`), default = cores.
    pub network_threads: usize,
    /// How often retention and time-based flushes are checked, ms (`log.retention.check.interval.ms`),
    /// default 300000 (Kafka's default).
    pub retention_check_interval_ms: u64,
    /// Defaults of every topic-level config (Kafka names).
    pub topic_defaults: TopicConfigs,
    /// Design switch (DESIGN.md 1, overlapped processing; `overlapped.processing`), default
    /// true: process many requests of a connection at once. False: one at a time, as Kafka does.
    pub overlapped_processing: bool,
    /// Design switch (DESIGN.md 2, eager vectored writes; `response.vectored.writes`), default
    /// true: every released response waiting goes out in one `writev`. False: one `write` each.
    pub response_vectored_writes: bool,
    /// Design switch (issue 58, goal 4; `fetch.zero.copy`), default true: a consumer's Fetch
    /// answered from the segment files over plain TCP sends them with `sendfile`, as Kafka's
    /// `FileRecords.writeTo` does; false: they are read into memory and written (with TLS
    /// always).
    pub fetch_zero_copy: bool,
    /// Where the Prometheus metrics endpoint listens (`metrics.listen`, `host:port`, HTTP
    /// `GET /metrics`); default unset: no endpoint, and requests are not timed or counted.
    pub metrics_listen: Option<SocketAddr>,
    /// Design switch (DESIGN.md 3, the serving thread model; `log.append.mode`), default
    /// `inline`: see [`AppendMode`].
    pub log_append_mode: AppendMode,
    /// Design switch (batched confirmation, group commit; `log.group.commit`), default true: a
    /// log writer thread covers every append waiting for an fsync with one fsync per partition.
    /// False: each append is fsync'ed on its own before the next is written (only meaningful
    /// with `log.append.mode = "writer"`, where appends and fsyncs share the writer thread).
    pub log_group_commit: bool,
    /// Design switch (batched confirmation, wake-ups; `fetch.batched.wakeups`), default false:
    /// a log writer thread wakes a partition's waiting fetches right after each append (one
    /// `notify_waiters` releases every fetch waiting on that partition). True: once per
    /// partition per round of appends. Only meaningful with `log.append.mode = "writer"`; inline
    /// appends wake waiters once per produced batch. Measured (bench/results/ablation-wakeups-*,
    /// 3 repeats): produce-to-consume p99.9 at 10k/s 18.0 ms batched per round vs 5.2 ms per append.
    pub fetch_batched_wakeups: bool,
    /// Largest fetch response, bytes (`fetch.max.bytes`, Kafka's default 57671680 = 55 MiB): a
    /// fetch asking for more gets at most this (and at least one batch, KIP-74).
    pub fetch_max_bytes: usize,
    /// How often the recovery points are checkpointed, ms (`log.flush.offset.checkpoint.interval.ms`,
    /// default 60000).
    pub recovery_checkpoint_interval_ms: u64,
    /// Log cleaner settings (`log.cleaner.*`).
    pub cleaner: CleanerConfig,
    /// An idempotent producer silent this long is forgotten by each partition, ms
    /// (`producer.id.expiration.ms`, default 86400000 = 1 day).
    pub producer_id_expiration_ms: i64,
    /// How often expired producers are looked for, ms
    /// (`producer.id.expiration.check.interval.ms`, default 600000).
    pub producer_id_expiration_check_interval_ms: u64,
    /// Segment size of the offsets log, bytes (`offsets.topic.segment.bytes`, Kafka's default
    /// 104857600); smaller segments let the log cleaner compact it sooner.
    pub offsets_topic_segment_bytes: u64,
    /// Most partitions one topic may have (`max.partitions.per.topic`, default 10000); more is
    /// INVALID_PARTITIONS. Not a Kafka setting: a guard against a mistyped count (each
    /// partition holds at least one open file).
    pub max_partitions_per_topic: i32,
    /// Most partitions the broker hosts (`max.broker.partitions`, KIP-578's name); more is
    /// INVALID_PARTITIONS. Default 2147483647, no limit of its own, as Kafka: the open-file
    /// budget (`log.segment.files.max`, one file per idle partition) is what bounds a broker.
    pub max_broker_partitions: i32,
    /// Most segment files the broker keeps open (`log.segment.files.max`, not a Kafka setting;
    /// `None`, the default: 80% of the process's open-file limit, which the broker first raises
    /// to its hard limit). A new segment beyond it is refused (KAFKA_STORAGE_ERROR to the
    /// produce, INVALID_PARTITIONS to CreateTopics) and `segment.ms` rolls pause near it; see
    /// `frieda_log::limits`.
    pub log_segment_files_max: Option<usize>,
    /// Shortest time-based roll, ms (`log.segment.ms.min`, default 1000; Redpanda's
    /// `log_segment_ms_min`): a topic's `segment.ms` below it rolls this often.
    pub log_segment_ms_min: i64,
    /// The cluster settings (Kafka's KRaft names); with no `controller.quorum.voters` the
    /// broker runs alone, as before there were clusters.
    pub cluster: ClusterConfig,
    /// `default.replication.factor` for topics created without one (CreateTopics -1,
    /// auto-creation), default 1.
    pub default_replication_factor: i16,
    /// `broker.rack`: reported in Metadata and DescribeCluster; replica placement spreads each
    /// partition over racks (`frieda_meta::placement`), and consumers in a rack may read from a
    /// follower there (`replica_selector`).
    pub rack: Option<String>,
    /// `replica.selector.class` (KIP-392): unset, consumers read from leaders; Kafka's
    /// `org.apache.kafka.common.replica.RackAwareReplicaSelector`, a leader sends a consumer
    /// with `client.rack` to an in-sync follower in its rack. Other classes are refused at
    /// start-up (no plugins). See [`crate::replication::read_replica`].
    pub replica_selector: crate::replication::read_replica::ReplicaSelector,
    /// Group coordinator settings: `group.initial.rebalance.delay.ms` (default 0, as in Kafka's
    /// shipped server.properties; Kafka's built-in default is 3000), `group.min.session.timeout.ms`
    /// (6000), `group.max.session.timeout.ms` (1800000), `offsets.retention.minutes` (10080),
    /// `offsets.retention.check.interval.ms` (600000), `offset.metadata.max.bytes` (4096).
    pub coordinator: CoordinatorConfig,
    /// Transaction coordinator settings (`transaction.*`, `transactional.id.expiration.ms`):
    /// see [`TxnConfig`].
    pub transactions: TxnConfig,
    /// Where and how log lines are written (`log.format` = `text` | `json`, `log.file`,
    /// `log.file.rotation` = `daily` | `hourly` | `never`, `log.file.max.files`, default 7):
    /// see [`crate::logging`].
    pub log_output: LogOutput,
}

impl ClusterConfig {
    /// Whether this node is part of a cluster (`controller.quorum.voters` or
    /// `controller.quorum.bootstrap.servers` is set).
    pub fn enabled(&self) -> bool {
        !self.voters.is_empty() || !self.bootstrap_servers.is_empty()
    }

    /// Whether this node joins an existing quorum through `controller.quorum.bootstrap.servers`
    /// (no static voters): it becomes an observer of the metadata log, and a voter once
    /// `kafka-metadata-quorum add-controller` adds it (KIP-853).
    pub fn joins_by_bootstrap(&self) -> bool {
        self.voters.is_empty() && !self.bootstrap_servers.is_empty()
    }
}

/// What makes a broker part of a cluster (Kafka's KRaft settings).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    /// `process.roles`: this node votes in the metadata quorum (`controller`).
    pub controller: bool,
    /// `process.roles`: this node serves clients and hosts partitions (`broker`).
    pub broker: bool,
    /// `controller.quorum.voters`: voter id -> `host:port` of its controller listener.
    pub voters: BTreeMap<u64, String>,
    /// `controller.quorum.bootstrap.servers` (KIP-853): `host:port` of controllers to ask for the
    /// voters. A single controller naming only itself becomes a one-voter quorum (see
    /// [`BrokerConfig::finish`]); any other node joins the existing quorum as an observer
    /// ([`ClusterConfig::joins_by_bootstrap`]).
    pub bootstrap_servers: Vec<String>,
    /// `controller.listener.names` (default `CONTROLLER`): the listeners the quorum speaks on.
    pub controller_listener_names: Vec<String>,
    /// `inter.broker.listener.name`: the client listener other brokers connect to (follower
    /// fetches, transaction markers); default the first client listener. It must be PLAINTEXT
    /// (brokers do not speak TLS or SASL to each other yet).
    pub inter_broker_listener_name: Option<String>,
    /// `broker.session.timeout.ms` (Kafka 9000): a broker whose heartbeats stop this long is
    /// fenced and its partitions get new leaders.
    pub broker_session_timeout_ms: u64,
    /// `broker.heartbeat.interval.ms` (Kafka 2000; Frieda 500 so failover takes seconds).
    pub broker_heartbeat_interval_ms: u64,
    /// `controller.quorum.election.timeout.ms` (Kafka 1000).
    pub election_timeout_ms: u64,
    /// `replica.lag.time.max.ms` (Kafka 30000): a follower not caught up with the leader for this
    /// long leaves the ISR.
    pub replica_lag_time_max_ms: u64,
    /// `replica.stall.max.ms` (Frieda's, default 1500): a follower that sends no fetch at all
    /// for this long while the leader has records it lacks leaves the ISR (a paused or hung
    /// follower would otherwise hold `acks=all` for `replica.lag.time.max.ms`).
    pub replica_stall_max_ms: u64,
    /// `replica.fetch.wait.max.ms` (Kafka 500): how long a follower's fetch waits for data.
    pub replica_fetch_wait_max_ms: u64,
    /// `replica.fetch.max.bytes` (Kafka 1048576): bytes per partition per follower fetch.
    pub replica_fetch_max_bytes: usize,
    /// `offsets.topic.replication.factor` (Kafka 3; capped by the brokers alive at creation).
    pub offsets_topic_replication_factor: i16,
    /// `offsets.topic.num.partitions` (Kafka 50).
    pub offsets_topic_num_partitions: i32,
    /// `auto.leader.rebalance.enable` (Kafka true): the controller gives leadership back to
    /// each partition's preferred (first) replica once it is in sync again.
    pub auto_leader_rebalance: bool,
    /// `leader.imbalance.check.interval.seconds` as ms (Kafka 300 s).
    pub leader_imbalance_check_interval_ms: u64,
    /// `leader.imbalance.per.broker.percentage` (Kafka 10): a broker's preferred partitions are
    /// handed back once more than this share of them are led elsewhere.
    pub leader_imbalance_per_broker_percentage: u32,
    /// `leader.placement` (`preferred`, Kafka's, or `measured`: leaderships follow the brokers'
    /// measured leader cost, issue 33), `leader.placement.check.interval.ms` (2000) and
    /// `leader.placement.max.moves.per.minute` (60). See `frieda_meta::leadership`.
    pub leader_placement: frieda_meta::PlacementConfig,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            controller: true,
            broker: true,
            voters: BTreeMap::new(),
            bootstrap_servers: Vec::new(),
            controller_listener_names: vec!["CONTROLLER".into()],
            inter_broker_listener_name: None,
            broker_session_timeout_ms: 9_000,
            broker_heartbeat_interval_ms: 500,
            election_timeout_ms: 1_000,
            replica_lag_time_max_ms: 30_000,
            replica_stall_max_ms: 1_500,
            replica_fetch_wait_max_ms: 500,
            replica_fetch_max_bytes: 1 << 20,
            offsets_topic_replication_factor: 3,
            offsets_topic_num_partitions: 50,
            auto_leader_rebalance: true,
            leader_imbalance_check_interval_ms: 300_000,
            leader_imbalance_per_broker_percentage: 10,
            leader_placement: frieda_meta::PlacementConfig::default(),
        }
    }
}

/// The log cleaner's settings (Kafka's `CleanerConfig`; defaults as in Kafka 4.x).
#[derive(Debug, Clone, PartialEq)]
pub struct CleanerConfig {
    /// `log.cleaner.enable`, default true: compacted topics are cleaned.
    pub enable: bool,
    /// `log.cleaner.backoff.ms`, default 15000: sleep when no log needs cleaning.
    pub backoff_ms: u64,
    /// `log.cleaner.dedupe.buffer.size`, default 134217728 (128 MiB): memory for the offset map
    /// of one pass (24 bytes per distinct key).
    pub dedupe_buffer_bytes: usize,
    /// `log.cleaner.io.max.bytes.per.second`, default unlimited: bytes read plus written per
    /// second by the cleaner.
    pub io_max_bytes_per_second: f64,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        CleanerConfig {
            enable: true,
            backoff_ms: 15_000,
            dedupe_buffer_bytes: 128 << 20,
            io_max_bytes_per_second: f64::INFINITY,
        }
    }
}

impl Default for BrokerConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        BrokerConfig {
            listeners: vec![Endpoint {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9092,
            }],
            advertised_listeners: None,
            security_protocol_map: ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
                .iter()
                .map(|p| (p.to_string(), p.to_string()))
                .collect(),
            security: SecurityConfig::default(),
            data_dir: PathBuf::from("./frieda-data"),
            node_id: 1,
            num_partitions: 1,
            auto_create_topics: true,
            max_request_bytes: 100 * 1024 * 1024,
            max_inflight_per_connection: 64,
            max_connections: 10_000,
            connections_max_idle_ms: 600_000,
            request_read_timeout_ms: 30_000,
            queued_max_request_bytes: 512 * 1024 * 1024,
            socket_send_buffer_bytes: None,
            socket_receive_buffer_bytes: None,
            log_writer_threads: 1,
            backlog: Default::default(),
            tiered: Default::default(),
            diskless: Default::default(),
            bulk: Default::default(),
            network_threads: cores,
            retention_check_interval_ms: 300_000,
            topic_defaults: TopicConfigs::default(),
            overlapped_processing: true,
            response_vectored_writes: true,
            fetch_zero_copy: true,
            metrics_listen: None,
            log_append_mode: AppendMode::Inline,
            log_group_commit: true,
            fetch_batched_wakeups: false,
            fetch_max_bytes: 57_671_680,
            recovery_checkpoint_interval_ms: 60_000,
            cleaner: CleanerConfig::default(),
            producer_id_expiration_ms: 86_400_000,
            producer_id_expiration_check_interval_ms: 600_000,
            offsets_topic_segment_bytes: 104_857_600,
            max_partitions_per_topic: 10_000,
            max_broker_partitions: i32::MAX,
            log_segment_files_max: None,
            log_segment_ms_min: frieda_log::limits::DEFAULT_MIN_SEGMENT_MS,
            cluster: ClusterConfig::default(),
            default_replication_factor: 1,
            rack: None,
            replica_selector: Default::default(),
            coordinator: CoordinatorConfig::default(),
            transactions: TxnConfig::default(),
            log_output: LogOutput {
                max_files: 7,
                ..LogOutput::default()
            },
        }
    }
}

impl BrokerConfig {
    /// Reads a config file (properties or TOML, see [`file::read_settings`]) over the defaults,
    /// then `overrides` (`--override key=value`) over the file; see [`from_settings`](Self::from_settings).
    /// The command line's flags and [`finish`](Self::finish) come after.
    ///
    /// Errors: the file cannot be read or parsed; every unknown key and bad value at once.
    pub fn load(path: Option<&Path>, overrides: &[(String, String)]) -> anyhow::Result<Loaded> {
        let mut settings = match path {
            Some(p) => file::read_settings(p)?,
            None => Vec::new(),
        };
        settings.extend(overrides.iter().cloned());
        let loaded = Self::from_settings(&settings);
        match path {
            Some(p) => loaded.with_context(|| format!("in config file {}", p.display())),
            None => loaded,
        }
    }

    /// Parses TOML text over the defaults and [`finish`](Self::finish)es it.
    pub fn from_toml(text: &str) -> anyhow::Result<BrokerConfig> {
        let mut cfg = Self::from_settings(&file::toml_settings(text)?)?.config;
        cfg.finish()?;
        Ok(cfg)
    }

    /// Parses Java-properties text (Kafka's `server.properties`) over the defaults and
    /// [`finish`](Self::finish)es it.
    pub fn from_properties(text: &str) -> anyhow::Result<Loaded> {
        let mut loaded = Self::from_settings(&file::properties_settings(text)?)?;
        loaded.config.finish()?;
        Ok(loaded)
    }

    /// Applies `settings` in order over the defaults (a later value of a key wins).
    ///
    /// Kafka broker settings that mean nothing in Frieda are collected in
    /// [`Loaded::unused_kafka_keys`]. Errors: one message listing every key that is neither
    /// Frieda's nor Kafka's (with "did you mean" for near misses) and every bad value (naming
    /// the key, the value and what was expected).
    pub fn from_settings(settings: &[(String, String)]) -> anyhow::Result<Loaded> {
        let mut cfg = BrokerConfig::default();
        let mut unused = Vec::new();
        let mut unknown = Vec::new();
        let mut bad = Vec::new();
        for (key, value) in settings {
            match cfg.set(key, value) {
                Ok(()) => {}
                Err(e) if e.downcast_ref::<UnknownSetting>().is_some() => {
                    if file::is_kafka_broker_key(key) {
                        if !unused.contains(key) {
                            unused.push(key.clone());
                        }
                    } else {
                        let known = file::kafka_broker_keys()
                            .chain(file::FRIEDA_ONLY_KEYS.iter().copied())
                            .chain(TOPIC_CONFIG_KEYS.iter().map(|k| k.name));
                        unknown.push(match file::did_you_mean(key, known) {
                            Some(near) => format!("`{key}` (did you mean `{near}`?)"),
                            None => format!("`{key}`"),
                        });
                    }
                }
                Err(e) => bad.push(format!("config key `{key}` = `{value}`: {}", explain(&e))),
            }
        }
        let mut problems = Vec::new();
        if !unknown.is_empty() {
            problems.push(format!(
                "unknown setting{} (neither Kafka's nor Frieda's): {}",
                if unknown.len() == 1 { "" } else { "s" },
                unknown.join(", ")
            ));
        }
        problems.extend(bad);
        if !problems.is_empty() {
            bail!("{}", problems.join("; "));
        }
        Ok(Loaded {
            config: cfg,
            unused_kafka_keys: unused,
        })
    }

    /// Completes a configuration once the file, the overrides and the command line are applied:
    /// a single controller whose `controller.quorum.bootstrap.servers` is itself becomes a
    /// one-voter quorum (what Kafka's `kafka-storage format --standalone` makes of Kafka's
    /// shipped server.properties); with other controllers named there the node joins their
    /// quorum as an observer (`kafka-storage format --no-initial-controllers`, KIP-853); then
    /// [`check`](Self::check).
    ///
    /// Errors: whatever [`check`](Self::check) refuses.
    pub fn finish(&mut self) -> anyhow::Result<()> {
        let c = &self.cluster;
        if c.voters.is_empty() && !c.bootstrap_servers.is_empty() {
            let own = self
                .listeners
                .iter()
                .find(|l| c.controller_listener_names.contains(&l.name));
            let standalone = match (c.controller, own, c.bootstrap_servers.as_slice()) {
                (true, Some(own), [only]) => Endpoint::parse(only)
                    .ok()
                    .filter(|b| b.port == own.port && is_this_host(&b.host, &own.host))
                    .map(|_| only.clone()),
                _ => None,
            };
            if let Some(addr) = standalone {
                let id = u64::try_from(self.node_id).context("config key `node.id`")?;
                self.cluster.voters = BTreeMap::from([(id, addr)]);
            }
        }
        self.check()
    }

    /// Checks what no single key can: every listener speaks a supported security protocol, and
    /// what is advertised is routable. Called after the file and the command line are applied.
    ///
    /// Errors: a message naming the setting.
    pub fn check(&self) -> anyhow::Result<()> {
        // Topic defaults set in the file obey Kafka's tiered-storage rules too (a broker-wide
        // `remote.storage.enable=true` would tier every topic, refused unless tiering is on).
        self.topic_defaults
            .check_tiering(&TopicConfigs::default(), None, self.tiered.enabled)
            .context("topic defaults")?;
        if self
            .topic_defaults
            .get(crate::diskless::config::DISKLESS_ENABLE)
            == Some("true")
        {
            bail!("`diskless.enable=true` is a topic config: a broker-wide default is refused");
        }
        self.tiered.check(self.cluster.enabled())?;
        self.diskless.check()?;
        for l in &self.listeners {
            let protocol = self.listener_protocol(&l.name).with_context(|| {
                format!(
                    "config key `listener.security.protocol.map`: no security protocol defined for listener {}",
                    l.name
                )
            })?;
            if protocol.uses_tls()
                && self
                    .security
                    .listener_value(&l.name, "ssl.keystore.location")
                    .is_none()
                && self
                    .security
                    .listener_value(&l.name, "ssl.keystore.certificate.chain")
                    .is_none()
            {
                bail!(
                    "config key `listeners`: listener {} uses {} but has no key store: set ssl.keystore.location (a PEM file with the private key and certificate chain), or listener.name.{}.ssl.keystore.location",
                    l.name,
                    protocol.name(),
                    l.name.to_ascii_lowercase()
                );
            }
            if self.is_controller_listener(&l.name) {
                self.check_controller_listener(&l.name, protocol)?;
            }
        }
        for (i, a) in self.listeners.iter().enumerate() {
            if self.listeners[..i]
                .iter()
                .any(|b| b.port == a.port && a.port != 0)
            {
                bail!(
                    "config key `listeners`: each listener must have a different port ({} twice)",
                    a.port
                );
            }
        }
        if let Some(adv) = &self.advertised_listeners {
            for a in adv {
                if !self.listeners.iter().any(|l| l.name == a.name) {
                    bail!(
                        "config key `advertised.listeners`: {} is not one of the listeners' names",
                        a.name
                    );
                }
            }
        }
        if self.cluster.enabled() {
            let c = &self.cluster;
            if !c.broker && !c.controller {
                bail!("config key `process.roles`: a node must be a broker, a controller or both");
            }
            let id = u64::try_from(self.node_id).unwrap_or(u64::MAX);
            if c.controller && c.joins_by_bootstrap() && !c.broker {
                bail!("config key `process.roles`: a controller joining an existing quorum through controller.quorum.bootstrap.servers must also be a broker (process.roles=broker,controller) for now: it becomes an observer through its broker heartbeat; or list it in controller.quorum.voters");
            }
            if c.controller && c.joins_by_bootstrap() {
                if self.controller_listener().is_none() {
                    bail!("config key `listeners`: a controller needs a listener named in controller.listener.names ({:?})", c.controller_listener_names);
                }
            } else if c.controller {
                if !c.voters.contains_key(&id) {
                    bail!("config key `controller.quorum.voters`: this controller (node.id {}) is not one of the voters {:?}", self.node_id, c.voters);
                }
                if self.controller_listener().is_none() {
                    bail!("config key `listeners`: a controller needs a listener named in controller.listener.names ({:?})", c.controller_listener_names);
                }
            } else if c.voters.contains_key(&id) {
                bail!("config key `process.roles`: node {} is a voter, so its roles must include `controller`", self.node_id);
            } else if self.controller_listener().is_none() {
                bail!("config key `listeners`: a broker-only node needs a listener named in controller.listener.names ({:?}) too: the metadata log is replicated to it there", c.controller_listener_names);
            }
            if c.broker && self.client_listeners().next().is_none() {
                bail!("config key `listeners`: a broker needs a listener that is not a controller listener");
            }
            if let (true, Some(name)) = (c.broker, &c.inter_broker_listener_name) {
                // Followers and coordinators connect to this listener (its TLS and SASL client
                // settings are checked when the broker starts).
                if !self.client_listeners().any(|l| &l.name == name) {
                    bail!("config key `inter.broker.listener.name`: {name} is not one of the client listeners");
                }
            }
        } else if self.client_listeners().next().is_none() {
            bail!("config key `listeners`: controller listeners need controller.quorum.voters or controller.quorum.bootstrap.servers");
        }
        if !self.cluster.enabled() || self.cluster.broker {
            let (host, _) = self.advertised();
            if host == "0.0.0.0" {
                bail!("config key `advertised.listeners`: cannot use the nonroutable meta-address 0.0.0.0; use a routable IP address (set advertised.listeners)");
            }
        }
        Ok(())
    }

    /// What a secured controller listener needs beyond any listener's settings: nodes
    /// authenticate each other on it, so SSL asks for client certificates (mutual TLS) and
    /// SASL offers the mechanism nodes log in with (`sasl.mechanism.controller.protocol`,
    /// PLAIN).
    fn check_controller_listener(
        &self,
        name: &str,
        protocol: SecurityProtocol,
    ) -> anyhow::Result<()> {
        let lower = name.to_ascii_lowercase();
        if protocol == SecurityProtocol::Ssl {
            let auth = self
                .security
                .listener_value(name, "ssl.client.auth")
                .unwrap_or("none")
                .trim()
                .to_ascii_lowercase();
            if auth != "required" && auth != "requested" {
                bail!("config key `listener.name.{lower}.ssl.client.auth`: the SSL controller listener {name} authenticates nodes by their certificates (mutual TLS): set it to required");
            }
        }
        if protocol.uses_sasl() {
            let mechanism = self
                .security
                .listener_value(name, "sasl.mechanism.controller.protocol")
                .unwrap_or("PLAIN")
                .trim();
            if mechanism != "PLAIN" {
                bail!("config key `sasl.mechanism.controller.protocol`: `{mechanism}` is not supported (PLAIN over SASL_SSL: SCRAM credentials live in the metadata log, which a node must reach before it has them)");
            }
            let enabled = self
                .security
                .listener_value(name, "sasl.enabled.mechanisms")
                .unwrap_or("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512");
            if !enabled.split(',').any(|m| m.trim() == "PLAIN") {
                bail!("config key `listener.name.{lower}.sasl.enabled.mechanisms`: the controller listener {name} must enable PLAIN, the mechanism nodes log in with (sasl.mechanism.controller.protocol)");
            }
        }
        Ok(())
    }

    /// The security protocol of listener `name` (`listener.security.protocol.map`; controller
    /// listeners default to PLAINTEXT, as in Kafka). `None`: unmapped or unknown protocol.
    pub fn listener_protocol(&self, name: &str) -> Option<SecurityProtocol> {
        match self.security_protocol_map.get(name) {
            Some(p) => SecurityProtocol::parse(p),
            None => self
                .is_controller_listener(name)
                .then_some(SecurityProtocol::Plaintext),
        }
    }

    /// Every listener's name and security protocol, the controller listener's included
    /// (PLAINTEXT for one not mapped, which [`check`](Self::check) refuses).
    pub fn listener_protocols(&self) -> Vec<(String, SecurityProtocol)> {
        self.listeners
            .iter()
            .map(|l| {
                (
                    l.name.clone(),
                    self.listener_protocol(&l.name)
                        .unwrap_or(SecurityProtocol::Plaintext),
                )
            })
            .collect()
    }

    /// Whether listener `name` is a controller listener (`controller.listener.names`).
    pub fn is_controller_listener(&self, name: &str) -> bool {
        self.cluster.enabled()
            && self
                .cluster
                .controller_listener_names
                .iter()
                .any(|n| n == name)
    }

    /// The listeners clients connect to (every listener but the controller's).
    pub fn client_listeners(&self) -> impl Iterator<Item = &Endpoint> {
        self.listeners
            .iter()
            .filter(|l| !self.is_controller_listener(&l.name))
    }

    /// This node's controller listener (cluster mode).
    pub fn controller_listener(&self) -> Option<&Endpoint> {
        self.listeners
            .iter()
            .find(|l| self.is_controller_listener(&l.name))
    }

    /// Applies one setting. Errors: [`UnknownSetting`] for a name Frieda does not know, else a
    /// message saying what the value should be.
    fn set(&mut self, key: &str, value: &str) -> anyhow::Result<()> {
        let text = value.trim().to_string();
        let positive = |text: &str| -> anyhow::Result<u64> {
            let n: u64 = text.parse().context("expected a positive integer")?;
            if n == 0 {
                bail!("must be at least 1");
            }
            Ok(n)
        };
        match key {
            "listen" => self.listeners = vec![Endpoint::parse(&text)?],
            "listeners" => self.listeners = Endpoint::parse_list(&text)?,
            "advertised.listener" | "advertised.listeners" => {
                self.advertised_listeners = Some(Endpoint::parse_list(&text)?)
            }
            "listener.security.protocol.map" => {
                let mut map = BTreeMap::new();
                for pair in text.split(',').filter(|p| !p.trim().is_empty()) {
                    let (name, proto) = pair
                        .split_once(':')
                        .with_context(|| format!("expected NAME:PROTOCOL, got `{pair}`"))?;
                    let proto = proto.trim().to_ascii_uppercase();
                    if SecurityProtocol::parse(&proto).is_none() {
                        bail!("unknown security protocol `{proto}` (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)");
                    }
                    map.insert(name.trim().to_ascii_uppercase(), proto);
                }
                self.security_protocol_map = map;
            }
            "data.dir" | "log.dirs" | "log.dir" => {
                if text.contains(',') {
                    bail!("one data directory only (a list of log.dirs is not supported)");
                }
                self.data_dir = PathBuf::from(text)
            }
            "node.id" | "broker.id" => {
                let id: i32 = text.parse().context("expected an integer")?;
                if id < 0 {
                    bail!("must be 0 or more (it names this broker in Metadata)");
                }
                self.node_id = id;
            }
            "num.partitions" => {
                let n: i32 = text.parse()?;
                if n < 1 {
                    bail!("must be at least 1");
                }
                self.num_partitions = n;
            }
            "auto.create.topics.enable" => self.auto_create_topics = text.parse()?,
            k if self.tiered.set(k, &text)? => {}
            k if self.diskless.set(k, &text)? => {}
            "socket.request.max.bytes" => self.max_request_bytes = positive(&text)? as usize,
            "max.inflight.requests.per.connection" => {
                self.max_inflight_per_connection = positive(&text)? as usize
            }
            "max.connections" => self.max_connections = positive(&text)? as usize,
            "connections.max.idle.ms" => self.connections_max_idle_ms = positive(&text)?,
            "request.read.timeout.ms" => self.request_read_timeout_ms = positive(&text)?,
            "socket.send.buffer.bytes" => self.socket_send_buffer_bytes = buffer_size(&text)?,
            "socket.receive.buffer.bytes" => self.socket_receive_buffer_bytes = buffer_size(&text)?,
            "queued.max.request.bytes" => {
                let n: i64 = text.parse()?;
                self.queued_max_request_bytes = match n {
                    -1 => usize::MAX,
                    n if n >= 1 => usize::try_from(n)?,
                    _ => bail!("must be -1 or at least 1"),
                };
            }
            "log.writer.threads" => self.log_writer_threads = positive(&text)? as usize,
            "backlog.read.threads" => self.backlog.threads = positive(&text)? as usize,
            "backlog.read.priority" => self.backlog.priority = text.parse()?,
            "backlog.read.max.bytes.per.second" => {
                self.backlog.max_bytes_per_second = text.parse::<u64>()?
            }
            "bulk.append.min.bytes" => {
                let n: i64 = text.parse()?;
                self.bulk.min_bytes = if n < 0 { usize::MAX } else { n as usize };
            }
            "bulk.append.priority" => self.bulk.priority = text.parse()?,
            "num.network.threads" => self.network_threads = positive(&text)? as usize,
            "log.retention.check.interval.ms" => {
                self.retention_check_interval_ms = positive(&text)?.max(10)
            }
            "log.flush.offset.checkpoint.interval.ms" => {
                self.recovery_checkpoint_interval_ms = positive(&text)?
            }
            "fetch.max.bytes" => {
                let n = positive(&text)?;
                if n < 1024 {
                    bail!("must be at least 1024");
                }
                self.fetch_max_bytes = n as usize;
            }
            "log.cleaner.enable" => self.cleaner.enable = text.parse()?,
            "log.cleaner.threads" => {
                if positive(&text)? != 1 {
                    bail!("Frieda runs one cleaner thread");
                }
            }
            "log.cleaner.backoff.ms" => self.cleaner.backoff_ms = positive(&text)?,
            "log.cleaner.dedupe.buffer.size" => {
                let n = positive(&text)?;
                if n < 1 << 20 {
                    bail!("must be at least 1048576 (1 MiB)");
                }
                self.cleaner.dedupe_buffer_bytes = n as usize;
            }
            "log.cleaner.io.max.bytes.per.second" => {
                let n: f64 = text.parse().context("expected a number")?;
                if n.is_nan() || n <= 0.0 {
                    bail!("must be positive");
                }
                self.cleaner.io_max_bytes_per_second = n;
            }
            "producer.id.expiration.ms" => {
                self.producer_id_expiration_ms = i64::try_from(positive(&text)?)?;
                // diskless partitions' batch coordinators expire producers by it too
                self.diskless.producer_id_expiration_ms = self.producer_id_expiration_ms;
            }
            "producer.id.expiration.check.interval.ms" => {
                self.producer_id_expiration_check_interval_ms = positive(&text)?;
                self.diskless.producer_id_expiration_check_interval_ms =
                    self.producer_id_expiration_check_interval_ms;
            }
            "offsets.topic.segment.bytes" => {
                let n = positive(&text)?;
                if n < 1024 {
                    bail!("must be at least 1024");
                }
                self.offsets_topic_segment_bytes = n;
            }
            "max.partitions.per.topic" => {
                self.max_partitions_per_topic = i32::try_from(positive(&text)?)?
            }
            "max.broker.partitions" => {
                self.max_broker_partitions = i32::try_from(positive(&text)?)?
            }
            "log.segment.files.max" => {
                self.log_segment_files_max = Some(usize::try_from(positive(&text)?)?)
            }
            "log.segment.ms.min" => {
                self.log_segment_ms_min = i64::try_from(positive(&text)?)?;
            }
            "overlapped.processing" => self.overlapped_processing = text.parse()?,
            "response.vectored.writes" => self.response_vectored_writes = text.parse()?,
            "fetch.zero.copy" => self.fetch_zero_copy = text.parse()?,
            "metrics.listen" => {
                self.metrics_listen = if text.trim().is_empty() {
                    None
                } else {
                    Some(
                        text.trim()
                            .parse()
                            .context("expected host:port, e.g. 127.0.0.1:9644")?,
                    )
                }
            }
            "log.append.mode" => {
                self.log_append_mode = match text.as_str() {
                    "inline" => AppendMode::Inline,
                    "writer" => AppendMode::Writer,
                    _ => bail!("expected \"inline\" or \"writer\""),
                }
            }
            "log.group.commit" => self.log_group_commit = text.parse()?,
            "fetch.batched.wakeups" => self.fetch_batched_wakeups = text.parse()?,
            "group.initial.rebalance.delay.ms" => {
                self.coordinator.group.initial_rebalance_delay =
                    std::time::Duration::from_millis(text.parse()?)
            }
            "group.min.session.timeout.ms" => {
                self.coordinator.group.min_session_timeout =
                    std::time::Duration::from_millis(text.parse()?)
            }
            "group.max.session.timeout.ms" => {
                self.coordinator.group.max_session_timeout =
                    std::time::Duration::from_millis(text.parse()?)
            }
            "group.consumer.session.timeout.ms" => {
                self.coordinator.consumer.session_timeout =
                    std::time::Duration::from_millis(positive(&text)?)
            }
            "group.consumer.heartbeat.interval.ms" => {
                self.coordinator.consumer.heartbeat_interval =
                    std::time::Duration::from_millis(positive(&text)?)
            }
            "group.consumer.max.size" => {
                self.coordinator.consumer.max_size = usize::try_from(positive(&text)?)?
            }
            "group.streams.session.timeout.ms" => {
                self.coordinator.streams.session_timeout =
                    std::time::Duration::from_millis(positive(&text)?)
            }
            "group.streams.heartbeat.interval.ms" => {
                self.coordinator.streams.heartbeat_interval =
                    std::time::Duration::from_millis(positive(&text)?)
            }
            "group.streams.initial.rebalance.delay.ms" => {
                self.coordinator.streams.initial_rebalance_delay =
                    std::time::Duration::from_millis(text.parse()?)
            }
            "group.share.session.timeout.ms" => {
                self.coordinator.share.session_timeout =
                    std::time::Duration::from_millis(positive(&text)?)
            }
            "group.share.heartbeat.interval.ms" => {
                self.coordinator.share.heartbeat_interval =
                    std::time::Duration::from_millis(positive(&text)?)
            }
            "group.share.max.size" => {
                self.coordinator.share.max_size = usize::try_from(positive(&text)?)?
            }
            "group.share.record.lock.duration.ms" => {
                self.coordinator.share_records.partition.lock_duration_ms = positive(&text)?
            }
            "group.share.delivery.count.limit" => {
                self.coordinator
                    .share_records
                    .partition
                    .delivery_count_limit = u16::try_from(positive(&text)?)?
            }
            "group.share.partition.max.record.locks" => {
                self.coordinator.share_records.partition.max_record_locks =
                    usize::try_from(positive(&text)?)?
            }
            "group.share.max.share.sessions" => {
                self.coordinator.share_records.max_share_sessions =
                    usize::try_from(positive(&text)?)?
            }
            "share.auto.offset.reset" => {
                use crate::coordinator::share::AutoOffsetReset;
                self.coordinator.share_records.auto_offset_reset = match text.as_str() {
                    "earliest" => AutoOffsetReset::Earliest,
                    "latest" => AutoOffsetReset::Latest,
                    _ => anyhow::bail!("expected \"earliest\" or \"latest\""),
                }
            }
            "errors.deadletterqueue.auto.create.topics.enable" => {
                self.coordinator.share_records.dlq_auto_create = text.parse()?
            }
            "errors.deadletterqueue.topic.name.prefix" => {
                self.coordinator.share_records.dlq_topic_prefix = text.clone()
            }
            "share.isolation.level" => {
                self.coordinator.share_records.read_committed = match text.as_str() {
                    "read_committed" => true,
                    "read_uncommitted" => false,
                    _ => anyhow::bail!("expected \"read_committed\" or \"read_uncommitted\""),
                }
            }
            "group.streams.max.size" => {
                self.coordinator.streams.max_size = usize::try_from(positive(&text)?)?
            }
            "group.consumer.assignors" => {
                let first = text.split(',').next().unwrap_or("").trim();
                let short = first.rsplit('.').next().unwrap_or(first);
                let name = match short {
                    "UniformAssignor" => "uniform",
                    "RangeAssignor" => "range",
                    other => other,
                };
                self.coordinator.consumer.default_assignor =
                    crate::coordinator::group::assignor::Assignor::parse(name)
                        .ok_or_else(|| anyhow::anyhow!("expected \"uniform\" or \"range\""))?
            }
            "offsets.retention.minutes" => {
                self.coordinator.offsets_retention_ms = text.parse::<i64>()?.saturating_mul(60_000)
            }
            "offsets.retention.ms" => self.coordinator.offsets_retention_ms = text.parse()?,
            "offsets.retention.check.interval.ms" => {
                self.coordinator.offsets_retention_check_interval_ms = text.parse::<u64>()?.max(100)
            }
            "offset.metadata.max.bytes" => {
                self.coordinator.offset_metadata_max_bytes = text.parse()?
            }
            "transaction.max.timeout.ms" => {
                self.transactions.max_timeout_ms = i32::try_from(positive(&text)?)?
            }
            "transaction.abort.timed.out.transaction.cleanup.interval.ms" => {
                self.transactions.abort_check_interval_ms = positive(&text)?
            }
            "transactional.id.expiration.ms" => {
                self.transactions.id_expiration_ms = i64::try_from(positive(&text)?)?
            }
            "transaction.remove.expired.transaction.cleanup.interval.ms" => {
                self.transactions.remove_expired_interval_ms = positive(&text)?
            }
            "transaction.state.log.num.partitions" => {
                self.transactions.num_partitions = i32::try_from(positive(&text)?)?
            }
            "transaction.state.log.replication.factor" => {
                self.transactions.replication_factor = i16::try_from(positive(&text)?)?
            }
            "transaction.state.log.min.isr" => {
                self.transactions.min_isr = i32::try_from(positive(&text)?)?
            }
            "transaction.state.log.segment.bytes" => {
                let n = positive(&text)?;
                if n < 1024 {
                    bail!("must be at least 1024");
                }
                self.transactions.segment_bytes = n;
            }
            "transaction.partition.verification.enable" => {
                self.transactions.partition_verification = text.parse()?
            }
            "log.format" => {
                self.log_output.json = match text.to_ascii_lowercase().as_str() {
                    "text" => false,
                    "json" => true,
                    _ => bail!("expected text or json"),
                }
            }
            "log.file" => self.log_output.file = (!text.is_empty()).then(|| PathBuf::from(&text)),
            "log.file.rotation" => {
                self.log_output.rotation = match text.to_ascii_lowercase().as_str() {
                    "daily" => Rotation::Daily,
                    "hourly" => Rotation::Hourly,
                    "never" => Rotation::Never,
                    _ => bail!("expected daily, hourly or never"),
                }
            }
            "log.file.max.files" => self.log_output.max_files = text.parse()?,
            "broker.rack" => self.rack = Some(text.clone()).filter(|r| !r.is_empty()),
            "replica.selector.class" => {
                use crate::replication::read_replica::ReplicaSelector;
                self.replica_selector = ReplicaSelector::parse(&text).ok_or_else(|| {
                    anyhow::anyhow!(
                        "unsupported class; expected {} or nothing",
                        ReplicaSelector::RACK_AWARE_CLASS
                    )
                })?;
            }
            "default.replication.factor" => {
                self.default_replication_factor = i16::try_from(positive(&text)?)?
            }
            "process.roles" => {
                let roles: Vec<&str> = text.split(',').map(str::trim).collect();
                if roles.is_empty() || roles.iter().any(|r| *r != "broker" && *r != "controller") {
                    bail!("expected `broker`, `controller` or `broker,controller`");
                }
                let c = &mut self.cluster;
                c.broker = roles.contains(&"broker");
                c.controller = roles.contains(&"controller");
            }
            "controller.quorum.voters" => {
                let mut voters = BTreeMap::new();
                for v in text.split(',').map(str::trim).filter(|v| !v.is_empty()) {
                    let (id, addr) = v
                        .split_once('@')
                        .with_context(|| format!("expected ID@HOST:PORT, got `{v}`"))?;
                    let id: u64 = id
                        .parse()
                        .with_context(|| format!("bad voter id in `{v}`"))?;
                    Endpoint::parse(addr).with_context(|| format!("bad voter address in `{v}`"))?;
                    voters.insert(id, addr.to_string());
                }
                if voters.is_empty() {
                    bail!("no voters");
                }
                self.cluster.voters = voters;
            }
            "controller.quorum.bootstrap.servers" => {
                let servers: Vec<String> = text
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                for s in &servers {
                    Endpoint::parse(s).with_context(|| format!("expected HOST:PORT, got `{s}`"))?;
                }
                self.cluster.bootstrap_servers = servers;
            }
            "inter.broker.listener.name" => {
                self.cluster.inter_broker_listener_name = Some(text.trim().to_ascii_uppercase())
            }
            "controller.listener.names" => {
                self.cluster.controller_listener_names = text
                    .split(',')
                    .map(|n| n.trim().to_ascii_uppercase())
                    .filter(|n| !n.is_empty())
                    .collect()
            }
            "broker.session.timeout.ms" => {
                self.cluster.broker_session_timeout_ms = positive(&text)?
            }
            "broker.heartbeat.interval.ms" => {
                self.cluster.broker_heartbeat_interval_ms = positive(&text)?
            }
            "controller.quorum.election.timeout.ms" => {
                self.cluster.election_timeout_ms = positive(&text)?.max(50)
            }
            "replica.lag.time.max.ms" => self.cluster.replica_lag_time_max_ms = positive(&text)?,
            "replica.stall.max.ms" => self.cluster.replica_stall_max_ms = positive(&text)?,
            "leader.placement" => {
                self.cluster.leader_placement.mode = frieda_meta::LeaderPlacement::parse(&text)
                    .ok_or_else(|| anyhow::anyhow!("expected preferred or measured"))?
            }
            "leader.placement.check.interval.ms" => {
                self.cluster.leader_placement.check_interval =
                    std::time::Duration::from_millis(positive(&text)?)
            }
            "leader.placement.max.moves.per.minute" => {
                self.cluster.leader_placement.max_moves_per_minute =
                    u32::try_from(positive(&text)?)?
            }
            "replica.fetch.wait.max.ms" => {
                self.cluster.replica_fetch_wait_max_ms = positive(&text)?
            }
            "replica.fetch.max.bytes" => {
                self.cluster.replica_fetch_max_bytes = positive(&text)? as usize
            }
            "offsets.topic.replication.factor" => {
                let n = i16::try_from(positive(&text)?)?;
                self.cluster.offsets_topic_replication_factor = n;
            }
            "auto.leader.rebalance.enable" => self.cluster.auto_leader_rebalance = text.parse()?,
            "leader.imbalance.check.interval.seconds" => {
                self.cluster.leader_imbalance_check_interval_ms = positive(&text)? * 1000
            }
            "leader.imbalance.per.broker.percentage" => {
                let pct = u32::try_from(positive(&text)?)?;
                if pct > 100 {
                    bail!("must be a percentage (0-100)");
                }
                self.cluster.leader_imbalance_per_broker_percentage = pct;
            }
            "offsets.topic.num.partitions" => {
                let n = i32::try_from(positive(&text)?)?;
                self.cluster.offsets_topic_num_partitions = n;
            }
            _ if self.security.set(key, &text)? => {}
            _ => {
                // Broker-level `log.` prefixed forms of topic configs are accepted too, as in Kafka.
                let topic_key = key.strip_prefix("log.").unwrap_or(key);
                let topic_key = match topic_key {
                    "retention.hours" => {
                        let h: i64 = text.parse()?;
                        self.topic_defaults
                            .set("retention.ms", &(h * 3_600_000).to_string())?;
                        return Ok(());
                    }
                    "roll.ms" => "segment.ms",
                    "flush.interval.messages" => "flush.messages",
                    "flush.interval.ms" => "flush.ms",
                    other => other,
                };
                if !TOPIC_CONFIG_KEYS.iter().any(|k| k.name == topic_key) {
                    return Err(UnknownSetting.into());
                }
                self.topic_defaults.set(topic_key, &text)?;
            }
        }
        Ok(())
    }

    /// Every client listener as clients reach it (`advertised.listeners` by name, else the
    /// listener; an empty host is this machine's host name), for the cluster metadata.
    pub fn advertised_endpoints(&self) -> Vec<(String, String, u16)> {
        self.client_listeners()
            .map(|l| {
                let e = self
                    .advertised_listeners
                    .as_ref()
                    .and_then(|a| a.iter().find(|e| e.name == l.name))
                    .unwrap_or(l);
                let host = if e.host.is_empty() {
                    local_host_name()
                } else {
                    e.host.clone()
                };
                (l.name.clone(), host, e.port)
            })
            .collect()
    }

    /// The advertised `host:port` of client listener `listener` (the first listener's when
    /// there is no such listener).
    pub fn advertised_on(&self, listener: &str) -> (String, i32) {
        match self
            .advertised_endpoints()
            .into_iter()
            .find(|(name, _, _)| name == listener)
        {
            Some((_, host, port)) => (host, i32::from(port)),
            None => self.advertised(),
        }
    }

    /// The `host:port` clients are told to connect to: the advertised endpoint of the first
    /// listener (or the listener itself); an empty host is this machine's host name, as Kafka
    /// advertises a wildcard listener.
    pub fn advertised(&self) -> (String, i32) {
        let first = self.client_listeners().next().unwrap_or(&self.listeners[0]);
        let e = self
            .advertised_listeners
            .as_ref()
            .and_then(|a| a.iter().find(|e| e.name == first.name).or(a.first()))
            .unwrap_or(first);
        let host = if e.host.is_empty() {
            local_host_name()
        } else {
            e.host.clone()
        };
        (host, i32::from(e.port))
    }
}

/// This machine's host name (the kernel's, `/proc/sys/kernel/hostname`), or `localhost`.
fn local_host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// A value's error as a user reads it: what was expected first when the cause is a plain parse
/// error (`invalid digit found in string` alone names no type).
fn explain(e: &anyhow::Error) -> String {
    let text = format!("{e:#}");
    let expected = e.chain().find_map(|c| {
        if c.is::<std::num::ParseIntError>() {
            Some("an integer")
        } else if c.is::<std::str::ParseBoolError>() {
            Some("true or false")
        } else if c.is::<std::num::ParseFloatError>() {
            Some("a number")
        } else {
            None
        }
    });
    match expected {
        Some(t) if !text.contains("expected") => format!("expected {t} ({text})"),
        _ => text,
    }
}

/// A configuration as read, with what it set that Frieda accepts but does not use.
#[derive(Debug)]
pub struct Loaded {
    /// The configuration (not yet [`finish`](BrokerConfig::finish)ed when from
    /// [`BrokerConfig::load`] or [`BrokerConfig::from_settings`]).
    pub config: BrokerConfig,
    /// Apache Kafka broker settings with no meaning in Frieda (`num.io.threads`,
    /// `num.recovery.threads.per.data.dir`, ...), in the order given: logged once as a warning.
    pub unused_kafka_keys: Vec<String>,
}

/// The error of a setting Frieda does not know (it may still be Kafka's: see
/// [`file::is_kafka_broker_key`]).
#[derive(Debug, thiserror::Error)]
#[error("unknown setting")]
pub struct UnknownSetting;

/// Whether `host` (of a bootstrap server) names this machine's listener on `listener_host`:
/// the same name, a loopback name or address, or an empty listener host (every interface)
/// with this machine's host name.
fn is_this_host(host: &str, listener_host: &str) -> bool {
    let loopback = |h: &str| {
        h.eq_ignore_ascii_case("localhost")
            || h.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
    };
    host.eq_ignore_ascii_case(listener_host)
        || (loopback(host) && (listener_host.is_empty() || loopback(listener_host)))
        || (listener_host.is_empty() && host.eq_ignore_ascii_case(&local_host_name()))
}

/// A socket buffer size: -1 for the system default, else 1..=2^31-1 bytes.
fn buffer_size(text: &str) -> anyhow::Result<Option<u32>> {
    match text.parse::<i64>()? {
        -1 => Ok(None),
        n if (1..=i64::from(i32::MAX)).contains(&n) => Ok(Some(n as u32)),
        _ => bail!("must be -1 (system default) or a positive size in bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_and_quoted_keys_mean_the_same() {
        let a = BrokerConfig::from_toml("\"retention.ms\" = 1000\nnum.partitions = 3").unwrap();
        let b = BrokerConfig::from_toml("retention.ms = 1000\n\"num.partitions\" = 3").unwrap();
        assert_eq!(a.topic_defaults.get("retention.ms"), Some("1000"));
        assert_eq!(b.topic_defaults.get("retention.ms"), Some("1000"));
        assert_eq!(a.num_partitions, 3);
        assert_eq!(b.num_partitions, 3);
    }

    #[test]
    fn every_frieda_only_key_is_known() {
        for key in file::FRIEDA_ONLY_KEYS {
            let mut cfg = BrokerConfig::default();
            if let Err(e) = cfg.set(key, "1") {
                assert!(
                    e.downcast_ref::<UnknownSetting>().is_none(),
                    "{key} is not known"
                );
            }
            assert!(!file::is_kafka_broker_key(key), "{key} is Kafka's too");
        }
    }

    #[test]
    fn kafkas_shipped_server_properties_is_a_one_voter_quorum() {
        let text = include_str!("../../../tests/integration/data/kafka-4.4-server.properties");
        let loaded = BrokerConfig::from_properties(text).unwrap();
        let c = &loaded.config;
        assert_eq!(
            c.cluster.voters,
            BTreeMap::from([(1, "localhost:9093".to_string())])
        );
        assert!(c.cluster.controller && c.cluster.broker);
        assert_eq!(c.data_dir, PathBuf::from("/tmp/kraft-combined-logs"));
        assert_eq!(c.topic_defaults.get("retention.ms"), Some("604800000"));
        assert_eq!(c.topic_defaults.get("segment.bytes"), Some("1073741824"));
        assert_eq!(
            loaded.unused_kafka_keys,
            [
                "num.io.threads",
                "num.recovery.threads.per.data.dir",
                "share.coordinator.state.topic.replication.factor",
                "share.coordinator.state.topic.min.isr"
            ]
        );
        // other controllers named: this node joins their quorum as an observer (KIP-853)
        let other = text.replace(
            "controller.quorum.bootstrap.servers=localhost:9093",
            "controller.quorum.bootstrap.servers=localhost:9093,otherhost:9093",
        );
        let joining = BrokerConfig::from_properties(&other).unwrap().config;
        assert!(joining.cluster.joins_by_bootstrap() && joining.cluster.enabled());
        assert_eq!(
            joining.cluster.bootstrap_servers,
            ["localhost:9093", "otherhost:9093"]
        );
        // a controller-only node cannot join that way yet
        let controller_only = other.replace(
            "process.roles=broker,controller",
            "process.roles=controller",
        );
        let e = BrokerConfig::from_properties(&controller_only).unwrap_err();
        assert!(format!("{e:#}").contains("must also be a broker"), "{e:#}");
    }

    #[test]
    fn every_unknown_key_and_bad_value_is_named_at_once() {
        let e = BrokerConfig::from_properties(
            "num.partition=2\nlog.retention.hour=1\nnum.io.threads=3\nnum.network.threads=x\n",
        )
        .unwrap_err();
        let m = format!("{e:#}");
        assert!(
            m.contains("`num.partition` (did you mean `num.partitions`?)"),
            "{m}"
        );
        assert!(
            m.contains("`log.retention.hour` (did you mean `log.retention.hours`?)"),
            "{m}"
        );
        assert!(
            m.contains("config key `num.network.threads` = `x`: expected"),
            "{m}"
        );
        assert!(!m.contains("num.io.threads"), "{m}");
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors() {
        assert!(BrokerConfig::from_toml("no.such.thing = 1").is_err());
        assert!(BrokerConfig::from_toml("retention.ms = \"soon\"").is_err());
        assert!(BrokerConfig::from_toml("num.partitions = 0").is_err());
        assert!(BrokerConfig::from_toml("\"log.append.mode\" = \"sometimes\"").is_err());
    }

    #[test]
    fn tiered_storage_needs_a_bucket_and_the_quorum() {
        // Kafka's default (false) passes; true needs a bucket and the metadata quorum. The
        // local retention defaults are topic defaults like any other.
        assert!(BrokerConfig::from_toml("\"remote.log.storage.system.enable\" = false").is_ok());
        let e = BrokerConfig::from_toml("\"remote.log.storage.system.enable\" = true").unwrap_err();
        assert!(format!("{e:#}").contains("bucket.name"), "{e:#}");
        let e = BrokerConfig::from_toml(
            "\"remote.log.storage.system.enable\" = true\n\"rsm.config.storage.s3.bucket.name\" = \"b\"",
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("metadata quorum"), "{e:#}");
        let c = BrokerConfig::from_toml("\"log.local.retention.ms\" = 5000").unwrap();
        assert_eq!(c.topic_defaults.get("local.retention.ms"), Some("5000"));
        // A broker-wide remote.storage.enable=true would tier every topic.
        assert!(BrokerConfig::from_toml("\"remote.storage.enable\" = true").is_err());
    }

    #[test]
    fn design_switches_parse() {
        let d = BrokerConfig::default();
        assert_eq!(d.log_append_mode, AppendMode::Inline);
        assert!(d.log_group_commit && !d.fetch_batched_wakeups && d.response_vectored_writes);
        let c = BrokerConfig::from_toml(
            "\"log.append.mode\" = \"writer\"\n\"log.group.commit\" = false\n\
             \"fetch.batched.wakeups\" = true\n\"response.vectored.writes\" = false\n\
             \"overlapped.processing\" = false",
        )
        .unwrap();
        assert_eq!(c.log_append_mode, AppendMode::Writer);
        assert!(!c.log_group_commit && c.fetch_batched_wakeups);
        assert!(!c.response_vectored_writes && !c.overlapped_processing);
    }

    #[test]
    fn broker_level_log_prefix_and_listen() {
        let c = BrokerConfig::from_toml(
            "listen = \"127.0.0.1:19999\"\nlog.segment.bytes = 4194304\nadvertised.listener = \"PLAINTEXT://localhost:7\"",
        )
        .unwrap();
        assert_eq!(c.listeners[0].port, 19999);
        assert_eq!(c.topic_defaults.get("segment.bytes"), Some("4194304"));
        assert_eq!(c.advertised(), ("localhost".to_string(), 7));
        // KIP-1030: a broker refuses log.segment.bytes below 1 MiB, as Kafka 4 does.
        assert!(BrokerConfig::from_toml("log.segment.bytes = 4096").is_err());
    }

    #[test]
    fn kafka_listener_syntax_and_host_names() {
        let c = BrokerConfig::from_toml(
            "listeners = \"PLAINTEXT://localhost:19092,internal://[::1]:19093\"\n\
             \"listener.security.protocol.map\" = \"PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT\"",
        )
        .unwrap();
        assert_eq!(c.listeners.len(), 2);
        assert_eq!(c.listeners[1].name, "INTERNAL");
        assert_eq!(c.listeners[1].host, "::1");
        assert_eq!(c.listeners[0].bind_addr().unwrap().port(), 19092);
        assert!(c.listeners[0].bind_addr().unwrap().ip().is_loopback());
        assert_eq!(c.advertised(), ("localhost".to_string(), 19092));
        // An empty host binds every interface and is advertised by host name.
        let w = BrokerConfig::from_toml("listeners = \"PLAINTEXT://:9092\"").unwrap();
        assert_eq!(
            w.listeners[0].bind_addr().unwrap().ip().to_string(),
            "0.0.0.0"
        );
        assert!(!w.advertised().0.is_empty());
        for bad in [
            "listeners = \"PLAINTEXT://0.0.0.0:9092\"",
            "listeners = \"SSL://localhost:9093\"",
            // a TLS listener needs a key store
            "listeners = \"SSL://localhost:9093\"\n\"listener.security.protocol.map\" = \"SSL:SSL\"",
            "listeners = \"FOO://localhost:9093\"",
            "listeners = \"PLAINTEXT://a:1,PLAINTEXT://b:2\"",
            "listeners = \"PLAINTEXT://a:1,X://b:1\"",
            "listeners = \"nonsense\"",
            "listeners = \"PLAINTEXT://host:99999\"",
        ] {
            assert!(BrokerConfig::from_toml(bad).is_err(), "{bad}");
        }
        assert!(BrokerConfig::from_toml(
            "listeners = \"PLAINTEXT://0.0.0.0:9092\"\n\"advertised.listeners\" = \"PLAINTEXT://broker1:9092\""
        )
        .is_ok());
    }

    #[test]
    fn cluster_settings_in_kafkas_kraft_names() {
        let text = "\"node.id\" = 2\n\"process.roles\" = \"broker,controller\"\n\
            listeners = \"PLAINTEXT://127.0.0.1:9192,CONTROLLER://127.0.0.1:9193\"\n\
            \"controller.listener.names\" = \"CONTROLLER\"\n\
            \"controller.quorum.voters\" = \"1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293\"\n\
            \"default.replication.factor\" = 3\n\"offsets.topic.replication.factor\" = 3\n\
            \"offsets.topic.num.partitions\" = 12\n\"replica.lag.time.max.ms\" = 5000";
        let c = BrokerConfig::from_toml(text).unwrap();
        assert!(c.cluster.enabled() && c.cluster.broker && c.cluster.controller);
        assert_eq!(c.cluster.voters.len(), 3);
        assert_eq!(c.cluster.voters[&2], "127.0.0.1:9193");
        assert_eq!(c.controller_listener().unwrap().port, 9193);
        assert_eq!(c.client_listeners().count(), 1);
        assert_eq!(c.advertised(), ("127.0.0.1".to_string(), 9192));
        assert_eq!(c.default_replication_factor, 3);
        assert_eq!(c.cluster.offsets_topic_num_partitions, 12);
        assert_eq!(c.cluster.replica_lag_time_max_ms, 5000);
        // A single broker's server.properties may set these without becoming a cluster.
        let single = BrokerConfig::from_toml("\"offsets.topic.replication.factor\" = 1").unwrap();
        assert!(!single.cluster.enabled());
        for (bad, key) in [
            (
                text.replace("\"node.id\" = 2", "\"node.id\" = 7"),
                "controller.quorum.voters",
            ),
            (
                text.replace(",CONTROLLER://127.0.0.1:9193", ""),
                "listeners",
            ),
            (
                text.replace("1@127.0.0.1:9093", "x@127.0.0.1:9093"),
                "controller.quorum.voters",
            ),
            (text.replace("broker,controller", "broker"), "process.roles"),
        ] {
            let e = format!("{:#}", BrokerConfig::from_toml(&bad).unwrap_err());
            assert!(e.contains(key), "{e}");
        }
    }

    #[test]
    fn a_secured_controller_listener_needs_mutual_tls_or_plain() {
        let base = "\"node.id\" = 1\n\"process.roles\" = \"broker,controller\"\n\
            listeners = \"SASL_SSL://127.0.0.1:9192,CONTROLLER://127.0.0.1:9193\"\n\
            \"controller.quorum.voters\" = \"1@127.0.0.1:9193\"\n\
            \"ssl.keystore.location\" = \"/k.pem\"\n\
            \"ssl.truststore.location\" = \"/ca.pem\"\n";
        let with = |extra: &str| BrokerConfig::from_toml(&format!("{base}{extra}"));
        // CONTROLLER:SSL with client certificates, and CONTROLLER:SASL_SSL with PLAIN.
        let ssl = with(
            "\"listener.security.protocol.map\" = \"SASL_SSL:SASL_SSL,CONTROLLER:SSL\"\n\
             \"listener.name.controller.ssl.client.auth\" = \"required\"",
        )
        .unwrap();
        assert_eq!(
            ssl.listener_protocol("CONTROLLER"),
            Some(SecurityProtocol::Ssl)
        );
        assert_eq!(ssl.listener_protocols().len(), 2);
        let sasl = with(
            "\"listener.security.protocol.map\" = \"SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL\"\n\
             \"sasl.mechanism.controller.protocol\" = \"PLAIN\"",
        )
        .unwrap();
        assert_eq!(
            sasl.listener_protocol("CONTROLLER"),
            Some(SecurityProtocol::SaslSsl)
        );
        // SSL without client certificates cannot tell nodes from strangers; SCRAM credentials
        // live in the quorum itself; PLAIN must be enabled where nodes log in with it.
        for (extra, key) in [
            (
                "\"listener.security.protocol.map\" = \"SASL_SSL:SASL_SSL,CONTROLLER:SSL\"",
                "ssl.client.auth",
            ),
            (
                "\"listener.security.protocol.map\" = \"SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL\"\n\
                 \"sasl.mechanism.controller.protocol\" = \"SCRAM-SHA-256\"",
                "sasl.mechanism.controller.protocol",
            ),
            (
                "\"listener.security.protocol.map\" = \"SASL_SSL:SASL_SSL,CONTROLLER:SASL_PLAINTEXT\"\n\
                 \"listener.name.controller.sasl.enabled.mechanisms\" = \"SCRAM-SHA-512\"",
                "sasl.enabled.mechanisms",
            ),
        ] {
            let e = format!("{:#}", with(extra).unwrap_err());
            assert!(e.contains(key), "{e}");
        }
    }

    #[test]
    fn impossible_settings_name_their_key() {
        for (text, key) in [
            ("node.id = -1", "node.id"),
            ("max.connections = 0", "max.connections"),
            (
                "\"max.inflight.requests.per.connection\" = 0",
                "max.inflight.requests.per.connection",
            ),
            ("\"log.writer.threads\" = 0", "log.writer.threads"),
            ("\"fetch.max.bytes\" = 10", "fetch.max.bytes"),
            ("\"log.dirs\" = \"/a,/b\"", "log.dirs"),
            (
                "\"log.cleaner.dedupe.buffer.size\" = 5",
                "log.cleaner.dedupe.buffer.size",
            ),
        ] {
            let e = format!("{:#}", BrokerConfig::from_toml(text).unwrap_err());
            assert!(e.contains(key), "{text}: {e}");
        }
    }

    #[test]
    fn connection_limits() {
        let d = BrokerConfig::default();
        assert_eq!(d.connections_max_idle_ms, 600_000);
        assert_eq!(d.request_read_timeout_ms, 30_000);
        let c = BrokerConfig::from_toml(
            "connections.max.idle.ms = 2000\nrequest.read.timeout.ms = 500\nqueued.max.request.bytes = 1048576",
        )
        .unwrap();
        assert_eq!(c.connections_max_idle_ms, 2000);
        assert_eq!(c.request_read_timeout_ms, 500);
        assert_eq!(c.queued_max_request_bytes, 1 << 20);
        let u = BrokerConfig::from_toml("queued.max.request.bytes = -1").unwrap();
        assert_eq!(u.queued_max_request_bytes, usize::MAX);
        assert!(BrokerConfig::from_toml("queued.max.request.bytes = 0").is_err());
        let b = BrokerConfig::from_toml("socket.send.buffer.bytes = 65536").unwrap();
        assert_eq!(b.socket_send_buffer_bytes, Some(65536));
        assert_eq!(b.socket_receive_buffer_bytes, None);
        assert!(BrokerConfig::from_toml("socket.receive.buffer.bytes = 0").is_err());
    }
}
