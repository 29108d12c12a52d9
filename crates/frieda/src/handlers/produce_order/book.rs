//! The produce-order rule as pure state (sans-IO): one connection's tickets, which of them
//! registered their partitions, and per partition the registered produces whose append there
//! is not decided yet, in ticket order. [`super::ProduceOrder`] drives it for the broker's
//! connections (a lock and a wake-up); a test or a simulation drives it with its own
//! interleavings.
//!
//! The rule (see [`super`]): a ticket may decide its append to a partition only when every
//! earlier ticket of the connection that registered that partition has decided its append
//! there, and tickets register in the order they were issued (a ticket given up before its
//! turn registers nothing).

use std::collections::{BTreeSet, HashMap, VecDeque};

/// A partition as a produce request names it: topic name (or id, Produce v13+) and index.
pub type PartitionKey = (String, i32);

/// A ticket: the place of a Produce request in its connection's read order, from 0.
pub type Ticket = u64;

/// One connection's produce order. Bounded by what is in flight: a partition is tracked only
/// while a registered produce has not decided its append there.
#[derive(Debug, Default)]
pub struct OrderBook {
    /// Tickets issued.
    issued: Ticket,
    /// The next ticket to register.
    next: Ticket,
    /// Tickets given up before their turn (they register nothing).
    skipped: BTreeSet<Ticket>,
    /// Per partition, the registered tickets whose append there is undecided, oldest first.
    undecided: HashMap<PartitionKey, VecDeque<Ticket>>,
}

impl OrderBook {
    /// An empty book.
    pub fn new() -> Self {
        OrderBook::default()
    }

    /// The next ticket, for the Produce request just read (call in read order).
    pub fn issue(&mut self) -> Ticket {
        let t = self.issued;
        self.issued += 1;
        t
    }

    /// Whether `ticket` may register now: every earlier ticket registered or was given up.
    pub fn is_turn(&self, ticket: Ticket) -> bool {
        self.next == ticket
    }

    /// Registers the partitions `ticket`'s request names (duplicates once). Returns false, and
    /// changes nothing, when it is not the ticket's turn ([`OrderBook::is_turn`]).
    pub fn register(&mut self, ticket: Ticket, partitions: &[PartitionKey]) -> bool {
        assert!(ticket < self.issued, "ticket {ticket} was never issued");
        if !self.is_turn(ticket) {
            return false;
        }
        for key in partitions {
            let q = self.undecided.entry(key.clone()).or_default();
            if q.back() != Some(&ticket) {
                debug_assert!(q.back().is_none_or(|&last| last < ticket));
                q.push_back(ticket);
            }
        }
        self.advance();
        true
    }

    /// `ticket` will not register (its request failed before its turn, or was dropped): the
    /// turn passes over it.
    pub fn give_up(&mut self, ticket: Ticket) {
        assert!(ticket < self.issued, "ticket {ticket} was never issued");
        if ticket < self.next {
            return; // registered already: its partitions are decided one by one
        }
        if self.next == ticket {
            self.advance();
        } else {
            self.skipped.insert(ticket);
        }
    }

    /// Whether `ticket` may decide its append to `key` now: no earlier registered ticket's
    /// append there is undecided. True for a partition the ticket did not register.
    pub fn may_decide(&self, ticket: Ticket, key: &PartitionKey) -> bool {
        self.undecided
            .get(key)
            .and_then(|q| q.front())
            .is_none_or(|&first| first >= ticket)
    }

    /// `ticket`'s append to `key` is decided (appended or refused), or it gives the partition
    /// up: the next produce there may go on.
    pub fn decided(&mut self, ticket: Ticket, key: &PartitionKey) {
        if let Some(q) = self.undecided.get_mut(key) {
            if let Some(i) = q.iter().position(|&t| t == ticket) {
                q.remove(i);
            }
            if q.is_empty() {
                self.undecided.remove(key);
            }
        }
    }

    /// Partitions with an undecided append (the book's size).
    pub fn tracked(&self) -> usize {
        self.undecided.len()
    }

