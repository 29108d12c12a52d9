//! Log output and log levels that change at run time.
//!
//! Levels come from three layers of `tracing` directives, later ones winning for the same
//! target: Frieda's defaults ([`DEFAULT_DIRECTIVES`]), then `RUST_LOG` (which adds to the
//! defaults rather than replacing them: `RUST_LOG=frieda::cluster=debug` keeps openraft quiet),
//! then the levels set at run time through Kafka's broker-logger configs
//! (`kafka-configs --entity-type broker-loggers --entity-name <id> --alter --add-config
//! frieda.cluster=DEBUG`: IncrementalAlterConfigs on BROKER_LOGGER, KIP-412; loggers are named
//! Kafka-style with dots, see [`target_of`]).
//!
//! Output: text or JSON lines (`log.format`), to stderr or to a file rotated daily or hourly
//! by `tracing-appender` (`log.file`, `log.file.rotation`, `log.file.max.files`).

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Registry};

/// Frieda's default levels: INFO, openraft's own reports of every failed send to a stopped node
/// left out (the quorum's warnings say what matters).
pub const DEFAULT_DIRECTIVES: &str =
    "info,openraft=warn,openraft::replication=off,openraft::engine=off";

/// The logger name Kafka's tools use for the root logger.
pub const ROOT: &str = "root";

/// Logger names are Kafka-style, dotted (`kafka-configs` refuses `:` in a key): `frieda.cluster.isr`
/// is the `tracing` target `frieda::cluster::isr`; `kafka.authorizer.logger` is itself.
pub fn target_of(logger: &str) -> String {
    if logger.starts_with(AUDIT) {
        logger.to_string()
    } else {
        logger.replace('.', "::")
    }
}

/// The Kafka-style name of a `tracing` target (see [`target_of`]).
pub fn logger_of(target: &str) -> String {
    target.replace("::", ".")
}

const AUDIT: &str = "kafka.authorizer.logger";

include!(concat!(env!("OUT_DIR"), "/modules.rs"));

/// Targets besides the frieda crate's own modules ([`CRATE_MODULES`]) that DescribeConfigs on
/// BROKER_LOGGER always lists (as loggers, with their levels in force); IncrementalAlterConfigs
/// accepts these, the crate's modules, modules below them and [`ROOT`].
pub const OTHER_LOGGERS: &[&str] = &[
    "frieda_log",
    "frieda_meta",
    "openraft",
    "openraft::engine",
    "openraft::replication",
    "kafka.authorizer.logger",
];

fn known_targets() -> impl Iterator<Item = &'static str> {
    CRATE_MODULES.iter().chain(OTHER_LOGGERS).copied()
}

/// How log lines are written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogOutput {
    /// `log.format = json`: one JSON object per line (timestamp, level, target, fields).
    pub json: bool,
    /// `log.file`: write here instead of stderr (the directory must exist or be creatable).
    pub file: Option<std::path::PathBuf>,
    /// `log.file.rotation`: `daily` (default), `hourly`, `never`.
    pub rotation: Rotation,
    /// `log.file.max.files`: rotated files kept (default 7; 0 keeps all).
    pub max_files: usize,
}

/// When the log file is rotated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rotation {
    /// A new file each day (`frieda.log.2026-11-27`).
    #[default]
    Daily,
    /// A new file each hour.
    Hourly,
    /// One file.
    Never,
}

/// A log level as Kafka's tools name them (log4j): OFF, FATAL, ERROR, WARN, INFO, DEBUG,
/// TRACE, ALL. FATAL is ERROR, ALL is TRACE.
///
/// Errors: any other name (Kafka's INVALID_CONFIG message lists the valid ones).
pub fn parse_level(level: &str) -> Result<&'static str, String> {
    Ok(match level.trim().to_ascii_uppercase().as_str() {
        "OFF" => "off",
        "FATAL" | "ERROR" => "error",
        "WARN" => "warn",
        "INFO" => "info",
        "DEBUG" => "debug",
        "TRACE" | "ALL" => "trace",
        _ => {
            return Err(format!(
                "Cannot set the log level to {level} as it is not a supported log level. Valid log levels are OFF, FATAL, ERROR, WARN, INFO, DEBUG, TRACE, ALL"
            ))
        }
    })
}

