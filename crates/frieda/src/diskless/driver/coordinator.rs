//! The batch coordinator on a `__diskless_coordinator` partition this broker leads: a
//! [`CoordinatorHost`] driven against the real partition (build plan step 3's driver). Every
//! decision is appended as one record (value: [`codec`](crate::diskless::codec)'s encoding)
//! through the partition's leader path (the lease and `min.insync.replicas` checked first, as a
//! produce), and its waiters are answered only once the partition's high watermark passes it.
//! A load replays the local log; the host serves once the high watermark reaches the loaded end.
//! A failed write (append error, replicas not confirming within [`WRITE_TIMEOUT`], leadership
//! lost) fails the host: every waiter is answered NOT_COORDINATOR and the reconciler loads it
//! again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use frieda_log::BatchHeader;
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use parking_lot::{Mutex, RwLock};
use tokio::sync::oneshot;

use crate::clock::now_ms;
use crate::diskless::coordinator::{
    BatchAnswer, BatchCoordinator, CommitBatches, DisklessPartition, Found,
};
use crate::diskless::host::{CoordinatorHost, HostError, Outcome, Step};
use crate::storage::leader_append::admit_produce;
use crate::storage::partition::Partition;

/// How long a decision's record may take to be replicated before the host fails (ms).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a host with waiters, or loading, looks at its partition's high watermark.
const HW_POLL: Duration = Duration::from_millis(5);

/// Whether this broker's lease holds (a broker that may have been fenced writes nothing).
pub type Lease = Arc<dyn Fn() -> bool + Send + Sync>;

type Waiter = oneshot::Sender<Outcome>;

/// One loaded coordinator partition.
pub struct HostedCoordinator {
    /// The `__diskless_coordinator` partition index.
    pub index: i32,
    /// Its leader epoch when loaded.
    pub epoch: i32,
    log: Arc<Partition>,
    min_isr: usize,
    lease: Option<Lease>,
    host: Mutex<CoordinatorHost<Waiter>>,
    /// Held from a decision until its record is in the log: records land in decision order.
    write_order: tokio::sync::Mutex<()>,
    active: AtomicBool,
}

impl HostedCoordinator {
    /// Replays `log` (partition `index`, led here since `epoch`) into a new host. Blocking.
    ///
    /// Errors: the log cannot be read, or a record does not decode.
    pub fn load(
        index: i32,
        epoch: i32,
        log: Arc<Partition>,
        coordinator: BatchCoordinator,
        min_isr: usize,
        lease: Option<Lease>,
    ) -> anyhow::Result<HostedCoordinator> {
        let mut host = CoordinatorHost::load_with(coordinator);
        let reader = log.reader().clone();
        let mut offset = reader.log_start_offset();
        let end = reader.log_end_offset();
        let mut records = 0u64;
        while offset < end {
            let data = reader.read(offset, 8 << 20, end)?;
            if data.chunks.is_empty() || data.next_offset <= offset {
                break;
            }
            for chunk in &data.chunks {
                let mut buf = chunk.clone();
                let sets = RecordBatchDecoder::decode_all(&mut buf).map_err(|e| {
                    anyhow::anyhow!("decoding __diskless_coordinator-{index} at {offset}: {e}")
                })?;
                for set in sets {
                    for r in set.records {
                        if r.offset < offset {
                            continue;
                        }
                        let Some(value) = r.value.as_deref() else {
                            continue;
                        };
                        host.replay(r.offset, value).map_err(|e| {
                            anyhow::anyhow!(
                                "__diskless_coordinator-{index} offset {}: {e}",
                                r.offset
                            )
                        })?;
                        records += 1;
                    }
                }
            }
            offset = data.next_offset;
        }
        host.loaded(end);
        tracing::info!(
            partition = index,
            epoch,
            records,
            log_end_offset = end,
            objects = host.coordinator().object_count(),
            "diskless coordinator replayed"
        );
        Ok(HostedCoordinator {
            index,
            epoch,
            log,
            min_isr: min_isr.max(1),
            lease,
            host: Mutex::new(host),
            write_order: tokio::sync::Mutex::new(()),
            active: AtomicBool::new(true),
        })
    }

