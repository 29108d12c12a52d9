//! DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51), KIP-554, with
//! the semantics and messages of Kafka's `ScramImage.describe` and
//! `ScramControlManager.alterCredentials`. Both need the cluster resource: DESCRIBE and ALTER
//! (CLUSTER_AUTHORIZATION_FAILED otherwise).
//!
//! Also the SASL requests reaching a listener without SASL (SaslHandshake, SaslAuthenticate):
//! ILLEGAL_SASL_STATE, as Kafka's `KafkaApis` answers them.

use super::{str_bytes, RequestContext};
use crate::broker::Broker;
use crate::security::acl::op;
use crate::security::scram::{ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// SaslHandshake on a listener without SASL: ILLEGAL_SASL_STATE.
pub async fn sasl_handshake(
    _broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: SaslHandshakeRequest,
) -> SaslHandshakeResponse {
    tracing::info!(peer = %ctx.peer, listener = %ctx.session.listener, mechanism = %req.mechanism.as_str(),
        "SaslHandshake on a listener without SASL: ILLEGAL_SASL_STATE");
    SaslHandshakeResponse::default().with_error_code(ResponseError::IllegalSaslState.code())
}

/// SaslAuthenticate on a listener without SASL: ILLEGAL_SASL_STATE.
pub async fn sasl_authenticate(
    _broker: &Arc<Broker>,
    _ctx: &RequestContext,
    _req: SaslAuthenticateRequest,
) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse::default()
        .with_error_code(ResponseError::IllegalSaslState.code())
        .with_error_message(Some(str_bytes(
            "SaslAuthenticate request received on a listener without SASL",
        )))
}

/// DescribeUserScramCredentials: every user with credentials (no names given), or the named
/// ones (RESOURCE_NOT_FOUND without credentials, DUPLICATE_RESOURCE when named twice).
pub async fn describe(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    let resp = DescribeUserScramCredentialsResponse::default();
    if !crate::handlers::authorized_cluster(broker, ctx, op::DESCRIBE) {
        return resp
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
            .with_error_message(Some(str_bytes("Cluster authorization failed.")));
    }
    let creds = broker.security.scram.snapshot();
    // name -> named more than once
    let mut users: BTreeMap<String, bool> = BTreeMap::new();
    match req.users.as_ref().filter(|u| !u.is_empty()) {
        None => {
            for u in creds.keys() {
                users.insert(u.clone(), false);
            }
        }
        Some(named) => {
            for u in named {
                let dup = users.contains_key(u.name.as_str());
                users.insert(u.name.to_string(), dup);
            }
        }
    }
    let results = users
        .into_iter()
        .map(|(user, dup)| {
            let r = DescribeUserScramCredentialsResult::default().with_user(str_bytes(&user));
            if dup {
                return r
                    .with_error_code(ResponseError::DuplicateResource.code())
                    .with_error_message(Some(str_bytes(&format!(
                        "Cannot describe SCRAM credentials for the same user twice in a single request: {user}"
                    ))));
            }
            match creds.get(&user) {
                Some(m) if !m.is_empty() => r.with_credential_infos(
                    ScramMechanism::ALL
                        .iter()
                        .filter_map(|mech| {
                            m.get(mech.name()).map(|c| {
                                CredentialInfo::default()
                                    .with_mechanism(mech.code())
                                    .with_iterations(c.iterations)
                            })
                        })
                        .collect(),
                ),
                _ => r
                    .with_error_code(ResponseError::ResourceNotFound.code())
                    .with_error_message(Some(str_bytes(&format!(
                        "Attempt to describe a user credential that does not exist: {user}"
                    )))),
            }
        })
        .collect();
    resp.with_results(results)
}

