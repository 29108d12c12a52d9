//! The bulk-append lane: a produced batch of at least `bulk.append.min.bytes` (default 64 KiB)
//! is written into its partition's log by a thread of its own at low CPU priority (`nice 19`
//! by default), not inline on the network thread that read it. A large page-cache write costs
//! that thread hundreds of µs to ms on a busy machine (`copy_folio_from_iter_atomic`), and small
//! `acks=all` batches, replica fetches and tail reads queued behind it on the same network
//! thread would wait as long (issue 34's "bulk produce" class; the LNS seed,
//! `000_00b2c58f2a1e5093.txt` §12).
//!
//! Order: while a partition has an append on the lane, its later appends go there too (one
//! thread, first in first out), so a producer's pipelined batches land in the order sent.
//! Durability is unchanged: an append the flush policy wants fsync'ed is answered by the log
//! writer's group commit, as an inline append is.
//!
//! Bound: [`BULK_QUEUE_BOUND`] appends queued; a producer finding the queue full waits.
//!
//! Writeback: after a bulk append (and a follower's append of as many bytes) the lane starts
//! the kernel's writeback of the whole pages written ([`start_writeback`]). Left to itself the
//! kernel lets gigabytes of dirty pages gather and then writes them back in one sweep that also
//! puts the tail page of every other partition under writeback; a small `acks=all` append to
//! such a page waits for the device (`__filemap_get_folio`, `ext4_da_get_block_prep` waiting on
//! `i_data_sem`: seen off-CPU on the network threads, 20-60 ms p99.9 with a bulk producer alone).

use std::sync::{mpsc, OnceLock};

use frieda_log::SegmentWriteback;

use super::backlog::{lower_priority, LanePriority};

/// Whole pages of a segment written by small appends (inline on a network thread, by the log
/// writer, or a follower's) whose writeback is started once this many bytes gathered, bytes
/// (1 MiB). Left to the kernel, a partition taking 5 MB/s of small `acks=all` batches gathered
/// about 150 MB of dirty pages (`dirty_expire_centisecs` 30 s), whose one-sweep writeback held
/// the inode's `i_data_sem` and the pages' locks long enough that an append waited 17-45 ms
/// (`ext4_da_get_block_prep`, `__filemap_get_folio` off-CPU on a network thread; issue 58's
/// periodic stall).
pub const WRITEBACK_MIN_BYTES: u64 = 1 << 20;

/// Appends queued on the bulk lane at most; a further bulk append waits for room (its network
/// thread blocks, as with a full log writer queue: the disk is behind).
pub const BULK_QUEUE_BOUND: usize = 1024;

/// Settings of the bulk-append lane (`bulk.append.min.bytes`, `bulk.append.priority`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkConfig {
    /// A produced batch of at least this many bytes is appended on the lane (default 65536;
    /// `usize::MAX` keeps every append inline).
    pub min_bytes: usize,
    /// The lane thread's CPU priority (default `low`, nice 19: it holds the partition's
    /// append lock while it writes, so it is never left waiting for an idle CPU as `idle`
    /// would).
    pub priority: LanePriority,
}

impl Default for BulkConfig {
    fn default() -> Self {
        BulkConfig {
            min_bytes: 64 * 1024,
            priority: LanePriority::Low,
        }
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// The bulk-append thread and its bounded queue.
pub struct BulkLane {
    jobs: mpsc::SyncSender<Job>,
    min_bytes: usize,
}

static LANE: OnceLock<BulkLane> = OnceLock::new();

/// Starts the process's bulk-append lane with `config` (the first call wins: brokers of one
/// process share it).
pub fn start(config: BulkConfig) -> &'static BulkLane {
    LANE.get_or_init(|| BulkLane::spawn(config))
}

/// The process's bulk-append lane (started with the defaults if no broker started it).
pub fn lane() -> &'static BulkLane {
    start(BulkConfig::default())
}