    /// Whether it still serves (not unloaded, no write failed).
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Reports the partition's high watermark to the host and answers who it releases.
    fn pump(&self) {
        let hw = self.log.high_watermark();
        let answered = self.host.lock().high_watermark(hw);
        for (w, outcome) in answered {
            let _ = w.send(outcome);
        }
    }

    /// Runs until unloaded or failed: moves the high watermark into the host while it loads or
    /// has waiters; fails the host when a waiter has waited past [`WRITE_TIMEOUT`].
    pub async fn run(self: Arc<Self>) {
        let mut stuck_since: Option<tokio::time::Instant> = None;
        let mut last_hw = -1;
        while self.is_active() {
            let (busy, waiters) = {
                let h = self.host.lock();
                (!h.is_serving() || h.waiters() > 0, h.waiters())
            };
            if busy {
                self.pump();
                let hw = self.log.high_watermark();
                if waiters > 0 && hw == last_hw {
                    let since = *stuck_since.get_or_insert_with(tokio::time::Instant::now);
                    if since.elapsed() > WRITE_TIMEOUT {
                        tracing::warn!(
                            partition = self.index,
                            high_watermark = hw,
                            "diskless coordinator writes not replicated in time: failing the host"
                        );
                        self.fail();
                        return;
                    }
                } else {
                    stuck_since = None;
                }
                last_hw = hw;
                tokio::time::sleep(HW_POLL).await;
            } else {
                stuck_since = None;
                tokio::time::sleep(HW_POLL * 10).await;
            }
        }
    }

    /// Stops serving: every waiter is answered NOT_COORDINATOR (their receivers see a drop).
    pub fn fail(&self) {
        self.active.store(false, Ordering::Release);
        let dropped = self.host.lock().fail();
        drop(dropped);
    }

    /// Commits an uploaded object: the answers once the decision is below the high watermark.
    /// Partitions the coordinator does not know yet are created first (`known` says which
    /// diskless partitions the metadata has).
    ///
    /// Errors: NOT_COORDINATOR (16) when the host failed or was unloaded, or the write failed;
    /// COORDINATOR_LOAD_IN_PROGRESS (14); REQUEST_TIMED_OUT (7) when too many commits wait;
    /// KAFKA_STORAGE_ERROR (56) for an object too old or committed before; the lease's and
    /// `min.insync.replicas`' NOT_LEADER_OR_FOLLOWER (6) / NOT_ENOUGH_REPLICAS (19).
    pub async fn commit(&self, commit: &CommitBatches) -> Result<Vec<BatchAnswer>, E> {
        if !self.is_active() {
            return Err(E::NotCoordinator);
        }
        let (tx, rx) = oneshot::channel();
        {
            let _order = self.write_order.lock().await;
            let mut new_partitions: Vec<DisklessPartition> = commit
                .batches
                .iter()
                .map(|b| b.partition)
                .filter(|p| self.host.lock().coordinator().high_watermark(*p).is_none())
                .collect();
            new_partitions.sort();
            new_partitions.dedup();
            for p in new_partitions {
                let step = self.host.lock().create_partition(p);
                self.take(step).await?;
            }
            let step = self.host.lock().commit(now_ms(), tx, commit);
            self.take(step).await?;
        }
        self.pump();
        match rx.await {
            Ok(Outcome::Batches(answers)) => Ok(answers),
            Ok(_) => Err(E::UnknownServerError),
            Err(_) => Err(E::NotCoordinator),
        }
    }

    /// Carries out a host step under the write order: appends its record.
    async fn take(&self, step: Result<Step<Waiter>, HostError>) -> Result<(), E> {
        match step.map_err(HostError::code)? {
            Step::Append { offset, record } => self.append(offset, record).await,
            Step::Wait => Ok(()),
            Step::Answered(w, outcome) => {
                let _ = w.send(outcome);
                Ok(())
            }
        }
    }

