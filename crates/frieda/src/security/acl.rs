//! ACLs and the authorizer, with the semantics of Kafka's `StandardAuthorizer`
//! (`StandardAuthorizerData`, KIP-290 prefixed patterns):
//!
//! - a super user (`super.users`) may do anything;
//! - the ACLs that apply to a resource are its LITERAL ones, the LITERAL `*` of its type and the
//!   PREFIXED ones whose prefix starts its name; an ACL matches a request when its principal is
//!   the session's or `User:*`, its host is the client's address or `*`, and its operation is the
//!   one asked or ALL (an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, an ALLOW of
//!   ALTER_CONFIGS also allows DESCRIBE_CONFIGS; DENY ACLs imply nothing);
//! - a matching DENY wins over any ALLOW; without a match the request is denied, unless the
//!   resource has no ACL at all and `allow.everyone.if.no.acl.found` is true.
//!
//! Enabled by `authorizer.class.name`; without it every request is allowed and the ACL APIs
//! answer SECURITY_DISABLED, as Kafka does.

use super::principal::Principal;
use super::Session;
pub use frieda_meta::AclEntry;
use parking_lot::RwLock;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The one name of the cluster resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// The LITERAL resource name matching every resource of its type, and the host matching every
/// host.
pub const WILDCARD: &str = "*";
/// The principal matching every principal.
pub const WILDCARD_PRINCIPAL: &str = "User:*";

/// Why the authorizer decided as it did (Kafka's `MatchingRule`; written
/// as Kafka writes it by [`super::audit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// The principal is in `super.users`: allowed.
    SuperUser,
    /// No ACL decided and `allow.everyone.if.no.acl.found` applied: allowed.
    DefaultAllow,
    /// No ACL allowed it: denied.
    DefaultDeny,
    /// This ACL decided (a DENY, or the ALLOW that allowed it).
    MatchingAcl(AclEntry),
}

impl Rule {
    /// Whether the rule allows the operation.
    pub fn allows(&self) -> bool {
        match self {
            Rule::SuperUser | Rule::DefaultAllow => true,
            Rule::DefaultDeny => false,
            Rule::MatchingAcl(a) => a.permission == permission::ALLOW,
        }
    }
}

/// Kafka's `ResourceType` codes.
pub mod resource {
    /// Filter only: any type.
    pub const ANY: i8 = 1;
    /// A topic.
    pub const TOPIC: i8 = 2;
    /// A consumer group.
    pub const GROUP: i8 = 3;
    /// The cluster (`kafka-cluster`).
    pub const CLUSTER: i8 = 4;
    /// A transactional id.
    pub const TRANSACTIONAL_ID: i8 = 5;
    /// A delegation token.
    pub const DELEGATION_TOKEN: i8 = 6;
    /// A user (KIP-373).
    pub const USER: i8 = 7;
    /// Whether `code` names a resource type (not a filter value).
    pub fn is_concrete(code: i8) -> bool {
        (TOPIC..=USER).contains(&code)
    }
}

/// Kafka's `PatternType` codes.
pub mod pattern {
    /// Filter only: any pattern type, names compared exactly.
    pub const ANY: i8 = 1;
    /// Filter only: the patterns that would match the filter's name.
    pub const MATCH: i8 = 2;
    /// The name itself (or `*`).
    pub const LITERAL: i8 = 3;
    /// Every name starting with this one.
    pub const PREFIXED: i8 = 4;
}

