//! `frieda`: the broker binary.

use anyhow::Context;
use clap::{Parser, Subcommand};
use frieda::broker::cleaner::LogCleaner;
use frieda::broker::Broker;
use frieda::cluster::fetcher::Fetchers;
use frieda::cluster::{self, heartbeat::Registration};
use frieda::config::{BrokerConfig, Endpoint};
use frieda::membership::ClusterNode;
use frieda::storage::writer::Upkeep;
use frieda_meta::{
    Endpoint as MetaEndpoint, MetadataQuorum, PlaintextTransport, QuorumConfig, QuorumTransport,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

#[derive(Parser)]
#[command(
    name = "frieda",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("FRIEDA_REVISION"), ")"),
    about = "A Kafka-protocol message broker built for low tail latency"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where the configuration comes from, shared by `serve` and `check`.
#[derive(clap::Args)]
struct ConfigArgs {
    /// Config file: Kafka's server.properties format, or TOML when the name ends in `.toml`
    /// (Kafka's setting names in both; see docs/configuration.md).
    #[arg(long)]
    config: Option<PathBuf>,
    /// KEY=VALUE over the config file (repeatable), as `kafka-server-start.sh --override`.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Where to listen: HOST:PORT or Kafka's NAME://HOST:PORT (host names resolve; an empty
    /// host means every interface); overrides the config file's `listeners`.
    #[arg(long)]
    listen: Option<String>,
    /// Data directory; overrides the config file.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// HOST:PORT (or NAME://HOST:PORT) advertised to clients in Metadata; defaults to the
    /// listen address.
    #[arg(long)]
    advertised_listener: Option<String>,
}

impl ConfigArgs {
    /// The configuration in force: defaults, the file, `--override`s, then the flags, finished
    /// (see `BrokerConfig::finish`), with the Kafka settings that mean nothing here.
    fn resolve(self) -> anyhow::Result<(BrokerConfig, Vec<String>)> {
        let overrides = frieda::config::file::parse_overrides(&self.overrides)?;
        let loaded = BrokerConfig::load(self.config.as_deref(), &overrides)?;
        let unused = loaded.unused_kafka_keys;
        let mut cfg = loaded.config;
        if let Some(l) = self.listen {
            cfg.listeners = vec![Endpoint::parse(&l).context("--listen")?];
        }
        if let Some(d) = self.data_dir {
            cfg.data_dir = d;
        }
        if let Some(a) = self.advertised_listener {
            cfg.advertised_listeners =
                Some(Endpoint::parse_list(&a).context("--advertised-listener")?);
        }
        cfg.finish()?;
        Ok((cfg, unused))
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run the broker (defaults: 127.0.0.1:9092, data in ./frieda-data).
    Serve(ConfigArgs),
    /// Validate a configuration and print the settings in force (Kafka's names, one
    /// `key=value` per line, secrets redacted) without touching the data directory; exits 1
    /// with every problem named when it is invalid.
    Check(ConfigArgs),
    /// Administer a running cluster (Frieda or Apache Kafka) over the Kafka protocol: cluster
    /// status, topics, groups, partitions, broker settings, ACLs, quotas, produce and consume
    /// lines.
    Admin(frieda::admin::AdminArgs),
}

/// A broken replication invariant stops the process (after the default hook has printed the
/// panic), so its partitions fail over instead of a task dying and the rest acknowledging on
/// state the protocol no longer vouches for (see `frieda::invariant!`).
fn fail_stop_on_broken_invariants() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        let payload = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if payload.starts_with(frieda::replication::INVARIANT_BROKEN) {
            std::process::abort();
        }
    }));
}

