//! Broker configuration: defaults embedded, overridden by a TOML file and the command line.
//!
//! The TOML file uses Kafka's property names. Dotted names may be written quoted
//! (`"retention.ms" = 60000`) or as TOML dotted keys (`retention.ms = 60000`); both mean the
//! same. Topic-level names (`retention.ms`, `segment.bytes`, ...) set the defaults of every topic;
//! a topic's own overrides (CreateTopics configs, AlterConfigs) win over them.

use crate::broker::topic_config::{TopicConfigs, TOPIC_CONFIG_KEYS};
use crate::coordinator::group::CoordinatorConfig;
use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Everything the broker needs to start. Units are in the field names' docs.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Address the listener binds (`listen`), default `127.0.0.1:9092`.
    pub listen: SocketAddr,
    /// `host:port` advertised in Metadata (`advertised.listener`); defaults to `listen`.
    pub advertised_listener: Option<String>,
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
    /// Bytes of large requests (over 64 KiB) being read or processed, summed over every
    /// connection (`queued.max.request.bytes`), default 512 MiB; -1 for no limit. A connection
    /// whose next large request does not fit waits (stops reading its socket) until others
    /// finish. A single request larger than the budget takes the whole budget. Smaller requests
    /// are bounded per connection by `max.inflight.requests.per.connection` and never wait here.
    pub queued_max_request_bytes: usize,
    /// Threads that append to partition logs and fsync them (`log.writer.threads`), default 1.
    pub log_writer_threads: usize,
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
    /// Group coordinator settings: `group.initial.rebalance.delay.ms` (default 0, as in Kafka's
    /// shipped server.properties; Kafka's built-in default is 3000), `group.min.session.timeout.ms`
    /// (6000), `group.max.session.timeout.ms` (1800000), `offsets.retention.minutes` (10080),
    /// `offsets.retention.check.interval.ms` (600000), `offset.metadata.max.bytes` (4096).
    pub coordinator: CoordinatorConfig,
}

/// Which thread appends a produced batch to its partition log (`log.append.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendMode {
    /// The network thread that decoded the request appends it (a copy into the page cache under
    /// the partition's lock), wakes waiting fetches and answers, with no thread hand-off. An
    /// append that the flush policy (`flush.messages`) says must be fsync'ed before the
    /// acknowledgement waits for a log writer thread's group commit; network threads never
    /// call fsync.
    Inline,
    /// Every append goes to the partition's log writer thread and back (two thread hand-offs
    /// per produce; the thread model before the issue-5 measurements).
    Writer,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        BrokerConfig {
            listen: "127.0.0.1:9092".parse().expect("static address"),
            advertised_listener: None,
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
            network_threads: cores,
            retention_check_interval_ms: 300_000,
            topic_defaults: TopicConfigs::default(),
            overlapped_processing: true,
            response_vectored_writes: true,
            log_append_mode: AppendMode::Inline,
            log_group_commit: true,
            fetch_batched_wakeups: false,
            coordinator: CoordinatorConfig::default(),
        }
    }
}