/// Kafka's `AclOperation` codes.
pub mod op {
    /// Filter only.
    pub const ANY: i8 = 1;
    /// Every operation.
    pub const ALL: i8 = 2;
    /// Read (fetch, commit offsets, join a group).
    pub const READ: i8 = 3;
    /// Write (produce).
    pub const WRITE: i8 = 4;
    /// Create (topics).
    pub const CREATE: i8 = 5;
    /// Delete (topics, groups, records).
    pub const DELETE: i8 = 6;
    /// Alter (partitions, ACLs, reassignments).
    pub const ALTER: i8 = 7;
    /// Describe.
    pub const DESCRIBE: i8 = 8;
    /// Broker-to-broker actions (replica fetches, transaction markers).
    pub const CLUSTER_ACTION: i8 = 9;
    /// Read configs.
    pub const DESCRIBE_CONFIGS: i8 = 10;
    /// Change configs.
    pub const ALTER_CONFIGS: i8 = 11;
    /// Idempotent produce without a topic WRITE (deprecated in Kafka 3).
    pub const IDEMPOTENT_WRITE: i8 = 12;
    /// Delegation tokens.
    pub const CREATE_TOKENS: i8 = 13;
    /// Delegation tokens.
    pub const DESCRIBE_TOKENS: i8 = 14;
    /// KIP-939.
    pub const TWO_PHASE_COMMIT: i8 = 15;
    /// Whether `code` names an operation an ACL can carry.
    pub fn is_concrete(code: i8) -> bool {
        (ALL..=TWO_PHASE_COMMIT).contains(&code)
    }
}

/// Kafka's `AclPermissionType` codes.
pub mod permission {
    /// Filter only.
    pub const ANY: i8 = 1;
    /// Deny (wins over allow).
    pub const DENY: i8 = 2;
    /// Allow.
    pub const ALLOW: i8 = 3;
}

/// The operations Kafka reports in `authorized_operations` fields, per resource type
/// (`AclEntry.supportedOperations`).
pub fn supported_operations(resource_type: i8) -> &'static [i8] {
    match resource_type {
        resource::TOPIC => &[
            op::READ,
            op::WRITE,
            op::CREATE,
            op::DESCRIBE,
            op::DELETE,
            op::ALTER,
            op::DESCRIBE_CONFIGS,
            op::ALTER_CONFIGS,
        ],
        resource::GROUP => &[
            op::READ,
            op::DESCRIBE,
            op::DELETE,
            op::DESCRIBE_CONFIGS,
            op::ALTER_CONFIGS,
        ],
        resource::CLUSTER => &[
            op::CREATE,
            op::CLUSTER_ACTION,
            op::DESCRIBE_CONFIGS,
            op::ALTER_CONFIGS,
            op::IDEMPOTENT_WRITE,
            op::ALTER,
            op::DESCRIBE,
        ],
        resource::TRANSACTIONAL_ID => &[op::DESCRIBE, op::WRITE, op::TWO_PHASE_COMMIT],
        resource::DELEGATION_TOKEN => &[op::DESCRIBE],
        resource::USER => &[op::CREATE_TOKENS, op::DESCRIBE_TOKENS],
        _ => &[],
    }
}

/// A DescribeAcls / DeleteAcls filter (Kafka's `AclBindingFilter`): codes ANY match anything,
/// `None` strings match anything.
#[derive(Debug, Clone)]
pub struct AclFilter {
    /// Resource type or ANY.
    pub resource_type: i8,
    /// Resource name, or any.
    pub resource_name: Option<String>,
    /// LITERAL, PREFIXED, ANY or MATCH.
    pub pattern_type: i8,
    /// Principal, or any.
    pub principal: Option<String>,
    /// Host, or any.
    pub host: Option<String>,
    /// Operation or ANY.
    pub operation: i8,
    /// Permission or ANY.
    pub permission: i8,
}

impl AclFilter {
    /// Whether the filter has fields Kafka cannot interpret (UNKNOWN codes): such a filter is
    /// refused with INVALID_REQUEST.
    pub fn validate(&self) -> Result<(), String> {
        if !(resource::ANY..=resource::USER).contains(&self.resource_type) {
            return Err("Unknown patternFilter.".into());
        }
        if !(pattern::ANY..=pattern::PREFIXED).contains(&self.pattern_type) {
            return Err("Unknown patternFilter.".into());
        }
        if !(op::ANY..=op::TWO_PHASE_COMMIT).contains(&self.operation)
            || !(permission::ANY..=permission::ALLOW).contains(&self.permission)
        {
            return Err("Unknown entryFilter.".into());
        }
        Ok(())
    }

