//! ApiVersions (key 18): the table of every API and version range Frieda implements.
//! Unsupported APIs are not advertised.

use super::{str_bytes, RequestContext};
use crate::broker::Broker;
use crate::features::FEATURES;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::Encodable;
use std::sync::Arc;

/// `(api, min, max)` of every implemented API. Ranges are what our handlers serve, within what
/// the `kafka-protocol` crate (Kafka 4.1 schemas) can decode.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 13),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 11),
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
    (ApiKey::OffsetCommit, 2, 10),
    (ApiKey::OffsetFetch, 1, 10),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::DescribeQuorum, 0, 2),
    (ApiKey::UpdateFeatures, 0, 2),
    (ApiKey::DescribeLogDirs, 1, 5),
    (ApiKey::AlterReplicaLogDirs, 1, 2),
    (ApiKey::ListConfigResources, 0, 1),
    (ApiKey::DescribeTopicPartitions, 0, 0),
    (ApiKey::DeleteRecords, 0, 2),
    // security (KIP-43, KIP-152, KIP-368, KIP-554)
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
    // v0 removed in Kafka 4 (KIP-896); without an authorizer: SECURITY_DISABLED, as Kafka
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    // transactions (KIP-98, KIP-664, KIP-890)
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 5),
    (ApiKey::WriteTxnMarkers, 1, 2),
    (ApiKey::TxnOffsetCommit, 0, 5),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 2),
    (ApiKey::DescribeProducers, 0, 0),
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