impl BulkLane {
    fn spawn(config: BulkConfig) -> Self {
        let (tx, rx) = mpsc::sync_channel::<Job>(BULK_QUEUE_BOUND);
        let spawned = std::thread::Builder::new()
            .name("bulk-append".into())
            .spawn(move || {
                lower_priority(config.priority);
                while let Ok(job) = rx.recv() {
                    job();
                }
            });
        if let Err(e) = spawned {
            // Appends then fail (their reply is dropped: KAFKA_STORAGE_ERROR), as with a
            // stopped log writer.
            tracing::error!(error = %e, "could not start the bulk-append thread");
        }
        tracing::info!(min_bytes = config.min_bytes, priority = ?config.priority, "bulk-append lane started");
        BulkLane {
            jobs: tx,
            min_bytes: config.min_bytes,
        }
    }

    /// Batches of at least this many bytes take the lane.
    pub fn min_bytes(&self) -> usize {
        self.min_bytes
    }

    /// Queues `job`, waiting while the queue is full. A job that cannot be queued (the thread
    /// is gone) is dropped, which drops its reply sender: the append answers
    /// KAFKA_STORAGE_ERROR.
    pub fn submit(&self, job: Job) {
        let _ = self.jobs.send(job);
    }

    /// Queues the start of `wb`'s writeback unless the queue is full (then the kernel writes
    /// those pages back in its own time: nothing depends on it).
    pub fn submit_writeback(&self, wb: SegmentWriteback) {
        let _ = self.jobs.try_send(Box::new(move || start_writeback(&wb)));
    }
}

/// Starts the kernel's writeback of `wb`'s pages: Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`
/// queues them for I/O and returns, waiting neither for the device nor for metadata. Not a
/// flush: what an acknowledgement promises does not change. It can block while the device's
/// queue is full, so it runs on the bulk lane. A failure is logged at debug level only.
pub fn start_writeback(wb: &SegmentWriteback) {
    use std::os::fd::AsRawFd;
    // An in-memory file system has no pages to write back.
    let Some(file) = wb.file() else {
        return;
    };
    let (from, len) = wb.range();
    // SAFETY: sync_file_range reads no memory of this process; the descriptor stays open while
    // `wb` (which holds the segment's file) lives.
    let rc = unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            from as libc::off64_t,
            len as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        )
    };
    if rc != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), from, len, "sync_file_range failed");
    }
}

#[cfg(test)]
mod tests {
    use crate::storage::partition::Partition;
    use crate::storage::topic_config::TopicConfigs;
    use crate::storage::writer::LogWriters;
    use frieda_log::{BatchHeader, LogConfig, PartitionLog};
    use kafka_protocol::records::RecordBatchDecoder;
    use std::sync::Arc;

    /// A batch of one record with a `len`-byte value carrying `tag` in its first byte.
    fn batch(tag: u8, len: usize) -> (bytes::BytesMut, BatchHeader) {
        let mut value = vec![0u8; len];
        value[0] = tag;
        crate::storage::testing::value_batch(value)
    }

    /// Large batches take the lane, small ones do not, and a small batch submitted while a large
    /// one of its partition is on the lane lands after it: offsets follow submission order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn appends_land_in_submission_order_across_the_lane() {
        let dir = tempfile::tempdir().unwrap();
        let writers = LogWriters::start(1);
        let (log, _) = PartitionLog::open(dir.path(), LogConfig::default(), 1).unwrap();
        let name: Arc<str> = Arc::from("t");
        let p = Arc::new(Partition::new(
            name.clone(),
            0,
            log,
            writers.for_partition(&name, 0),
            TopicConfigs::default().produce_policy(&TopicConfigs::default()),
        ));
        let big = super::lane().min_bytes();
        let mut answers = Vec::new();
        for i in 0..40u8 {
            let len = if i % 3 == 0 { big } else { 10 };
            let (records, header) = batch(i, len);
            answers.push(p.submit(records, header));
        }
        for (i, rx) in answers.into_iter().enumerate() {
            let outcome = rx.await.unwrap().unwrap();
            assert_eq!(outcome.base_offset, i as i64, "batch {i}");
        }
        let data = p.read(0, usize::MAX, i64::MAX).await.unwrap();
        let mut tags = Vec::new();
        for chunk in &data.chunks {
            let mut buf = chunk.clone();
            for set in RecordBatchDecoder::decode_all(&mut buf).unwrap() {
                for r in set.records {
                    tags.push(r.value.unwrap()[0]);
                }
            }
        }
        assert_eq!(tags, (0..40u8).collect::<Vec<_>>());
        writers.stop();
    }
}
