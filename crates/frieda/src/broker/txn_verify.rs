//! A partition leader (or group coordinator) asking a transaction coordinator whether partitions
//! are in a transaction (KIP-890 part 1, `verify_only`) or to add them (part 2, transactions
//! v2): the coordinator runs here, or AddPartitionsToTxn v5 goes to the leader of the id's
//! `__transaction_state` partition (Kafka's `AddPartitionsToTxnManager`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use frieda_meta::NO_LEADER;
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;

use super::Broker;
use crate::coordinator::transaction::{TopicPartition, TxnVersion};
use crate::storage::leader_append::ProducerCheck;
use crate::storage::topic::TRANSACTION_STATE_TOPIC;

/// AddPartitionsToTxn version brokers send (v4+ are the brokers' batched form).
const ADD_PARTITIONS_VERSION: i16 = 5;
/// How long the coordinator may take to answer.
pub const VERIFY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a transactions v2 produce retries an add its coordinator answered
/// CONCURRENT_TRANSACTIONS (the previous transaction's markers are still being written)
/// before the error goes to the client: Kafka's `add.partitions.to.txn.retry.backoff.max.ms`
/// (100 ms; `ReplicaManager.appendRecordsWithTransactionVerification`).
pub const ADD_RETRY_MAX: Duration = Duration::from_millis(100);
/// The pause between those retries: Kafka's `add.partitions.to.txn.retry.backoff.ms` (20 ms).
pub const ADD_RETRY_BACKOFF: Duration = Duration::from_millis(20);

/// After a partition leader's add or verification was answered, `elapsed` after the first
/// ask: the pause before asking again, or `None` when the answer stands. Only a transactions
/// v2 add (`tv2`, Produce v12+, KIP-890 part 2) that got CONCURRENT_TRANSACTIONS (51) for some
/// partition is retried, every [`ADD_RETRY_BACKOFF`] until [`ADD_RETRY_MAX`] has passed
/// (Kafka's `ReplicaManager.appendRecordsWithTransactionVerification`); each retry starts the
/// partitions' verification again (the previous transaction's marker may have landed
/// meanwhile). Sans-IO: the produce handler and the simulator (`frieda-sim`) both follow it.
pub fn add_retry(tv2: bool, concurrent: bool, elapsed: Duration) -> Option<Duration> {
    (tv2 && concurrent && elapsed < ADD_RETRY_MAX).then_some(ADD_RETRY_BACKOFF)
}

/// Produce v11 is the first that knows TRANSACTION_ABORTABLE (120; KIP-890).
pub const ABORTABLE_VERSION: i16 = 11;
/// Produce v12+ is transactions v2: the partition leader adds its partition to the
/// producer's transaction (KIP-890 part 2) instead of only verifying it (part 1).
pub const TXN_V2_VERSION: i16 = 12;

/// What a [`VerifyRound`] asks of its driver after the coordinator answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyStep<K> {
    /// Sleep this long, then call [`VerifyRound::restart`] and ask again for what still waits.
    Pause(Duration),
    /// The round is over: these partitions are refused with the produce error to answer
    /// (already translated by [`produce_error`]); every other one appends with the producer
    /// check it was last given.
    Done(Vec<(K, E)>),
}

/// One produce request's KIP-890 round with the transaction coordinator at a partition leader,
/// sans-IO: the produce handler drives it with `add_or_verify` and tokio's sleep, the
/// simulator (`frieda-sim`) with its messages and timers, so both follow one rule
/// (Kafka's `ReplicaManager.appendRecordsWithTransactionVerification`). `K` names a partition
/// of the request (the handler: its item index; the simulator: `()`).
///
/// 1. [`admit`](Self::admit) each transactional batch: it needs the request's transactional id,
///    and all of one request's transactional batches are one producer's (id, epoch); else
///    INVALID_RECORD.
/// 2. With verification on (always from Produce v12; `transaction.partition.verification.enable`
///    before), the partition's producer state begins a verification
///    (`begin_verification(pid, epoch, self.tv2())`) and [`wait_for`](Self::wait_for) takes
///    its token: `None` (the transaction is already open there at that epoch) appends at once,
///    allowed only to continue the transaction; a token waits for the coordinator.
/// 3. [`answered`](Self::answered): a transactions v2 add refused CONCURRENT_TRANSACTIONS is
///    asked again ([`add_retry`]: every 20 ms for up to 100 ms), each retry beginning every
///    waiting partition's verification again ([`restart`](Self::restart): the previous
///    transaction's marker may have landed); else each refused partition gets its error.
#[derive(Debug, Clone)]
pub struct VerifyRound<K> {
    version: i16,
    verify: bool,
    producer: Option<(i64, i16)>,
    /// Partitions waiting for the coordinator; bounded by the request's partitions.
    waiting: Vec<K>,
}

