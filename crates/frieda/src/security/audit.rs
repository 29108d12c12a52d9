//! The authorizer's audit log in Kafka's words (`StandardAuthorizerData.buildAuditMessage`,
//! Kafka 4.4), so what operators grep for and alert on carries over:
//!
//! `Principal = User:alice is Denied operation = WRITE from host = 127.0.0.1 on resource =
//! Topic:LITERAL:orders for request = Produce with resourceRefCount = 1 based on rule DefaultDeny`
//!
//! A denied request for a resource it names is logged at INFO, an allowed one at DEBUG; checks
//! that only filter (authorized-operations fields, all-topics listings) at TRACE. All under the
//! target `kafka.authorizer.logger` (Kafka's logger name), so `RUST_LOG` can route it.
//! ACL changes are logged in Kafka's words too ([`acl_change`]).

use super::acl::{op, pattern, permission, resource, AclEntry, Rule};

/// The `tracing` target of audit lines: Kafka's audit logger name.
pub const TARGET: &str = "kafka.authorizer.logger";

/// Kafka's `SecurityUtils.resourceTypeName`: `Topic`, `Group`, `Cluster`, `TransactionalId`,
/// `DelegationToken`, `User`.
pub fn resource_type_name(t: i8) -> &'static str {
    match t {
        resource::TOPIC => "Topic",
        resource::GROUP => "Group",
        resource::CLUSTER => "Cluster",
        resource::TRANSACTIONAL_ID => "TransactionalId",
        resource::DELEGATION_TOKEN => "DelegationToken",
        resource::USER => "User",
        resource::ANY => "Any",
        _ => "Unknown",
    }
}

/// Kafka's `ResourceType` enum name (`TOPIC`, ...).
pub fn resource_type_enum(t: i8) -> &'static str {
    match t {
        resource::TOPIC => "TOPIC",
        resource::GROUP => "GROUP",
        resource::CLUSTER => "CLUSTER",
        resource::TRANSACTIONAL_ID => "TRANSACTIONAL_ID",
        resource::DELEGATION_TOKEN => "DELEGATION_TOKEN",
        resource::USER => "USER",
        resource::ANY => "ANY",
        _ => "UNKNOWN",
    }
}

/// Kafka's `AclOperation` enum name (`READ`, `WRITE`, ...).
pub fn operation_enum(o: i8) -> &'static str {
    match o {
        op::ANY => "ANY",
        op::ALL => "ALL",
        op::READ => "READ",
        op::WRITE => "WRITE",
        op::CREATE => "CREATE",
        op::DELETE => "DELETE",
        op::ALTER => "ALTER",
        op::DESCRIBE => "DESCRIBE",
        op::CLUSTER_ACTION => "CLUSTER_ACTION",
        op::DESCRIBE_CONFIGS => "DESCRIBE_CONFIGS",
        op::ALTER_CONFIGS => "ALTER_CONFIGS",
        op::IDEMPOTENT_WRITE => "IDEMPOTENT_WRITE",
        op::CREATE_TOKENS => "CREATE_TOKENS",
        op::DESCRIBE_TOKENS => "DESCRIBE_TOKENS",
        op::TWO_PHASE_COMMIT => "TWO_PHASE_COMMIT",
        _ => "UNKNOWN",
    }
}

/// Kafka's `PatternType` enum name (`LITERAL`, `PREFIXED`, ...).
pub fn pattern_enum(p: i8) -> &'static str {
    match p {
        pattern::ANY => "ANY",
        pattern::MATCH => "MATCH",
        pattern::LITERAL => "LITERAL",
        pattern::PREFIXED => "PREFIXED",
        _ => "UNKNOWN",
    }
}

/// Kafka's `AclPermissionType` enum name (`ALLOW`, `DENY`).
pub fn permission_enum(p: i8) -> &'static str {
    match p {
        permission::ANY => "ANY",
        permission::DENY => "DENY",
        permission::ALLOW => "ALLOW",
        _ => "UNKNOWN",
    }
}

