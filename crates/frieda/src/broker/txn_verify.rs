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
