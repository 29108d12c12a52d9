//! Changes to the security metadata (SCRAM credentials, ACLs), persisted before they apply: on
//! a single broker in `meta/security.json` (written durably, then taken into the
//! [`Security`](crate::security::Security) state), in a cluster through the metadata quorum
//! (the image's `scram_credentials` and `acls`, which every broker's reconciler applies).
//!
//! Both paths change the state with the same function, [`MetadataImage::apply`], so a single
//! broker and a cluster agree on what a change means.

use super::{AdminError, Broker};
use crate::durable;
use crate::membership::CONTROLLER_TIMEOUT;
use crate::security::acl::AclEntry;
use crate::security::scram::ScramCredentials;
use frieda_meta::{ControllerRequest, MetaCommand, MetadataImage};
use kafka_protocol::error::ResponseError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// File of a single broker's security metadata, under `meta/`.
pub const FILE: &str = "security.json";

/// What `meta/security.json` holds.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SecurityState {
    /// SCRAM credentials by user and mechanism.
    #[serde(default)]
    pub scram_credentials: ScramCredentials,
    /// ACL bindings.
    #[serde(default)]
    pub acls: BTreeSet<AclEntry>,
    /// Client quotas.
    #[serde(default)]
    pub client_quotas: frieda_meta::ClientQuotas,
    /// Delegation tokens (without their HMACs), by id.
    #[serde(default)]
    pub delegation_tokens: frieda_meta::DelegationTokens,
}

/// Reads `meta/security.json` (empty when absent).
///
/// Errors: the file exists but cannot be read or parsed (the broker refuses to start rather than
/// run without its ACLs).
pub fn load(meta_dir: &Path) -> anyhow::Result<SecurityState> {
    durable::read_json(&meta_dir.join(FILE))
}

/// Writes `meta/security.json` durably. Errors: the write failed before its commit point (the
/// old file stands); a failure after it stops the broker ([`durable::halt`]).
pub fn persist(meta_dir: &Path, state: &SecurityState) -> std::io::Result<()> {
    durable::write_json_or_halt(
        &meta_dir.join(FILE),
        state,
        "writing the security metadata (ACLs, SCRAM credentials)",
    )
}

/// Whether `image` shows the whole effect of `cmd` (the change reached this broker).
fn reflects(image: &MetadataImage, cmd: &MetaCommand) -> bool {
    match cmd {
        MetaCommand::AlterScramCredentials { upserts, deletions } => {
            let get = |u: &str, m: &str| image.scram_credentials.get(u).and_then(|c| c.get(m));
            upserts.iter().all(|(u, m, c)| get(u, m) == Some(c))
                && deletions.iter().all(|(u, m)| {
                    get(u, m).is_none() || upserts.iter().any(|(uu, mm, _)| uu == u && mm == m)
                })
        }
        MetaCommand::AlterClientQuotas { changes } => changes.iter().all(|(entity, key, value)| {
            image.client_quotas.0.get(entity).and_then(|m| m.get(key)) == value.as_ref()
        }),
        MetaCommand::PutDelegationToken { token, .. } => {
            image.delegation_tokens.get(&token.token_id) == Some(token)
        }
        MetaCommand::RemoveDelegationTokens { ids } => ids
            .iter()
            .all(|id| !image.delegation_tokens.contains_key(id)),
        MetaCommand::AlterAcls { create, delete } => {
            create.iter().all(|a| image.acls.contains(a))
                && delete
                    .iter()
                    .all(|a| !image.acls.contains(a) || create.contains(a))
        }
        _ => false,
    }
}

impl Broker {
    /// Applies a SCRAM or ACL change (`MetaCommand::AlterScramCredentials` /
    /// `MetaCommand::AlterAcls`, already validated), persisted first.
    ///
    /// Errors: KAFKA_STORAGE_ERROR when `meta/security.json` cannot be written (nothing
    /// changed), REQUEST_TIMED_OUT when the quorum does not commit it in time, INVALID_REQUEST
    /// for another command.
    pub async fn alter_security(self: &Arc<Self>, cmd: MetaCommand) -> Result<(), AdminError> {
        if let Some(node) = self.cluster() {
            node.controller(
                ControllerRequest::AlterSecurity(cmd.clone()),
                CONTROLLER_TIMEOUT,
            )
            .await?;
            if !node
                .wait_for(CONTROLLER_TIMEOUT, |img| reflects(img, &cmd))
                .await
            {
                return Err(AdminError::new(
                    ResponseError::RequestTimedOut,
                    "the security change was committed but has not reached this broker yet",
                ));
            }
            let img = node.image();
            self.security.apply(
                &img.scram_credentials,
                &img.acls,
                &img.client_quotas,
                &img.delegation_tokens,
            );
            return Ok(());
        }
        let _admin = self.admin.lock().await;
        let mut image = MetadataImage {
            scram_credentials: (*self.security.scram.snapshot()).clone(),
            client_quotas: (*self.security.client_quotas()).clone(),
            delegation_tokens: self.security.tokens.snapshot(),
            acls: self
                .security
                .authorizer
                .as_ref()
                .map(|a| a.acls())
                .unwrap_or_else(|| self.stored_acls()),
            ..Default::default()
        };
        image
            .apply(&cmd, 0)
            .map_err(|e| AdminError::new(ResponseError::InvalidRequest, e.to_string()))?;
        let state = SecurityState {
            scram_credentials: image.scram_credentials,
            acls: image.acls,
            client_quotas: image.client_quotas,
            delegation_tokens: image.delegation_tokens,
        };
        let broker = self.clone();
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            persist(&broker.meta_dir, &state)?;
            broker.security.apply(
                &state.scram_credentials,
                &state.acls,
                &state.client_quotas,
                &state.delegation_tokens,
            );
            Ok(())
        })
        .await
        .map_err(|e| AdminError::new(ResponseError::UnknownServerError, e.to_string()))?
        .map_err(|e| AdminError::new(ResponseError::KafkaStorageError, e.to_string()))
    }

    /// Removes expired delegation tokens (Kafka's `sweepExpiredDelegationTokens`, every
    /// `delegation.token.expiry.check.interval.ms`). In a cluster the lowest-numbered live
    /// broker does it (a removal by two is harmless, only wasted). Returns how many went.
    pub async fn sweep_delegation_tokens(self: &Arc<Self>) -> usize {
        if let Some(node) = self.cluster() {
            let image = node.image();
            if image.live_brokers().next().map(|b| b.id) != Some(self.config.node_id) {
                return 0;
            }
        }
        let now = crate::clock::now_ms();
        let ids: Vec<String> = self
            .security
            .tokens
            .all()
            .iter()
            .filter(|k| k.token.expired(now))
            .map(|k| k.token.token_id.clone())
            .collect();
        if ids.is_empty() {
            return 0;
        }
        let n = ids.len();
        for id in &ids {
            tracing::info!(token = %id, "delegation token expired: removing it");
        }
        match self
            .alter_security(MetaCommand::RemoveDelegationTokens { ids })
            .await
        {
            Ok(()) => n,
            Err(e) => {
                tracing::warn!(error = %e.message, "removing expired delegation tokens failed");
                0
            }
        }
    }

    /// ACLs kept in `meta/security.json` while no authorizer is configured (kept as they are).
    fn stored_acls(&self) -> BTreeSet<AclEntry> {
        load(&self.meta_dir).map(|s| s.acls).unwrap_or_default()
    }
}