impl<K: Clone> VerifyRound<K> {
    /// A round for a Produce request of `version`; `verification_enabled` is the broker's
    /// `transaction.partition.verification.enable` (Produce v12+ always verifies: the leader
    /// must add its partition).
    pub fn new(version: i16, verification_enabled: bool) -> VerifyRound<K> {
        VerifyRound {
            version,
            verify: version >= TXN_V2_VERSION || verification_enabled,
            producer: None,
            waiting: Vec::new(),
        }
    }

    /// Whether this is a transactions v2 round (the leader adds its partitions).
    pub fn tv2(&self) -> bool {
        self.version >= TXN_V2_VERSION
    }

    /// Admits a transactional batch of producer `producer_id` at `epoch`: `Ok(true)` when its
    /// partition must begin a verification and [`wait_for`](Self::wait_for) its token,
    /// `Ok(false)` when verification is off (the batch appends as any other), `Err` with the
    /// INVALID_RECORD message when the request has no transactional id or its transactional
    /// batches are of more than one producer.
    pub fn admit(
        &mut self,
        has_transactional_id: bool,
        producer_id: i64,
        epoch: i16,
    ) -> Result<bool, &'static str> {
        if !has_transactional_id {
            return Err("transactional records need the request's transactional id");
        }
        match self.producer {
            None => self.producer = Some((producer_id, epoch)),
            Some(pe) if pe != (producer_id, epoch) => {
                return Err("transactional records of more than one producer in one request")
            }
            Some(_) => {}
        }
        Ok(self.verify)
    }

    /// The producer (id, epoch) of the request's transactional batches, once one was admitted.
    pub fn producer(&self) -> Option<(i64, i16)> {
        self.producer
    }

    /// Partition `key` began its verification with `token` (`None`: nothing to verify); the
    /// producer check its append must carry. A token makes it wait for the coordinator.
    pub fn wait_for(&mut self, key: K, token: Option<u64>) -> ProducerCheck {
        if token.is_some() {
            self.waiting.push(key);
        }
        ProducerCheck::verified(token)
    }

    /// The partitions to ask the coordinator about (empty: the round is over).
    pub fn waiting(&self) -> &[K] {
        &self.waiting
    }

    /// The coordinator answered: `refusal` gives each waiting partition's error (`None`: it is
    /// in the transaction), `elapsed` is the time since the round's first ask.
    pub fn answered(
        &mut self,
        refusal: impl Fn(&K) -> Option<E>,
        elapsed: Duration,
    ) -> VerifyStep<K> {
        let concurrent = self
            .waiting
            .iter()
            .any(|k| refusal(k) == Some(E::ConcurrentTransactions));
        if let Some(pause) = add_retry(self.tv2(), concurrent, elapsed) {
            return VerifyStep::Pause(pause);
        }
        let abortable = self.version >= ABORTABLE_VERSION;
        let tv2 = self.tv2();
        let refused = std::mem::take(&mut self.waiting)
            .into_iter()
            .filter_map(|k| refusal(&k).map(|e| (k, produce_error(e, abortable, tv2))))
            .collect();
        VerifyStep::Done(refused)
    }

    /// After a [`VerifyStep::Pause`]: each waiting partition begins its verification again
    /// (`begin` returns its new token); returns every one's new producer check. Those with no
    /// token left (the transaction is open there now) stop waiting.
    pub fn restart(&mut self, mut begin: impl FnMut(&K) -> Option<u64>) -> Vec<(K, ProducerCheck)> {
        let mut checks = Vec::with_capacity(self.waiting.len());
        self.waiting.retain(|k| {
            let token = begin(k);
            checks.push((k.clone(), ProducerCheck::verified(token)));
            token.is_some()
        });
        checks
    }
}