/// An ACL as Kafka's `StandardAcl.toString` writes it.
pub fn standard_acl(a: &AclEntry) -> String {
    format!(
        "StandardAcl(resourceType={}, resourceName={}, patternType={}, principal={}, host={}, operation={}, permissionType={})",
        resource_type_enum(a.resource_type),
        a.resource_name,
        pattern_enum(a.pattern_type),
        a.principal,
        a.host,
        operation_enum(a.operation),
        permission_enum(a.permission)
    )
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rule::SuperUser => f.write_str("SuperUser"),
            Rule::DefaultAllow => f.write_str("DefaultAllow"),
            Rule::DefaultDeny => f.write_str("DefaultDeny"),
            Rule::MatchingAcl(a) => write!(f, "MatchingAcl(acl={})", standard_acl(a)),
        }
    }
}

/// One decision, as Kafka's audit line describes it.
#[derive(Debug)]
pub struct Decision<'a> {
    /// `User:alice`.
    pub principal: &'a str,
    /// The client's address.
    pub host: &'a str,
    /// The operation asked (code).
    pub operation: i8,
    /// The resource type (code) and its literal name.
    pub resource_type: i8,
    /// The resource's name.
    pub resource_name: &'a str,
    /// Kafka's API name of the request (`Produce`), or what asked (`Controller`).
    pub request: &'a str,
    /// The rule that decided.
    pub rule: &'a Rule,
}

impl std::fmt::Display for Decision<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Principal = {} is {} operation = {} from host = {} on resource = {}:LITERAL:{} for request = {} with resourceRefCount = 1 based on rule {}",
            self.principal,
            if self.rule.allows() { "Allowed" } else { "Denied" },
            operation_enum(self.operation),
            self.host,
            resource_type_name(self.resource_type),
            self.resource_name,
            self.request,
            self.rule
        )
    }
}

/// Logs a decision under [`TARGET`]: a denial at INFO when `log_if_denied` (the request named
/// the resource), an allowance at DEBUG; filters (not `log_if_denied`) at TRACE.
pub fn log(d: &Decision<'_>, log_if_denied: bool) {
    if d.rule.allows() {
        tracing::debug!(target: TARGET, "{d}");
    } else if log_if_denied {
        tracing::info!(target: TARGET, "{d}");
    } else {
        tracing::trace!(target: TARGET, "{d}");
    }
}

/// Logs ACLs added or removed by `principal`, one INFO line each, as Kafka's `AclControlManager`
/// and `kafka-acls` name them (`Added ACL StandardAcl(...)` / `Removed ACL StandardAcl(...)`).
pub fn acl_change(principal: &str, added: bool, acls: &[AclEntry]) {
    for a in acls {
        tracing::info!(
            target: TARGET,
            "{} ACL {} (by {principal})",
            if added { "Added" } else { "Removed" },
            standard_acl(a)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_kafkas() {
        let rule = Rule::DefaultDeny;
        let d = Decision {
            principal: "User:alice",
            host: "127.0.0.1",
            operation: op::WRITE,
            resource_type: resource::TOPIC,
            resource_name: "orders",
            request: "Produce",
            rule: &rule,
        };
        assert_eq!(
            d.to_string(),
            "Principal = User:alice is Denied operation = WRITE from host = 127.0.0.1 on resource = Topic:LITERAL:orders for request = Produce with resourceRefCount = 1 based on rule DefaultDeny"
        );
        let acl = AclEntry {
            resource_type: resource::TOPIC,
            resource_name: "ord".into(),
            pattern_type: pattern::PREFIXED,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: op::READ,
            permission: permission::ALLOW,
        };
        assert_eq!(
            Rule::MatchingAcl(acl).to_string(),
            "MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName=ord, patternType=PREFIXED, principal=User:alice, host=*, operation=READ, permissionType=ALLOW))"
        );
    }
}