/// Whether `logger` (Kafka-style, dotted) is one IncrementalAlterConfigs may set: [`ROOT`], a
/// known target ([`CRATE_MODULES`], [`OTHER_LOGGERS`]) or a module below one.
pub fn logger_exists(logger: &str) -> bool {
    let name = target_of(logger);
    logger == ROOT
        || known_targets()
            .any(|k| name == k || name.strip_prefix(k).is_some_and(|r| r.starts_with("::")))
}

struct State {
    /// `RUST_LOG` as given at start (empty when unset).
    env: String,
    /// Levels set at run time: logger -> tracing level (`debug`); [`ROOT`] for the root.
    dynamic: BTreeMap<String, &'static str>,
    reload: Option<reload::Handle<EnvFilter, Registry>>,
}

fn state() -> &'static Mutex<State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE.get_or_init(|| {
        Mutex::new(State {
            env: std::env::var("RUST_LOG").unwrap_or_default(),
            dynamic: BTreeMap::new(),
            reload: None,
        })
    })
}

/// Every directive in force, in order (defaults, `RUST_LOG`, run-time levels): `(target,
/// level)` with target `None` for the root.
fn directives(s: &State) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    let text = [DEFAULT_DIRECTIVES, s.env.as_str()].join(",");
    for d in text.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        match d.split_once('=') {
            Some((t, l)) => out.push((Some(t.to_string()), l.to_ascii_lowercase())),
            None if parse_level(d).is_ok() => out.push((None, d.to_ascii_lowercase())),
            None => out.push((Some(d.to_string()), "trace".to_string())),
        }
    }
    for (logger, level) in &s.dynamic {
        let target = (logger != ROOT).then(|| target_of(logger));
        out.push((target, level.to_string()));
    }
    out
}

fn filter(s: &State) -> EnvFilter {
    let text: Vec<String> = directives(s)
        .into_iter()
        .map(|(t, l)| match t {
            Some(t) => format!("{t}={l}"),
            None => l,
        })
        .collect();
    EnvFilter::try_new(text.join(",")).unwrap_or_else(|e| {
        eprintln!("RUST_LOG: {e}; using Frieda's default levels");
        EnvFilter::new(DEFAULT_DIRECTIVES)
    })
}

/// Installs the global subscriber (once, at start): levels as above, lines as `output` says.
///
/// Errors: the log file cannot be opened.
pub fn init(output: &LogOutput) -> anyhow::Result<()> {
    let (filter_layer, handle) = reload::Layer::new(filter(&state().lock()));
    state().lock().reload = Some(handle);
    let ansi = output.file.is_none() && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let writer = match &output.file {
        None => tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::io::stderr),
        Some(path) => {
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("frieda.log");
            let rotation = match output.rotation {
                Rotation::Daily => tracing_appender::rolling::Rotation::DAILY,
                Rotation::Hourly => tracing_appender::rolling::Rotation::HOURLY,
                Rotation::Never => tracing_appender::rolling::Rotation::NEVER,
            };
            let mut b = tracing_appender::rolling::RollingFileAppender::builder()
                .rotation(rotation)
                .filename_prefix(name);
            if output.max_files > 0 {
                b = b.max_log_files(output.max_files);
            }
            let appender = b
                .build(dir)
                .map_err(|e| anyhow::anyhow!("log.file {}: {e}", path.display()))?;
            tracing_subscriber::fmt::writer::BoxMakeWriter::new(appender)
        }
    };
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(ansi);
    let registry = tracing_subscriber::registry()
        .with(filter_layer)
        .with(QuietRetries);
    if output.json {
        registry.with(fmt.json()).try_init()?;
    } else {
        registry.with(fmt).try_init()?;
    }
    Ok(())
}

/// openraft's reports of a quorum peer that does not answer, made again on every retry: a
/// leadership check for each linearizable read (several a second), a vote request each
/// election. A voter that is down while the quorum holds is normal operation, so these are
/// left out at every level; `frieda_meta::network` logs each change of a peer's reachability
/// once instead (WARN when it stops answering, INFO when it answers again).
const OPENRAFT_RETRY_REPORTS: &[&str] = &[
    "timeout while confirming leadership for read request",
    "while requesting vote",
    "timeout",
    "A message will be ignored because vote changed",
];

