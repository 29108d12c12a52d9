//! `frieda admin quota ...`: client quotas by user principal, client id and IP (KIP-546:
//! DescribeClientQuotas key 48, AlterClientQuotas key 49), printed as
//! `kafka-configs.sh --describe --entity-type users/clients/ips` prints them.

use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::{AlterClientQuotasRequest, DescribeClientQuotasRequest};
use kafka_protocol::protocol::StrBytes;

use super::client::{check, Admin, Node};

/// Entity types of a quota (Kafka's `ClientQuotaEntity`).
pub const USER: &str = "user";
/// The client id a client sends.
pub const CLIENT_ID: &str = "client-id";
/// The client's IP address (connection-rate quotas).
pub const IP: &str = "ip";

/// One part of a quota entity: its type ([`USER`], [`CLIENT_ID`], [`IP`]) and its name, or
/// `None` for that type's default (`--entity-default`).
pub type Component = (&'static str, Option<String>);

/// How a type is named in messages, as Kafka's tool names it.
fn type_label(entity_type: &str) -> &str {
    match entity_type {
        USER => "user-principal",
        other => other,
    }
}

/// `user-principal 'alice', client-id 'app'` / `the default user-principal`.
fn entity_text(components: &[(String, Option<String>)]) -> String {
    components
        .iter()
        .map(|(t, n)| match n {
            Some(n) => format!("{} '{n}'", type_label(t)),
            None => format!("the default {}", type_label(t)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Kafka prints a quota value as a Java double (`1024.0`).
fn value_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        v.to_string()
    }
}

/// Prints every quota whose entity includes all of `filter` (an entity with more parts
/// matches too: `--user alice` also lists alice's per-client quotas); every quota for an
/// empty filter. One line per entity, sorted.
///
/// Errors: INVALID_REQUEST (a filter the broker refuses), CLUSTER_AUTHORIZATION_FAILED, ...
/// by name.
pub async fn list(admin: &mut Admin, filter: &[Component]) -> anyhow::Result<()> {
    let req = DescribeClientQuotasRequest::default()
        .with_strict(false)
        .with_components(
            filter
                .iter()
                .map(|(t, n)| match n {
                    Some(n) => ComponentData::default()
                        .with_entity_type(StrBytes::from_static_str(t))
                        .with_match_type(0) // exact
                        .with_match(Some(StrBytes::from_string(n.clone()))),
                    None => ComponentData::default()
                        .with_entity_type(StrBytes::from_static_str(t))
                        .with_match_type(1) // the default
                        .with_match(None),
                })
                .collect(),
        );
    let resp = admin.call(Node::Any, &req).await?;
    check(
        resp.error_code,
        resp.error_message.as_ref(),
        "DescribeClientQuotas",
    )?;
    let mut lines = Vec::new();
    for e in resp.entries.unwrap_or_default() {
        let mut entity: Vec<(String, Option<String>)> = e
            .entity
            .iter()
            .map(|c| {
                (
                    c.entity_type.to_string(),
                    c.entity_name.as_ref().map(|n| n.to_string()),
                )
            })
            .collect();
        // user before client-id before ip, as Kafka prints them.
        entity.sort_by_key(|(t, _)| match t.as_str() {
            USER => 0,
            CLIENT_ID => 1,
            _ => 2,
        });
        let mut values: Vec<(String, f64)> = e
            .values
            .iter()
            .map(|v| (v.key.to_string(), v.value))
            .collect();
        values.sort_by(|a, b| a.0.cmp(&b.0));
        let values: Vec<String> = values
            .iter()
            .map(|(k, v)| format!("{k}={}", value_text(*v)))
            .collect();
        lines.push(format!(
            "Quota configs for {} are {}",
            entity_text(&entity),
            values.join(", ")
        ));
    }
    lines.sort();
    if lines.is_empty() {
        println!("No quota matches.");
    }
    for l in lines {
        println!("{l}");
    }
    Ok(())
}

/// Sets (`set`, a number each) and removes (`delete`) quotas of one entity in one
/// AlterClientQuotas request.
///
/// Errors: no entity or nothing to change; a value that is not a number; INVALID_REQUEST
/// (an unknown quota key, a bad entity), CLUSTER_AUTHORIZATION_FAILED, ... by name.
pub async fn alter(
    admin: &mut Admin,
    entity: &[Component],
    set: &[(String, String)],
    delete: &[String],
) -> anyhow::Result<()> {
    anyhow::ensure!(
        !entity.is_empty(),
        "name the entity: --user, --client-id or --ip (or their --*-default)"
    );
    if set.is_empty() && delete.is_empty() {
        anyhow::bail!("nothing to change: give --set key=value or --delete key");
    }
    let mut ops = Vec::new();
    for (k, v) in set {
        let value: f64 = v
            .parse()
            .map_err(|_| anyhow::anyhow!("--set {k}={v}: a quota is a number"))?;
        ops.push(
            OpData::default()
                .with_key(StrBytes::from_string(k.clone()))
                .with_value(value)
                .with_remove(false),
        );
    }
    ops.extend(delete.iter().map(|k| {
        OpData::default()
            .with_key(StrBytes::from_string(k.clone()))
            .with_remove(true)
    }));
    let req = AlterClientQuotasRequest::default().with_entries(vec![EntryData::default()
        .with_entity(
            entity
                .iter()
                .map(|(t, n)| {
                    EntityData::default()
                        .with_entity_type(StrBytes::from_static_str(t))
                        .with_entity_name(n.clone().map(StrBytes::from_string))
                })
                .collect(),
        )
        .with_ops(ops)]);
    let resp = admin.call(Node::Any, &req).await?;
    let named: Vec<(String, Option<String>)> = entity
        .iter()
        .map(|(t, n)| (t.to_string(), n.clone()))
        .collect();
    for e in &resp.entries {
        check(
            e.error_code,
            e.error_message.as_ref(),
            &format!("alter quotas of {}", entity_text(&named)),
        )?;
    }
    println!("Completed updating quotas for {}.", entity_text(&named));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_and_values_print_as_kafka_configs_prints_them() {
        let e = vec![
            (USER.to_string(), Some("alice".to_string())),
            (CLIENT_ID.to_string(), None),
        ];
        assert_eq!(
            entity_text(&e),
            "user-principal 'alice', the default client-id"
        );
        assert_eq!(value_text(1024.0), "1024.0");
        assert_eq!(value_text(0.5), "0.5");
    }
}
