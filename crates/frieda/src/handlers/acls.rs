//! DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31), v1-3 (KIP-11, KIP-290).
//!
//! With an authorizer (`authorizer.class.name`), as Kafka's `AclApis` and `AclControlManager`:
//! DescribeAcls needs DESCRIBE on the cluster, Create/DeleteAcls ALTER
//! (CLUSTER_AUTHORIZATION_FAILED); a creation Kafka would refuse (an ANY or unknown code, an
//! empty name, a cluster resource not named `kafka-cluster`, a principal without a type) gets
//! INVALID_REQUEST with Kafka's message; the accepted ones are persisted together (single
//! broker: `meta/security.json`; cluster: the metadata quorum) before the answer. DeleteAcls
//! answers each filter with the bindings it matched and removed.
//!
//! Without an authorizer they are answered as an Apache Kafka broker without one answers them:
//! SECURITY_DISABLED (54) — DescribeAcls as the top-level error, CreateAcls once per creation,
//! DeleteAcls once per filter, with Kafka 4.3.1's messages (checked with `kafka-acls` against a
//! Kafka 4.3.1 broker: "No Authorizer is configured on the broker" for describe and create, "No
//! Authorizer is configured." for delete). Nothing is stored then.

use super::{str_bytes, RequestContext};
use crate::broker::Broker;
use crate::security::acl::{self, op, AclEntry, AclFilter};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Kafka 4.3.1's SECURITY_DISABLED message for DescribeAcls and CreateAcls.
pub const NO_AUTHORIZER_ON_BROKER: &str = "No Authorizer is configured on the broker";
/// Kafka 4.3.1's SECURITY_DISABLED message for DeleteAcls.
pub const NO_AUTHORIZER: &str = "No Authorizer is configured.";

fn disabled() -> i16 {
    ResponseError::SecurityDisabled.code()
}

/// Kafka's message for a request the cluster resource does not authorize.
const CLUSTER_DENIED: &str = "Cluster authorization failed.";

fn filter(
    resource_type: i8,
    name: Option<&str>,
    pattern_type: i8,
    principal: Option<&str>,
    host: Option<&str>,
    operation: i8,
    permission: i8,
) -> AclFilter {
    AclFilter {
        resource_type,
        resource_name: name.map(str::to_string),
        pattern_type,
        principal: principal.map(str::to_string),
        host: host.map(str::to_string),
        operation,
        permission,
    }
}

/// DescribeAcls: the bindings matching the filter, grouped by resource pattern.
pub async fn describe(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeAclsRequest,
) -> DescribeAclsResponse {
    let Some(authorizer) = &broker.security.authorizer else {
        return describe_disabled(ctx);
    };
    if !crate::handlers::authorized_cluster(broker, ctx, op::DESCRIBE) {
        return DescribeAclsResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
            .with_error_message(Some(str_bytes(CLUSTER_DENIED)));
    }
    let f = filter(
        req.resource_type_filter,
        req.resource_name_filter.as_deref(),
        req.pattern_type_filter,
        req.principal_filter.as_deref(),
        req.host_filter.as_deref(),
        req.operation,
        req.permission_type,
    );
    if let Err(m) = f.validate() {
        return DescribeAclsResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code())
            .with_error_message(Some(str_bytes(&m)));
    }
    let mut by_resource: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
    for a in authorizer.acls().iter().filter(|a| f.matches(a)) {
        by_resource
            .entry((a.resource_type, a.resource_name.clone(), a.pattern_type))
            .or_default()
            .push(
                AclDescription::default()
                    .with_principal(str_bytes(&a.principal))
                    .with_host(str_bytes(&a.host))
                    .with_operation(a.operation)
                    .with_permission_type(a.permission),
            );
    }
    DescribeAclsResponse::default().with_resources(
        by_resource
            .into_iter()
            .map(|((t, name, p), acls)| {
                DescribeAclsResource::default()
                    .with_resource_type(t)
                    .with_resource_name(str_bytes(&name))
                    .with_pattern_type(p)
                    .with_acls(acls)
            })
            .collect(),
    )
}

fn describe_disabled(ctx: &RequestContext) -> DescribeAclsResponse {
    tracing::debug!(peer = %ctx.peer, "DescribeAcls without an authorizer: SECURITY_DISABLED");
    DescribeAclsResponse::default()
        .with_error_code(disabled())
        .with_error_message(Some(str_bytes(NO_AUTHORIZER_ON_BROKER)))
}

