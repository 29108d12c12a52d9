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
//! partition and the gates of the earlier produces there to wait on; it drops each of its gates
//! once that partition's append is decided. Bounded: at most one gate per partition a
//! connection names ([`MAX_TRACKED_PARTITIONS`] before finished ones are pruned).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{oneshot, Notify};

/// Partitions a connection's order keeps a gate for before it prunes the decided ones.
pub const MAX_TRACKED_PARTITIONS: usize = 1_024;

/// A partition as a produce request names it: topic name (or id, Produce v13+) and index.
pub type PartitionKey = (String, i32);

/// One connection's produce order.
#[derive(Debug, Default)]
pub struct ProduceOrder {
    state: Mutex<OrderState>,
    /// Wakes tickets waiting for their turn to register.
    turn: Notify,
}

#[derive(Debug, Default)]
struct OrderState {
    /// Tickets handed out.
    issued: u64,
    /// The next ticket to register.
    next: u64,
    /// Tickets dropped before their turn (they register nothing).
    skipped: BTreeSet<u64>,
    /// Per partition, the gate of the last produce that named it.
    tails: HashMap<PartitionKey, oneshot::Receiver<()>>,
}

impl OrderState {
    /// `seq` registered or gave up: the turn moves past it and past every skipped one after.
    fn advance(&mut self) {
        self.next += 1;
        while self.skipped.remove(&self.next) {
            self.next += 1;
        }
    }
}

impl ProduceOrder {
    /// A connection's order, empty.
    pub fn new() -> Arc<Self> {
        Arc::new(ProduceOrder::default())
    }

    /// The next ticket, for the Produce request just read (call in read order).
    pub fn ticket(self: &Arc<Self>) -> ProduceTicket {
        let mut st = self.state.lock();
        let seq = st.issued;
        st.issued += 1;
        ProduceTicket {
            order: self.clone(),
            seq,
            done: false,
        }
    }
}

/// A Produce request's place in its connection's order.
#[derive(Debug)]
pub struct ProduceTicket {
    order: Arc<ProduceOrder>,
    seq: u64,
    /// Registered (or given up).
    done: bool,
}

/// Held while a request has not decided its append to one partition; dropping it lets the
/// next produce of the connection to that partition go on.
#[derive(Debug)]
pub struct AppendGate(#[allow(dead_code)] oneshot::Sender<()>);

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

/// A registered request: its gates, and what it waits for before it appends.
#[derive(Debug)]
pub struct Registered {
    /// One gate per partition the request names.
    pub gates: HashMap<PartitionKey, AppendGate>,
    /// The gates of the earlier produces to the same partitions.
    before: Vec<oneshot::Receiver<()>>,
}

impl Registered {
    /// Waits until every earlier produce of the connection to these partitions decided its
    /// append there.
    pub async fn wait_for_earlier(&mut self) {
        for rx in self.before.drain(..) {
            // An error is a dropped gate: decided as well.
            let _ = rx.await;
        }
    }
}

impl ProduceTicket {
    /// Registers the partitions the request names, after every earlier ticket of the
    /// connection (a wait of microseconds: tickets register at the start of their handler).
    pub async fn register(mut self, partitions: &[PartitionKey]) -> Registered {
        loop {
            let turn = self.order.turn.notified();
            tokio::pin!(turn);
            turn.as_mut().enable();
            {
                let mut st = self.order.state.lock();
                if st.next == self.seq {
                    let mut gates = HashMap::with_capacity(partitions.len());
                    let mut before = Vec::new();
                    if st.tails.len() >= MAX_TRACKED_PARTITIONS {
                        // Decided gates (sender dropped) need not be kept.
                        st.tails.retain(|_, rx| {
                            matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Empty))
                        });
                    }
                    for key in partitions {
                        if gates.contains_key(key) {
                            continue;
                        }
                        let (tx, rx) = oneshot::channel();
                        if let Some(prev) = st.tails.insert(key.clone(), rx) {
                            before.push(prev);
                        }
                        gates.insert(key.clone(), AppendGate(tx));
                    }
                    st.advance();
                    self.done = true;
                    drop(st);
                    self.order.turn.notify_waiters();
                    return Registered { gates, before };
                }
            }
            turn.await;
        }
    }
}

impl Drop for ProduceTicket {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut st = self.order.state.lock();
        if st.next == self.seq {
            st.advance();
        } else {
            st.skipped.insert(self.seq);
        }
        drop(st);
        self.order.turn.notify_waiters();
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
    async fn decided_gates_are_pruned_past_the_bound() {
        let order = ProduceOrder::new();
        for p in 0..(MAX_TRACKED_PARTITIONS as i32 + 10) {
            drop(order.ticket().register(&[key(p)]).await);
        }
        assert!(order.state.lock().tails.len() <= MAX_TRACKED_PARTITIONS);
    }
}
