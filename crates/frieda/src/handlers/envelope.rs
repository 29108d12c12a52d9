//! Envelope (key 58, v0): in Kafka, a broker forwarding a client's request to the controller.
//! Frieda's brokers send each other one thing in it: a diskless request
//! ([`crate::diskless::wire`], told apart by its magic) to the batch coordinator loaded on the
//! receiving broker, from a broker that took a produce or fetch of a diskless partition
//! (docs/diskless.md, "Leaderless produce"), or for a block of an object the receiving broker
//! owns in their rack (object affinity). Only brokers may send it (CLUSTER_ACTION on the cluster, as Kafka checks
//! Envelope). It is served on every listener but not advertised in ApiVersions: Kafka 4.4's
//! brokers do not advertise it either (its controllers do).
//!
//! Errors (the envelope's `error_code`): CLUSTER_AUTHORIZATION_FAILED (31) for a client that is
//! not a broker; INVALID_REQUEST (42) for data that is not a diskless coordinator request (a
//! Kafka request forwarded to a broker, which Frieda does not take). The coordinator's own
//! errors travel inside `response_data`.

use super::{authorized_cluster, RequestContext};
use crate::broker::Broker;
use crate::diskless::wire;
use crate::security::acl::op;
use bytes::Bytes;
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::{EnvelopeRequest, EnvelopeResponse};
use std::sync::Arc;

/// Envelope: serves the diskless coordinator request it carries.
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: EnvelopeRequest,
) -> EnvelopeResponse {
    if !authorized_cluster(broker, ctx, op::CLUSTER_ACTION) {
        return EnvelopeResponse::default().with_error_code(E::ClusterAuthorizationFailed.code());
    }
    let request = match wire::decode_request(&req.request_data) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(client = ctx.client_id.as_deref().unwrap_or(""), error = %e,
                "envelope refused: not a diskless coordinator request");
            return EnvelopeResponse::default().with_error_code(E::InvalidRequest.code());
        }
    };
    let answer = match broker.diskless() {
        Some(d) => d.serve(request).await,
        None => Err(E::NotCoordinator),
    };
    EnvelopeResponse::default()
        .with_response_data(Some(Bytes::from(wire::encode_response(&answer))))
}