    async fn append(&self, offset: i64, record: Vec<u8>) -> Result<(), E> {
        let lease = self.lease.as_ref().is_none_or(|l| l());
        let refused = if self.log.repl.is_replicated() {
            admit_produce(&self.log.repl, lease, true, self.min_isr).err()
        } else {
            None
        };
        let result = match refused {
            Some(e) => Err(e),
            None => {
                let (batch, header) = encode_record(Bytes::from(record), now_ms());
                self.log.append(batch, header).await
            }
        };
        match result {
            Ok(outcome) if outcome.base_offset == offset => Ok(()),
            Ok(outcome) => {
                tracing::error!(
                    partition = self.index,
                    expected = offset,
                    got = outcome.base_offset,
                    "a diskless coordinator record landed at another offset: failing the host"
                );
                self.fail();
                Err(E::NotCoordinator)
            }
            Err(e) => {
                tracing::warn!(partition = self.index, error = ?e,
                    "a diskless coordinator write failed: failing the host");
                self.fail();
                Err(E::NotCoordinator)
            }
        }
    }

    /// Where the batches of `partition` at `offset` are (decisions below the high watermark).
    ///
    /// Errors: as [`CoordinatorHost::find_batches`]; NOT_COORDINATOR once failed.
    pub fn find_batches(
        &self,
        partition: DisklessPartition,
        offset: i64,
        max_bytes: u64,
    ) -> Result<Found, E> {
        if !self.is_active() {
            return Err(E::NotCoordinator);
        }
        self.host.lock().find_batches(partition, offset, max_bytes)
    }
}

impl HostedCoordinator {
    /// The log start and high watermark readers see of `partition`; (0, 0) for a partition
    /// nothing was committed to yet.
    ///
    /// Errors: NOT_COORDINATOR (16) once failed; COORDINATOR_LOAD_IN_PROGRESS (14).
    pub fn offsets(&self, partition: DisklessPartition) -> Result<(i64, i64), E> {
        if !self.is_active() {
            return Err(E::NotCoordinator);
        }
        match self.host.lock().offsets(partition) {
            Err(E::UnknownTopicOrPartition) => Ok((0, 0)),
            other => other,
        }
    }
}

/// One uncompressed v2 batch holding one record: no key, `value`, stamped `now` (ms).
fn encode_record(value: Bytes, now: i64) -> (BytesMut, BatchHeader) {
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: now,
        key: None,
        value: Some(value),
        headers: Default::default(),
    };
    let mut buf = BytesMut::with_capacity(128);
    RecordBatchEncoder::encode(
        &mut buf,
        std::iter::once(&record),
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .expect("encoding an uncompressed v2 batch cannot fail");
    let header = BatchHeader::parse(&buf).expect("a batch just encoded parses");
    (buf, header)
}

/// The coordinators loaded on this broker, by `__diskless_coordinator` partition.
#[derive(Default)]
pub struct DisklessCoordinators {
    hosts: RwLock<HashMap<i32, Arc<HostedCoordinator>>>,
}

impl DisklessCoordinators {
    /// The active host of partition `index`, if loaded here.
    pub fn get(&self, index: i32) -> Option<Arc<HostedCoordinator>> {
        self.hosts
            .read()
            .get(&index)
            .filter(|h| h.is_active())
            .cloned()
    }

    /// Whether partition `index` is loaded here at `epoch` and serving or loading.
    pub fn is_loaded(&self, index: i32, epoch: i32) -> bool {
        self.get(index).is_some_and(|h| h.epoch == epoch)
    }

    /// Installs a loaded host (replacing and failing any earlier one) and starts its pump.
    pub fn install(&self, host: HostedCoordinator) {
        let host = Arc::new(host);
        if let Some(old) = self.hosts.write().insert(host.index, host.clone()) {
            old.fail();
        }
        tokio::spawn(host.run());
    }

    /// This broker no longer leads partition `index`: its host stops.
    pub fn unload(&self, index: i32) {
        if let Some(old) = self.hosts.write().remove(&index) {
            tracing::info!(partition = index, "diskless coordinator unloaded");
            old.fail();
        }
    }
}
