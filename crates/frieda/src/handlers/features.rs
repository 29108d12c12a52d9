//! UpdateFeatures (key 57, v0-2, KIP-584/KIP-778): `kafka-features upgrade/downgrade/disable`
//! change the finalized feature levels ApiVersions reports. The rules and the levels live in
//! [`crate::features`]; persistence in [`crate::broker::features_admin`].

use super::{authorized_cluster, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::features::upgrade_type;
use crate::security::acl::op;
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use kafka_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};
use std::sync::Arc;

/// Kafka's message of a per-feature result without error (`ApiError.NONE`'s text).
const NO_ERROR_MESSAGE: &str = "NONE";

/// Answers the whole request with one outcome: top-level error code and message; v0-1 list one
/// result per update when it succeeded (Kafka lists none when it failed), v2 has no results.
///
/// Errors: CLUSTER_AUTHORIZATION_FAILED (31) without ALTER on the cluster;
/// INVALID_UPDATE_VERSION (95) with Kafka's message for a refused update (nothing changes);
/// KAFKA_STORAGE_ERROR (56); REQUEST_TIMED_OUT (7) when the quorum does not commit in time.
/// Any broker answers (a cluster forwards the change to its active controller).
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: UpdateFeaturesRequest,
) -> UpdateFeaturesResponse {
    let v = ctx.api_version;
    // v0 says "allow downgrade" where v1+ name the upgrade type.
    let updates: Vec<(String, i16, i8)> = req
        .feature_updates
        .iter()
        .map(|u| {
            let kind = match (v, u.allow_downgrade) {
                (0, true) => upgrade_type::SAFE_DOWNGRADE,
                (0, false) => upgrade_type::UPGRADE,
                _ => u.upgrade_type,
            };
            (u.feature.to_string(), u.max_version_level, kind)
        })
        .collect();
    // Kafka: ALTER on the cluster.
    let outcome = if !authorized_cluster(broker, ctx, op::ALTER) {
        Err((
            E::ClusterAuthorizationFailed,
            "Cluster authorization failed.".to_string(),
        ))
    } else {
        broker
            .update_features(&updates, req.validate_only)
            .await
            .map_err(|e| (e.code, e.message))
    };
    match outcome {
        Ok(()) => {
            tracing::info!(
                ?updates,
                validate_only = req.validate_only,
                "feature levels updated"
            );
            let results = if v < 2 {
                updates
                    .iter()
                    .map(|(f, _, _)| {
                        UpdatableFeatureResult::default()
                            .with_feature(str_bytes(f))
                            .with_error_message(Some(str_bytes(NO_ERROR_MESSAGE)))
                    })
                    .collect()
            } else {
                Vec::new()
            };
            UpdateFeaturesResponse::default()
                .with_error_message(None)
                .with_results(results)
        }
        Err((code, message)) => {
            tracing::info!(?updates, %message, "feature update refused");
            UpdateFeaturesResponse::default()
                .with_error_code(code.code())
                .with_error_message(Some(str_bytes(&message)))
        }
    }
}