    fn advance(&mut self) {
        self.next += 1;
        while self.skipped.remove(&self.next) {
            self.next += 1;
        }
        assert!(
            self.next <= self.issued,
            "the turn passed a ticket not issued"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn key(p: i32) -> PartitionKey {
        ("t".to_string(), p)
    }

    /// A produce request of the seeded test below.
    struct InFlight {
        ticket: Ticket,
        partitions: Vec<PartitionKey>,
        registered: bool,
        /// Registered partitions whose append is not decided yet.
        undecided: Vec<PartitionKey>,
        /// The request fails before it registers.
        give_up: bool,
    }

    /// Seeded interleavings of a connection's pipelined produces (up to 5 in flight, each to
    /// 1-3 of 4 partitions, some given up before their turn): every partition's appends are
    /// decided in ticket order, no request waits for ever, and the book empties.
    #[test]
    fn seeded_interleavings_decide_each_partition_in_ticket_order() {
        for seed in 0..500u64 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut book = OrderBook::new();
            let mut inflight: Vec<InFlight> = Vec::new();
            let mut log: HashMap<PartitionKey, Vec<Ticket>> = HashMap::new();
            let mut to_issue = 40;
            let mut steps = 0;
            while to_issue > 0 || !inflight.is_empty() {
                steps += 1;
                assert!(steps < 100_000, "seed {seed}: no progress");
                if to_issue > 0 && inflight.len() < 5 && rng.gen_bool(0.4) {
                    to_issue -= 1;
                    let t = book.issue();
                    let n = rng.gen_range(1..=3);
                    let parts: Vec<_> = (0..n).map(|_| key(rng.gen_range(0..4))).collect();
                    let give_up = rng.gen_bool(0.1);
                    inflight.push(InFlight {
                        ticket: t,
                        partitions: parts.clone(),
                        registered: false,
                        undecided: parts,
                        give_up,
                    });
                    continue;
                }
                if inflight.is_empty() {
                    continue;
                }
                let i = rng.gen_range(0..inflight.len());
                let r = &mut inflight[i];
                if !r.registered {
                    if r.give_up {
                        book.give_up(r.ticket);
                        inflight.swap_remove(i);
                    } else if book.register(r.ticket, &r.partitions) {
                        r.registered = true;
                    }
                    continue;
                }
                let j = rng.gen_range(0..r.undecided.len());
                let k = r.undecided[j].clone();
                if book.may_decide(r.ticket, &k) {
                    log.entry(k.clone()).or_default().push(r.ticket);
                    book.decided(r.ticket, &k);
                    r.undecided.retain(|x| x != &k);
                    if r.undecided.is_empty() {
                        inflight.swap_remove(i);
                    }
                }
            }
            for (k, ts) in &log {
                assert!(
                    ts.windows(2).all(|w| w[0] < w[1]),
                    "seed {seed}: {k:?} decided out of order: {ts:?}"
                );
            }
            assert_eq!(
                book.tracked(),
                0,
                "seed {seed}: the book keeps decided partitions"
            );
        }
    }

    #[test]
    fn a_later_ticket_waits_for_its_turn_and_for_earlier_appends_only_where_it_overlaps() {
        let mut book = OrderBook::new();
        let (a, b) = (book.issue(), book.issue());
        assert!(
            !book.register(b, &[key(0), key(1)]),
            "not b's turn before a registered"
        );
        assert!(book.register(a, &[key(0)]));
        assert!(book.register(b, &[key(0), key(1)]));
        assert!(book.may_decide(a, &key(0)));
        assert!(!book.may_decide(b, &key(0)), "a's append to 0 is undecided");
        assert!(book.may_decide(b, &key(1)), "nothing earlier on 1");
        book.decided(a, &key(0));
        assert!(book.may_decide(b, &key(0)));
        book.decided(b, &key(0));
        book.decided(b, &key(1));
        assert_eq!(book.tracked(), 0);
    }

    #[test]
    fn a_ticket_given_up_before_its_turn_is_passed_over() {
        let mut book = OrderBook::new();
        let (a, b, c) = (book.issue(), book.issue(), book.issue());
        book.give_up(b);
        assert!(!book.register(c, &[key(0)]));
        assert!(book.register(a, &[key(5)]));
        assert!(
            book.is_turn(c),
            "the given-up ticket does not hold the turn"
        );
        assert!(book.register(c, &[key(0)]));
    }
}
