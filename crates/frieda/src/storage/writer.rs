//! Log writer threads: the threads that call fsync, and, with `log.append.mode = "writer"`,
//! the only threads that append to partition logs.
//!
//! With inline appends (the default) a network thread appends a produced batch itself and
//! sends a `Flush` job here only when the flush policy (`flush.messages`) says the append must
//! be durable before it is acknowledged. With `log.append.mode = "writer"` a produce hands its
//! validated batch here and awaits a oneshot. Either way each writer drains every job waiting
//! in its queue, appends what it was given (waking the partition's waiting fetches after each
//! append, or once per round with `fetch.batched.wakeups`), then syncs each touched partition
//! once (group commit: one fsync covers every append waiting for it), and only then answers
//! (batched confirmation, HiPower seed 003). The fsync runs without the partition's lock, so
//! inline appends go on meanwhile.

use super::partition::{Partition, PartitionState, ProducerCheck};
use crate::clock::now_ms;
use bytes::BytesMut;
use frieda_log::{BatchHeader, LogError};
use kafka_protocol::error::ResponseError;
use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Arc;
use tokio::sync::oneshot;

/// Jobs drained per round before flushing and replying (bounds the latency one round adds).
const MAX_JOBS_PER_ROUND: usize = 1024;

/// Where an append landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendOutcome {
    /// Offset of the first record of the batch.
    pub base_offset: i64,
    /// Offset of the last record of the batch (what `acks=all` waits to see replicated).
    pub last_offset: i64,
    /// The leader epoch it was appended in (0 on a single broker).
    pub leader_epoch: i32,
    /// Broker time stamped on the batch with LogAppendTime, else -1.
    pub log_append_time: i64,
    /// Log start offset after the append.
    pub log_start_offset: i64,
}

/// The answer to one append: its outcome or the Kafka error for the produce response.
pub type AppendReply = oneshot::Sender<Result<AppendOutcome, ResponseError>>;

/// Work for a writer thread.
pub enum WriterJob {
    /// Append one validated record batch (exactly one, as Produce v3+ requires).
    Append {
        partition: Arc<Partition>,
        records: BytesMut,
        header: BatchHeader,
        check: ProducerCheck,
        reply: AppendReply,
    },
    /// Answer `outcome` once the partition's appends so far are fsync'ed (an inline append the
    /// flush policy wants durable before its acknowledgement).
    Flush {
        partition: Arc<Partition>,
        outcome: AppendOutcome,
        reply: AppendReply,
    },
    /// Periodic upkeep of one partition: see [`Upkeep`].
    Maintain {
        partition: Arc<Partition>,
        upkeep: Upkeep,
    },
    /// Finish queued work and exit.
    Stop,
}

/// What a [`WriterJob::Maintain`] does besides the flushes that are due (`flush.ms` elapsed,
/// or segments rolled since the last flush: Kafka flushes a segment when it rolls, which is
/// what advances the recovery point under the default flush policy).
#[derive(Debug, Clone, Copy, Default)]
pub struct Upkeep {
    /// Retention by time and size (`log.retention.check.interval.ms`); compacted logs get it
    /// from the log cleaner instead.
    pub retention: bool,
    /// Forget idempotent producers silent this long, ms (`producer.id.expiration.ms`).
    pub producer_expiration_ms: Option<i64>,
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

/// The design switches of the append path (`log.append.mode`, `log.group.commit`,
/// `fetch.batched.wakeups`; see [`crate::config::BrokerConfig`]).
#[derive(Debug, Clone, Copy)]
pub struct WriterOptions {
    /// Which thread appends.
    pub append_mode: AppendMode,
    /// One fsync per partition per round (true) or one per append (false).
    pub group_commit: bool,
    /// One wake-up of waiting fetches per partition per round (true) or one per append (false).
    pub batched_wakeups: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            append_mode: AppendMode::Inline,
            group_commit: true,
            batched_wakeups: false,
        }
    }
}

/// Jobs one writer thread's queue holds; a producer finding it full waits (backpressure: the
/// disk is behind). Periodic upkeep is skipped instead of waiting (it comes again next second).
pub const WRITER_QUEUE_BOUND: usize = 65_536;

/// Sends jobs to one writer thread.
#[derive(Clone)]
pub struct WriterHandle {
    tx: mpsc::SyncSender<WriterJob>,
    append_mode: AppendMode,
}

impl WriterHandle {
    /// Queues a job, waiting while the queue is full ([`WRITER_QUEUE_BOUND`]). If the writer has
    /// exited (shutdown), the job is dropped, which drops its reply sender and so answers
    /// KAFKA_STORAGE_ERROR.
    pub fn send(&self, job: WriterJob) {
        let _ = self.tx.send(job);
    }

    /// Queues a job unless the queue is full; returns whether it was queued.
    pub fn try_send(&self, job: WriterJob) -> bool {
        self.tx.try_send(job).is_ok()
    }

