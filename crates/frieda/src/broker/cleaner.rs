//! The log cleaner thread: compacts every partition whose `cleanup.policy` contains `compact`
//! (user topics and `__consumer_offsets` alike), and runs those partitions' retention by time
//! and size when the policy also has `delete` (as Kafka's cleaner thread does, so retention
//! and cleaning of one log never overlap).
//!
//! One pass per partition follows `frieda_log`'s three steps: candidate under the partition's
//! lock, cleaning without it (throttled to `log.cleaner.io.max.bytes.per.second`), install
//! under it, file renames without it. Where each log's next pass starts (the first dirty
//! offset) is checkpointed in `<data.dir>/cleaner-offset-checkpoint`. A partition whose
//! cleaning fails is not retried until the broker restarts, as in Kafka (its data is untouched:
//! a pass only ever adds files until it is installed). When no log needed cleaning the thread
//! sleeps `log.cleaner.backoff.ms`.

use super::Broker;
use crate::clock::now_ms;
use crate::config::CleanerConfig;
use crate::storage::checkpoint::{self, Offsets};
use crate::storage::partition::Partition;
use crate::storage::writer::enforce_retention;
use frieda_log::{CleanContext, Throttle, BYTES_PER_MAP_ENTRY};
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// What the cleaner remembers of one partition between passes.
#[derive(Debug, Clone, Copy)]
struct LogState {
    /// First dirty offset: where the next pass's offset map starts.
    checkpoint: i64,
    /// The latest delete horizon a pass stamped (ms), -1 if none.
    latest_delete_horizon: i64,
}

impl Default for LogState {
    fn default() -> Self {
        LogState {
            checkpoint: -1,
            latest_delete_horizon: -1,
        }
    }
}

/// The cleaner's memory of every log (loaded from and saved to `cleaner-offset-checkpoint`),
/// shared with the broker so that a topic created under a deleted topic's name never inherits
/// its state (a stale checkpoint would take the new log's start as already clean).
pub struct CleanerState {
    path: std::path::PathBuf,
    logs: Mutex<HashMap<(String, i32), LogState>>,
}

impl CleanerState {
    /// Loads `<data_dir>/cleaner-offset-checkpoint` (missing or damaged: empty).
    pub fn load(data_dir: &std::path::Path) -> CleanerState {
        let path = data_dir.join(checkpoint::CLEANER_OFFSET_FILE);
        let logs = checkpoint::read(&path)
            .into_iter()
            .map(|(k, checkpoint)| {
                (
                    k,
                    LogState {
                        checkpoint,
                        latest_delete_horizon: -1,
                    },
                )
            })
            .collect();
        CleanerState {
            path,
            logs: Mutex::new(logs),
        }
    }

    /// Forgets every partition of `topic` and saves the checkpoint: call before a topic of that
    /// name gets new logs.
    ///
    /// Errors: the checkpoint could not be written.
    pub fn forget_topic(&self, topic: &str) -> std::io::Result<()> {
        let mut logs = self.logs.lock();
        let before = logs.len();
        logs.retain(|(t, _), _| t != topic);
        if logs.len() == before {
            return Ok(());
        }
        Self::save_locked(&self.path, &logs)
    }

    fn save_locked(
        path: &std::path::Path,
        logs: &HashMap<(String, i32), LogState>,
    ) -> std::io::Result<()> {
        let offsets: Offsets = logs
            .iter()
            .filter(|(_, s)| s.checkpoint >= 0)
            .map(|(k, s)| (k.clone(), s.checkpoint))
            .collect();
        checkpoint::write(path, &offsets)
    }

    fn get(&self, key: &(String, i32)) -> LogState {
        self.logs.lock().get(key).copied().unwrap_or_default()
    }

    fn set(&self, key: (String, i32), state: LogState) {
        self.logs.lock().insert(key, state);
    }

    /// Keeps only the partitions in `live` and saves the checkpoint.
    fn save(&self, live: &HashSet<(String, i32)>) -> std::io::Result<()> {
        let mut logs = self.logs.lock();
        logs.retain(|k, _| live.contains(k));
        Self::save_locked(&self.path, &logs)
    }
}

/// The running cleaner; [`stop`](Self::stop) ends it.
pub struct LogCleaner {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LogCleaner {
    /// Starts the cleaner thread for `broker` (if `log.cleaner.enable`).
    pub fn start(broker: Arc<Broker>) -> LogCleaner {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = broker.config.cleaner.enable.then(|| {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("log-cleaner".into())
                .spawn(move || run(&broker, &stop))
                .expect("spawn the log cleaner thread")
        });
        LogCleaner { stop, thread }
    }

