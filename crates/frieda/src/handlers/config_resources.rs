//! ListConfigResources (key 74, v0-1; KIP-1142, Kafka 4.1): the resources that have
//! configurations, as `kafka-configs --describe --entity-type ...` without a name and
//! `Admin.listConfigResources` ask. v0 (the former ListClientMetricsResources) lists client
//! metrics resources only; v1 lists the types asked for (all supported ones for an empty list):
//! TOPIC (2) every topic, BROKER (4) and BROKER_LOGGER (8) every registered broker id,
//! CLIENT_METRICS (16) none (Frieda has no client metrics subscriptions), GROUP (32) the groups
//! that have group configs. An unknown type is INVALID_REQUEST for the whole request.

use super::{authorized_cluster, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::security::acl::op;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_config_resources_response::ConfigResource;
use kafka_protocol::messages::{ListConfigResourcesRequest, ListConfigResourcesResponse};
use std::sync::Arc;

/// `ConfigResource.Type` codes (Kafka's `org.apache.kafka.common.config.ConfigResource`).
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const BROKER_LOGGER: i8 = 8;
const CLIENT_METRICS: i8 = 16;
const GROUP: i8 = 32;
/// Listed for an empty `resource_types`.
const SUPPORTED: [i8; 5] = [TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP];

/// Handles one ListConfigResources request (see the module doc).
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ListConfigResourcesRequest,
) -> ListConfigResourcesResponse {
    // Kafka: DESCRIBE_CONFIGS on the cluster.
    if !authorized_cluster(broker, ctx, op::DESCRIBE_CONFIGS) {
        return ListConfigResourcesResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    if ctx.api_version == 0 {
        // Client metrics resources only: none.
        return ListConfigResourcesResponse::default();
    }
    let types: Vec<i8> = if req.resource_types.is_empty() {
        SUPPORTED.to_vec()
    } else {
        req.resource_types
    };
    if let Some(bad) = types.iter().find(|t| !SUPPORTED.contains(t)) {
        tracing::info!(
            resource_type = bad,
            "ListConfigResources: unknown resource type"
        );
        return ListConfigResourcesResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code());
    }
    let image = broker.cluster().map(|n| n.image());
    let topics: Vec<String> = match &image {
        Some(img) => img.topics.keys().cloned().collect(),
        None => broker.topics().iter().map(|t| t.name.to_string()).collect(),
    };
    let brokers: Vec<i32> = match &image {
        Some(img) => img.brokers.keys().copied().collect(),
        None => vec![broker.config.node_id],
    };
    let mut out = Vec::new();
    for t in types {
        let names: Vec<String> = match t {
            TOPIC => topics.clone(),
            BROKER | BROKER_LOGGER => brokers.iter().map(i32::to_string).collect(),
            // The groups that have configs (Kafka also lists every group it coordinates).
            GROUP => broker.group_configs().keys().cloned().collect(),
            _ => Vec::new(),
        };
        out.extend(names.into_iter().map(|n| {
            ConfigResource::default()
                .with_resource_name(str_bytes(&n))
                .with_resource_type(t)
        }));
    }
    ListConfigResourcesResponse::default().with_config_resources(out)
}
