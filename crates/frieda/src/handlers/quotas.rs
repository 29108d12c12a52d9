//! DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), v0-1 (KIP-546), with the
//! semantics and messages of Kafka's `ClientQuotasImage.describe` and
//! `ClientQuotaControlManager`: DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster
//! (CLUSTER_AUTHORIZATION_FAILED), INVALID_REQUEST for bad filters, entities and values.
//! What the quotas do: [`crate::quota`].

use super::{authorized_cluster, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::quota::{self, CLIENT_ID, IP, USER};
use crate::security::acl::op;
use frieda_meta::{MetaCommand, QuotaEntity};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_client_quotas_response as alter_resp;
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

const MATCH_EXACT: i8 = 0;
const MATCH_DEFAULT: i8 = 1;
const MATCH_SPECIFIED: i8 = 2;

/// DescribeClientQuotas: the entities matching every filter component (exact name, the
/// default, or any named entity of the type), only those with exactly the filter's types when
/// `strict`.
pub async fn describe(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    let fail = |code: ResponseError, m: String| {
        DescribeClientQuotasResponse::default()
            .with_error_code(code.code())
            .with_error_message(Some(str_bytes(&m)))
            .with_entries(None)
    };
    if !authorized_cluster(broker, ctx, op::DESCRIBE_CONFIGS) {
        return fail(
            ResponseError::ClusterAuthorizationFailed,
            "Cluster authorization failed.".into(),
        );
    }
    let mut exact: HashMap<String, Option<String>> = HashMap::new();
    let mut typed: HashSet<String> = HashSet::new();
    for c in &req.components {
        let t = c.entity_type.to_string();
        if t.is_empty() {
            return fail(
                ResponseError::InvalidRequest,
                "Invalid empty entity type.".into(),
            );
        }
        if exact.contains_key(&t) || typed.contains(&t) {
            return fail(
                ResponseError::InvalidRequest,
                format!("Entity type {t} cannot appear more than once in the filter."),
            );
        }
        if ![USER, CLIENT_ID, IP].contains(&t.as_str()) {
            return fail(
                ResponseError::UnsupportedVersion,
                format!("Unsupported entity type {t}"),
            );
        }
        match (c.match_type, &c._match) {
            (MATCH_EXACT, Some(m)) => {
                exact.insert(t, Some(m.to_string()));
            }
            (MATCH_EXACT, None) => {
                return fail(
                    ResponseError::InvalidRequest,
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.".into(),
                )
            }
            (MATCH_DEFAULT, None) => {
                exact.insert(t, None);
            }
            (MATCH_SPECIFIED, None) => {
                typed.insert(t);
            }
            (MATCH_DEFAULT | MATCH_SPECIFIED, Some(_)) => {
                return fail(
                    ResponseError::InvalidRequest,
                    "Request specified a match type that takes no match string, but also specified one.".into(),
                )
            }
            (other, _) => {
                return fail(
                    ResponseError::InvalidRequest,
                    format!("Unknown match type {other}"),
                )
            }
        }
    }
    let has = |t: &str| exact.contains_key(t) || typed.contains(t);
    if has(IP) && (has(USER) || has(CLIENT_ID)) {
        return fail(ResponseError::InvalidRequest, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.".into());
    }
    let quotas = broker.security.client_quotas();
    let entries = quotas
        .0
        .iter()
        .filter(|(entity, _)| {
            let get = |t: &str| entity.iter().find(|(et, _)| et == t).map(|(_, n)| n);
            (!req.strict || entity.len() == exact.len() + typed.len())
                && exact.iter().all(|(t, want)| get(t) == Some(want))
                && typed.iter().all(|t| get(t).is_some())
        })
        .map(|(entity, values)| {
            EntryData::default()
                .with_entity(
                    entity
                        .iter()
                        .map(|(t, n)| {
                            EntityData::default()
                                .with_entity_type(str_bytes(t))
                                .with_entity_name(n.as_deref().map(str_bytes))
                        })
                        .collect(),
                )
                .with_values(
                    values
                        .iter()
                        .filter_map(|(k, v)| {
                            v.parse::<f64>()
                                .ok()
                                .map(|v| ValueData::default().with_key(str_bytes(k)).with_value(v))
                        })
                        .collect(),
                )
        })
        .collect();
    DescribeClientQuotasResponse::default().with_entries(Some(entries))
}

/// AlterClientQuotas: per entity, set and remove quota keys (validated as Kafka does); the
/// valid entities' changes are persisted together (unless `validate_only`).
pub async fn alter(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
    let entity_out = |entity: &[(String, Option<String>)]| -> Vec<alter_resp::EntityData> {
        entity
            .iter()
            .map(|(t, n)| {
                alter_resp::EntityData::default()
                    .with_entity_type(str_bytes(t))
                    .with_entity_name(n.as_deref().map(str_bytes))
            })
            .collect()
    };
    let allowed = authorized_cluster(broker, ctx, op::ALTER_CONFIGS);
    let mut results: Vec<(QuotaEntity, Option<(ResponseError, String)>)> = Vec::new();
    let mut changes: Vec<(QuotaEntity, String, Option<String>)> = Vec::new();
    let mut seen: HashSet<QuotaEntity> = HashSet::new();
    for e in &req.entries {
        let raw: QuotaEntity = e
            .entity
            .iter()
            .map(|d| {
                (
                    d.entity_type.to_string(),
                    d.entity_name.as_ref().map(|n| n.to_string()),
                )
            })
            .collect();
        let entity = quota::canonical(raw.clone());
        if !allowed {
            results.push((
                raw,
                Some((
                    ResponseError::ClusterAuthorizationFailed,
                    "Cluster authorization failed.".into(),
                )),
            ));
            continue;
        }
        if !seen.insert(entity.clone()) {
            results.push((
                raw,
                Some((
                    ResponseError::InvalidRequest,
                    format!("Ignoring duplicate entity {entity:?}"),
                )),
            ));
            continue;
        }
        let ops: Vec<(String, Option<f64>)> = e
            .ops
            .iter()
            .map(|o| (o.key.to_string(), (!o.remove).then_some(o.value)))
            .collect();
        match quota::validate(&entity, &ops) {
            Err(m) => results.push((raw, Some((ResponseError::InvalidRequest, m)))),
            Ok(()) => {
                for (k, v) in ops {
                    changes.push((entity.clone(), k, v.map(format_value)));
                }
                results.push((raw, None));
            }
        }
    }
    if !changes.is_empty() && !req.validate_only {
        if let Err(e) = broker
            .alter_security(MetaCommand::AlterClientQuotas {
                changes: changes.clone(),
            })
            .await
        {
            for r in results.iter_mut().filter(|r| r.1.is_none()) {
                r.1 = Some((e.code, e.message.clone()));
            }
        } else {
            let by_entity: BTreeMap<&QuotaEntity, Vec<(&String, &Option<String>)>> =
                changes.iter().fold(BTreeMap::new(), |mut m, (e, k, v)| {
                    m.entry(e).or_default().push((k, v));
                    m
                });
            tracing::info!(principal = %ctx.session.principal, changes = ?by_entity, "client quotas changed");
        }
    }
    AlterClientQuotasResponse::default().with_entries(
        results
            .into_iter()
            .map(|(entity, err)| {
                alter_resp::EntryData::default()
                    .with_entity(entity_out(&entity))
                    .with_error_code(err.as_ref().map_or(0, |(c, _)| c.code()))
                    .with_error_message(err.map(|(_, m)| str_bytes(&m)))
            })
            .collect(),
    )
}

/// A quota value as Kafka's metadata keeps it (a double; integral values without a fraction).
fn format_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        v.to_string()
    }
}
