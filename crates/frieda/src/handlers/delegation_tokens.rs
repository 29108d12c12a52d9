//! Delegation tokens (KIP-48, KIP-373): CreateDelegationToken (key 38), RenewDelegationToken
//! (39), ExpireDelegationToken (40) and DescribeDelegationToken (41), with Kafka 4.4's checks
//! (`KafkaApis.handle*TokenRequest`) and decisions (`DelegationTokenControlManager`, here
//! [`TokenPolicy`](crate::security::delegation::TokenPolicy)).
//!
//! Errors, in Kafka's order:
//! - DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (64): the connection authenticated with a token, or
//!   came over PLAINTEXT, or over SSL without a client certificate (`allowTokenRequests`).
//! - DELEGATION_TOKEN_AUTHORIZATION_FAILED (65): a token for another owner without
//!   CREATE_TOKENS on that `User` resource.
//! - INVALID_PRINCIPAL_TYPE (67): a renewer that is not a `User`.
//! - DELEGATION_TOKEN_AUTH_DISABLED (61): no `delegation.token.secret.key`.
//! - DELEGATION_TOKEN_NOT_FOUND (62), DELEGATION_TOKEN_OWNER_MISMATCH (63),
//!   DELEGATION_TOKEN_EXPIRED (66) for Renew and Expire.
//!
//! Tokens are persisted before they count: in the metadata quorum (cluster) or
//! `meta/security.json` (single broker), through [`Broker::alter_security`].