    /// Whether `acl` passes the filter (Kafka's `AclBindingFilter.matches`).
    pub fn matches(&self, acl: &AclEntry) -> bool {
        if self.resource_type != resource::ANY && self.resource_type != acl.resource_type {
            return false;
        }
        let pt = self.pattern_type;
        if pt != pattern::ANY && pt != pattern::MATCH && pt != acl.pattern_type {
            return false;
        }
        if let Some(name) = &self.resource_name {
            let ok = if pt == pattern::ANY || pt == acl.pattern_type {
                *name == acl.resource_name
            } else if acl.pattern_type == pattern::LITERAL {
                *name == acl.resource_name || acl.resource_name == WILDCARD
            } else {
                name.starts_with(&acl.resource_name)
            };
            if !ok {
                return false;
            }
        }
        self.principal.as_ref().is_none_or(|p| *p == acl.principal)
            && self.host.as_ref().is_none_or(|h| *h == acl.host)
            && (self.operation == op::ANY || self.operation == acl.operation)
            && (self.permission == permission::ANY || self.permission == acl.permission)
    }
}

/// Checks a new binding as Kafka's `AclControlManager.validateNewAcl` and `AclApis` do;
/// `cidr_supported`: the finalized metadata.version is 4.4-IV1 (32) or later.
///
/// Errors: see [`AclRefusal`].
pub fn validate_new(acl: &AclEntry, cidr_supported: bool) -> Result<(), AclRefusal> {
    validate_fields(acl).map_err(AclRefusal::Invalid)?;
    validate_host(&acl.host, cidr_supported)
}

/// Why a new ACL is refused: INVALID_REQUEST (42) or UNSUPPORTED_VERSION (35), with Kafka's
/// message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AclRefusal {
    /// INVALID_REQUEST.
    Invalid(String),
    /// UNSUPPORTED_VERSION: a CIDR host before metadata.version 4.4-IV1.
    Unsupported(String),
}

impl AclRefusal {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            AclRefusal::Invalid(m) | AclRefusal::Unsupported(m) => m,
        }
    }
}

/// Kafka's `AclControlManager.validateHostPattern`: not empty; `*`, an address, or (with
/// `cidr_supported`, metadata.version 4.4-IV1 or later) a CIDR range.
fn validate_host(host: &str, cidr_supported: bool) -> Result<(), AclRefusal> {
    if host.is_empty() {
        return Err(AclRefusal::Invalid(
            "Host pattern cannot be null or empty".into(),
        ));
    }
    if host == WILDCARD || !host.contains('/') {
        return Ok(());
    }
    if !cidr_supported {
        return Err(AclRefusal::Unsupported(
            "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher.".into(),
        ));
    }
    host.parse::<ipnet::IpNet>()
        .map(|_| ())
        .map_err(|e| AclRefusal::Invalid(format!("Invalid CIDR notation '{host}': {e}")))
}