/// Asks `transactional_id`'s coordinator to add (`add`: transactions v2) or verify
/// `partitions` of the producer's transaction. Returns the partitions that failed, with the
/// coordinator's error (or NETWORK_EXCEPTION / COORDINATOR_NOT_AVAILABLE when it could not be
/// asked); the others are in the transaction.
pub async fn add_or_verify(
    broker: &Arc<Broker>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    partitions: &[TopicPartition],
    add: bool,
) -> HashMap<TopicPartition, E> {
    let all = |e: E| partitions.iter().map(|tp| (tp.clone(), e)).collect();
    let txns = &broker.txns;
    if txns.partition_count() > 0 && txns.is_loaded(txns.partition_for(transactional_id)) {
        if add {
            return match txns
                .add_partitions(
                    transactional_id,
                    producer_id,
                    epoch,
                    partitions,
                    TxnVersion::V2,
                )
                .await
            {
                Ok(()) => HashMap::new(),
                Err(e) => all(e),
            };
        }
        return match txns.verify_partitions(transactional_id, producer_id, epoch, partitions) {
            Ok(results) => results
                .into_iter()
                .filter_map(|(tp, e)| e.map(|e| (tp, e)))
                .collect(),
            Err(e) => all(e),
        };
    }
    let Some(node) = broker.cluster() else {
        return all(E::CoordinatorNotAvailable);
    };
    let image = node.image();
    let leader = image
        .topics
        .get(TRANSACTION_STATE_TOPIC)
        .and_then(|t| {
            let n = t.partitions.len() as i32;
            let p = crate::coordinator::registry::offsets_partition_for(transactional_id, n);
            t.partitions.get(p as usize).map(|s| s.leader)
        })
        .filter(|&l| l != NO_LEADER && l != node.me);
    let Some(leader) = leader else {
        return all(E::CoordinatorNotAvailable);
    };
    let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
    for (t, p) in partitions {
        match topics.iter_mut().find(|x| x.name.0.as_str() == t) {
            Some(x) => x.partitions.push(*p),
            None => topics.push(
                AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(StrBytes::from_string(t.to_string())))
                    .with_partitions(vec![*p]),
            ),
        }
    }
    let req = AddPartitionsToTxnRequest::default().with_transactions(vec![
        AddPartitionsToTxnTransaction::default()
            .with_transactional_id(TransactionalId(StrBytes::from_string(
                transactional_id.to_string(),
            )))
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(epoch)
            .with_verify_only(!add)
            .with_topics(topics),
    ]);
    let resp = match node
        .clients
        .call(leader, ADD_PARTITIONS_VERSION, &req, VERIFY_TIMEOUT)
        .await
    {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(leader, error = %e, "AddPartitionsToTxn to the coordinator failed");
            return all(E::NetworkException);
        }
    };
    if let Some(e) = E::try_from_code(resp.error_code) {
        return all(if e == E::ClusterAuthorizationFailed {
            E::InvalidTxnState
        } else {
            e
        });
    }
    let mut out = HashMap::new();
    for r in resp.results_by_transaction {
        for t in r.topic_results {
            for p in t.results_by_partition {
                if let Some(e) = E::try_from_code(p.partition_error_code) {
                    out.insert((t.name.0.to_string(), p.partition_index), e);
                }
            }
        }
    }
    out
}

