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

/// The advertised ranges: every API of [`APIS`], in its order.
fn api_keys() -> Vec<ApiVersion> {
    APIS.iter()
        .map(|s| {
            ApiVersion::default()
                .with_api_key(s.key as i16)
                .with_min_version(s.advertised_min)
                .with_max_version(s.max)
        })
        .collect()
}

/// Answers with the table and the feature levels ([`FEATURES`] supported, the finalized levels
/// in force with their epoch; v3+ carry them). Levels of 0 are not listed as finalized, as
/// Kafka does not list them.
pub async fn handle(
    broker: &Arc<Broker>,
    _ctx: &RequestContext,
    _req: ApiVersionsRequest,
) -> ApiVersionsResponse {
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
