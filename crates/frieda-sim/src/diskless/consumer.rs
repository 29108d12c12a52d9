//! Consumers: one per partition reads it from its log start through any broker, as a Kafka
//! consumer would through the broker a diskless topic's metadata names. The broker asks the
//! coordinator's leader where the batches are (FindBatches), reads their byte ranges from the
//! bucket and assembles the records with the broker's own read path
//! ([`frieda::diskless::read::assemble`]: checked against the coordinates, patched with their
//! offsets).
//!
//! Checked on every answer: the batches' CRCs hold (`corrupt-read`); they start where the
//! consumer asked, with no hole (`consumer-gap`); each is the batch a producer sent, byte for byte
//! once its offset is patched in, at the offset it was acknowledged at and at the offset read
//! before (`read-differs`); an offset the consumer reached is never above the high watermark
//! the current coordinator serves (`read-beyond-hw`: a high watermark that went back). At the
//! end (in `check`): every batch read is in the final log at its offset (`read-uncommitted`) and
//! every consumer reached its partition's high watermark (`no-progress`).
//!
//! A `read_committed` consumer reads up to the last stable offset and filters each answer's
//! batches with the aborted transactions it lists, as Kafka's `CompletedFetch` does (a
//! producer's batches from the first offset of one of its aborted transactions on are skipped
//! until its abort marker): it must never deliver a batch of a transaction its producer
//! aborted (`aborted-delivered`), and at the end must have delivered every batch of every
//! committed one at or above the log start (`committed-missed`, in `check`).

use std::collections::{BTreeMap, BTreeSet};

use frieda::diskless::read::{assemble, ReadError};
use frieda_log::{patch_base_offset, validate_batches, AbortedTxn};

use super::*;

/// Bytes a read assembles at most (`fetch.max.bytes`, small so that reads take many rounds).
const READ_MAX_BYTES: usize = 4_096;
/// A consumer gives up on a read unanswered this long and polls again (ms).
const READ_TIMEOUT_MS: i64 = 2_000;

/// One partition's consumer.
pub(super) struct Consumer {
    pub(super) partition: i32,
    /// `read_committed`: reads to the last stable offset, skips aborted transactions.
    pub(super) committed: bool,
    /// (`read_committed`) the transactional batches it delivered: (producer id, batch index).
    pub(super) delivered: BTreeSet<(i64, i32)>,
    /// Its next fetch offset.
    pub(super) next: i64,
    in_flight: Option<u64>,
    next_req: u64,
    /// Every batch it read: base offset -> (producer id, batch index, last offset).
    pub(super) read: BTreeMap<i64, (i64, i32, i64)>,
}

impl Consumer {
    pub(super) fn new(partition: i32, committed: bool) -> Consumer {
        Consumer {
            partition,
            committed,
            delivered: BTreeSet::new(),
            next: 0,
            in_flight: None,
            next_req: 0,
            read: BTreeMap::new(),
        }
    }
}

impl Sim {
    pub(super) fn consumer_poll(&mut self, c: usize) {
        if self.consumers[c].in_flight.is_some() {
            return;
        }
        let req = self.consumers[c].next_req;
        self.consumers[c].next_req += 1;
        self.consumers[c].in_flight = Some(req);
        let to = self.rng.gen_range(0..BROKERS);
        let offset = self.consumers[c].next;
        self.send(Msg::Read {
            to,
            consumer: c,
            req,
            offset,
        });
        self.schedule(READ_TIMEOUT_MS, Event::ConsumerTimeout(c, req));
    }

    pub(super) fn consumer_timeout(&mut self, c: usize, req: u64) {
        if self.consumers[c].in_flight == Some(req) {
            self.consumers[c].in_flight = None;
            self.consumer_poll(c);
        }
    }

    fn poll_later(&mut self, c: usize) {
        self.consumers[c].in_flight = None;
        let d = self.rng.gen_range(20..200);
        self.schedule(d, Event::ConsumerPoll(c));
    }

    /// A broker takes a consumer's read: FindBatches to the coordinator's leader it knows of.
    pub(super) fn read(&mut self, to: usize, consumer: usize, req: u64, offset: i64) {
        let Some(leader) = self.controller.leader else {
            self.send(Msg::ReadReply {
                consumer,
                req,
                result: Err(E::NotCoordinator),
                log_start: -1,
            });
            return;
        };
        let from = (to, self.brokers[to].incarnation);
        let epoch = self.controller.epoch;
        self.send(Msg::Find {
            to: leader,
            from,
            epoch,
            consumer,
            req,
            offset,
        });
    }

    /// The coordinator's leader answers FindBatches, from what readers may see; a leader of
    /// another epoch than the asker's refuses (KIP-320's fencing, as the read path's step 1).
    pub(super) fn find(
        &mut self,
        to: usize,
        from: (usize, u64),
        epoch: u64,
        consumer: usize,
        req: u64,
        offset: i64,
    ) {
        let p = partition(self.topic, self.consumers[consumer].partition);
        let result = match self.brokers[to].host.as_ref() {
            Some(host) if self.brokers[to].epoch == epoch => {
                let log_start = host.coordinator().log_start(p).unwrap_or(0);
                let found = if self.mutation == Mutation::ReadSpeculative {
                    host.coordinator()
                        .find_batches(p, offset, READ_MAX_BYTES as u64)
                } else {
                    host.find_batches(p, offset, READ_MAX_BYTES as u64)
                };
                found
                    .map(|mut f| {
                        if self.mutation == Mutation::NoAbortedList {
                            f.aborted.clear();
                        }
                        (f, log_start)
                    })
                    .map_err(|e| (e, log_start))
            }
            _ => Err((E::NotCoordinator, -1)),
        };
        self.send(Msg::Found {
            to: from,
            consumer,
            req,
            offset,
            result,
        });
    }