use super::{authorized, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::security::acl::{op, resource};
use crate::security::delegation::TokenRefusal;
use crate::security::{principal::ANONYMOUS, SecurityProtocol};
use frieda_meta::{DelegationToken, MetaCommand};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_delegation_token_response::{
    DescribedDelegationToken, DescribedDelegationTokenRenewer,
};
use kafka_protocol::messages::{
    CreateDelegationTokenRequest, CreateDelegationTokenResponse, DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse, ExpireDelegationTokenRequest, ExpireDelegationTokenResponse,
    RenewDelegationTokenRequest, RenewDelegationTokenResponse,
};
use std::sync::Arc;

/// The expiry timestamp of a refused Renew or Expire (Kafka's `ErrorTimestamp`).
const ERROR_TIMESTAMP: i64 = -1;

/// Whether the connection may ask for tokens (Kafka's `allowTokenRequests`): not one
/// authenticated with a token, not PLAINTEXT, not SSL without a client certificate.
fn token_requests_allowed(ctx: &RequestContext) -> bool {
    let s = &ctx.session;
    !(s.token_authenticated
        || s.protocol == SecurityProtocol::Plaintext
        || (s.protocol == SecurityProtocol::Ssl && s.principal.name == ANONYMOUS))
}

fn not_allowed(ctx: &RequestContext, api: &str) -> ResponseError {
    tracing::info!(peer = %ctx.peer, principal = %ctx.session.principal, listener = %ctx.session.listener,
        "{api} refused: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (token-authenticated, PLAINTEXT or anonymous SSL connection)");
    ResponseError::DelegationTokenRequestNotAllowed
}

/// `Type:name`.
fn principal(kind: &str, name: &str) -> String {
    format!("{kind}:{name}")
}

/// `(type, name)` of `Type:name`.
fn split(p: &str) -> (&str, &str) {
    p.split_once(':').unwrap_or(("User", p))
}

/// CreateDelegationToken: a token for the requester, or (v3, KIP-373) for the owner it names
/// (which needs CREATE_TOKENS on `User:<owner>`).
pub async fn create(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: CreateDelegationTokenRequest,
) -> CreateDelegationTokenResponse {
    let requester = ctx.session.principal.to_string();
    let owner = match req
        .owner_principal_name
        .as_deref()
        .filter(|n| !n.is_empty())
    {
        Some(name) => principal(req.owner_principal_type.as_deref().unwrap_or("User"), name),
        None => requester.clone(),
    };
    let (owner_type, owner_name) = split(&owner);
    let (req_type, req_name) = split(&requester);
    let mut resp = CreateDelegationTokenResponse::default()
        .with_principal_type(str_bytes(owner_type))
        .with_principal_name(str_bytes(owner_name));
    if ctx.api_version >= 3 {
        // The requester is a v3 field (KIP-373).
        resp = resp
            .with_token_requester_principal_type(str_bytes(req_type))
            .with_token_requester_principal_name(str_bytes(req_name));
    }
    let fail = |e: ResponseError| resp.clone().with_error_code(e.code());
    if !token_requests_allowed(ctx) {
        return fail(not_allowed(ctx, "CreateDelegationToken"));
    }
    if owner != requester && !authorized(broker, ctx, op::CREATE_TOKENS, resource::USER, &owner) {
        return fail(ResponseError::DelegationTokenAuthorizationFailed);
    }
    if req
        .renewers
        .iter()
        .any(|r| r.principal_type.as_str() != crate::security::principal::USER_TYPE)
    {
        return fail(ResponseError::InvalidPrincipalType);
    }
    let renewers = req
        .renewers
        .iter()
        .map(|r| principal(&r.principal_type, &r.principal_name))
        .collect();
    let tokens = &broker.security.tokens;
    let now = crate::clock::now_ms();
    let token = match tokens.policy.create(
        owner.clone(),
        requester.clone(),
        renewers,
        req.max_lifetime_ms,
        now,
    ) {
        Ok(t) => t,
        Err(r) => return fail(refused(&requester, "CreateDelegationToken", r)),
    };
    let Some(hmac) = tokens.policy.hmac(&token.token_id) else {
        return fail(ResponseError::DelegationTokenAuthDisabled);
    };
    let cmd = MetaCommand::PutDelegationToken {
        token: token.clone(),
        create: true,
    };
    if let Err(e) = broker.alter_security(cmd).await {
        tracing::warn!(principal = %requester, error = %e.message, "CreateDelegationToken failed");
        return fail(e.code);
    }
    tracing::info!(token = %token.token_id, owner = %owner, requester = %requester,
        expiry_ms = token.expiry_ms, max_ms = token.max_ms, "delegation token created");
    resp.with_issue_timestamp_ms(token.issue_ms)
        .with_expiry_timestamp_ms(token.expiry_ms)
        .with_max_timestamp_ms(token.max_ms)
        .with_token_id(str_bytes(&token.token_id))
        .with_hmac(hmac.into())
}

/// What Renew and Expire share: the checks before the token, then the token found by its HMAC.
fn find(
    broker: &Broker,
    ctx: &RequestContext,
    api: &str,
    hmac: &[u8],
) -> Result<DelegationToken, ResponseError> {
    if !token_requests_allowed(ctx) {
        return Err(not_allowed(ctx, api));
    }
    let tokens = &broker.security.tokens;
    if !tokens.policy.enabled() {
        return Err(ResponseError::DelegationTokenAuthDisabled);
    }
    tokens
        .by_hmac(hmac)
        .map(|k| k.token.clone())
        .ok_or(ResponseError::DelegationTokenNotFound)
}

/// Stores a renewed or shortened token; its new expiry, or the error.
async fn put(broker: &Arc<Broker>, token: DelegationToken) -> Result<i64, ResponseError> {
    let expiry = token.expiry_ms;
    let cmd = MetaCommand::PutDelegationToken {
        token,
        create: false,
    };
    broker.alter_security(cmd).await.map_err(|e| e.code)?;
    Ok(expiry)
}

/// RenewDelegationToken: the owner or a renewer extends the token's expiry.
pub async fn renew(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: RenewDelegationTokenRequest,
) -> RenewDelegationTokenResponse {
    let principal = ctx.session.principal.to_string();
    let result = async {
        let token = find(broker, ctx, "RenewDelegationToken", &req.hmac)?;
        let policy = &broker.security.tokens.policy;
        let renewed = policy
            .renew(
                &token,
                &principal,
                req.renew_period_ms,
                crate::clock::now_ms(),
            )
            .map_err(|r| refused(&principal, "RenewDelegationToken", r))?;
        put(broker, renewed).await
    }
    .await;
    let (error, expiry) = answer(result);
    RenewDelegationTokenResponse::default()
        .with_error_code(error)
        .with_expiry_timestamp_ms(expiry)
}

/// Logs a refusal by the token policy; its error.
fn refused(principal: &str, api: &str, (error, msg): TokenRefusal) -> ResponseError {
    tracing::info!(principal = %principal, "{api} refused: {msg}");
    error
}

/// Error code and expiry timestamp of a Renew or Expire answer.
fn answer(result: Result<i64, ResponseError>) -> (i16, i64) {
    match result {
        Ok(expiry) => (0, expiry),
        Err(e) => (e.code(), ERROR_TIMESTAMP),
    }
}

/// ExpireDelegationToken: the owner or a renewer brings the expiry forward, or (a negative
/// period) removes the token at once.
pub async fn expire(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: ExpireDelegationTokenRequest,
) -> ExpireDelegationTokenResponse {
    let principal = ctx.session.principal.to_string();
    let result = async {
        let token = find(broker, ctx, "ExpireDelegationToken", &req.hmac)?;
        let policy = &broker.security.tokens.policy;
        let now = crate::clock::now_ms();
        let expired = policy
            .expire(&token, &principal, req.expiry_time_period_ms, now)
            .map_err(|r| refused(&principal, "ExpireDelegationToken", r))?;
        match expired {
            Some(t) => put(broker, t).await,
            None => {
                let cmd = MetaCommand::RemoveDelegationTokens {
                    ids: vec![token.token_id.clone()],
                };
                broker.alter_security(cmd).await.map_err(|e| e.code)?;
                tracing::info!(token = %token.token_id, principal = %principal, "delegation token expired");
                Ok(now)
            }
        }
    }
    .await;
    let (error, expiry) = answer(result);
    ExpireDelegationTokenResponse::default()
        .with_error_code(error)
        .with_expiry_timestamp_ms(expiry)
}

/// DescribeDelegationToken: the tokens the requester owns, asked for or may renew, and those it
/// may DESCRIBE (the token's `DelegationToken` resource, or DESCRIBE_TOKENS on the owner's
/// `User` resource); with `owners`, only tokens one of them owns, asked for or may renew (an
/// empty list: none). Kafka's `DelegationTokenManager.filterToken`.
pub async fn describe(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeDelegationTokenRequest,
) -> DescribeDelegationTokenResponse {
    let resp = DescribeDelegationTokenResponse::default();
    if !token_requests_allowed(ctx) {
        return resp.with_error_code(not_allowed(ctx, "DescribeDelegationToken").code());
    }
    let store = &broker.security.tokens;
    if !store.policy.enabled() {
        return resp.with_error_code(ResponseError::DelegationTokenAuthDisabled.code());
    }
    let owners: Option<Vec<String>> = req.owners.as_ref().map(|o| {
        o.iter()
            .map(|p| principal(&p.principal_type, &p.principal_name))
            .collect()
    });
    if owners.as_ref().is_some_and(|o| o.is_empty()) {
        return resp;
    }
    let me = ctx.session.principal.to_string();
    let tokens = store
        .all()
        .into_iter()
        .filter(|k| {
            let t = &k.token;
            if let Some(o) = &owners {
                if !o.iter().any(|p| t.owner_or_renewer(p)) {
                    return false;
                }
            }
            t.owner_or_renewer(&me)
                || authorized(
                    broker,
                    ctx,
                    op::DESCRIBE,
                    resource::DELEGATION_TOKEN,
                    &t.token_id,
                )
                || authorized(broker, ctx, op::DESCRIBE_TOKENS, resource::USER, &t.owner)
        })
        .map(|k| {
            let t = &k.token;
            let (ot, on) = split(&t.owner);
            let (rt, rn) = split(&t.requester);
            let mut d = DescribedDelegationToken::default()
                .with_principal_type(str_bytes(ot))
                .with_principal_name(str_bytes(on));
            if ctx.api_version >= 3 {
                // The requester is a v3 field (KIP-373).
                d = d
                    .with_token_requester_principal_type(str_bytes(rt))
                    .with_token_requester_principal_name(str_bytes(rn));
            }
            d.with_issue_timestamp(t.issue_ms)
                .with_expiry_timestamp(t.expiry_ms)
                .with_max_timestamp(t.max_ms)
                .with_token_id(str_bytes(&t.token_id))
                .with_hmac(k.hmac.clone().into())
                .with_renewers(
                    t.renewers
                        .iter()
                        .map(|r| {
                            let (kind, name) = split(r);
                            DescribedDelegationTokenRenewer::default()
                                .with_principal_type(str_bytes(kind))
                                .with_principal_name(str_bytes(name))
                        })
                        .collect(),
                )
        })
        .collect();
    resp.with_tokens(tokens)
}
