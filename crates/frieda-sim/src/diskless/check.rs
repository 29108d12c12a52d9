//! The invariants: the coordinator's own after every event; at the end, every replica's log,
//! every partition walked from its log start against the bucket and the acknowledgements.

use std::collections::{BTreeMap, BTreeSet};

use super::*;

impl Sim {
    pub(super) fn check_hosts(&mut self) {
        for b in 0..BROKERS {
            if let Some(h) = &self.brokers[b].host {
                if let Err(e) = h.coordinator().check_invariants() {
                    self.violate("coordinator-invariant", format!("broker {b}: {e}"));
                }
            }
        }
    }

    pub(super) fn final_checks(&mut self) {
        let Some(l) = self.controller.leader else {
            self.violate("no-progress", "no coordinator leader at the end".into());
            return;
        };
        let Some(host) = self.brokers[l].host.as_ref() else {
            self.violate(
                "no-progress",
                format!("broker {l} leads but has not loaded"),
            );
            return;
        };
        // Every replica holds the leader's log and replays to its state.
        let digest = host.coordinator().state_digest();
        for b in 0..BROKERS {
            if self.brokers[b].log != self.brokers[l].log {
                let (n, m) = (self.brokers[b].log.len(), self.brokers[l].log.len());
                self.violate(
                    "replicas-diverged",
                    format!("broker {b} holds {n} records, the leader {l} {m}"),
                );
                return;
            }
            match self.replay_log(b) {
                Ok(replay) if replay.coordinator().state_digest() == digest => {}
                Ok(_) => {
                    self.violate(
                        "replicas-diverged",
                        format!("broker {b}'s log replays to another state"),
                    );
                    return;
                }
                Err(e) => {
                    self.violate("replicas-diverged", e);
                    return;
                }
            }
        }
        // Walk every partition from its log start.
        let host = self.brokers[l].host.as_ref().expect("checked");
        let mut stored: BTreeMap<(i64, i32), (i32, i64)> = BTreeMap::new();
        let mut problems: Vec<(&'static str, String)> = Vec::new();
        let mut named: BTreeSet<ObjectId> = BTreeSet::new();
        let mut log_starts = BTreeMap::new();
        let mut high_watermarks = BTreeMap::new();
        let mut aborted_lists = BTreeMap::new();
        let mut markers: BTreeMap<(i64, i16), i64> = BTreeMap::new();
        for p in 0..PARTITIONS {
            let dp = partition(self.topic, p);
            let start = host.coordinator().log_start(dp).unwrap_or(0);
            let first = match host.find_batches(dp, start, u64::MAX) {
                Ok(f) => f,
                Err(e) => {
                    problems.push(("acked-record-lost", format!("{dp:?}: {e:?}")));
                    continue;
                }
            };
            log_starts.insert(p, first.log_start);
            high_watermarks.insert(p, first.high_watermark);
            if first.last_stable_offset != first.high_watermark {
                problems.push((
                    "hanging-transaction",
                    format!(
                        "{dp:?}: last stable offset {} below the high watermark {} at the end",
                        first.last_stable_offset, first.high_watermark
                    ),
                ));
            }
            aborted_lists.insert(p, first.aborted.clone());
            let mut last_seen: BTreeMap<i64, i32> = BTreeMap::new();
            for c in &first.coordinates {
                let Some((object, byte_offset, byte_len)) = c.object_range() else {
                    // a transaction marker: the producer's transaction at its epoch - 1 ended
                    if let frieda::diskless::coordinator::Location::Marker(m) = &c.location {
                        markers.insert((m.producer_id, m.producer_epoch), c.base_offset);
                    }
                    continue;
                };
                named.insert(object);
                let Some(body) = self.store.get(&object) else {
                    problems.push((
                        "acked-record-lost",
                        format!(
                            "{dp:?} offset {}: object {object:?} not in the bucket",
                            c.base_offset
                        ),
                    ));
                    continue;
                };
                let range = byte_offset as usize..(byte_offset + byte_len) as usize;
                let Some(bytes) = body.get(range) else {
                    problems.push((
                        "acked-record-lost",
                        format!("{dp:?} {}: range outside", c.base_offset),
                    ));
                    continue;
                };
                // one batch as produced, or a compacted run (offsets patched in, markers built)
                let batches = match frieda::diskless::read::batches_of(c, bytes) {
                    Ok(b) => b,
                    Err(e) => {
                        problems.push(("acked-record-lost", format!("{dp:?}: {e}")));
                        continue;
                    }
                };
                for sb in batches {
                    let mut batch = bytes[sb.bytes.clone()].to_vec();
                    let base = sb.base_offset;
                    let h = BatchHeader::parse(&batch).expect("split by batches_of");
                    if h.is_control() {
                        markers.insert((h.producer_id, h.producer_epoch), base);
                        continue;
                    }
                    if h.base_offset != 0 && h.base_offset != base {
                        problems.push((
                            "acked-record-lost",
                            format!("{dp:?} {base}: stored with base offset {}", h.base_offset),
                        ));
                    }
                    frieda_log::patch_base_offset(&mut batch, 0);
                    let Some((pid, index)) = parse_batch(&batch) else {
                        problems.push(("acked-record-lost", format!("{dp:?} {base}: not a batch")));
                        continue;
                    };
                    if batch != batch_bytes(pid, index) {
                        problems
                            .push(("acked-record-lost", format!("{dp:?} {base}: bytes differ")));
                    }
                    if let Some(prev) = stored.insert((pid, index), (p, base)) {
                        problems.push((
                            "duplicated",
                            format!("producer {pid} batch {index} at {prev:?} and {base}"),
                        ));
                    }
                    if let Some(&before) = last_seen.get(&pid) {
                        if before >= index {
                            problems.push((
                                "out-of-order",
                                format!(
                                    "producer {pid}: batch {index} stored after batch {before}"
                                ),
                            ));
                        }
                    }
                    last_seen.insert(pid, index);
                }
            }
        }
        for ((pid, index), ack) in &self.acks {
            let start = log_starts.get(&ack.partition).copied().unwrap_or(0);
            if ack.base_offset < start {
                continue;
            }
            match stored.get(&(*pid, *index)) {
                Some(&(p, o)) if p == ack.partition && o == ack.base_offset => {}
                other => problems.push((
                    "acked-record-lost",
                    format!(
                        "producer {pid} batch {index} acknowledged at {} (partition {}), stored {other:?}",
                        ack.base_offset, ack.partition
                    ),
                )),
            }
        }
        // Transactions: each one's first batch, if stored at or above the log start, opens an
        // aborted transaction listed by the partition exactly when its producer aborted it, and
        // a marker at its bumped epoch follows it.
        for pr in self.producers.iter().filter(|p| p.transactional()) {
            let start = log_starts.get(&pr.partition).copied().unwrap_or(0);
            let listed = aborted_lists
                .get(&pr.partition)
                .cloned()
                .unwrap_or_default();
            for txn in 0..pr.decided {
                let Some(&(_, first)) = stored.get(&(pr.id, txn * TXN_BATCHES)) else {
                    continue; // below the log start (checked above for acknowledged batches)
                };
                if first < start {
                    continue;
                }
                let in_list = listed
                    .iter()
                    .any(|a| a.producer_id == pr.id && a.first_offset == first);
                if in_list != aborts(pr.id, txn) {
                    problems.push((
                        "aborted-list",
                        format!(
                            "producer {} transaction {txn} at {first} ({}): {} the partition's aborted transactions {listed:?}",
                            pr.id,
                            if aborts(pr.id, txn) { "aborted" } else { "committed" },
                            if in_list { "in" } else { "not in" }
                        ),
                    ));
                }
                match markers.get(&(pr.id, (txn + 1) as i16)) {
                    Some(&at) if at > first => {}
                    other => problems.push((
                        "aborted-list",
                        format!(
                            "producer {} transaction {txn} at {first}: its marker at {other:?}",
                            pr.id
                        ),
                    )),
                }
            }
        }
        // What consumers read is what the log holds, and they read it all.
        for (c, consumer) in self.consumers.iter().enumerate() {
            let p = consumer.partition;
            let start = log_starts.get(&p).copied().unwrap_or(0);
            for (&base, &(pid, index, _)) in consumer.read.range(start..) {
                if stored.get(&(pid, index)) != Some(&(p, base)) {
                    problems.push((
                        "read-uncommitted",
                        format!(
                            "consumer {c} read producer {pid} batch {index} at {base}; the log holds it at {:?}",
                            stored.get(&(pid, index))
                        ),
                    ));
                }
            }
            if consumer.committed {
                // every batch of a committed transaction at or above the log start, delivered
                for (&(pid, index), &(q, o)) in &stored {
                    if q == p
                        && o >= start
                        && transactional(pid)
                        && !aborts(pid, index / TXN_BATCHES)
                        && !consumer.delivered.contains(&(pid, index))
                    {
                        problems.push((
                            "committed-missed",
                            format!(
                                "consumer {c} (read_committed) did not deliver producer {pid} batch {index} at {o}"
                            ),
                        ));
                        break;
                    }
                }
            }
            let hw = high_watermarks.get(&p).copied().unwrap_or(0);
            if consumer.next < hw {
                problems.push((
                    "no-progress",
                    format!("consumer {c} at {} of {hw}", consumer.next),
                ));
            }
        }
        self.stats.orphans = self.store.keys().filter(|k| !named.contains(k)).count() as u64;
        if self.stats.orphans > 0 {
            problems.push((
                "orphan-left",
                format!(
                    "{} objects in the bucket no batch names after the sweep",
                    self.stats.orphans
                ),
            ));
        }
        if let Some((kind, detail)) = problems.into_iter().next() {
            self.violate(kind, detail);
        }
    }
}
