//! Security metadata kept in the image: SCRAM credentials (Kafka's `UserScramCredentialRecord`,
//! KIP-554) and ACL bindings (Kafka's `AccessControlEntryRecord`). Plain data: what the records
//! mean (how a credential is checked, which ACL allows what) is the broker's business.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A user's salted SCRAM credential for one mechanism (RFC 5802 §3): never the password.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredential {
    /// Salt of the password hash.
    pub salt: Vec<u8>,
    /// PBKDF2 iterations (4096-16384, as Kafka allows).
    pub iterations: i32,
    /// `H(ClientKey)`.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: Vec<u8>,
}

/// SCRAM credentials by user name, then mechanism name (`SCRAM-SHA-256`, `SCRAM-SHA-512`).
pub type ScramCredentials = BTreeMap<String, BTreeMap<String, ScramCredential>>;

/// One ACL binding, with Kafka's wire codes for the enumerations (`ResourceType`,
/// `PatternType`, `AclOperation`, `AclPermissionType`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AclEntry {
    /// Resource type code (TOPIC 2, GROUP 3, CLUSTER 4, TRANSACTIONAL_ID 5, ...).
    pub resource_type: i8,
    /// Resource name (`*` with LITERAL: every resource of the type).
    pub resource_name: String,
    /// Pattern type code (LITERAL 3, PREFIXED 4).
    pub pattern_type: i8,
    /// Principal (`User:alice`, `User:*`).
    pub principal: String,
    /// Client host (an IP address, or `*`).
    pub host: String,
    /// Operation code (ALL 2, READ 3, WRITE 4, ...).
    pub operation: i8,
    /// Permission code (DENY 2, ALLOW 3).
    pub permission: i8,
}

/// A client quota entity (Kafka's `ClientQuotaEntity`): entity types (`user`, `client-id`,
/// `ip`) with a name, or `None` for the type's default (`<default>`), sorted by type.
pub type QuotaEntity = Vec<(String, Option<String>)>;

/// Client quotas (`kafka-configs --entity-type users/clients`, AlterClientQuotas, KIP-546):
/// per entity, quota key (`producer_byte_rate`, `consumer_byte_rate`, `request_percentage`, ...)
/// to value, as Kafka's decimal text of the double. Serialized as a list of pairs (JSON object
/// keys must be strings).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientQuotas(pub BTreeMap<QuotaEntity, BTreeMap<String, String>>);

impl Serialize for ClientQuotas {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

impl<'de> Deserialize<'de> for ClientQuotas {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let pairs: Vec<(QuotaEntity, BTreeMap<String, String>)> = Vec::deserialize(d)?;
        Ok(ClientQuotas(pairs.into_iter().collect()))
    }
}

impl ClientQuotas {
    /// Sets (`Some`) or removes (`None`) one key of one entity; an entity left without keys goes.
    pub fn set(&mut self, entity: &QuotaEntity, key: &str, value: Option<&str>) {
        match value {
            Some(v) => {
                self.0
                    .entry(entity.clone())
                    .or_default()
                    .insert(key.to_string(), v.to_string());
            }
            None => {
                if let Some(m) = self.0.get_mut(entity) {
                    m.remove(key);
                    if m.is_empty() {
                        self.0.remove(entity);
                    }
                }
            }
        }
    }
}

/// A delegation token (KIP-48; Kafka's `TokenInformation` and `DelegationTokenRecord`). The
/// HMAC is not kept: every node that knows `delegation.token.secret.key` derives it from the
/// token id (`HmacSHA512(secret, token_id)`), as Kafka's brokers do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelegationToken {
    /// The token id (a random UUID in Kafka's 22-character URL-safe base64 form), also the
    /// SCRAM user name a client logs in with.
    pub token_id: String,
    /// The owner, `Type:name` (`User:alice`): a connection authenticated with the token acts as
    /// `User:<owner name>`.
    pub owner: String,
    /// Who asked for the token, `Type:name` (KIP-373: may differ from the owner).
    pub requester: String,
    /// Principals (`User:bob`) that may renew and expire it besides the owner.
    pub renewers: Vec<String>,
    /// When it was issued, ms since the epoch.
    pub issue_ms: i64,
    /// When it expires for good, whatever renewals say, ms since the epoch.
    pub max_ms: i64,
    /// When it expires unless renewed, ms since the epoch (at most `max_ms`).
    pub expiry_ms: i64,
}

impl DelegationToken {
    /// Whether `principal` (`User:bob`) owns, requested or may renew it (Kafka's
    /// `TokenInformation.ownerOrRenewer`).
    pub fn owner_or_renewer(&self, principal: &str) -> bool {
        self.owner == principal || self.requester == principal || self.renewer(principal)
    }

    /// Whether `principal` may renew or expire it: the owner or a named renewer (Kafka's
    /// `allowedToRenew`).
    pub fn renewer(&self, principal: &str) -> bool {
        self.owner == principal || self.renewers.iter().any(|r| r == principal)
    }

    /// Whether it has expired at `now_ms` (its expiry or its maximum lifetime passed).
    pub fn expired(&self, now_ms: i64) -> bool {
        self.expiry_ms < now_ms || self.max_ms < now_ms
    }
}

/// Delegation tokens by token id.
pub type DelegationTokens = BTreeMap<String, DelegationToken>;
