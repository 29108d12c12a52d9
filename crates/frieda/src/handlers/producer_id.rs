//! InitProducerId (key 22, v0-5): producer ids for idempotent producers (KIP-98), epoch bumps
//! for producers that hit an error (KIP-360), and transactional producers (with a
//! `transactional.id`): the transaction coordinator assigns the id and fences older producers
//! of the same transactional id by epoch.

use super::{authorized, authorized_cluster, RequestContext};
use crate::broker::Broker;
use crate::security::acl::{op, resource};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use std::sync::Arc;

/// Without a transactional id: a fresh id (epoch 0), or the epoch after the one the client
/// holds (v3+); a bump past the last epoch (i16::MAX - 1) hands out a new id instead, as Kafka
/// does. With one: the coordinator's answer (see
/// [`crate::coordinator::transaction::TransactionCoordinators::init_producer_id`]).
///
/// Errors: KAFKA_STORAGE_ERROR (56) if the id block cannot be reserved on disk;
/// COORDINATOR_NOT_AVAILABLE (15) in a cluster when the controller gives no block; for
/// transactional ids NOT_COORDINATOR (16), CONCURRENT_TRANSACTIONS (51),
/// INVALID_TRANSACTION_TIMEOUT (50), PRODUCER_FENCED (90, v4+; INVALID_PRODUCER_EPOCH before).
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let resp = InitProducerIdResponse::default();
    let failed = |e: ResponseError| {
        InitProducerIdResponse::default()
            .with_error_code(e.code())
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    if let Some(id) = req.transactional_id.as_ref() {
        // Kafka: WRITE on the transactional id.
        if !authorized(broker, ctx, op::WRITE, resource::TRANSACTIONAL_ID, &id.0) {
            return failed(ResponseError::TransactionalIdAuthorizationFailed);
        }
        let expected = (ctx.api_version >= 3 && req.producer_id.0 >= 0)
            .then_some((req.producer_id.0, req.producer_epoch));
        return match broker
            .txns
            .init_producer_id(&id.0, req.transaction_timeout_ms, expected)
            .await
        {
            Ok((pid, epoch)) => resp
                .with_producer_id(ProducerId(pid))
                .with_producer_epoch(epoch),
            Err(ResponseError::ProducerFenced) if ctx.api_version < 4 => {
                failed(ResponseError::InvalidProducerEpoch)
            }
            Err(e) => failed(e),
        };
    }
    // Kafka: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
    if !authorized_cluster(broker, ctx, op::IDEMPOTENT_WRITE)
        && !broker
            .security
            .authorize_any(&ctx.session, op::WRITE, resource::TOPIC)
    {
        return failed(ResponseError::ClusterAuthorizationFailed);
    }
    if req.producer_id.0 >= 0 && req.producer_epoch >= 0 && req.producer_epoch < i16::MAX - 1 {
        return resp
            .with_producer_id(req.producer_id)
            .with_producer_epoch(req.producer_epoch + 1);
    }
    match broker.next_producer_id().await {
        Ok(id) => resp.with_producer_id(ProducerId(id)).with_producer_epoch(0),
        Err(e) => failed(e),
    }
}
