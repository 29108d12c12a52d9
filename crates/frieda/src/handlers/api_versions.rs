//! ApiVersions (key 18): every API and version range Frieda implements, as the API table
//! ([`super::table::APIS`]) lists them. Unsupported APIs are not advertised.

use super::table::APIS;
use super::{str_bytes, RequestContext};
use crate::broker::Broker;
use crate::features::FEATURES;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::Encodable;
use std::sync::Arc;

/// The advertised ranges: every API of [`APIS`], in its order, but Envelope (served between
/// Frieda's brokers only; Kafka 4.4's brokers do not advertise it).
fn api_keys() -> Vec<ApiVersion> {
    APIS.iter()
        .filter(|s| s.advertised())
        .map(|s| {
            ApiVersion::default()
                .with_api_key(s.key as i16)
                .with_min_version(s.advertised_min)
                .with_max_version(s.max)
        })
        .collect()
}

/// Whether a v3+ client software name or version is one Kafka accepts
/// (`ApiVersionsRequest.isValid`: `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`).
fn valid_software_field(s: &str) -> bool {
    let b = s.as_bytes();
    let end_ok = |c: &u8| c.is_ascii_alphanumeric();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            end_ok(first)
                && end_ok(last)
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'.')
        }
        _ => false,
    }
}

/// Answers with the table and the feature levels ([`FEATURES`] supported, the finalized levels
/// in force with their epoch; v3+ carry them). Levels of 0 are not listed as finalized, as
/// Kafka does not list them.
///
/// Errors (the answer then carries only the code, as Kafka's `getErrorResponse`):
/// INVALID_REQUEST (42) for a v3+ client software name or version Kafka would refuse, or a v5
/// request with only one of cluster id and node id;
/// REBOOTSTRAP_REQUIRED (129) when a v5 request names a cluster id that is not this cluster's,
/// or this cluster's with another node id (Kafka 4.4's `KafkaApis.handleApiVersionsRequest`:
/// the client's bootstrap address now reaches another cluster or node).
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ApiVersionsRequest,
) -> ApiVersionsResponse {
    if ctx.api_version >= 3
        && !(valid_software_field(&req.client_software_name)
            && valid_software_field(&req.client_software_version))
    {
        return ApiVersionsResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code());
    }
    // v5: a cluster id and a node id come together (`ApiVersionsRequest.isValid`).
    if ctx.api_version >= 5 && req.cluster_id.is_none() != (req.node_id == -1) {
        return ApiVersionsResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code());
    }
    if ctx.api_version >= 5 {
        if let Some(cluster) = &req.cluster_id {
            // The id clients learned from Metadata: in a cluster the image's, not the one
            // in this node's meta.properties (Kafka 4.4's clients send it back here).
            if cluster.as_str() != broker.current_cluster_id()
                || req.node_id != broker.config.node_id
            {
                tracing::info!(
                    client_cluster = %cluster.as_str(),
                    client_node = req.node_id,
                    "ApiVersions for another cluster or node: REBOOTSTRAP_REQUIRED"
                );
                return ApiVersionsResponse::default()
                    .with_error_code(ResponseError::RebootstrapRequired.code());
            }
        }
    }
    let finalized_now = broker.features.get();
    let supported = FEATURES
        .iter()
        .map(|(name, min, max, _)| {
            SupportedFeatureKey::default()
                .with_name(str_bytes(name))
                .with_min_version(*min)
                .with_max_version(*max)
        })
        .collect();
    let finalized = finalized_now
        .levels
        .iter()
        .filter(|(_, level)| **level > 0)
        .map(|(name, level)| {
            FinalizedFeatureKey::default()
                .with_name(str_bytes(name))
                .with_min_version_level(*level)
                .with_max_version_level(*level)
        })
        .collect();
    ApiVersionsResponse::default()
        .with_error_code(0)
        .with_api_keys(api_keys())
        .with_supported_features(supported)
        .with_finalized_features_epoch(finalized_now.epoch)
        .with_finalized_features(finalized)
}

/// ApiVersions v0 response with UNSUPPORTED_VERSION (35) and the table, for a client asking
/// with a version newer than ours (KIP-511), encoded with its header and size prefix.
pub fn unsupported_version_response(correlation_id: i32) -> Bytes {
    let resp = ApiVersionsResponse::default()
        .with_error_code(ResponseError::UnsupportedVersion.code())
        .with_api_keys(api_keys());
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    buf.put_i32(correlation_id);
    // v0 has no tagged fields: encoding cannot fail for a valid table.
    if resp.encode(&mut buf, 0).is_err() {
        buf.truncate(8);
    }
    let size = (buf.len() - 4) as i32;
    buf[0..4].copy_from_slice(&size.to_be_bytes());
    buf.freeze()
}
