//! Object compaction driven on the coordinator's leader (docs/diskless.md, "Compaction and
//! garbage collection"): for a partition the coordinator says is due
//! ([`CoordinatorHost::compaction_plan`](crate::diskless::host::CoordinatorHost::compaction_plan)),
//! GET the run's byte ranges, assemble them as a reader would (offsets patched in, markers
//! built), PUT the result as a new object under `diskless/wal/` (a fresh UUIDv7, so the age
//! bound and the orphan sweep treat it as any upload), then record the decision. The replaced
//! objects lose their references and are deleted by the garbage collection once no partition
//! names them.

use bytes::Bytes;
use kafka_protocol::error::ResponseError as E;
use tokio::sync::oneshot;

use super::HostedCoordinator;
use crate::clock::now_ms;
use crate::diskless::coordinator::{CompactionPolicy, DisklessPartition, ObjectId};
use crate::diskless::driver::objects::{get_spans, range_of};
use crate::diskless::host::{HostError, Outcome};
use crate::diskless::read::assemble_run;
use crate::remote::quota::ByteRate;
use crate::remote::store::RemoteStore;
use std::time::Instant;

/// One compaction's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compacted {
    /// Coordinates the run had (now one).
    pub coordinates: usize,
    /// The new object's size (bytes).
    pub bytes: u64,
    /// The run's offsets.
    pub base_offset: i64,
    /// Its last offset.
    pub last_offset: i64,
    /// Its partition was crowded (compacted past the byte budget, not spending from it).
    pub crowded: bool,
}

/// Why a compaction did not land.
#[derive(Debug, thiserror::Error)]
pub enum CompactFailed {
    /// The bucket failed (GET or PUT); tried again next round.
    #[error("the bucket failed: {0}")]
    Store(String),
    /// The coordinator refused the decision (the run changed meanwhile) or could not write it.
    #[error("the decision was not recorded: {0:?}")]
    Decision(E),
}

impl HostedCoordinator {
    /// Compacts one run of `partition` if one is due under `policy` and `budget` allows it
    /// (`None`: no budget), writing as broker `compactor`. A run goes when the budget is not in
    /// debt and spends its object's size once assembled (before its PUT, so a failed PUT or a
    /// refused decision costs it too); a run of a crowded partition goes whatever the budget
    /// and spends nothing from it. `Ok(None)`: nothing due, the budget in debt, or an object of
    /// the run was deleted meanwhile.
    ///
    /// Errors: [`CompactFailed`]; a refused decision's object is deleted at once (else the
    /// orphan sweep would, after `diskless.orphan.grace.ms`).
    pub async fn compact(
        &self,
        store: &RemoteStore,
        partition: DisklessPartition,
        policy: &CompactionPolicy,
        budget: Option<&ByteRate>,
        compactor: i32,
    ) -> Result<Option<Compacted>, CompactFailed> {
        if !self.is_active() {
            return Err(CompactFailed::Decision(E::NotCoordinator));
        }
        let Some(plan) = self
            .host
            .lock()
            .compaction_plan(partition, now_ms(), policy)
        else {
            return Ok(None);
        };
        if !plan.crowded && budget.is_some_and(|b| !b.throttle(Instant::now()).is_zero()) {
            return Ok(None);
        }
        tracing::debug!(topic_id = %partition.topic_id, partition = partition.partition,
            coordinates = plan.coordinates.len(), base_offset = plan.base_offset(),
            last_offset = plan.last_offset(), "diskless compaction of a run starts");
        let Some(spans) = get_spans(store, plan.coordinates.iter())
            .await
            .map_err(|e| CompactFailed::Store(format!("{e:?}")))?
        else {
            tracing::debug!(
                partition = partition.partition,
                "an object of the run is gone: next round"
            );
            return Ok(None);
        };
        let bytes = assemble_run(&plan, |object, at, len| range_of(&spans, object, at, len))
            .map_err(|e| CompactFailed::Store(e.to_string()))?;
        let size = bytes.len() as u64;
        if let Some(b) = budget.filter(|_| !plan.crowded) {
            b.spend(size, Instant::now());
        }
        // the id (and so the age bound's clock) starts now, after the reads
        let object = ObjectId::v7(now_ms(), rand::random());
        let key = store.wal_key(object.0);
        store
            .put(&key, Bytes::from(bytes))
            .await
            .map_err(|e| CompactFailed::Store(e.to_string()))?;
        let (tx, rx) = oneshot::channel();
        let taken = {
            let _order = self.write_order.lock().await;
            let step =
                self.host
                    .lock()
                    .compacted(now_ms(), tx, plan.compacted(object, size, compactor));
            let refused = matches!(step, Err(HostError::Compaction(_)));
            match self.take(step).await {
                Ok(()) => Ok(()),
                Err(e) => Err((e, refused)),
            }
        };
        if let Err((e, refused)) = taken {
            if refused {
                // nothing names it: delete it now
                if let Err(err) = store.delete(&key).await {
                    tracing::debug!(object = %object.0, error = %err, "a refused compaction's object is left to the orphan sweep");
                }
            }
            return Err(CompactFailed::Decision(e));
        }
        self.pump();
        match rx.await {
            Ok(Outcome::Written) => Ok(Some(Compacted {
                coordinates: plan.coordinates.len(),
                bytes: size,
                base_offset: plan.base_offset(),
                last_offset: plan.last_offset(),
                crowded: plan.crowded,
            })),
            Ok(_) => Err(CompactFailed::Decision(E::UnknownServerError)),
            Err(_) => Err(CompactFailed::Decision(E::NotCoordinator)),
        }
    }

    /// The partitions this coordinator serves.
    pub fn partitions(&self) -> Vec<DisklessPartition> {
        self.host.lock().coordinator().partitions()
    }

    /// Per partition served here: (the partition, its coordinates, the batches and markers
    /// refused at the bound since this host was loaded; the bound is
    /// `diskless.coordinator.max.batches.per.partition`). Two map lookups per partition under
    /// the host's lock, which commits wait for.
    pub fn coordinate_counts(&self) -> Vec<(DisklessPartition, usize, u64)> {
        let host = self.host.lock();
        let c = host.coordinator();
        c.partitions()
            .into_iter()
            .filter_map(|p| {
                let n = c.coordinate_count(p)?;
                Some((p, n, c.refused_at_bound(p).unwrap_or(0)))
            })
            .collect()
    }
}
