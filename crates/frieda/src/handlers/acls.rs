//! DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31), v1-3, answered as an Apache
//! Kafka broker without an authorizer (`authorizer.class.name` unset) answers them: every request
//! gets SECURITY_DISABLED (54) — DescribeAcls as the top-level error, CreateAcls once per
//! creation, DeleteAcls once per filter, with Kafka 4.3.1's messages (checked with `kafka-acls`
//! against a Kafka 4.3.1 broker: "No Authorizer is configured on the broker" for describe and
//! create, "No Authorizer is configured." for delete). So
//! `kafka-acls --list/--add/--remove` fail with Kafka's own SecurityDisabledException message
//! rather than an unsupported-API error. Nothing is stored. The security issue replaces this with
//! an authorizer (KIP-11 ACLs, StandardAuthorizer semantics).

use super::{str_bytes, RequestContext};
use crate::broker::Broker;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use std::sync::Arc;

/// Kafka 4.3.1's SECURITY_DISABLED message for DescribeAcls and CreateAcls.
pub const NO_AUTHORIZER_ON_BROKER: &str = "No Authorizer is configured on the broker";
/// Kafka 4.3.1's SECURITY_DISABLED message for DeleteAcls.
pub const NO_AUTHORIZER: &str = "No Authorizer is configured.";

fn disabled() -> i16 {
    ResponseError::SecurityDisabled.code()
}

/// DescribeAcls: SECURITY_DISABLED, no resources.
pub async fn describe(
    _broker: &Arc<Broker>,
    ctx: &RequestContext,
    _req: DescribeAclsRequest,
) -> DescribeAclsResponse {
    tracing::debug!(peer = %ctx.peer, "DescribeAcls without an authorizer: SECURITY_DISABLED");
    DescribeAclsResponse::default()
        .with_error_code(disabled())
        .with_error_message(Some(str_bytes(NO_AUTHORIZER_ON_BROKER)))
}

/// CreateAcls: SECURITY_DISABLED for each creation, in request order.
pub async fn create(
    _broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: CreateAclsRequest,
) -> CreateAclsResponse {
    tracing::info!(peer = %ctx.peer, creations = req.creations.len(),
        "CreateAcls refused: no authorizer is configured (SECURITY_DISABLED)");
    let results = req
        .creations
        .iter()
        .map(|_| {
            AclCreationResult::default()
                .with_error_code(disabled())
                .with_error_message(Some(str_bytes(NO_AUTHORIZER_ON_BROKER)))
        })
        .collect();
    CreateAclsResponse::default().with_results(results)
}

/// DeleteAcls: SECURITY_DISABLED for each filter, nothing matched.
pub async fn delete(
    _broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DeleteAclsRequest,
) -> DeleteAclsResponse {
    tracing::info!(peer = %ctx.peer, filters = req.filters.len(),
        "DeleteAcls refused: no authorizer is configured (SECURITY_DISABLED)");
    let results = req
        .filters
        .iter()
        .map(|_| {
            DeleteAclsFilterResult::default()
                .with_error_code(disabled())
                .with_error_message(Some(str_bytes(NO_AUTHORIZER)))
        })
        .collect();
    DeleteAclsResponse::default().with_filter_results(results)
}
