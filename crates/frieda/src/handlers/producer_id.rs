//! InitProducerId (key 22): producer ids for idempotent producers (KIP-98), and epoch bumps
//! for producers that hit an error (KIP-360). Transactions are not implemented: a request with a
//! transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), which clients report as
//! "transactions not available" rather than retrying forever.

use super::RequestContext;
use crate::broker::Broker;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use std::sync::Arc;

/// Allocates a fresh id (epoch 0), or bumps the epoch of the id the client holds (v3+).
/// A bump past the last epoch (i16::MAX - 1) hands out a new id instead, as Kafka does.
/// Errors: KAFKA_STORAGE_ERROR (56) if the id block cannot be reserved on disk;
/// COORDINATOR_NOT_AVAILABLE (15) in a cluster when the controller gives no block.
pub async fn handle(
    broker: &Arc<Broker>,
    _ctx: &RequestContext,
    req: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let resp = InitProducerIdResponse::default();
    if req.transactional_id.is_some() {
        return resp.with_error_code(ResponseError::TransactionalIdAuthorizationFailed.code());
    }
    if req.producer_id.0 >= 0 && req.producer_epoch >= 0 && req.producer_epoch < i16::MAX - 1 {
        return resp
            .with_producer_id(req.producer_id)
            .with_producer_epoch(req.producer_epoch + 1);
    }
    if let Some(node) = broker.cluster() {
        // In a cluster the controller hands out blocks (KIP-730), so ids are unique cluster-wide.
        return match node.next_producer_id().await {
            Ok(id) => resp.with_producer_id(ProducerId(id)).with_producer_epoch(0),
            Err(e) => resp
                .with_error_code(e.code())
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        };
    }
    let broker = broker.clone();
    match tokio::task::spawn_blocking(move || broker.producer_ids.next_id()).await {
        Ok(Ok(id)) => resp.with_producer_id(ProducerId(id)).with_producer_epoch(0),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "could not reserve producer ids");
            resp.with_error_code(ResponseError::KafkaStorageError.code())
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1)
        }
        Err(_) => resp
            .with_error_code(ResponseError::UnknownServerError.code())
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1),
    }
}