/// The commands that print for a reader (`frieda admin`, `frieda check`) end quietly when the
/// reader closes the pipe (`frieda admin cluster status | head`), as other command-line tools
/// do: SIGPIPE back to its default action. Rust ignores it, so a write to the closed pipe
/// failed with EPIPE and `println!` panicked ("Broken pipe", exit 101; issue 59). The broker
/// (`serve`) keeps ignoring it: a client that goes away must not end the process.
fn quiet_on_a_closed_pipe() {
    // SAFETY: sets a signal's disposition to its default, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> std::process::ExitCode {
    fail_stop_on_broken_invariants();
    let cli = Cli::parse();
    let (serve_it, args) = match cli.command {
        Command::Serve(args) => (true, args),
        Command::Check(args) => {
            quiet_on_a_closed_pipe();
            (false, args)
        }
        Command::Admin(args) => {
            quiet_on_a_closed_pipe();
            return match frieda::admin::run(args) {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("frieda admin: {e:#}");
                    std::process::ExitCode::FAILURE
                }
            };
        }
    };
    // The configuration says where log lines go, so it is read first; what it finds wrong is
    // logged to stderr.
    let resolved = args.resolve();
    let output = match &resolved {
        Ok((cfg, _)) if serve_it => cfg.log_output.clone(),
        _ => frieda::logging::LogOutput::default(),
    };
    if let Err(e) = frieda::logging::init(&output) {
        eprintln!("frieda: {e:#}");
        return std::process::ExitCode::FAILURE;
    }
    let result = resolved.and_then(|(cfg, unused)| {
        if !unused.is_empty() {
            tracing::warn!(
                "Kafka settings with no meaning in Frieda, ignored: {}",
                unused.join(", ")
            );
        }
        if serve_it {
            serve_leaving_no_new_data_dir(cfg)
        } else {
            for (name, value) in effective_config(&cfg) {
                println!("{name}={value}");
            }
            Ok(())
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Serves; when the start fails and the data directory did not exist before, removes what the
/// attempt created, so a corrected start begins from nothing (no half-initialised directory).
fn serve_leaving_no_new_data_dir(cfg: BrokerConfig) -> anyhow::Result<()> {
    let dir = cfg.data_dir.clone();
    let existed = dir.exists();
    let listening = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let result = serve(cfg, listening.clone());
    if result.is_err() && !existed && !listening.load(std::sync::atomic::Ordering::SeqCst) {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {
                tracing::info!(dir = %dir.display(), "start failed: removed the data directory it had created")
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "start failed; could not remove the data directory it had created")
            }
        }
    }
    result
}

/// The configuration in force under Kafka's broker key names (as DescribeConfigs of the broker
/// reports it), values of secret-looking keys redacted.
fn effective_config(cfg: &BrokerConfig) -> Vec<(String, String)> {
    frieda::handlers::configs::broker_config_entries(cfg)
        .into_iter()
        .map(|e| {
            let name = e.name.to_string();
            let secret = ["password", "secret", "sasl.jaas.config", "keystore.key"]
                .iter()
                .any(|s| name.contains(s));
            let value = match &e.value {
                _ if secret => "[redacted]".to_string(),
                Some(v) => v.to_string(),
                None => "null".to_string(),
            };
            (name, value)
        })
        .collect()
}

/// Logs the configuration in force at start-up, one line per setting (see [`effective_config`]).
fn log_effective_config(cfg: &BrokerConfig) {
    for (name, value) in effective_config(cfg) {
        tracing::info!(target: "frieda::config", "{name} = {value}");
    }
}

/// Runs the broker until a signal; `listening` turns true once clients can connect (after
/// which a failure is no longer a failed start).
fn serve(cfg: BrokerConfig, listening: Arc<std::sync::atomic::AtomicBool>) -> anyhow::Result<()> {
    log_effective_config(&cfg);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.network_threads)
        .thread_name("frieda-net")
        .enable_all()
        .build()
        .context("starting the runtime")?;
    frieda::storage::file_budget::apply(cfg.log_segment_files_max, cfg.log_segment_ms_min);
    let broker = Broker::open(cfg)?;
    let cleaner = LogCleaner::start(broker.clone());
    let served = runtime.block_on(async {
        let (stop_tx, stop_rx) = watch::channel(false);
        // Stopped first at shutdown: the controlled shutdown moves leaderships away while the
        // listeners still serve.
        let (hb_stop_tx, hb_stop_rx) = watch::channel(false);
        let mut cluster_tasks = Vec::new();
        let mut heartbeat = None;
        let mut _remote_log_manager = None;
        let node = if broker.config.cluster.enabled() {
            let node = start_cluster(&broker, stop_rx.clone()).await?;
            broker.start_transactions()?;
            if broker.config.cluster.broker {
                let fetchers = Fetchers::new(node.clone());
                heartbeat = Some(tokio::spawn(cluster::heartbeat::run(
                    node.clone(),
                    broker.clone(),
                    registration(&broker.config, broker.previous_run_clean)?,
                    hb_stop_rx,
                )));
                cluster_tasks.push(tokio::spawn(cluster::reconciler::run(
                    broker.clone(),
                    node.clone(),
                    fetchers,
                    stop_rx.clone(),
                )));
                cluster_tasks.push(tokio::spawn(cluster::isr::run_shrink_checks(
                    broker.clone(),
                    node.clone(),
                    stop_rx.clone(),
                )));
                _remote_log_manager = frieda::tiering::RemoteLogManager::start(
                    &broker,
                    &node,
                    stop_rx.clone(),
                )?;
            }
            Some(node)
        } else {
            broker.start_transactions()?;
            None
        };
        if let Some(n) = node.as_ref().filter(|_| broker.config.cluster.broker) {
            // As Kafka's brokers do, serve clients only once registered and caught up with the
            // metadata: a client then never sees a broker that does not know the cluster yet.
            tokio::select! {
                _ = wait_ready(n) => {
                    // Before clients come: every replica knows its remote tier (ListOffsets
                    // earliest, fetches below the local log).
                    if broker.remote().is_some() {
                        frieda::tiering::copier::refresh_views(&broker, n);
                    }
                }
                _ = wait_for_signal() => {
                    tracing::info!("stopped before the cluster was ready");
                    let _ = hb_stop_tx.send(true);
                    let _ = stop_tx.send(true);
                    n.quorum.shutdown().await;
                    return anyhow::Ok(());
                }
            }
        }
        let mut listeners = Vec::new();
        for l in broker.config.client_listeners() {
            let addr = l.bind_addr()?;
            let socket = frieda::server::listener::bind(addr, &broker.config)
                .with_context(|| format!("binding {l} ({addr})"))?;
            let security = broker.security.listener(&l.name);
            tracing::info!(listener = %l, %addr, security_protocol = security.protocol.name(), "listening");
            listeners.push((socket, security));
        }
        let metrics = match broker.config.metrics_listen {
            Some(addr) => {
                let l = frieda::metrics::bind(addr)
                    .await
                    .with_context(|| format!("binding metrics.listen ({addr})"))?;
                tracing::info!(%addr, "metrics endpoint listening (GET /metrics)");
                Some(tokio::spawn(frieda::metrics::serve(l, broker.clone(), stop_rx.clone())))
            }
            None => None,
        };
        listening.store(true, std::sync::atomic::Ordering::SeqCst);
        let (host, port) = broker.config.advertised();
        tracing::info!(advertised = %format!("{host}:{port}"), version = frieda::metrics::VERSION, revision = frieda::metrics::REVISION, "frieda is listening");
        let maintenance = tokio::spawn(maintain(broker.clone(), stop_rx.clone()));
        // Group timers (sessions, rebalances) and offsets retention; on stop it answers parked
        // JoinGroup/SyncGroup requests so connections can finish.
        let topics_of = broker.clone();
        let groups = tokio::spawn(broker.groups.clone().run(
            stop_rx.clone(),
            Box::new(move || frieda::handlers::consumer_groups::topics_view(&topics_of)),
        ));
        // Transaction timeouts and transactional id expiration.
        let transactions = tokio::spawn(broker.txns.clone().run(stop_rx.clone()));
        let servers: Vec<_> = listeners
            .into_iter()
            .map(|(l, security)| {
                tokio::spawn(frieda::server::serve(l, security, broker.clone(), stop_rx.clone()))
            })
            .collect();
        tokio::spawn(broker.security.clone().reload_tls(stop_rx.clone()));
        match &node {
            Some(n) => {
                tokio::select! {
                    _ = wait_for_signal() => {}
                    why = n.quorum.fatal() => {
                        // Its metadata can no longer advance: serving on would act on a stale
                        // image. The other nodes fence it and move its leaderships.
                        tracing::error!(reason = %why, "the metadata quorum stopped on this node; exiting");
                        std::process::exit(70);
                    }
                }
            }
            None => wait_for_signal().await,
        }
        if let Some(hb) = heartbeat {
            tracing::info!("shutting down: moving leaderships to other brokers (controlled shutdown)");
            let _ = hb_stop_tx.send(true);
            let _ = hb.await;
        }
        tracing::info!("shutting down: no new connections, finishing in-flight requests");
        let _ = stop_tx.send(true);
        for s in servers {
            let _ = s.await;
        }
        if let Some(m) = metrics {
            let _ = m.await;
        }
        let _ = maintenance.await;
        let _ = groups.await;
        let _ = transactions.await;
        for t in cluster_tasks {
            let _ = t.await;
        }
        if let Some(node) = node {
            node.quorum.shutdown().await;
        }
        anyhow::Ok(())
    });
    cleaner.stop();
    let b = broker.clone();
    runtime.block_on(async move { tokio::task::spawn_blocking(move || b.shutdown()).await })?;
    runtime.shutdown_timeout(Duration::from_millis(500));
    served?;
    tracing::info!("stopped");
    Ok(())
}

