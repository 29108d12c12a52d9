//! `frieda admin acl ...`: list, add, remove (DescribeAcls, CreateAcls, DeleteAcls; KIP-140),
//! printed as `kafka-acls.sh` prints them.

use anyhow::{anyhow, bail};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};
use kafka_protocol::protocol::StrBytes;

use super::client::{check, error_text, Admin, Node};
use crate::security::acl::{op, pattern, permission, resource};
use crate::security::audit::{operation_enum, pattern_enum, permission_enum, resource_type_enum};

/// The resource an ACL command is about (`--topic`, `--group`, `--cluster`,
/// `--transactional-id`); `None` in a list means every resource.
#[derive(Debug, Clone, Default)]
pub struct Resource {
    /// `--topic NAME`.
    pub topic: Option<String>,
    /// `--group NAME`.
    pub group: Option<String>,
    /// `--cluster`.
    pub cluster: bool,
    /// `--transactional-id ID`.
    pub transactional_id: Option<String>,
    /// `--resource-pattern-type`: `literal` (default for add/remove), `prefixed`, or in filters
    /// `any` and `match`.
    pub pattern_type: Option<String>,
}

impl Resource {
    /// (resource type, name) named, or `None` when no resource is.
    ///
    /// Errors: more than one resource named.
    fn chosen(&self) -> anyhow::Result<Option<(i8, String)>> {
        let mut found = Vec::new();
        if let Some(t) = &self.topic {
            found.push((resource::TOPIC, t.clone()));
        }
        if let Some(g) = &self.group {
            found.push((resource::GROUP, g.clone()));
        }
        if self.cluster {
            found.push((resource::CLUSTER, "kafka-cluster".to_string()));
        }
        if let Some(x) = &self.transactional_id {
            found.push((resource::TRANSACTIONAL_ID, x.clone()));
        }
        if found.len() > 1 {
            bail!("name one resource: --topic, --group, --cluster or --transactional-id");
        }
        Ok(found.pop())
    }

    fn pattern(&self, default: i8) -> anyhow::Result<i8> {
        match self
            .pattern_type
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None => Ok(default),
            Some("literal") => Ok(pattern::LITERAL),
            Some("prefixed") => Ok(pattern::PREFIXED),
            Some("any") => Ok(pattern::ANY),
            Some("match") => Ok(pattern::MATCH),
            Some(other) => {
                bail!("--resource-pattern-type {other}: literal, prefixed, any or match")
            }
        }
    }
}

/// Parses an operation as `kafka-acls --operation` names it (`Read`, `IdempotentWrite`,
/// `DESCRIBE_CONFIGS`, any case).
///
/// Errors: an unknown name.
pub fn parse_operation(name: &str) -> anyhow::Result<i8> {
    let wanted: String = name
        .chars()
        .filter(|c| *c != '_')
        .collect::<String>()
        .to_ascii_uppercase();
    (op::ALL..=op::TWO_PHASE_COMMIT)
        .find(|o| operation_enum(*o).replace('_', "") == wanted)
        .ok_or_else(|| anyhow!("--operation {name}: one of All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens, TwoPhaseCommit"))
}

/// What a [`Binding`] expands to: resource type, resource name, pattern type, and each
/// (principal, permission, operation).
type Expanded = (i8, String, i8, Vec<(String, i8, i8)>);

/// One ACL to add or remove: principals allowed or denied `operations` on `resource` from
/// `host` (`*`: any).
#[derive(Debug, Clone)]
pub struct Binding {
    /// The resource.
    pub resource: Resource,
    /// `--allow-principal User:NAME` (repeatable).
    pub allow: Vec<String>,
    /// `--deny-principal User:NAME` (repeatable).
    pub deny: Vec<String>,
    /// `--operation` (repeatable).
    pub operations: Vec<i8>,
    /// `--host` (default `*`).
    pub host: String,
}