    /// Whether appends run on the caller's thread (`log.append.mode = "inline"`).
    pub fn appends_inline(&self) -> bool {
        self.append_mode == AppendMode::Inline
    }
}

/// The pool of writer threads.
pub struct LogWriters {
    handles: Vec<WriterHandle>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl LogWriters {
    /// Starts `threads` writer threads with the default options.
    pub fn start(threads: usize) -> LogWriters {
        Self::start_with(threads, WriterOptions::default())
    }

    /// Starts `threads` writer threads.
    pub fn start_with(threads: usize, options: WriterOptions) -> LogWriters {
        let mut handles = Vec::new();
        let mut joins = Vec::new();
        for i in 0..threads.max(1) {
            let (tx, rx) = mpsc::sync_channel(WRITER_QUEUE_BOUND);
            handles.push(WriterHandle {
                tx,
                append_mode: options.append_mode,
            });
            joins.push(
                std::thread::Builder::new()
                    .name(format!("log-writer-{i}"))
                    .spawn(move || run(rx, options))
                    .expect("spawn log writer thread"),
            );
        }
        LogWriters {
            handles,
            threads: joins,
        }
    }

    /// The writer for a partition: fixed by hashing topic and index.
    pub fn for_partition(&self, topic: &str, index: i32) -> WriterHandle {
        let mut h: u64 = 0xcbf29ce484222325;
        for b in topic.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
        h = (h ^ index as u64).wrapping_mul(0x100000001b3);
        self.handles[(h % self.handles.len() as u64) as usize].clone()
    }

    /// Stops every writer after the jobs already queued, and waits for them.
    pub fn stop(self) {
        for h in &self.handles {
            h.send(WriterJob::Stop);
        }
        for t in self.threads {
            let _ = t.join();
        }
    }
}

struct Pending {
    partition: Arc<Partition>,
    reply: AppendReply,
    result: Result<AppendOutcome, ResponseError>,
}

/// A partition touched in this round, and whether this thread appended to it.
struct Touched {
    partition: Arc<Partition>,
    appended: bool,
}

/// The round's entry for `partition`, added on first touch.
fn touch<'a>(
    touched: &'a mut HashMap<*const Partition, Touched>,
    partition: &Arc<Partition>,
) -> &'a mut Touched {
    touched
        .entry(Arc::as_ptr(partition))
        .or_insert_with(|| Touched {
            partition: partition.clone(),
            appended: false,
        })
}

fn run(rx: mpsc::Receiver<WriterJob>, options: WriterOptions) {
    let mut pending: Vec<Pending> = Vec::new();
    let mut touched: HashMap<*const Partition, Touched> = HashMap::new();
    loop {
        let Ok(first) = rx.recv() else { return };
        let mut stop = false;
        let mut next = Some(first);
        let mut n = 0;
        while let Some(job) = next.take() {
            n += 1;
            match job {
                WriterJob::Append {
                    partition,
                    records,
                    header,
                    check,
                    reply,
                } => {
                    let mut result = partition.append_locked(records, &header, check);
                    if result.is_ok() && !options.group_commit {
                        // Ablation: every append is made durable on its own.
                        if let Err(e) = flush_if_due(&partition) {
                            tracing::error!(topic = %partition.topic, partition = partition.index, error = %e,
                                "flush failed; failing the append with KAFKA_STORAGE_ERROR");
                            result = Err(ResponseError::KafkaStorageError);
                        }
                    }
                    if !options.batched_wakeups {
                        partition.notify_data();
                    }
                    touch(&mut touched, &partition).appended = true;
                    pending.push(Pending {
                        partition,
                        reply,
                        result,
                    });
                }
                WriterJob::Flush {
                    partition,
                    outcome,
                    reply,
                } => {
                    touch(&mut touched, &partition);
                    pending.push(Pending {
                        partition,
                        reply,
                        result: Ok(outcome),
                    });
                }
                WriterJob::Maintain { partition, upkeep } => maintain(&partition, upkeep),
                WriterJob::Stop => stop = true,
            }
            if n < MAX_JOBS_PER_ROUND && !stop {
                next = rx.try_recv().ok();
            }
        }
        // Group commit: one flush per partition for all of this round's appends.
        for t in touched.values() {
            if let Err(e) = flush_if_due(&t.partition) {
                tracing::error!(topic = %t.partition.topic, partition = t.partition.index, error = %e,
                    "flush failed; failing this round's appends with KAFKA_STORAGE_ERROR");
                for p in pending.iter_mut() {
                    if Arc::ptr_eq(&p.partition, &t.partition) {
                        p.result = Err(ResponseError::KafkaStorageError);
                    }
                }
            }
            if t.appended && options.batched_wakeups {
                t.partition.notify_data();
            }
        }
        touched.clear();
        for p in pending.drain(..) {
            let _ = p.reply.send(p.result);
        }
        if stop {
            return;
        }
    }
}