    /// The broker reads the coordinates' byte ranges and assembles the records.
    pub(super) fn found(
        &mut self,
        to: (usize, u64),
        consumer: usize,
        req: u64,
        offset: i64,
        result: Result<(Found, i64), (E, i64)>,
    ) {
        if self.brokers[to.0].incarnation != to.1 {
            return;
        }
        let committed = self.consumers[consumer].committed;
        let (result, log_start) = match result {
            Err((e, log_start)) => (Err(e), log_start),
            Ok(_) if self.store_down => (Err(E::KafkaStorageError), -1),
            Ok((found, log_start)) => {
                let store = &self.store;
                let end = if committed && self.mutation != Mutation::CommittedReadsToHighWatermark {
                    found.last_stable_offset
                } else {
                    found.high_watermark
                };
                let read = assemble(&found, offset, end, READ_MAX_BYTES, 0, |o, at, len| {
                    stored_range(store, o, at, len)
                });
                match read {
                    Ok(records) => (Ok((records, found.aborted)), log_start),
                    // deleted since it was found (DeleteRecords, then GC): ask again
                    Err(ReadError::Missing(_)) => (Err(E::KafkaStorageError), log_start),
                    Err(e) => {
                        self.violate("corrupt-read", format!("{e}"));
                        return;
                    }
                }
            }
        };
        self.send(Msg::ReadReply {
            consumer,
            req,
            result,
            log_start,
        });
    }

    pub(super) fn read_reply(
        &mut self,
        c: usize,
        req: u64,
        result: Result<(Records, Vec<AbortedTxn>), E>,
        log_start: i64,
    ) {
        if self.consumers[c].in_flight != Some(req) {
            return;
        }
        match result {
            Ok((records, aborted)) => {
                if !records.bytes.is_empty() {
                    self.consume(c, &records.bytes, aborted);
                }
            }
            Err(E::OffsetOutOfRange) if self.consumers[c].next < log_start => {
                let next = self.consumers[c].next;
                self.log(|| format!("consumer {c}: {next} below the log start {log_start}"));
                self.consumers[c].next = log_start;
            }
            Err(E::OffsetOutOfRange) => {
                let next = self.consumers[c].next;
                self.violate(
                    "read-beyond-hw",
                    format!("consumer {c} at {next}, above the high watermark served (log start {log_start})"),
                );
            }
            Err(_) => {}
        }
        self.poll_later(c);
    }

    fn consume(&mut self, c: usize, bytes: &[u8], mut aborted: Vec<AbortedTxn>) {
        let headers = match validate_batches(bytes, usize::MAX) {
            Ok(h) => h,
            Err(e) => {
                self.violate("corrupt-read", format!("consumer {c}: {e}"));
                return;
            }
        };
        // (read_committed) the aborted transactions by first offset, and the producers whose
        // aborted transaction the batches are in
        aborted.sort_by_key(|a| std::cmp::Reverse(a.first_offset));
        let mut aborting: BTreeSet<i64> = BTreeSet::new();
        let mut pos = 0;
        for h in headers {
            let batch = &bytes[pos..pos + h.total_size()];
            pos += h.total_size();
            let (base, last) = (
                h.base_offset,
                h.base_offset + i64::from(h.last_offset_delta),
            );
            while aborted.last().is_some_and(|a| a.first_offset <= last) {
                let a = aborted.pop().expect("checked");
                aborting.insert(a.producer_id);
            }
            let next = self.consumers[c].next;
            if last < next {
                continue;
            }
            if base > next {
                self.violate(
                    "consumer-gap",
                    format!("consumer {c} at {next} got a batch at {base}"),
                );
                return;
            }
            if h.attributes & 0x20 != 0 {
                // a control batch: a transaction marker, which ends its producer's abort
                aborting.remove(&h.producer_id);
                self.consumers[c].next = last + 1;
                continue;
            }
            let Some((pid, index)) = parse_batch(batch) else {
                self.violate("corrupt-read", format!("consumer {c}: no batch at {base}"));
                return;
            };
            let mut expected = batch_bytes(pid, index).to_vec();
            patch_base_offset(&mut expected, base);
            if batch != expected.as_slice() {
                self.violate(
                    "read-differs",
                    format!("consumer {c}: batch {index} of {pid} at {base} is not what was sent"),
                );
                return;
            }
            if let Some(a) = self.acks.get(&(pid, index)) {
                if a.base_offset != base {
                    let was = a.base_offset;
                    self.violate(
                        "read-differs",
                        format!(
                            "producer {pid} batch {index} acknowledged at {was}, read at {base}"
                        ),
                    );
                    return;
                }
            }
            if let Some(&before) = self.consumers[c].read.get(&base) {
                if before != (pid, index, last) {
                    self.violate(
                        "read-differs",
                        format!(
                            "consumer {c} read {before:?} at {base}, now {:?}",
                            (pid, index, last)
                        ),
                    );
                    return;
                }
            }
            self.consumers[c].read.insert(base, (pid, index, last));
            self.stats.batches_read += 1;
            self.consumers[c].next = last + 1;
            if self.consumers[c].committed && transactional(pid) {
                if aborting.contains(&pid) {
                    self.stats.aborted_skipped += 1;
                } else if aborts(pid, index / TXN_BATCHES) {
                    self.violate(
                        "aborted-delivered",
                        format!(
                            "consumer {c} (read_committed) delivered producer {pid} batch {index} at {base}, of its aborted transaction {}",
                            index / TXN_BATCHES
                        ),
                    );
                    return;
                } else {
                    self.stats.committed_delivered += 1;
                    self.consumers[c].delivered.insert((pid, index));
                }
            }
        }
    }
}