/// Why one user's part of an AlterUserScramCredentials request is refused.
type Refusal = (ResponseError, &'static str);

fn check_name_and_mechanism(name: &str, mechanism: i8) -> Result<ScramMechanism, Refusal> {
    if name.is_empty() {
        return Err((
            ResponseError::UnacceptableCredential,
            "Username must not be empty",
        ));
    }
    ScramMechanism::from_code(mechanism).ok_or((
        ResponseError::UnsupportedSaslMechanism,
        "Unknown SCRAM mechanism",
    ))
}

/// AlterUserScramCredentials: deletions and upsertions, one result per user; a user named twice
/// gets DUPLICATE_RESOURCE and none of its changes, bad iterations UNACCEPTABLE_CREDENTIAL, an
/// unknown mechanism UNSUPPORTED_SASL_MECHANISM, deleting what does not exist
/// RESOURCE_NOT_FOUND. The valid changes are persisted together before the answer.
pub async fn alter(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let result = |user: &str, e: Option<(ResponseError, String)>| {
        AlterUserScramCredentialsResult::default()
            .with_user(str_bytes(user))
            .with_error_code(e.as_ref().map_or(0, |(c, _)| c.code()))
            .with_error_message(e.map(|(_, m)| str_bytes(&m)))
    };
    if !crate::handlers::authorized_cluster(broker, ctx, op::ALTER) {
        let mut names: Vec<&str> = req
            .deletions
            .iter()
            .map(|d| d.name.as_str())
            .chain(req.upsertions.iter().map(|u| u.name.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        let e = (
            ResponseError::ClusterAuthorizationFailed,
            "Cluster authorization failed.".to_string(),
        );
        return AlterUserScramCredentialsResponse::default().with_results(
            names
                .into_iter()
                .map(|n| result(n, Some(e.clone())))
                .collect(),
        );
    }
    let creds = broker.security.scram.snapshot();
    const TWICE: Refusal = (
        ResponseError::DuplicateResource,
        "A user credential cannot be altered twice in the same request",
    );
    let mut errors: HashMap<String, Refusal> = HashMap::new();
    let mut deletions: BTreeMap<String, ScramMechanism> = BTreeMap::new();
    let mut upserts: BTreeMap<String, (ScramMechanism, i32, Vec<u8>, Vec<u8>)> = BTreeMap::new();
    for d in &req.deletions {
        let name = d.name.to_string();
        if errors.contains_key(&name) {
            continue;
        }
        if deletions.remove(&name).is_some() {
            errors.insert(name, TWICE);
            continue;
        }
        match check_name_and_mechanism(&name, d.mechanism) {
            Err(e) => {
                errors.insert(name, e);
            }
            Ok(m) if creds.get(&name).and_then(|c| c.get(m.name())).is_none() => {
                errors.insert(
                    name,
                    (
                        ResponseError::ResourceNotFound,
                        "Attempt to delete a user credential that does not exist",
                    ),
                );
            }
            Ok(m) => {
                deletions.insert(name, m);
            }
        }
    }
    for u in &req.upsertions {
        let name = u.name.to_string();
        if errors.contains_key(&name) {
            continue;
        }
        if deletions.remove(&name).is_some() || upserts.remove(&name).is_some() {
            errors.insert(name, TWICE);
            continue;
        }
        let checked = check_name_and_mechanism(&name, u.mechanism).and_then(|m| {
            if u.iterations < MIN_ITERATIONS {
                Err((ResponseError::UnacceptableCredential, "Too few iterations"))
            } else if u.iterations > MAX_ITERATIONS {
                Err((ResponseError::UnacceptableCredential, "Too many iterations"))
            } else {
                Ok(m)
            }
        });
        match checked {
            Err(e) => {
                errors.insert(name, e);
            }
            Ok(m) => {
                upserts.insert(
                    name,
                    (m, u.iterations, u.salt.to_vec(), u.salted_password.to_vec()),
                );
            }
        }
    }
    let mut results = Vec::new();
    if !deletions.is_empty() || !upserts.is_empty() {
        let cmd = frieda_meta::MetaCommand::AlterScramCredentials {
            upserts: upserts
                .iter()
                .map(|(user, (m, iterations, salt, salted))| {
                    (
                        user.clone(),
                        m.name().to_string(),
                        m.credential(salt, *iterations, salted),
                    )
                })
                .collect(),
            deletions: deletions
                .iter()
                .map(|(user, m)| (user.clone(), m.name().to_string()))
                .collect(),
        };
        let outcome = broker.alter_security(cmd).await;
        for user in deletions.keys().chain(upserts.keys()) {
            results.push(result(
                user,
                outcome.as_ref().err().map(|e| (e.code, e.message.clone())),
            ));
        }
        if outcome.is_ok() {
            for (user, m) in &deletions {
                tracing::info!(target: crate::security::audit::TARGET,
                    "Deleted SCRAM credential of user {user} ({}) (by {})", m.name(), ctx.session.principal);
            }
            for (user, (m, iterations, _, _)) in &upserts {
                tracing::info!(target: crate::security::audit::TARGET,
                    "Upserted SCRAM credential of user {user} ({}, {iterations} iterations) (by {})", m.name(), ctx.session.principal);
            }
        }
    }
    let mut errors: Vec<_> = errors.into_iter().collect();
    errors.sort_by(|a, b| a.0.cmp(&b.0));
    for (user, (code, msg)) in errors {
        results.push(result(&user, Some((code, msg.to_string()))));
    }
    AlterUserScramCredentialsResponse::default().with_results(results)
}