impl BrokerConfig {
    /// Reads a TOML file over the defaults. Errors name the file and the offending key.
    pub fn load(path: &Path) -> anyhow::Result<BrokerConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading config file {}", path.display()))?;
        Self::from_toml(&text).with_context(|| format!("in config file {}", path.display()))
    }

    /// Parses TOML text over the defaults.
    pub fn from_toml(text: &str) -> anyhow::Result<BrokerConfig> {
        let table: toml::Table = text.parse().context("invalid TOML")?;
        let mut flat = BTreeMap::new();
        flatten("", &table, &mut flat);
        let mut cfg = BrokerConfig::default();
        for (key, value) in flat {
            cfg.set(&key, &value)
                .with_context(|| format!("config key `{key}`"))?;
        }
        Ok(cfg)
    }

    fn set(&mut self, key: &str, value: &toml::Value) -> anyhow::Result<()> {
        let text = match value {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match key {
            "listen" | "listeners" => self.listen = text.parse().context("expected HOST:PORT")?,
            "advertised.listener" | "advertised.listeners" => self.advertised_listener = Some(text),
            "data.dir" | "log.dirs" | "log.dir" => self.data_dir = PathBuf::from(text),
            "node.id" | "broker.id" => self.node_id = text.parse()?,
            "num.partitions" => {
                let n: i32 = text.parse()?;
                if n < 1 {
                    bail!("must be at least 1");
                }
                self.num_partitions = n;
            }
            "auto.create.topics.enable" => self.auto_create_topics = text.parse()?,
            "socket.request.max.bytes" => self.max_request_bytes = text.parse()?,
            "max.inflight.requests.per.connection" => {
                self.max_inflight_per_connection = text.parse::<usize>()?.max(1)
            }
            "max.connections" => self.max_connections = text.parse::<usize>()?.max(1),
            "connections.max.idle.ms" => self.connections_max_idle_ms = text.parse::<u64>()?.max(1),
            "request.read.timeout.ms" => self.request_read_timeout_ms = text.parse::<u64>()?.max(1),
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
            "log.writer.threads" => self.log_writer_threads = text.parse::<usize>()?.max(1),
            "num.network.threads" => self.network_threads = text.parse::<usize>()?.max(1),
            "log.retention.check.interval.ms" => {
                self.retention_check_interval_ms = text.parse::<u64>()?.max(10)
            }
            "overlapped.processing" => self.overlapped_processing = text.parse()?,
            "response.vectored.writes" => self.response_vectored_writes = text.parse()?,
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
            "default.replication.factor" | "offsets.topic.replication.factor" => {}
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
                    bail!("unknown setting");
                }
                self.topic_defaults.set(topic_key, &text)?;
            }
        }
        Ok(())
    }

    /// The `host:port` clients are told to connect to.
    pub fn advertised(&self) -> (String, i32) {
        if let Some(adv) = &self.advertised_listener {
            let adv = adv.rsplit("://").next().unwrap_or(adv);
            if let Some((h, p)) = adv.rsplit_once(':') {
                if let Ok(port) = p.parse() {
                    return (h.to_string(), port);
                }
            }
        }
        (self.listen.ip().to_string(), self.listen.port() as i32)
    }
}

/// A socket buffer size: -1 for the system default, else 1..=2^31-1 bytes.
fn buffer_size(text: &str) -> anyhow::Result<Option<u32>> {
    match text.parse::<i64>()? {
        -1 => Ok(None),
        n if (1..=i64::from(i32::MAX)).contains(&n) => Ok(Some(n as u32)),
        _ => bail!("must be -1 (system default) or a positive size in bytes"),
    }
}

fn flatten(prefix: &str, table: &toml::Table, out: &mut BTreeMap<String, toml::Value>) {
    for (k, v) in table {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => flatten(&key, t, out),
            other => {
                out.insert(key, other.clone());
            }
        }
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
    fn unknown_keys_and_bad_values_are_errors() {
        assert!(BrokerConfig::from_toml("no.such.thing = 1").is_err());
        assert!(BrokerConfig::from_toml("retention.ms = \"soon\"").is_err());
        assert!(BrokerConfig::from_toml("num.partitions = 0").is_err());
        assert!(BrokerConfig::from_toml("\"log.append.mode\" = \"sometimes\"").is_err());
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
            "listen = \"127.0.0.1:19999\"\nlog.segment.bytes = 4096\nadvertised.listener = \"PLAINTEXT://localhost:7\"",
        )
        .unwrap();
        assert_eq!(c.listen.port(), 19999);
        assert_eq!(c.topic_defaults.get("segment.bytes"), Some("4096"));
        assert_eq!(c.advertised(), ("localhost".to_string(), 7));
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
