//! Compaction in the simulation: the coordinator's leader asks the broker's own host for a run
//! due ([`CoordinatorHost::compaction_plan`]), assembles it from the bucket with the broker's
//! own read path ([`frieda::diskless::read::assemble_run`]), PUTs the new object (which may land
//! after its writer died, fail while the store is down, or be followed by the writer's pause
//! past the commit-age bound), then records the broker's own decision
//! ([`CoordinatorHost::compacted`]). A refused decision's object is deleted by its writer; one
//! whose writer died is left to the orphan sweep. The end checks walk compacted runs batch by
//! batch (`check.rs`), and consumers read through them.

use super::*;
use frieda::diskless::coordinator::{CompactionPlan, CompactionPolicy};
use frieda::diskless::read::assemble_run;

/// How often a coordinator leader looks for a run to compact (simulated ms).
pub(super) const COMPACT_EVERY_MS: i64 = 100;

/// A run's oldest batch this old (ms) is compacted however small.
const COMPACT_MAX_AGE_MS: i64 = 1_500;

/// A compaction's PUT on its way.
#[derive(Debug, Clone)]
pub(super) struct CompactPut {
    pub(super) broker: usize,
    pub(super) incarnation: u64,
    pub(super) plan: CompactionPlan,
    pub(super) object: ObjectId,
    pub(super) body: Bytes,
}

impl Sim {
    /// As the coordinator's leader: start one compaction if none is in flight and one is due.
    pub(super) fn compact(&mut self, b: usize) {
        let br = &self.brokers[b];
        if self.now - br.last_compact < COMPACT_EVERY_MS
            || br.compacting == Some(br.incarnation)
            || self.store_down
        {
            return;
        }
        self.brokers[b].last_compact = self.now;
        let policy = CompactionPolicy {
            max_bytes: self.compaction_max_bytes,
            max_age_ms: COMPACT_MAX_AGE_MS,
        };
        let Some(host) = self.brokers[b].host.as_ref() else {
            return;
        };
        // the partitions in turn, from a rotating first one
        let first = (self.now / COMPACT_EVERY_MS) as i32;
        let Some(plan) = (0..PARTITIONS).find_map(|i| {
            let p = (first + i).rem_euclid(PARTITIONS);
            host.compaction_plan(partition(self.topic, p), self.now, &policy)
                .filter(|plan| plan.crowded || !self.tight())
        }) else {
            return;
        };
        let store = &self.store;
        let assembled = assemble_run(&plan, |o, at, len| stored_range(store, o, at, len));
        let Ok(bytes) = assembled else {
            return; // an object of the run was deleted meanwhile: next time
        };
        let object = ObjectId::v7(self.now, self.compaction_rng.gen());
        let inc = self.brokers[b].incarnation;
        self.brokers[b].compacting = Some(inc);
        let (n, base, last) = (
            plan.coordinates.len(),
            plan.base_offset(),
            plan.last_offset(),
        );
        self.log(|| format!("broker {b} compacts {n} coordinates {base}..={last}"));
        let d = self.compaction_rng.gen_range(5..200);
        self.schedule(
            d,
            Event::CompactPut(Box::new(CompactPut {
                broker: b,
                incarnation: inc,
                plan,
                object,
                body: Bytes::from(bytes),
            })),
        );
    }

    /// The PUT reaches the bucket (or not: the store is down); its writer, if it still runs as
    /// the same process, records the decision.
    pub(super) fn compact_put(&mut self, put: CompactPut) {
        let stored = !self.store_down && self.compaction_rng.gen_bool(0.97);
        if stored {
            self.store.insert(put.object, put.body.clone());
        }
        self.schedule(0, Event::CompactDone(Box::new(put), stored));
    }

    /// The PUT's answer reaches its writer (deferred while it is paused).
    pub(super) fn compact_done(&mut self, put: CompactPut, stored: bool) {
        let b = put.broker;
        if self.brokers[b].incarnation != put.incarnation || !self.brokers[b].up {
            return; // died meanwhile: an orphan for the sweep, if stored
        }
        self.brokers[b].compacting = None;
        if !stored {
            return;
        }
        let now = self.now;
        let Some(host) = self.brokers[b].host.as_mut() else {
            return; // no longer leads: an orphan for the sweep
        };
        let size = put.body.len() as u64;
        let run = put.plan.compacted(put.object, size, b as i32);
        match host.compacted(now, (b, u64::MAX, 1), run) {
            Ok(step) => {
                self.stats.compactions += 1;
                self.append_step(b, step);
            }
            Err(HostError::Compaction(e)) => {
                self.stats.compactions_refused += 1;
                self.log(|| format!("broker {b}: compaction refused ({e}); its object deleted"));
                self.store.remove(&put.object);
            }
            Err(_) => {}
        }
    }
}
