//! The order of one connection's produce appends under overlapped processing (issue 57,
//! defect 3).
//!
//! **The rule.** On one connection, a Produce request's append to a partition is decided
//! (appended, or refused by the producer-state and transaction checks) only after every
//! earlier Produce request of the connection that names the same partition has decided its
//! append there. Kafka mutes a connection while it serves one request, so a client's
//! pipelined produces reach each partition's producer state in the order it sent them; Frieda
//! reads and validates them at once (overlapped processing) but keeps that order where the
//! outcome depends on it: the idempotent and transactional sequence checks, and a transaction
//! opened on a partition (KIP-890's verification) before the produce behind it is checked.
//! Without it, the first produce of a new transaction waited in verification while the next
//! one (same epoch, a later sequence) was checked first and refused with
//! OUT_OF_ORDER_SEQUENCE_NUMBER, which Kafka Streams' exactly-once producers took for a fence.
//!
//! What still overlaps: validation of the batches (CRC, sizes), produces to other partitions,
//! and the wait for the in-sync replicas after the append (the order of the answers is the
//! connection's in any case).
//!
//! How: the read loop hands each Produce request a [`ProduceTicket`] in read order; the
//! handler [`ProduceTicket::register`]s the partitions it names (in ticket order: a ticket waits
//! until every earlier one registered or was dropped), which gives it one [`AppendGate`] per
//! partition; [`Registered::wait_for_earlier`] waits until the earlier produces to those
//! partitions decided their appends there, and the handler drops each of its gates once that
//! partition's append is decided. The rule itself is [`book::OrderBook`] (sans-IO: a test
//! or a simulation drives it with its own interleavings); this module is its lock and its
//! wake-ups. Bounded by what is in flight: a partition is tracked only while a registered
//! produce has not decided its append there.

pub mod book;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

pub use book::PartitionKey;
use book::{OrderBook, Ticket};

/// One connection's produce order.
#[derive(Debug, Default)]
pub struct ProduceOrder {
    book: Mutex<OrderBook>,
    /// Wakes tickets waiting for their turn to register and registered requests waiting for
    /// earlier appends (every change of the book; a connection has few requests in flight).
    changed: Notify,
}

impl ProduceOrder {
    /// A connection's order, empty.
    pub fn new() -> Arc<Self> {
        Arc::new(ProduceOrder::default())
    }

    /// The next ticket, for the Produce request just read (call in read order).
    pub fn ticket(self: &Arc<Self>) -> ProduceTicket {
        let seq = self.book.lock().issue();
        ProduceTicket {
            order: self.clone(),
            seq,
            done: false,
        }
    }

    /// Waits until `ready` holds for the book (checked under its lock, again after each change).
    async fn wait_until(&self, mut ready: impl FnMut(&mut OrderBook) -> bool) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if ready(&mut self.book.lock()) {
                return;
            }
            changed.await;
        }
    }
}

/// A Produce request's place in its connection's order.
#[derive(Debug)]
pub struct ProduceTicket {
    order: Arc<ProduceOrder>,
    seq: Ticket,
    /// Registered (or given up).
    done: bool,
}

/// Held while a request has not decided its append to one partition; dropping it lets the
/// next produce of the connection to that partition go on.
#[derive(Debug)]
pub struct AppendGate {
    order: Arc<ProduceOrder>,
    seq: Ticket,
    key: PartitionKey,
}

impl Drop for AppendGate {
    fn drop(&mut self) {
        self.order.book.lock().decided(self.seq, &self.key);
        self.order.changed.notify_waiters();
    }
}

/// A request context's ticket ([`super::RequestContext::produce_ticket`]): clones of the
/// context share it, the Produce handler takes it once. Empty for other requests, and when
/// the connection processes one request at a time.
#[derive(Debug, Clone, Default)]
pub struct TicketSlot(Option<Arc<Mutex<Option<ProduceTicket>>>>);

impl TicketSlot {
    /// A slot holding `ticket`.
    pub fn new(ticket: ProduceTicket) -> Self {
        TicketSlot(Some(Arc::new(Mutex::new(Some(ticket)))))
    }

