//! `frieda`: the broker binary.

use anyhow::Context;
use clap::{Parser, Subcommand};
use frieda::broker::Broker;
use frieda::config::BrokerConfig;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::watch;

#[derive(Parser)]
#[command(
    name = "frieda",
    version,
    about = "A Kafka-protocol message broker built for low tail latency"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the broker (defaults: 127.0.0.1:9092, data in ./frieda-data).
    Serve {
        /// Address to listen on (HOST:PORT); overrides the config file.
        #[arg(long)]
        listen: Option<SocketAddr>,
        /// Data directory; overrides the config file.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// TOML config file with Kafka-named settings (see README).
        #[arg(long)]
        config: Option<PathBuf>,
        /// HOST:PORT advertised to clients in Metadata; defaults to the listen address.
        #[arg(long)]
        advertised_listener: Option<String>,
    },
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            listen,
            data_dir,
            config,
            advertised_listener,
        } => {
            let result = (|| {
                let mut cfg = match config {
                    Some(path) => BrokerConfig::load(&path)?,
                    None => BrokerConfig::default(),
                };
                if let Some(l) = listen {
                    cfg.listen = l;
                }
                if let Some(d) = data_dir {
                    cfg.data_dir = d;
                }
                if let Some(a) = advertised_listener {
                    cfg.advertised_listener = Some(a);
                }
                serve(cfg)
            })();
            match result {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!("{e:#}");
                    std::process::ExitCode::FAILURE
                }
            }
        }
    }
}

fn serve(cfg: BrokerConfig) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.network_threads)
        .thread_name("frieda-net")
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let listen = cfg.listen;
    let retention_every = Duration::from_millis(cfg.retention_check_interval_ms);
    let broker = Broker::open(cfg)?;
    runtime.block_on(async {
        let listener = frieda::server::listener::bind(listen, &broker.config)
            .with_context(|| format!("binding {listen}"))?;
        let (host, port) = broker.config.advertised();
        tracing::info!(%listen, advertised = %format!("{host}:{port}"), version = env!("CARGO_PKG_VERSION"), "frieda is listening");
        let (stop_tx, stop_rx) = watch::channel(false);
        let maintenance = tokio::spawn(maintain(broker.clone(), retention_every, stop_rx.clone()));
        // Group timers (sessions, rebalances), offsets retention and compaction; on stop it
        // answers parked JoinGroup/SyncGroup requests so connections can finish.
        let groups = tokio::spawn(broker.groups.clone().run(stop_rx.clone()));
        let server = tokio::spawn(frieda::server::serve(listener, broker.clone(), stop_rx));
        wait_for_signal().await;
        tracing::info!("shutting down: no new connections, finishing in-flight requests");
        let _ = stop_tx.send(true);
        let _ = server.await;
        let _ = maintenance.await;
        let _ = groups.await;
        anyhow::Ok(())
    })?;
    let b = broker.clone();
    runtime.block_on(async move { tokio::task::spawn_blocking(move || b.shutdown()).await })?;
    runtime.shutdown_timeout(Duration::from_millis(500));
    tracing::info!("stopped");
    Ok(())
}

/// Every second: time-based flushes; every `retention_every`: retention too.
async fn maintain(
    broker: std::sync::Arc<Broker>,
    retention_every: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(1).min(retention_every));
    let mut last_retention = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let retention = last_retention.elapsed() >= retention_every;
                if retention {
                    last_retention = tokio::time::Instant::now();
                }
                broker.schedule_maintenance(retention);
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