/// Kafka's translation of a verification error for a Produce (or TxnOffsetCommit) response
/// of `version`-era clients (`ReplicaManager.appendRecordsWithTransactionVerification`):
/// coordinator unavailability becomes NOT_ENOUGH_REPLICAS (clients retry it without a metadata
/// refresh; CONCURRENT_TRANSACTIONS stays for transactions v2), PRODUCER_FENCED
/// INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE INVALID_TXN_STATE for clients that predate it.
pub fn produce_error(e: E, supports_abortable: bool, tv2: bool) -> E {
    match e {
        E::NetworkException
        | E::CoordinatorLoadInProgress
        | E::CoordinatorNotAvailable
        | E::NotCoordinator => E::NotEnoughReplicas,
        E::ConcurrentTransactions if !tv2 => E::NotEnoughReplicas,
        E::ProducerFenced => E::InvalidProducerEpoch,
        E::TransactionAbortable if !supports_abortable => E::InvalidTxnState,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_admits_one_producer_with_a_transactional_id() {
        let mut r: VerifyRound<usize> = VerifyRound::new(11, false);
        assert_eq!(
            r.admit(true, 7, 0),
            Ok(false),
            "part 1 with verification off"
        );
        assert!(
            r.admit(true, 8, 0).is_err(),
            "a second producer in one request"
        );
        assert!(
            r.admit(true, 7, 1).is_err(),
            "the same producer at another epoch"
        );
        assert!(r.admit(false, 7, 0).is_err(), "no transactional id");
        let mut v2: VerifyRound<usize> = VerifyRound::new(12, false);
        assert_eq!(
            v2.admit(true, 7, 0),
            Ok(true),
            "Produce v12 always verifies"
        );
        assert!(v2.tv2());
    }

    #[test]
    fn a_round_retries_a_concurrent_add_then_answers_each_partition() {
        let ms = Duration::from_millis;
        let mut r: VerifyRound<usize> = VerifyRound::new(12, true);
        assert_eq!(r.wait_for(0, None), ProducerCheck::verified(None));
        assert_eq!(r.wait_for(1, Some(5)), ProducerCheck::verified(Some(5)));
        r.wait_for(2, Some(6));
        assert_eq!(r.waiting(), &[1, 2], "only a partition with a token waits");
        let concurrent = |_: &usize| Some(E::ConcurrentTransactions);
        assert_eq!(r.answered(concurrent, ms(30)), VerifyStep::Pause(ms(20)));
        // partition 1's transaction is open now (the marker landed): it stops waiting
        let checks = r.restart(|&k| (k == 2).then_some(9));
        assert_eq!(
            checks,
            vec![
                (1, ProducerCheck::verified(None)),
                (2, ProducerCheck::verified(Some(9)))
            ]
        );
        assert_eq!(r.waiting(), &[2]);
        assert_eq!(
            r.answered(concurrent, ms(100)),
            VerifyStep::Done(vec![(2, E::ConcurrentTransactions)]),
            "after 100 ms the client gets CONCURRENT_TRANSACTIONS"
        );
        assert!(r.waiting().is_empty());
    }

    #[test]
    fn a_part_1_round_answers_at_once_with_kafkas_produce_errors() {
        let mut r: VerifyRound<&str> = VerifyRound::new(11, true);
        r.wait_for("a", Some(1));
        r.wait_for("b", Some(2));
        r.wait_for("c", Some(3));
        let refusal = |k: &&str| match *k {
            "a" => Some(E::ConcurrentTransactions),
            "b" => Some(E::CoordinatorNotAvailable),
            _ => None,
        };
        assert_eq!(
            r.answered(refusal, Duration::ZERO),
            VerifyStep::Done(vec![
                ("a", E::NotEnoughReplicas),
                ("b", E::NotEnoughReplicas)
            ])
        );
        let mut old: VerifyRound<()> = VerifyRound::new(10, true);
        old.wait_for((), Some(1));
        assert_eq!(
            old.answered(|_| Some(E::TransactionAbortable), Duration::ZERO),
            VerifyStep::Done(vec![((), E::InvalidTxnState)]),
            "a client before Produce v11 does not know TRANSACTION_ABORTABLE"
        );
    }

    #[test]
    fn only_a_v2_add_refused_concurrent_is_retried_and_only_for_100_ms() {
        let ms = Duration::from_millis;
        assert_eq!(add_retry(true, true, ms(0)), Some(ms(20)));
        assert_eq!(add_retry(true, true, ms(99)), Some(ms(20)));
        assert_eq!(add_retry(true, true, ms(100)), None);
        // Verification only (KIP-890 part 1): CONCURRENT_TRANSACTIONS goes to the client.
        assert_eq!(add_retry(false, true, ms(0)), None);
        // Any other refusal stands.
        assert_eq!(add_retry(true, false, ms(0)), None);
    }
}