/// CreateAcls: each creation validated, the valid ones persisted together; one result per
/// creation in request order.
pub async fn create(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: CreateAclsRequest,
) -> CreateAclsResponse {
    if broker.security.authorizer.is_none() {
        return create_disabled(ctx, req);
    }
    let fail = |code: ResponseError, m: &str| {
        AclCreationResult::default()
            .with_error_code(code.code())
            .with_error_message(Some(str_bytes(m)))
    };
    if !crate::handlers::authorized_cluster(broker, ctx, op::ALTER) {
        return CreateAclsResponse::default().with_results(
            req.creations
                .iter()
                .map(|_| fail(ResponseError::ClusterAuthorizationFailed, CLUSTER_DENIED))
                .collect(),
        );
    }
    let cidr_supported = broker
        .features
        .get()
        .level(crate::features::METADATA_VERSION)
        >= crate::features::METADATA_VERSION_CIDR_ACLS;
    let entries: Vec<Result<AclEntry, acl::AclRefusal>> = req
        .creations
        .iter()
        .map(|c| {
            let e = AclEntry {
                resource_type: c.resource_type,
                resource_name: c.resource_name.to_string(),
                pattern_type: c.resource_pattern_type,
                principal: c.principal.to_string(),
                host: c.host.to_string(),
                operation: c.operation,
                permission: c.permission_type,
            };
            acl::validate_new(&e, cidr_supported).map(|()| e)
        })
        .collect();
    let valid: Vec<AclEntry> = entries
        .iter()
        .filter_map(|e| e.as_ref().ok().cloned())
        .collect();
    let stored = if valid.is_empty() {
        Ok(())
    } else {
        broker
            .alter_security(frieda_meta::MetaCommand::AlterAcls {
                create: valid.clone(),
                delete: Vec::new(),
            })
            .await
    };
    if stored.is_ok() && !valid.is_empty() {
        crate::security::audit::acl_change(&ctx.session.principal.to_string(), true, &valid);
    }
    let results = entries
        .iter()
        .map(|e| match (e, &stored) {
            (Err(acl::AclRefusal::Invalid(m)), _) => fail(ResponseError::InvalidRequest, m),
            (Err(acl::AclRefusal::Unsupported(m)), _) => fail(ResponseError::UnsupportedVersion, m),
            (Ok(_), Err(err)) => fail(err.code, &err.message),
            (Ok(_), Ok(())) => AclCreationResult::default(),
        })
        .collect();
    CreateAclsResponse::default().with_results(results)
}

fn create_disabled(ctx: &RequestContext, req: CreateAclsRequest) -> CreateAclsResponse {
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

/// DeleteAcls: for each filter, the bindings it matches are removed (all filters' matches in
/// one persisted change) and listed.
pub async fn delete(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DeleteAclsRequest,
) -> DeleteAclsResponse {
    let Some(authorizer) = &broker.security.authorizer else {
        return delete_disabled(ctx, req);
    };
    let fail = |code: ResponseError, m: &str| {
        DeleteAclsFilterResult::default()
            .with_error_code(code.code())
            .with_error_message(Some(str_bytes(m)))
    };
    if !crate::handlers::authorized_cluster(broker, ctx, op::ALTER) {
        return DeleteAclsResponse::default().with_filter_results(
            req.filters
                .iter()
                .map(|_| fail(ResponseError::ClusterAuthorizationFailed, CLUSTER_DENIED))
                .collect(),
        );
    }
    let current = authorizer.acls();
    let matched: Vec<Result<Vec<AclEntry>, String>> = req
        .filters
        .iter()
        .map(|d| {
            let f = filter(
                d.resource_type_filter,
                d.resource_name_filter.as_deref(),
                d.pattern_type_filter,
                d.principal_filter.as_deref(),
                d.host_filter.as_deref(),
                d.operation,
                d.permission_type,
            );
            f.validate()?;
            Ok(current.iter().filter(|a| f.matches(a)).cloned().collect())
        })
        .collect();
    let mut doomed: Vec<AclEntry> = matched.iter().flatten().flatten().cloned().collect();
    doomed.sort();
    doomed.dedup();
    let removed = if doomed.is_empty() {
        Ok(())
    } else {
        broker
            .alter_security(frieda_meta::MetaCommand::AlterAcls {
                create: Vec::new(),
                delete: doomed.clone(),
            })
            .await
    };
    if removed.is_ok() && !doomed.is_empty() {
        crate::security::audit::acl_change(&ctx.session.principal.to_string(), false, &doomed);
    }
    let results = matched
        .into_iter()
        .map(|m| match (m, &removed) {
            (Err(msg), _) => fail(ResponseError::InvalidRequest, &msg),
            (Ok(_), Err(e)) => fail(e.code, &e.message),
            (Ok(acls), Ok(())) => DeleteAclsFilterResult::default().with_matching_acls(
                acls.iter()
                    .map(|a| {
                        DeleteAclsMatchingAcl::default()
                            .with_resource_type(a.resource_type)
                            .with_resource_name(str_bytes(&a.resource_name))
                            .with_pattern_type(a.pattern_type)
                            .with_principal(str_bytes(&a.principal))
                            .with_host(str_bytes(&a.host))
                            .with_operation(a.operation)
                            .with_permission_type(a.permission)
                    })
                    .collect(),
            ),
        })
        .collect();
    DeleteAclsResponse::default().with_filter_results(results)
}

fn delete_disabled(ctx: &RequestContext, req: DeleteAclsRequest) -> DeleteAclsResponse {
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