/// openraft's reports of a call that met its stopped Raft core. While this node's quorum
/// stops ([`frieda_meta::shutting_down`]) they are routine (a broker task's last controller
/// request, a leadership check in flight) and left out; at any other time they stay, since
/// then the core stopped on its own.
const OPENRAFT_STOPPED_CORE_REPORTS: &[&str] = &[
    "failure sending RaftMsg to RaftCore",
    "failure receiving rx from RaftCore",
    "error when openraft::raft::raft_inner",
];

/// Whether an event is one of [`OPENRAFT_STOPPED_CORE_REPORTS`] made while the quorum stops.
fn is_openraft_stop_report(event: &tracing::Event<'_>) -> bool {
    frieda_meta::shutting_down()
        && openraft_message(event).is_some_and(|m| {
            OPENRAFT_STOPPED_CORE_REPORTS
                .iter()
                .any(|r| m.starts_with(r))
        })
}

/// The message of an openraft event at WARN or ERROR, else `None`.
fn openraft_message(event: &tracing::Event<'_>) -> Option<String> {
    struct Message(Option<String>);
    impl tracing::field::Visit for Message {
        fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
            if field.name() == "message" {
                self.0 = Some(value.to_string());
            }
        }
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0 = Some(format!("{value:?}"));
            }
        }
    }
    let meta = event.metadata();
    if !meta.target().starts_with("openraft") || *meta.level() > tracing::Level::WARN {
        return None;
    }
    let mut m = Message(None);
    event.record(&mut m);
    m.0
}

/// Whether an event is one of [`OPENRAFT_RETRY_REPORTS`].
fn is_openraft_retry_report(event: &tracing::Event<'_>) -> bool {
    openraft_message(event).is_some_and(|m| {
        OPENRAFT_RETRY_REPORTS.iter().any(|r| {
            m.strip_prefix(r)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
        })
    })
}

/// The layer that drops [`OPENRAFT_RETRY_REPORTS`], and [`OPENRAFT_STOPPED_CORE_REPORTS`]
/// while the quorum stops.
struct QuietRetries;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for QuietRetries {
    fn event_enabled(
        &self,
        event: &tracing::Event<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        !is_openraft_retry_report(event) && !is_openraft_stop_report(event)
    }
}

fn apply(s: &State) {
    if let Some(h) = &s.reload {
        if let Err(e) = h.reload(filter(s)) {
            tracing::warn!(error = %e, "could not change the log levels");
        }
    }
}

/// Sets `logger`'s level at run time (Kafka's log4j level names).
///
/// Errors: an unknown logger or level, with Kafka's messages (INVALID_CONFIG).
pub fn set_level(logger: &str, level: &str) -> Result<(), String> {
    if !logger_exists(logger) {
        return Err(format!("Logger {logger} does not exist!"));
    }
    let level = parse_level(level)?;
    let mut s = state().lock();
    s.dynamic.insert(logger.to_string(), level);
    apply(&s);
    drop(s);
    tracing::info!(logger, level, "log level changed");
    Ok(())
}

/// Removes a level set at run time (the logger follows its parent again).
///
/// Errors: the root logger (Kafka: "Removing the log level of the root logger is not
/// allowed"), an unknown logger.
pub fn unset_level(logger: &str) -> Result<(), String> {
    if logger == ROOT {
        return Err("Removing the log level of the root logger is not allowed".to_string());
    }
    if !logger_exists(logger) {
        return Err(format!("Logger {logger} does not exist!"));
    }
    let mut s = state().lock();
    s.dynamic.remove(logger);
    apply(&s);
    drop(s);
    tracing::info!(logger, "log level reset to the parent's");
    Ok(())
}

/// The level in force for `logger`: the last directive for the longest target that is the
/// logger or a module above it, else the root's.
fn effective(dirs: &[(Option<String>, String)], logger: &str) -> String {
    let mut best: Option<(usize, &str)> = None;
    let mut root = "info";
    for (t, l) in dirs {
        let Some(t) = t else {
            root = l;
            continue;
        };
        let covers = logger == t
            || logger
                .strip_prefix(t.as_str())
                .is_some_and(|r| r.starts_with("::"));
        if covers && best.is_none_or(|(len, _)| t.len() >= len) {
            best = Some((t.len(), l));
        }
    }
    if logger == ROOT {
        return root.to_ascii_uppercase();
    }
    best.map_or(root, |(_, l)| l).to_ascii_uppercase()
}