    /// The ticket, once.
    pub fn take(&self) -> Option<ProduceTicket> {
        self.0.as_ref().and_then(|m| m.lock().take())
    }
}

/// A registered request: its gates, one per partition it names.
#[derive(Debug)]
pub struct Registered {
    /// One gate per partition the request names.
    pub gates: HashMap<PartitionKey, AppendGate>,
    order: Arc<ProduceOrder>,
    seq: Ticket,
}

impl Registered {
    /// Waits until every earlier produce of the connection to these partitions decided its
    /// append there.
    pub async fn wait_for_earlier(&mut self) {
        let keys: Vec<PartitionKey> = self.gates.keys().cloned().collect();
        let seq = self.seq;
        self.order
            .wait_until(|book| keys.iter().all(|k| book.may_decide(seq, k)))
            .await;
    }
}

impl ProduceTicket {
    /// Registers the partitions the request names, after every earlier ticket of the
    /// connection (a wait of microseconds: tickets register at the start of their handler).
    pub async fn register(mut self, partitions: &[PartitionKey]) -> Registered {
        let seq = self.seq;
        self.order
            .wait_until(|book| book.register(seq, partitions))
            .await;
        self.done = true;
        self.order.changed.notify_waiters();
        let mut gates = HashMap::with_capacity(partitions.len());
        for key in partitions {
            gates.entry(key.clone()).or_insert_with(|| AppendGate {
                order: self.order.clone(),
                seq,
                key: key.clone(),
            });
        }
        Registered {
            gates,
            order: self.order.clone(),
            seq,
        }
    }
}

impl Drop for ProduceTicket {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.order.book.lock().give_up(self.seq);
        self.order.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn key(p: i32) -> PartitionKey {
        ("t".to_string(), p)
    }

    #[tokio::test]
    async fn a_later_produce_to_the_same_partition_waits_for_the_earlier_append() {
        let order = ProduceOrder::new();
        let (first, second) = (order.ticket(), order.ticket());
        // The second registers only after the first (here: the first registers later).
        let b = tokio::spawn(async move {
            let mut r = second.register(&[key(0), key(1)]).await;
            r.wait_for_earlier().await;
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!b.is_finished(), "its turn comes after the first ticket's");
        let mut a = first.register(&[key(0)]).await;
        a.wait_for_earlier().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!b.is_finished(), "partition 0's append is not decided yet");
        a.gates.remove(&key(0));
        tokio::time::timeout(Duration::from_secs(5), b)
            .await
            .expect("released")
            .unwrap();
    }

    #[tokio::test]
    async fn other_partitions_and_dropped_tickets_do_not_hold_anyone() {
        let order = ProduceOrder::new();
        let (first, skipped, third) = (order.ticket(), order.ticket(), order.ticket());
        let _held = first.register(&[key(0)]).await;
        drop(skipped); // a request that failed before it registered
        let mut r = tokio::time::timeout(Duration::from_secs(5), third.register(&[key(1)]))
            .await
            .expect("its turn came");
        tokio::time::timeout(Duration::from_secs(5), r.wait_for_earlier())
            .await
            .expect("nothing earlier on partition 1");
    }

    #[tokio::test]
    async fn a_dropped_ticket_before_its_turn_is_skipped_when_the_turn_comes() {
        let order = ProduceOrder::new();
        let (first, second, third) = (order.ticket(), order.ticket(), order.ticket());
        drop(second);
        let t = tokio::spawn(async move { third.register(&[key(0)]).await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!t.is_finished());
        drop(first.register(&[key(5)]).await);
        tokio::time::timeout(Duration::from_secs(5), t)
            .await
            .expect("the skipped ticket does not block")
            .unwrap();
    }

    #[tokio::test]
    async fn decided_partitions_are_not_kept() {
        let order = ProduceOrder::new();
        for p in 0..2_000 {
            drop(order.ticket().register(&[key(p)]).await);
        }
        assert_eq!(order.book.lock().tracked(), 0);
    }
}