/// The checks of Kafka's `AclControlManager.validateNewAcl` before the host's.
fn validate_fields(acl: &AclEntry) -> Result<(), String> {
    if !resource::is_concrete(acl.resource_type) {
        return Err(format!("Invalid resourceType {}", acl.resource_type));
    }
    if acl.pattern_type != pattern::LITERAL && acl.pattern_type != pattern::PREFIXED {
        return Err(format!("Invalid patternType {}", acl.pattern_type));
    }
    if !op::is_concrete(acl.operation) {
        return Err(format!("Invalid operation {}", acl.operation));
    }
    if acl.permission != permission::ALLOW && acl.permission != permission::DENY {
        return Err(format!("Invalid permissionType {}", acl.permission));
    }
    if acl.resource_name.is_empty() {
        return Err("Invalid empty resource name".into());
    }
    if acl.resource_type == resource::CLUSTER && acl.resource_name != CLUSTER_NAME {
        return Err(format!(
            "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        ));
    }
    if Principal::parse(&acl.principal).is_none() {
        return Err(format!(
            "Could not parse principal from `{}` (no colon is present separating the principal type from the principal name)",
            acl.principal
        ));
    }
    Ok(())
}

/// ACLs of one resource type, indexed for `authorize`.
#[derive(Debug, Default)]
struct TypeIndex {
    literal: HashMap<String, Vec<AclEntry>>,
    prefixed: Vec<AclEntry>,
}

/// The ACLs in force, indexed by resource type.
#[derive(Debug, Default)]
struct AclIndex {
    all: BTreeSet<AclEntry>,
    by_type: HashMap<i8, TypeIndex>,
}

impl AclIndex {
    fn new(all: BTreeSet<AclEntry>) -> Self {
        let mut by_type: HashMap<i8, TypeIndex> = HashMap::new();
        for acl in &all {
            let t = by_type.entry(acl.resource_type).or_default();
            if acl.pattern_type == pattern::PREFIXED {
                t.prefixed.push(acl.clone());
            } else {
                t.literal
                    .entry(acl.resource_name.clone())
                    .or_default()
                    .push(acl.clone());
            }
        }
        AclIndex { all, by_type }
    }
}

/// The authorizer: the ACLs in force (replaced whole on every change) and the static settings.
#[derive(Debug)]
pub struct Authorizer {
    acls: RwLock<Arc<AclIndex>>,
    super_users: Vec<Principal>,
    allow_if_no_acl: bool,
}

/// Whether an ACL's host admits a client at `client` (its IP address as text): `*`, the same
/// address, or a CIDR range holding it (Kafka 4.4, metadata.version 4.4-IV1:
/// `StandardAuthorizerData.findResult` with `CidrUtils.isInRange`; the network and broadcast
/// addresses are in the range).
pub fn host_matches(acl_host: &str, client: &str) -> bool {
    acl_host == WILDCARD
        || acl_host == client
        || (acl_host.contains('/')
            && match (
                acl_host.parse::<ipnet::IpNet>(),
                client.parse::<std::net::IpAddr>(),
            ) {
                (Ok(net), Ok(ip)) => net.contains(&ip),
                _ => false,
            })
}

/// Whether an ACL matching the resource decides for `session` and `operation`:
/// `Some(true)` allow, `Some(false)` deny, `None` no opinion (Kafka's `findResult`).
fn verdict(acl: &AclEntry, principal: &str, host: &str, operation: i8) -> Option<bool> {
    if acl.principal != principal && acl.principal != WILDCARD_PRINCIPAL {
        return None;
    }
    if !host_matches(&acl.host, host) {
        return None;
    }
    let allow = acl.permission == permission::ALLOW;
    if acl.operation != op::ALL {
        let applies = if allow {
            match operation {
                op::DESCRIBE => matches!(
                    acl.operation,
                    op::DESCRIBE | op::READ | op::WRITE | op::DELETE | op::ALTER
                ),
                op::DESCRIBE_CONFIGS => {
                    matches!(acl.operation, op::DESCRIBE_CONFIGS | op::ALTER_CONFIGS)
                }
                other => other == acl.operation,
            }
        } else {
            operation == acl.operation
        };
        if !applies {
            return None;
        }
    }
    Some(allow)
}

impl Authorizer {
    /// An authorizer with `acls`.
    pub fn new(
        super_users: Vec<Principal>,
        allow_if_no_acl: bool,
        acls: BTreeSet<AclEntry>,
    ) -> Self {
        Authorizer {
            acls: RwLock::new(Arc::new(AclIndex::new(acls))),
            super_users,
            allow_if_no_acl,
        }
    }

    /// Replaces the ACLs in force.
    pub fn replace(&self, acls: BTreeSet<AclEntry>) {
        if self.acls.read().all != acls {
            *self.acls.write() = Arc::new(AclIndex::new(acls));
        }
    }

    /// Every ACL in force.
    pub fn acls(&self) -> BTreeSet<AclEntry> {
        self.acls.read().all.clone()
    }

    fn is_super(&self, principal: &Principal) -> bool {
        self.super_users.iter().any(|s| s == principal)
    }

    /// Whether `session` may do `operation` on the resource `resource_type`/`name`.
    pub fn authorize(
        &self,
        session: &Session,
        operation: i8,
        resource_type: i8,
        name: &str,
    ) -> bool {
        self.decide(session, operation, resource_type, name)
            .allows()
    }

    /// The rule that decides whether `session` may do `operation` on the resource
    /// `resource_type`/`name` (Kafka's `StandardAuthorizerData.findAclRule`): a matching DENY,
    /// else the first matching ALLOW, else the default.
    pub fn decide(&self, session: &Session, operation: i8, resource_type: i8, name: &str) -> Rule {
        if self.is_super(&session.principal) {
            return Rule::SuperUser;
        }
        let default = |any: bool| {
            if !any && self.allow_if_no_acl {
                Rule::DefaultAllow
            } else {
                Rule::DefaultDeny
            }
        };
        let principal = session.principal.to_string();
        let host = session.client_address.to_string();
        let index = self.acls.read().clone();
        let Some(t) = index.by_type.get(&resource_type) else {
            return default(false);
        };
        let candidates = t
            .literal
            .get(name)
            .into_iter()
            .flatten()
            .chain(
                t.literal
                    .get(WILDCARD)
                    .into_iter()
                    .flatten()
                    .filter(|_| name != WILDCARD),
            )
            .chain(
                t.prefixed
                    .iter()
                    .filter(|a| name.starts_with(&a.resource_name)),
            );
        let mut any = false;
        let mut allowed_by = None;
        for acl in candidates {
            any = true;
            match verdict(acl, &principal, &host, operation) {
                Some(false) => return Rule::MatchingAcl(acl.clone()),
                Some(true) if allowed_by.is_none() => allowed_by = Some(acl),
                _ => {}
            }
        }
        match allowed_by {
            Some(acl) => Rule::MatchingAcl(acl.clone()),
            None => default(any),
        }
    }

    /// Whether `session` may do `operation` on some resource of `resource_type` (Kafka's
    /// `Authorizer.authorizeByResourceType`, used where any one topic's WRITE is enough, e.g.
    /// InitProducerId without a transactional id).
    pub fn authorize_any(&self, session: &Session, operation: i8, resource_type: i8) -> bool {
        // A hard-coded name first, so super users and open resource types pass.
        if self.authorize(session, operation, resource_type, "hardcode") {
            return true;
        }
        let principal = session.principal.to_string();
        let host = session.client_address.to_string();
        let index = self.acls.read().clone();
        let mut deny_literal = BTreeSet::new();
        let mut deny_prefixed = BTreeSet::new();
        let mut allow = Vec::new();
        for acl in index
            .all
            .iter()
            .filter(|a| a.resource_type == resource_type)
        {
            if !host_matches(&acl.host, &host)
                || (acl.principal != principal && acl.principal != WILDCARD_PRINCIPAL)
                || (acl.operation != operation && acl.operation != op::ALL)
            {
                continue;
            }
            let literal = acl.pattern_type == pattern::LITERAL;
            if acl.permission == permission::DENY {
                if literal && acl.resource_name == WILDCARD {
                    return false;
                }
                if literal {
                    deny_literal.insert(acl.resource_name.as_str());
                } else {
                    deny_prefixed.insert(acl.resource_name.as_str());
                }
            } else if acl.permission == permission::ALLOW {
                if literal && acl.resource_name == WILDCARD {
                    return true;
                }
                allow.push((literal, acl.resource_name.as_str()));
            }
        }
        // An allowed pattern counts unless the same literal, or a prefix of it, is denied.
        allow.into_iter().any(|(literal, name)| {
            let literal_denied = literal && deny_literal.contains(name);
            let prefix_denied = (1..=name.len())
                .filter(|&i| name.is_char_boundary(i))
                .any(|i| deny_prefixed.contains(&name[..i]));
            !literal_denied && !prefix_denied
        })
    }

    /// The `authorized_operations` bit field (bit `1 << op`) of a resource for `session`.
    pub fn authorized_operations(&self, session: &Session, resource_type: i8, name: &str) -> i32 {
        supported_operations(resource_type)
            .iter()
            .filter(|&&o| self.authorize(session, o, resource_type, name))
            .fold(0, |bits, &o| bits | (1 << o))
    }
}

/// The `authorized_operations` bit field without an authorizer: every supported operation (as
/// Kafka answers without `authorizer.class.name`).
pub fn all_operations(resource_type: i8) -> i32 {
    supported_operations(resource_type)
        .iter()
        .fold(0, |bits, &o| bits | (1 << o))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::SecurityProtocol;

    fn acl(rt: i8, name: &str, pt: i8, principal: &str, host: &str, o: i8, perm: i8) -> AclEntry {
        AclEntry {
            resource_type: rt,
            resource_name: name.into(),
            pattern_type: pt,
            principal: principal.into(),
            host: host.into(),
            operation: o,
            permission: perm,
        }
    }

    fn session(user: &str) -> Session {
        let mut s = Session::anonymous(
            "SASL".into(),
            SecurityProtocol::SaslPlaintext,
            "10.0.0.1".parse().unwrap(),
        );
        s.principal = Principal::user(user);
        s
    }

    #[test]
    fn standard_authorizer_rules() {
        use op::*;
        use pattern::*;
        use permission::*;
        use resource::*;
        let a = Authorizer::new(
            vec![Principal::user("admin")],
            false,
            [
                acl(TOPIC, "orders", LITERAL, "User:alice", "*", READ, ALLOW),
                acl(TOPIC, "pay-", PREFIXED, "User:alice", "*", WRITE, ALLOW),
                acl(TOPIC, "pay-secret", LITERAL, "User:alice", "*", WRITE, DENY),
                acl(TOPIC, "*", LITERAL, "User:*", "10.0.0.1", DESCRIBE, ALLOW),
                acl(GROUP, "g", LITERAL, "User:bob", "*", ALL, ALLOW),
                acl(TOPIC, "denied", LITERAL, "User:*", "*", READ, DENY),
                acl(TOPIC, "denied", LITERAL, "User:alice", "*", ALL, ALLOW),
            ]
            .into(),
        );
        let alice = session("alice");
        let bob = session("bob");
        assert!(a.authorize(&alice, READ, TOPIC, "orders"));
        assert!(!a.authorize(&alice, WRITE, TOPIC, "orders"));
        assert!(a.authorize(&alice, WRITE, TOPIC, "pay-1"));
        assert!(
            a.authorize(&alice, DESCRIBE, TOPIC, "pay-1"),
            "WRITE implies DESCRIBE"
        );
        assert!(
            !a.authorize(&alice, WRITE, TOPIC, "pay-secret"),
            "DENY wins"
        );
        assert!(
            a.authorize(&bob, DESCRIBE, TOPIC, "anything"),
            "wildcard resource and principal"
        );
        assert!(!a.authorize(&bob, READ, TOPIC, "anything"));
        assert!(a.authorize(&bob, READ, GROUP, "g"));
        assert!(!a.authorize(&alice, READ, GROUP, "g"));
        assert!(
            !a.authorize(&alice, READ, TOPIC, "denied"),
            "DENY READ for everyone wins"
        );
        assert!(
            a.authorize(&alice, DESCRIBE, TOPIC, "denied"),
            "DENY READ does not deny DESCRIBE"
        );
        assert!(
            !a.authorize(&alice, READ, TRANSACTIONAL_ID, "t"),
            "no ACL: denied by default"
        );
        assert!(
            a.authorize(&session("admin"), DELETE, CLUSTER, CLUSTER_NAME),
            "super user"
        );
        let open = Authorizer::new(vec![], true, BTreeSet::new());
        assert!(
            open.authorize(&alice, READ, TOPIC, "x"),
            "allow.everyone.if.no.acl.found"
        );
        assert!(a.authorize_any(&alice, WRITE, TOPIC));
        assert!(!a.authorize_any(&bob, WRITE, TOPIC));
        let bits = a.authorized_operations(&alice, TOPIC, "orders");
        assert_eq!(bits, (1 << READ) | (1 << DESCRIBE));
    }

    #[test]
    fn filters_and_validation_as_kafka() {
        use pattern::*;
        let prefixed = acl(
            resource::TOPIC,
            "pay-",
            PREFIXED,
            "User:a",
            "*",
            op::WRITE,
            permission::ALLOW,
        );
        let literal = acl(
            resource::TOPIC,
            "*",
            LITERAL,
            "User:a",
            "*",
            op::WRITE,
            permission::ALLOW,
        );
        let f = |pt, name: Option<&str>| AclFilter {
            resource_type: resource::ANY,
            resource_name: name.map(str::to_string),
            pattern_type: pt,
            principal: None,
            host: None,
            operation: op::ANY,
            permission: permission::ANY,
        };
        assert!(f(MATCH, Some("pay-1")).matches(&prefixed));
        assert!(f(MATCH, Some("pay-1")).matches(&literal));
        assert!(!f(ANY, Some("pay-1")).matches(&prefixed));
        assert!(f(ANY, Some("pay-")).matches(&prefixed));
        assert!(!f(LITERAL, None).matches(&prefixed));
        assert!(validate_new(&prefixed, false).is_ok());
        let mut bad = prefixed.clone();
        bad.resource_type = resource::CLUSTER;
        assert!(validate_new(&bad, true)
            .unwrap_err()
            .message()
            .contains("kafka-cluster"));
        bad = prefixed.clone();
        bad.principal = "alice".into();
        assert!(validate_new(&bad, true).is_err());
        bad = prefixed;
        bad.operation = op::ANY;
        assert!(validate_new(&bad, true).is_err());
    }

    #[test]
    fn acl_hosts_match_addresses_and_cidr_ranges_as_kafka_44() {
        assert!(host_matches("*", "10.1.2.3"));
        assert!(host_matches("10.1.2.3", "10.1.2.3"));
        assert!(!host_matches("10.1.2.4", "10.1.2.3"));
        assert!(host_matches("10.0.0.0/8", "10.1.2.3"));
        // Host bits set, network and broadcast addresses: in range (commons-net SubnetUtils
        // with an inclusive host count).
        assert!(host_matches("10.9.9.9/8", "10.1.2.3"));
        assert!(host_matches("10.0.0.0/8", "10.0.0.0"));
        assert!(host_matches("10.0.0.0/8", "10.255.255.255"));
        assert!(!host_matches("10.0.0.0/8", "11.0.0.0"));
        assert!(host_matches("0.0.0.0/0", "192.168.1.1"));
        assert!(host_matches("::1/128", "::1"));
        assert!(!host_matches("::1/128", "127.0.0.1"));
        assert!(host_matches("fd00::/8", "fd12::5"));
    }

    #[test]
    fn cidr_hosts_need_metadata_version_4_4_iv1_and_a_valid_range() {
        assert_eq!(
            validate_host("10.0.0.0/8", false),
            Err(AclRefusal::Unsupported(
                "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher.".into()
            ))
        );
        assert_eq!(validate_host("10.0.0.0/8", true), Ok(()));
        assert_eq!(validate_host("*", false), Ok(()));
        assert_eq!(validate_host("10.0.0.1", false), Ok(()));
        for bad in ["10.0.0.0/33", "10.0.0/8", "host/8", "::1/129"] {
            match validate_host(bad, true) {
                Err(AclRefusal::Invalid(m)) => {
                    assert!(
                        m.starts_with(&format!("Invalid CIDR notation '{bad}'")),
                        "{m}"
                    )
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(matches!(
            validate_host("", true),
            Err(AclRefusal::Invalid(_))
        ));
    }
}