/// Syncs the partition if its flush policy says so (`flush.messages` records unflushed). The
/// fsync runs without the partition's lock.
pub(crate) fn flush_if_due(partition: &Partition) -> Result<(), LogError> {
    flush_unlocked(partition, PartitionState::flush_due)
}

/// Takes a flush ticket under the lock when `due` says so, syncs it without the lock, and
/// records the result under the lock again.
fn flush_unlocked(
    partition: &Partition,
    due: impl Fn(&PartitionState) -> bool,
) -> Result<(), LogError> {
    let ticket = {
        let mut guard = partition.state.lock();
        let Some(state) = guard.as_mut() else {
            return Ok(());
        };
        if !due(state) {
            return Ok(());
        }
        match state.log.begin_flush()? {
            Some(t) => t,
            None => return Ok(()),
        }
    };
    let synced = ticket.sync();
    if let Some(state) = partition.state.lock().as_mut() {
        state.log.finish_flush(&ticket, synced.is_ok());
    }
    if synced.is_ok() {
        // The high watermark may follow the recovery point (flush.messages=1): wake fetches.
        partition.notify_data();
    }
    synced
}

fn maintain(partition: &Partition, upkeep: Upkeep) {
    let now = now_ms();
    let flush_due = |state: &PartitionState| {
        let flush_ms = state.log.config().flush_ms;
        let by_time = state.log.unflushed_messages() > 0
            && flush_ms < i64::MAX as u64
            && now - state.log.last_flush_ms() >= flush_ms as i64;
        by_time || state.log.has_unflushed_closed_segments()
    };
    if let Err(e) = flush_unlocked(partition, flush_due) {
        tracing::error!(topic = %partition.topic, partition = partition.index, error = %e, "periodic flush failed");
    }
    if let Some(ms) = upkeep.producer_expiration_ms {
        if let Some(state) = partition.state.lock().as_mut() {
            let n = state.log.expire_producers(now, ms);
            if n > 0 {
                tracing::debug!(topic = %partition.topic, partition = partition.index, expired = n,
                    "forgot idle idempotent producers (producer.id.expiration.ms)");
            }
        }
    }
    // A compacted log's retention runs on the log cleaner's thread, never beside a cleaning.
    if upkeep.retention && !partition.produce_policy().compacted {
        enforce_retention(partition, now);
    }
}

/// Retention by time and size of a partition (a no-op unless `cleanup.policy` has `delete`). The
/// segments are taken out of the log under the partition's lock; their files are deleted after
/// it is released.
pub(crate) fn enforce_retention(partition: &Partition, now: i64) {
    let removed = {
        let mut guard = partition.state.lock();
        let Some(state) = guard.as_mut() else { return };
        // A tiered partition keeps locally only what `local.retention.*` says, and deletes
        // only segments already copied (KIP-405); the remote tier holds the rest.
        let result = match partition.tiered.local_retention() {
            Some(local) => {
                let covered_end = local.covered.end;
                let r = state.log.enforce_local_retention(
                    now,
                    local.ms,
                    local.bytes,
                    covered_end,
                    &local.covered.epochs,
                );
                if let Ok((report, _)) = &r {
                    // The local log start never passes offsets no finished copy holds.
                    crate::invariant!(
                        report.deleted_segments == 0 || report.log_start_offset <= covered_end + 1,
                        "{}-{}: local retention moved the local log start to {} past the finished copies, which end at {covered_end}",
                        partition.topic, partition.index, report.log_start_offset
                    );
                }
                r
            }
            None => state.log.enforce_retention(now),
        };
        match result {
            Ok((r, removed)) => {
                if r.deleted_segments > 0 {
                    tracing::info!(
                        topic = %partition.topic, partition = partition.index,
                        segments = r.deleted_segments, bytes = r.deleted_bytes,
                        log_start_offset = r.log_start_offset, "retention deleted segments");
                }
                removed
            }
            Err(e) => {
                tracing::error!(topic = %partition.topic, partition = partition.index, error = %e, "retention failed");
                return;
            }
        }
    };
    if let Err(e) = removed.delete_files() {
        tracing::error!(topic = %partition.topic, partition = partition.index, error = %e,
            "deleting segments removed by retention failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_queue_is_bounded() {
        // A handle whose writer never drains: the queue holds WRITER_QUEUE_BOUND jobs, then
        // refuses (try_send) or would wait (send).
        let (tx, rx) = mpsc::sync_channel(WRITER_QUEUE_BOUND);
        let h = WriterHandle {
            tx,
            append_mode: AppendMode::Inline,
        };
        for _ in 0..WRITER_QUEUE_BOUND {
            assert!(h.try_send(WriterJob::Stop));
        }
        assert!(!h.try_send(WriterJob::Stop), "the queue must be full");
        drop(rx.recv().unwrap());
        assert!(
            h.try_send(WriterJob::Stop),
            "room again once the writer took one"
        );
    }
}
