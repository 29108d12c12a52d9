//! Log writer threads: the only threads that write partition logs and call fsync.
//!
//! Network threads never do disk writes (DESIGN.md, continuous polling): a produce hands its
//! validated batch to the partition's writer thread and awaits a oneshot. Each writer drains every
//! job waiting in its queue, appends them all, then applies the flush policy once per touched
//! partition (group commit: one fsync covers every append waiting for it), wakes each
//! partition's waiting fetches once, and only then answers the producers (batched confirmation,
//! HiPower seed 003).

use super::partition::Partition;
use crate::coordinator::producer_state::SequenceCheck;
use bytes::BytesMut;
use frieda_log::{BatchHeader, LogError};
use kafka_protocol::error::ResponseError;
use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;

/// Jobs drained per round before flushing and replying (bounds the latency one round adds).
const MAX_JOBS_PER_ROUND: usize = 1024;

/// Where an append landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendOutcome {
    /// Offset of the first record of the batch.
    pub base_offset: i64,
    /// Broker time stamped on the batch with LogAppendTime, else -1.
    pub log_append_time: i64,
    /// Log start offset after the append.
    pub log_start_offset: i64,
}

/// Work for a writer thread.
pub enum WriterJob {
    /// Append one validated record batch (exactly one, as Produce v3+ requires).
    Append {
        partition: Arc<Partition>,
        records: BytesMut,
        header: BatchHeader,
        reply: oneshot::Sender<Result<AppendOutcome, ResponseError>>,
    },
    /// Periodic upkeep of one partition: time-based flush (`flush.ms`), and retention if asked.
    Maintain {
        partition: Arc<Partition>,
        retention: bool,
    },
    /// Finish queued work and exit.
    Stop,
}

/// Sends jobs to one writer thread.
#[derive(Clone)]
pub struct WriterHandle {
    tx: mpsc::Sender<WriterJob>,
}

impl WriterHandle {
    /// Queues a job. If the writer has exited (shutdown), the job is dropped, which drops its
    /// reply sender and so answers KAFKA_STORAGE_ERROR.
    pub fn send(&self, job: WriterJob) {
        let _ = self.tx.send(job);
    }
}

/// The pool of writer threads.
pub struct LogWriters {
    handles: Vec<WriterHandle>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl LogWriters {
    /// Starts `threads` writer threads.
    pub fn start(threads: usize) -> LogWriters {
        let mut handles = Vec::new();
        let mut joins = Vec::new();
        for i in 0..threads.max(1) {
            let (tx, rx) = mpsc::channel();
            handles.push(WriterHandle { tx });
            joins.push(
                std::thread::Builder::new()
                    .name(format!("log-writer-{i}"))
                    .spawn(move || run(rx))
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
    reply: oneshot::Sender<Result<AppendOutcome, ResponseError>>,
    result: Result<AppendOutcome, ResponseError>,
}

fn run(rx: mpsc::Receiver<WriterJob>) {
    let mut pending: Vec<Pending> = Vec::new();
    let mut touched: HashMap<*const Partition, Arc<Partition>> = HashMap::new();
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
                    reply,
                } => {
                    let result = append_one(&partition, records, &header);
                    touched.insert(Arc::as_ptr(&partition), partition.clone());
                    pending.push(Pending {
                        partition,
                        reply,
                        result,
                    });
                }
                WriterJob::Maintain {
                    partition,
                    retention,
                } => maintain(&partition, retention),
                WriterJob::Stop => stop = true,
            }
            if n < MAX_JOBS_PER_ROUND && !stop {
                next = rx.try_recv().ok();
            }
        }
        // Group commit: one flush per partition for all of this round's appends.
        for partition in touched.values() {
            if let Err(e) = flush_if_due(partition) {
                tracing::error!(topic = %partition.topic, partition = partition.index, error = %e,
                    "flush failed; failing this round's appends with KAFKA_STORAGE_ERROR");
                for p in pending.iter_mut() {
                    if Arc::ptr_eq(&p.partition, partition) {
                        p.result = Err(ResponseError::KafkaStorageError);
                    }
                }
            }
            partition.notify_data();
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

fn append_one(
    partition: &Partition,
    records: BytesMut,
    header: &BatchHeader,
) -> Result<AppendOutcome, ResponseError> {
    let mut guard = partition.state.lock();
    let Some(state) = guard.as_mut() else {
        return Err(ResponseError::UnknownTopicOrPartition);
    };
    match state.producers.check(header)? {
        SequenceCheck::Duplicate { base_offset } => {
            return Ok(AppendOutcome {
                base_offset,
                log_append_time: -1,
                log_start_offset: state.log.log_start_offset(),
            })
        }
        SequenceCheck::Append => {}
    }
    match state.log.append(records, now_ms()) {
        Ok(info) => {
            state.producers.record(header, info.base_offset);
            Ok(AppendOutcome {
                base_offset: info.base_offset,
                log_append_time: info.log_append_time,
                log_start_offset: info.log_start_offset,
            })
        }
        Err(e) => {
            tracing::error!(topic = %partition.topic, partition = partition.index, error = %e, "append failed");
            Err(match e {
                LogError::Batch(_) => ResponseError::CorruptMessage,
                _ => ResponseError::KafkaStorageError,
            })
        }
    }
}

fn flush_if_due(partition: &Partition) -> Result<(), LogError> {
    let mut guard = partition.state.lock();
    let Some(state) = guard.as_mut() else {
        return Ok(());
    };
    let unflushed = state.log.unflushed_messages();
    if unflushed > 0 && unflushed >= state.log.config().flush_messages {
        state.log.flush()?;
    }
    Ok(())
}

fn maintain(partition: &Partition, retention: bool) {
    let mut guard = partition.state.lock();
    let Some(state) = guard.as_mut() else { return };
    let now = now_ms();
    let flush_ms = state.log.config().flush_ms;
    if state.log.unflushed_messages() > 0
        && flush_ms < i64::MAX as u64
        && now - state.log.last_flush_ms() >= flush_ms as i64
    {
        if let Err(e) = state.log.flush() {
            tracing::error!(topic = %partition.topic, partition = partition.index, error = %e, "time-based flush failed");
        }
    }
    if retention {
        match state.log.enforce_retention(now) {
            Ok(r) if r.deleted_segments > 0 => tracing::info!(
                topic = %partition.topic, partition = partition.index,
                segments = r.deleted_segments, bytes = r.deleted_bytes, log_start_offset = r.log_start_offset,
                "retention deleted segments"),
            Ok(_) => {}
            Err(e) => {
                tracing::error!(topic = %partition.topic, partition = partition.index, error = %e, "retention failed")
            }
        }
    }
}
