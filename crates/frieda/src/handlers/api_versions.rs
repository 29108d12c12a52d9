//! ApiVersions (key 18): the table of every API and version range Frieda implements.
//! Unsupported APIs are not advertised.

use super::RequestContext;
use crate::broker::Broker;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::Encodable;
use std::sync::Arc;

/// `(api, min, max)` of every implemented API. Ranges are what our handlers serve, within what
/// the `kafka-protocol` crate (Kafka 4.1 schemas) can decode.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 13),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeCluster, 0, 2),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::DescribeQuorum, 0, 2),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::DescribeTopicPartitions, 0, 0),
    // without an authorizer: SECURITY_DISABLED, as Kafka (v0 removed in Kafka 4, KIP-896)
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
];

/// Produce is advertised from v0 although v0-2 are refused, as Kafka 4 does: librdkafka
/// before 2.10 only enables message format v2 when the advertised range starts at 0
/// (KAFKA-18659).
const PRODUCE_ADVERTISED_MIN: i16 = 0;

/// The API with this key, if Frieda implements it.
pub fn supported_key(key: i16) -> Option<ApiKey> {
    let api = ApiKey::try_from(key).ok()?;
    SUPPORTED.iter().any(|(k, _, _)| *k == api).then_some(api)
}

/// Whether the version of an implemented API is served.
pub fn version_supported(api: ApiKey, version: i16) -> bool {
    SUPPORTED
        .iter()
        .any(|(k, min, max)| *k == api && (*min..=*max).contains(&version))
}

fn api_keys() -> Vec<ApiVersion> {
    SUPPORTED
        .iter()
        .map(|(k, min, max)| {
            ApiVersion::default()
                .with_api_key(*k as i16)
                .with_min_version(if *k == ApiKey::Produce {
                    PRODUCE_ADVERTISED_MIN
                } else {
                    *min
                })
                .with_max_version(*max)
        })
        .collect()
}

/// Answers with the table (and no features: a single broker has no finalized features).
pub async fn handle(
    _broker: &Arc<Broker>,
    _ctx: &RequestContext,
    _req: ApiVersionsRequest,
) -> ApiVersionsResponse {
    ApiVersionsResponse::default()
        .with_error_code(0)
        .with_api_keys(api_keys())
        .with_finalized_features_epoch(-1)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_within_the_crate_ranges() {
        for (k, min, max) in SUPPORTED {
            let r = k.valid_versions();
            assert!(
                *min >= r.min && *max <= r.max,
                "{k:?} {min}..{max} outside {r}"
            );
        }
    }

    #[test]
    fn lookups() {
        assert_eq!(supported_key(0), Some(ApiKey::Produce));
        assert_eq!(supported_key(9999), None);
        assert!(version_supported(ApiKey::Produce, 9));
        assert!(!version_supported(ApiKey::Produce, 2));
        assert!(!version_supported(ApiKey::ApiVersions, 99));
    }
}