impl Binding {
    /// Each (principal, permission, operation) of the binding, with its resource.
    ///
    /// Errors: no resource, no principal or no operation.
    fn entries(&self) -> anyhow::Result<Expanded> {
        let (rtype, rname) = self.resource.chosen()?.ok_or_else(|| {
            anyhow!("name a resource: --topic, --group, --cluster or --transactional-id")
        })?;
        let pattern_type = self.resource.pattern(pattern::LITERAL)?;
        if self.allow.is_empty() && self.deny.is_empty() {
            bail!("name a principal: --allow-principal or --deny-principal User:NAME");
        }
        if self.operations.is_empty() {
            bail!("name an operation: --operation Read (repeatable)");
        }
        let mut out = Vec::new();
        for (principals, perm) in [
            (&self.allow, permission::ALLOW),
            (&self.deny, permission::DENY),
        ] {
            for p in principals {
                for o in &self.operations {
                    out.push((p.clone(), perm, *o));
                }
            }
        }
        Ok((rtype, rname, pattern_type, out))
    }
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// Prints the ACLs matching `resource` (every resource when none is named) and `principal`.
///
/// Errors: SECURITY_DISABLED when the cluster has no authorizer, and the like, by name.
pub async fn list(
    admin: &mut Admin,
    res: &Resource,
    principal: Option<&str>,
) -> anyhow::Result<()> {
    let (rtype, rname) = match res.chosen()? {
        Some((t, n)) => (t, Some(s(&n))),
        None => (resource::ANY, None),
    };
    let req = DescribeAclsRequest::default()
        .with_resource_type_filter(rtype)
        .with_resource_name_filter(rname)
        .with_pattern_type_filter(res.pattern(pattern::ANY)?)
        .with_principal_filter(principal.map(s))
        .with_host_filter(None)
        .with_operation(op::ANY)
        .with_permission_type(permission::ANY);
    let resp = admin.call(Node::Any, &req).await?;
    check(resp.error_code, resp.error_message.as_ref(), "DescribeAcls")?;
    let mut resources = resp.resources;
    resources.sort_by(|a, b| {
        (a.resource_type, &a.resource_name).cmp(&(b.resource_type, &b.resource_name))
    });
    for r in resources {
        println!(
            "Current ACLs for resource `ResourcePattern(resourceType={}, name={}, patternType={})`: ",
            resource_type_enum(r.resource_type),
            r.resource_name.as_str(),
            pattern_enum(r.pattern_type)
        );
        for a in r.acls {
            println!(
                " \t(principal={}, host={}, operation={}, permissionType={})",
                a.principal.as_str(),
                a.host.as_str(),
                operation_enum(a.operation),
                permission_enum(a.permission_type)
            );
        }
        println!();
    }
    Ok(())
}

/// Adds the ACLs of `binding`.
///
/// Errors: the broker's refusal of any of them (CLUSTER_AUTHORIZATION_FAILED,
/// INVALID_REQUEST, ...), by name.
pub async fn add(admin: &mut Admin, binding: &Binding) -> anyhow::Result<()> {
    let (rtype, rname, pattern_type, entries) = binding.entries()?;
    let req = CreateAclsRequest::default().with_creations(
        entries
            .iter()
            .map(|(p, perm, o)| {
                AclCreation::default()
                    .with_resource_type(rtype)
                    .with_resource_name(s(&rname))
                    .with_resource_pattern_type(pattern_type)
                    .with_principal(s(p))
                    .with_host(s(&binding.host))
                    .with_operation(*o)
                    .with_permission_type(*perm)
            })
            .collect(),
    );
    let resp = admin.call(Node::Any, &req).await?;
    for r in &resp.results {
        check(r.error_code, r.error_message.as_ref(), "CreateAcls")?;
    }
    println!(
        "Added {} ACL(s) for resource `ResourcePattern(resourceType={}, name={rname}, patternType={})`.",
        entries.len(),
        resource_type_enum(rtype),
        pattern_enum(pattern_type)
    );
    Ok(())
}

/// Removes the ACLs of `binding` (each matched exactly).
///
/// Errors: the broker's refusal, by name.
pub async fn remove(admin: &mut Admin, binding: &Binding) -> anyhow::Result<()> {
    let (rtype, rname, pattern_type, entries) = binding.entries()?;
    let req = DeleteAclsRequest::default().with_filters(
        entries
            .iter()
            .map(|(p, perm, o)| {
                DeleteAclsFilter::default()
                    .with_resource_type_filter(rtype)
                    .with_resource_name_filter(Some(s(&rname)))
                    .with_pattern_type_filter(pattern_type)
                    .with_principal_filter(Some(s(p)))
                    .with_host_filter(Some(s(&binding.host)))
                    .with_operation(*o)
                    .with_permission_type(*perm)
            })
            .collect(),
    );
    let resp = admin.call(Node::Any, &req).await?;
    let mut removed = 0;
    for r in &resp.filter_results {
        check(r.error_code, r.error_message.as_ref(), "DeleteAcls")?;
        for m in &r.matching_acls {
            if m.error_code != 0 {
                bail!(
                    "DeleteAcls: {}",
                    error_text(m.error_code, m.error_message.as_ref())
                );
            }
            removed += 1;
        }
    }
    println!("Removed {removed} ACL(s).");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_parse_in_kafka_acls_spellings() {
        assert_eq!(parse_operation("Read").unwrap(), op::READ);
        assert_eq!(
            parse_operation("IdempotentWrite").unwrap(),
            op::IDEMPOTENT_WRITE
        );
        assert_eq!(
            parse_operation("describe_configs").unwrap(),
            op::DESCRIBE_CONFIGS
        );
        assert!(parse_operation("Any").is_err());
        assert!(parse_operation("Fly").is_err());
    }
}