    /// Stops the thread (a pass in progress is cancelled between batches; its files are
    /// discarded or finished at the next start) and waits for it.
    pub fn stop(mut self) {
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(broker: &Broker, stop: &(Mutex<bool>, Condvar)) {
    let config = broker.config.cleaner.clone();
    let states = &broker.cleaner_state;
    // Partitions whose cleaning failed, by identity (a namesake created later is cleaned).
    let mut uncleanable: HashSet<usize> = HashSet::new();
    let mut throttle = Throttle::new(config.io_max_bytes_per_second);
    let stopped = || *stop.0.lock();
    while !stopped() {
        let mut cleaned_any = false;
        let mut live = HashSet::new();
        for topic in broker.topics() {
            for p in topic.local_partitions().iter() {
                if stopped() {
                    break;
                }
                let key = (p.topic.to_string(), p.index);
                live.insert(key.clone());
                let policy = p.produce_policy();
                let identity = Arc::as_ptr(p) as usize;
                if !policy.compacted || uncleanable.contains(&identity) || !p.is_online() {
                    continue;
                }
                let mut state = states.get(&key);
                let outcome = clean_once(p, &mut state, &config, &mut throttle, &stopped);
                // Not kept for a topic deleted (or replaced by a namesake) meanwhile.
                if broker
                    .topic(&p.topic)
                    .is_some_and(|t| Arc::ptr_eq(&t, &topic))
                {
                    states.set(key.clone(), state);
                }
                match outcome {
                    Ok(true) => cleaned_any = true,
                    Ok(false) => {}
                    Err(e) if stopped() || p.is_deleted() => {
                        tracing::debug!(topic = %p.topic, partition = p.index, error = %e, "cleaning cancelled");
                    }
                    Err(e) => {
                        tracing::error!(topic = %p.topic, partition = p.index, error = %e,
                            "cleaning failed; this partition is not cleaned again until the broker restarts");
                        uncleanable.insert(identity);
                    }
                }
                // compact,delete: retention runs here, never beside a cleaning of the same log.
                enforce_retention(p, now_ms());
            }
        }
        if cleaned_any {
            if let Err(e) = states.save(&live) {
                tracing::warn!(error = %e, "writing the cleaner checkpoint failed");
            }
            continue;
        }
        let mut guard = stop.0.lock();
        if !*guard {
            stop.1
                .wait_for(&mut guard, Duration::from_millis(config.backoff_ms));
        }
    }
}

/// One pass over one partition; `Ok(true)` when it rewrote segments.
fn clean_once(
    p: &Partition,
    state: &mut LogState,
    config: &CleanerConfig,
    throttle: &mut Throttle,
    stopped: &dyn Fn() -> bool,
) -> Result<bool, frieda_log::LogError> {
    let now = now_ms();
    let (candidate, producers) = {
        let guard = p.state.lock();
        let Some(st) = guard.as_ref() else {
            return Ok(false);
        };
        (
            st.log
                .cleaning_candidate(state.checkpoint, state.latest_delete_horizon, now),
            st.log.last_batch_offsets(),
        )
    };
    let Some(candidate) = candidate else {
        return Ok(false);
    };
    let reason = candidate.reason;
    let ratio = candidate.dirty_ratio;
    let cancelled = || stopped() || p.is_deleted();
    let mut ctx = CleanContext {
        now_ms: now,
        max_map_entries: (config.dedupe_buffer_bytes / BYTES_PER_MAP_ENTRY).max(1),
        active_producers: &producers,
        throttle,
        cancelled: &cancelled,
    };
    let started = std::time::Instant::now();
    let cleaned = candidate.clean(&mut ctx)?;
    let map_end = cleaned.map_end;
    let horizon = cleaned.latest_delete_horizon;
    let stats = cleaned.stats;
    let swap = {
        let mut guard = p.state.lock();
        match guard.as_mut() {
            Some(st) => st.log.install_cleaned(cleaned),
            // Deleted meanwhile: its directory (and the cleaned files) are gone with it.
            None => return Ok(false),
        }
    };
    let installed = swap.installed();
    swap.finish()?;
    if !installed {
        return Ok(false);
    }
    state.checkpoint = map_end;
    state.latest_delete_horizon = horizon;
    tracing::info!(
        topic = %p.topic, partition = p.index, ?reason, dirty_ratio = ratio,
        first_dirty_next = map_end,
        bytes_read = stats.bytes_read, bytes_before = stats.bytes_replaced,
        bytes_after = stats.bytes_written, records_removed = stats.records_removed,
        tombstones_removed = stats.tombstones_removed,
        segments_before = stats.segments_replaced, segments_after = stats.segments_written,
        ms = started.elapsed().as_millis() as u64,
        "cleaned log"
    );
    Ok(stats.segments_written > 0)
}