/// Waits until this broker registered and its metadata caught up, saying so every 5 s.
async fn wait_ready(node: &ClusterNode) {
    let started = tokio::time::Instant::now();
    let mut said = started;
    while !node.is_ready() {
        if said.elapsed() >= Duration::from_secs(5) {
            said = tokio::time::Instant::now();
            tracing::info!(
                waited_s = started.elapsed().as_secs(),
                controller = ?node.quorum.leader(),
                "waiting for the metadata quorum before listening (are the other voters up?)"
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts this node's part of the metadata quorum (controller listener bound with its
/// security protocol, metadata log in `<data.dir>/meta/__cluster_metadata-0`) and attaches it
/// to the broker.
async fn start_cluster(
    broker: &Arc<Broker>,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<Arc<ClusterNode>> {
    let cfg = &broker.config;
    let c = &cfg.cluster;
    let stop_for_meta = stop.clone();
    let listener = cfg
        .controller_listener()
        .context("a cluster node needs a controller listener (controller.listener.names)")?;
    let listen = listener.bind_addr()?;
    let node_id = u64::try_from(cfg.node_id).context("node.id must not be negative")?;
    let protocol = cfg
        .listener_protocol(&listener.name)
        .unwrap_or(frieda::security::SecurityProtocol::Plaintext);
    let transport: Arc<dyn QuorumTransport> = if protocol
        == frieda::security::SecurityProtocol::Plaintext
    {
        if cfg.security.authorizer {
            // Kafka's ControllerApis authorizes the PLAINTEXT controller listener's principal,
            // User:ANONYMOUS, like any other: CLUSTER_ACTION on the cluster (super.users).
            let t = frieda::server::quorum_transport::AuthorizedPlaintextTransport::new(
                broker.clone(),
                &listener.name,
            )
            .with_context(|| format!("controller listener {}", listener.name))?;
            if t.anonymous_allowed(listen) {
                tracing::warn!(listener = %listener.name, "the controller listener is PLAINTEXT and User:ANONYMOUS may send quorum requests: anyone who reaches it can change the metadata (ACLs, SCRAM credentials, broker fencing); map it to SSL or SASL_SSL in listener.security.protocol.map");
            } else {
                tracing::warn!(listener = %listener.name, "the controller listener is PLAINTEXT and authorizer.class.name is set: its peers are User:ANONYMOUS, which is not allowed CLUSTER_ACTION, so the other nodes' Raft requests and heartbeats will be refused (as in Kafka, add User:ANONYMOUS to super.users, or map the listener to SSL or SASL_SSL)");
            }
            Arc::new(t)
        } else {
            Arc::new(PlaintextTransport)
        }
    } else {
        let t = frieda::server::quorum_transport::ControllerTransport::new(
            broker.clone(),
            &listener.name,
        )
        .with_context(|| format!("controller listener {}", listener.name))?;
        tracing::info!(listener = %listener.name, security_protocol = protocol.name(), transport = ?t, "controller connections secured");
        Arc::new(t)
    };
    let quorum = MetadataQuorum::start(QuorumConfig {
        node_id,
        voters: c.voters.clone(),
        bootstrap: if c.joins_by_bootstrap() {
            c.bootstrap_servers.clone()
        } else {
            Vec::new()
        },
        listen,
        advertised: controller_address(cfg),
        dir: cfg.data_dir.join("meta").join("__cluster_metadata-0"),
        election_timeout_ms: c.election_timeout_ms,
        heartbeat_interval_ms: (c.election_timeout_ms / 5).max(10),
        broker_session_timeout_ms: c.broker_session_timeout_ms,
        leader_rebalance_interval_ms: c
            .auto_leader_rebalance
            .then_some(c.leader_imbalance_check_interval_ms),
        leader_imbalance_percentage: c.leader_imbalance_per_broker_percentage,
        leader_placement: c.leader_placement,
        unclean_leader_election: cfg.topic_defaults.get("unclean.leader.election.enable")
            == Some("true"),
        // What this broker's partitions enforce for a topic without an override.
        min_insync_replicas: i32::try_from(
            frieda::storage::topic_config::TopicConfigs::default()
                .produce_policy(&cfg.topic_defaults)
                .min_insync_replicas,
        )
        .unwrap_or(1),
        quorum_acks: cfg.topic_defaults.get("replication.ack.policy") == Some("quorum"),
        transport,
    })
    .await
    .context("starting the metadata quorum")?;
    let node = ClusterNode::new(quorum, cfg.node_id, c.clone());
    if c.broker {
        // How this broker logs in to the others: the inter-broker listener's protocol.
        let inter = c
            .inter_broker_listener_name
            .clone()
            .or_else(|| cfg.client_listeners().next().map(|l| l.name.clone()))
            .unwrap_or_default();
        let protocol = cfg
            .listener_protocol(&inter)
            .unwrap_or(frieda::security::SecurityProtocol::Plaintext);
        let security =
            frieda::security::client::ClientSecurity::load(&cfg.security, &inter, protocol)
                .with_context(|| format!("inter-broker listener {inter}"))?;
        tracing::info!(listener = %inter, security_protocol = protocol.name(), sasl = ?security.sasl, "inter-broker connections");
        node.set_inter_broker_security(security);
    }
    broker.attach_cluster(node.clone());
    if !c.broker {
        // A controller-only node runs no reconciler; its controller listener still needs the
        // image's ACLs (CLUSTER_ACTION granted by an ACL) and SCRAM credentials.
        tokio::spawn(follow_security(
            broker.clone(),
            node.quorum.subscribe(),
            stop,
        ));
    }
    tokio::spawn(write_meta_properties(
        cfg.data_dir.clone(),
        cfg.node_id,
        node.quorum.subscribe(),
        stop_for_meta,
    ));
    tracing::info!(node = cfg.node_id, voters = ?c.voters, bootstrap = ?c.bootstrap_servers, broker = c.broker, controller = c.controller, "joined the cluster");
    Ok(node)
}

/// Writes Kafka's `meta.properties` into the data directory once the metadata log names the
/// cluster (see `storage::meta_properties`: Kafka's tools read a node's directory id there).
async fn write_meta_properties(
    data_dir: PathBuf,
    node_id: i32,
    mut images: watch::Receiver<Arc<frieda_meta::MetadataImage>>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let cluster = images.borrow_and_update().cluster_id.clone();
        if let Some(cluster) = cluster {
            let dir = data_dir.clone();
            let written = tokio::task::spawn_blocking(move || {
                frieda::storage::meta_properties::ensure(&dir, node_id, &cluster)
            })
            .await;
            match written {
                Ok(Ok(id)) => tracing::debug!(directory_id = %id, "meta.properties in place"),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "writing meta.properties failed (Kafka's tools that read the data directory will not find this node's directory id)")
                }
                Err(e) => tracing::warn!(error = %e, "writing meta.properties failed"),
            }
            return;
        }
        tokio::select! {
            changed = images.changed() => if changed.is_err() { return },
            _ = stop.changed() => return,
        }
    }
}

/// Applies the security metadata (ACLs, SCRAM credentials, client quotas) of every new image
/// to `broker` until `stop` (a controller-only node's stand-in for the reconciler).
async fn follow_security(
    broker: Arc<Broker>,
    mut images: watch::Receiver<Arc<frieda_meta::MetadataImage>>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let image = images.borrow_and_update().clone();
        broker.security.apply(
            &image.scram_credentials,
            &image.acls,
            &image.client_quotas,
            &image.delegation_tokens,
        );
        tokio::select! {
            changed = images.changed() => if changed.is_err() { return },
            _ = stop.changed() => return,
        }
    }
}

/// `host:port` where other nodes reach this node's controller listener.
fn controller_address(cfg: &BrokerConfig) -> String {
    let Some(l) = cfg.controller_listener() else {
        return String::new();
    };
    let e = cfg
        .advertised_listeners
        .as_ref()
        .and_then(|a| a.iter().find(|e| e.name == l.name))
        .unwrap_or(l);
    let host = if e.host.is_empty() {
        "localhost".to_string()
    } else {
        e.host.clone()
    };
    format!("{host}:{}", e.port)
}

/// What this broker registers with the controller (`clean_shutdown`: its previous run stopped
/// cleanly).
fn registration(cfg: &BrokerConfig, clean_shutdown: bool) -> anyhow::Result<Registration> {
    Ok(Registration {
        endpoints: cfg
            .advertised_endpoints()
            .into_iter()
            .map(|(name, host, port)| MetaEndpoint { name, host, port })
            .collect(),
        rack: cfg.rack.clone(),
        raft_addr: controller_address(cfg),
        clean_shutdown,
    })
}

/// `replica.high.watermark.checkpoint.interval.ms` (Kafka's default).
const HW_CHECKPOINT_EVERY: Duration = Duration::from_millis(5000);

/// Every second: flushes that are due (`flush.ms`, rolled segments); every
/// `log.retention.check.interval.ms`: retention; every `producer.id.expiration.check.interval.ms`:
/// producer expiration; every `log.flush.offset.checkpoint.interval.ms`: the recovery point
/// checkpoint.
async fn maintain(broker: std::sync::Arc<Broker>, mut stop: watch::Receiver<bool>) {
    let c = &broker.config;
    let every = |ms: u64| Duration::from_millis(ms.max(1));
    let retention_every = every(c.retention_check_interval_ms);
    let expiration_every = every(c.producer_id_expiration_check_interval_ms);
    let checkpoint_every = every(c.recovery_checkpoint_interval_ms);
    let token_sweep_every = every(c.security.tokens.expiry_check_interval_ms);
    let mut tick = tokio::time::interval(Duration::from_secs(1).min(retention_every));
    let start = tokio::time::Instant::now();
    let (mut last_retention, mut last_expiration, mut last_checkpoint) = (start, start, start);
    let mut last_hw_checkpoint = start;
    let mut last_token_sweep = start;
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let now = tokio::time::Instant::now();
                let mut upkeep = Upkeep::default();
                if now - last_retention >= retention_every {
                    last_retention = now;
                    upkeep.retention = true;
                }
                if now - last_expiration >= expiration_every {
                    last_expiration = now;
                    upkeep.producer_expiration_ms = Some(broker.config.producer_id_expiration_ms);
                }
                broker.schedule_maintenance(upkeep);
                if broker.security.tokens.policy.enabled() && now - last_token_sweep >= token_sweep_every {
                    last_token_sweep = now;
                    // Its own task: a removal waits for the metadata quorum.
                    let b = broker.clone();
                    tokio::spawn(async move { b.sweep_delegation_tokens().await });
                }
                if now - last_checkpoint >= checkpoint_every {
                    last_checkpoint = now;
                    let b = broker.clone();
                    let written = tokio::task::spawn_blocking(move || b.write_recovery_checkpoint()).await;
                    if let Ok(Err(e)) = written {
                        tracing::warn!(error = %e, "writing the recovery point checkpoint failed");
                    }
                }
                if broker.cluster().is_some() && now - last_hw_checkpoint >= HW_CHECKPOINT_EVERY {
                    last_hw_checkpoint = now;
                    let b = broker.clone();
                    let written = tokio::task::spawn_blocking(move || b.write_high_watermark_checkpoint()).await;
                    if let Ok(Err(e)) = written {
                        tracing::warn!(error = %e, "writing the high watermark checkpoint failed");
                    }
                }
            }
            _ = stop.changed() => return,
        }
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