/// Every logger (Kafka-style names) with its level in force, as DescribeConfigs on
/// BROKER_LOGGER answers: the root, the known targets and every target a directive names;
/// levels upper-case (`INFO`).
pub fn describe() -> Vec<(String, String)> {
    let s = state().lock();
    let dirs = directives(&s);
    let mut targets: Vec<String> = known_targets().map(String::from).collect();
    targets.extend(dirs.iter().filter_map(|(t, _)| t.clone()));
    targets.sort();
    targets.dedup();
    let mut out = vec![(ROOT.to_string(), effective(&dirs, ROOT))];
    out.extend(targets.into_iter().map(|t| {
        let l = effective(&dirs, &t);
        (logger_of(&t), l)
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_follow_the_most_specific_and_latest_directive() {
        let s = State {
            env: "frieda::cluster=debug,warn".into(),
            dynamic: BTreeMap::from([("frieda.cluster.isr".to_string(), "trace")]),
            reload: None,
        };
        let d = directives(&s);
        assert_eq!(effective(&d, ROOT), "WARN"); // RUST_LOG's bare level replaces the default
        assert_eq!(effective(&d, "openraft"), "WARN");
        assert_eq!(effective(&d, "openraft::engine"), "OFF");
        assert_eq!(effective(&d, "frieda::cluster"), "DEBUG");
        assert_eq!(effective(&d, "frieda::cluster::isr"), "TRACE");
        assert_eq!(effective(&d, "frieda::clusterx"), "WARN");
    }

    #[test]
    fn openrafts_retry_reports_are_left_out_and_nothing_else() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        struct Count(Arc<AtomicUsize>);
        impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Count {
            fn on_event(
                &self,
                _: &tracing::Event<'_>,
                _: tracing_subscriber::layer::Context<'_, S>,
            ) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let seen = Arc::new(AtomicUsize::new(0));
        let subscriber = tracing_subscriber::registry()
            .with(QuietRetries)
            .with(Count(seen.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let raft = "openraft::core::raft_core";
            tracing::error!(target: "openraft::core::raft_core", target = 3, error = "Unreachable node",
                "timeout while confirming leadership for read request");
            tracing::error!(target: "openraft::core::raft_core", error = "refused", target = 3, "while requesting vote");
            tracing::error!(target: "openraft::core::raft_core", error = "elapsed", "timeout");
            tracing::warn!(target: "openraft::core::raft_core",
                "A message will be ignored because vote changed: msg sent by vote: T1-N2:committed; current my vote: None; when (VoteResponse)");
            assert_eq!(
                seen.load(Ordering::Relaxed),
                0,
                "{raft}: retry reports pass"
            );
            tracing::error!(target: "openraft::core::raft_core", error = "storage", "quit RaftCore::main on error");
            tracing::error!(target: "openraft::core::raft_core", "timeout while applying");
            tracing::error!(target: "frieda::cluster", "timeout");
            tracing::info!(target: "openraft::core::raft_core", "timeout");
            assert_eq!(seen.load(Ordering::Relaxed), 4, "other reports are kept");
        });
    }

    #[test]
    fn kafka_level_names() {
        assert_eq!(parse_level("FATAL"), Ok("error"));
        assert_eq!(parse_level("all"), Ok("trace"));
        assert!(parse_level("LOUD").is_err());
        assert!(logger_exists("frieda.cluster.isr") && logger_exists(ROOT));
        assert!(logger_exists("kafka.authorizer.logger") && logger_exists("frieda_meta"));
        assert!(!logger_exists("friedax") && !logger_exists("kafka.server"));
        assert!(
            CRATE_MODULES.contains(&"frieda::cluster::isr"),
            "{CRATE_MODULES:?}"
        );
        assert!(
            CRATE_MODULES.contains(&"frieda::replication"),
            "{CRATE_MODULES:?}"
        );
        assert_eq!(target_of("frieda.cluster.isr"), "frieda::cluster::isr");
        assert_eq!(logger_of("frieda::cluster::isr"), "frieda.cluster.isr");
        assert!(unset_level(ROOT).is_err());
    }
}
