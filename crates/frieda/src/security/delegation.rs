//! Delegation tokens (KIP-48, KIP-373): what a broker needs to decide token requests and to
//! authenticate with a token.
//!
//! A token is kept in the metadata (the image's `delegation_tokens` in a cluster,
//! `meta/security.json` on a single broker) without its secret. Every broker derives the token's
//! HMAC from `delegation.token.secret.key` (`HmacSHA512(secret, token id)`, Kafka's
//! `DelegationTokenManager.createHmac`) and from it the SCRAM credentials a client proves: the
//! client logs in with SCRAM, user name = token id, password = base64 of the HMAC, and the
//! extension `tokenauth=true`; the connection then acts as `User:<owner>` and may not ask for
//! tokens itself.
//!
//! The decisions of Kafka 4.4's `DelegationTokenControlManager` (lifetimes, who may renew,
//! expired tokens) are the pure functions [`TokenPolicy::create`], [`TokenPolicy::renew`] and
//! [`TokenPolicy::expire`], so a single broker and a cluster decide alike.

use super::scram::{ScramCredential, ScramMechanism, MIN_ITERATIONS};
use frieda_meta::{DelegationToken, DelegationTokens};
use hmac::{Hmac, Mac};
use kafka_protocol::error::ResponseError;
use parking_lot::RwLock;
use rand::RngCore;
use sha2::Sha512;
use std::collections::HashMap;
use std::sync::Arc;

/// `delegation.token.max.lifetime.ms` default: 7 days.
pub const DEFAULT_MAX_LIFETIME_MS: i64 = 7 * 24 * 3600 * 1000;
/// `delegation.token.expiry.time.ms` default: 1 day.
pub const DEFAULT_EXPIRY_TIME_MS: i64 = 24 * 3600 * 1000;
/// `delegation.token.expiry.check.interval.ms` default: 1 hour.
pub const DEFAULT_EXPIRY_CHECK_INTERVAL_MS: u64 = 3600 * 1000;

/// The token settings (Kafka's names and defaults).
#[derive(Debug, Clone)]
pub struct TokenPolicy {
    /// `delegation.token.secret.key`: tokens are enabled only with it (else every token request
    /// is DELEGATION_TOKEN_AUTH_DISABLED, 61). Every broker of a cluster needs the same key.
    pub secret: Option<String>,
    /// `delegation.token.max.lifetime.ms`: no token lives longer, whatever it asks.
    pub max_lifetime_ms: i64,
    /// `delegation.token.expiry.time.ms`: a token expires this long after its creation or last
    /// renewal (and a renewal extends by at most this).
    pub expiry_time_ms: i64,
    /// `delegation.token.expiry.check.interval.ms`: how often expired tokens are removed.
    pub expiry_check_interval_ms: u64,
}

impl Default for TokenPolicy {
    fn default() -> Self {
        TokenPolicy {
            secret: None,
            max_lifetime_ms: DEFAULT_MAX_LIFETIME_MS,
            expiry_time_ms: DEFAULT_EXPIRY_TIME_MS,
            expiry_check_interval_ms: DEFAULT_EXPIRY_CHECK_INTERVAL_MS,
        }
    }
}

/// A refused token request: the Kafka error and a message for the log.
pub type TokenRefusal = (ResponseError, String);

impl TokenPolicy {
    /// Whether tokens are enabled (a secret key is set).
    pub fn enabled(&self) -> bool {
        self.secret.is_some()
    }

    /// `HmacSHA512(secret, token_id)`; `None` without a secret.
    pub fn hmac(&self, token_id: &str) -> Option<Vec<u8>> {
        let secret = self.secret.as_ref()?;
        let mut m = Hmac::<Sha512>::new_from_slice(secret.as_bytes()).ok()?;
        m.update(token_id.as_bytes());
        Some(m.finalize().into_bytes().to_vec())
    }

    /// A new token for `owner`, asked by `requester`, at `now_ms` (Kafka's
    /// `createDelegationToken`): maximum lifetime `max_lifetime_ms` when positive and below the
    /// configured one, expiry after `expiry_time_ms` (at most the maximum).
    ///
    /// Errors: DELEGATION_TOKEN_AUTH_DISABLED (61) without a secret key.
    pub fn create(
        &self,
        owner: String,
        requester: String,
        renewers: Vec<String>,
        max_lifetime_ms: i64,
        now_ms: i64,
    ) -> Result<DelegationToken, TokenRefusal> {
        self.check_enabled()?;
        let mut life = self.max_lifetime_ms;
        if max_lifetime_ms > 0 {
            life = life.min(max_lifetime_ms);
        }
        let max_ms = now_ms.saturating_add(life);
        let mut id = [0u8; 16];
        rand::thread_rng().fill_bytes(&mut id);
        Ok(DelegationToken {
            token_id: frieda_meta::controller::base64_url(&id),
            owner,
            requester,
            renewers,
            issue_ms: now_ms,
            max_ms,
            expiry_ms: max_ms.min(now_ms.saturating_add(self.expiry_time_ms)),
        })
    }

    /// `token` renewed by `principal` for `period_ms` at `now_ms` (Kafka's
    /// `renewDelegationToken`): the new expiry is `now + min(period, expiry_time_ms)` (the
    /// configured time when `period_ms` is not positive), at most the token's maximum.
    ///
    /// Errors: DELEGATION_TOKEN_AUTH_DISABLED (61); DELEGATION_TOKEN_EXPIRED (66) for an
    /// expired token; DELEGATION_TOKEN_OWNER_MISMATCH (63) when `principal` is neither its
    /// owner nor a renewer.
    pub fn renew(
        &self,
        token: &DelegationToken,
        principal: &str,
        period_ms: i64,
        now_ms: i64,
    ) -> Result<DelegationToken, TokenRefusal> {
        self.check_enabled()?;
        if token.expired(now_ms) {
            return Err(expired(token));
        }
        if !token.renewer(principal) {
            return Err(mismatch(token, principal));
        }
        let mut period = self.expiry_time_ms;
        if period_ms > 0 {
            period = period.min(period_ms);
        }
        let mut t = token.clone();
        t.expiry_ms = token.max_ms.min(now_ms.saturating_add(period));
        Ok(t)
    }

    /// `token` expired by `principal` in `period_ms` at `now_ms` (Kafka's
    /// `expireDelegationToken`): `Ok(None)` removes it at once (a negative period), else the
    /// token with expiry `now + period` (at most its maximum).
    ///
    /// Errors: DELEGATION_TOKEN_AUTH_DISABLED (61); DELEGATION_TOKEN_OWNER_MISMATCH (63) when
    /// `principal` is neither owner nor renewer; DELEGATION_TOKEN_EXPIRED (66) for an expired
    /// token and a period of 0 or more.
    pub fn expire(
        &self,
        token: &DelegationToken,
        principal: &str,
        period_ms: i64,
        now_ms: i64,
    ) -> Result<Option<DelegationToken>, TokenRefusal> {
        self.check_enabled()?;
        if !token.renewer(principal) {
            return Err(mismatch(token, principal));
        }
        if period_ms < 0 {
            return Ok(None);
        }
        if token.expired(now_ms) {
            return Err(expired(token));
        }
        let mut t = token.clone();
        t.expiry_ms = token.max_ms.min(now_ms.saturating_add(period_ms));
        Ok(Some(t))
    }

    fn check_enabled(&self) -> Result<(), TokenRefusal> {
        if self.enabled() {
            Ok(())
        } else {
            Err((
                ResponseError::DelegationTokenAuthDisabled,
                "delegation tokens are disabled: delegation.token.secret.key is not set".into(),
            ))
        }
    }
}

fn expired(t: &DelegationToken) -> TokenRefusal {
    (
        ResponseError::DelegationTokenExpired,
        format!("delegation token {} has expired", t.token_id),
    )
}

fn mismatch(t: &DelegationToken, principal: &str) -> TokenRefusal {
    (
        ResponseError::DelegationTokenOwnerMismatch,
        format!(
            "{principal} is neither the owner nor a renewer of delegation token {}",
            t.token_id
        ),
    )
}

/// A token with what authentication needs.
#[derive(Debug, Clone)]
pub struct KnownToken {
    /// The token.
    pub token: DelegationToken,
    /// Its HMAC (the client's password is its base64).
    pub hmac: Vec<u8>,
    /// The SCRAM credential of the password for each mechanism (index: SHA-256, SHA-512).
    scram: [ScramCredential; 2],
}

#[derive(Debug, Default)]
struct Cache {
    /// The tokens of the metadata, as given (kept while tokens are disabled too).
    tokens: DelegationTokens,
    /// Tokens by id, with their credentials (empty while tokens are disabled).
    by_id: HashMap<String, Arc<KnownToken>>,
    /// Token id by HMAC.
    by_hmac: HashMap<Vec<u8>, String>,
}

/// The tokens in force with their HMACs and SCRAM credentials, replaced on every metadata
/// change (Kafka's `DelegationTokenCache`). While tokens are disabled it keeps the metadata's
/// tokens as they are ([`snapshot`](Self::snapshot)) and authenticates none.
#[derive(Debug, Default)]
pub struct TokenStore {
    /// The settings.
    pub policy: TokenPolicy,
    cache: RwLock<Arc<Cache>>,
}

impl TokenStore {
    /// An empty store deciding by `policy`.
    pub fn new(policy: TokenPolicy) -> Self {
        TokenStore {
            policy,
            cache: Default::default(),
        }
    }

    /// Takes the tokens of the metadata: known ones keep their credentials (a renewal only
    /// moves the expiry), new ones get theirs (PBKDF2 at Kafka's 4096 iterations, a random
    /// salt per broker, as Kafka's `prepareScramCredentials`).
    pub fn replace(&self, tokens: &DelegationTokens) {
        let old = self.cache.read().clone();
        if old.tokens == *tokens {
            return;
        }
        let mut cache = Cache {
            tokens: tokens.clone(),
            ..Cache::default()
        };
        for (id, t) in tokens.iter().filter(|_| self.policy.enabled()) {
            let known = match old.by_id.get(id) {
                Some(k) => Arc::new(KnownToken {
                    token: t.clone(),
                    ..(**k).clone()
                }),
                None => {
                    let Some(hmac) = self.policy.hmac(id) else {
                        continue;
                    };
                    Arc::new(KnownToken {
                        token: t.clone(),
                        scram: ScramMechanism::ALL.map(|m| credential(m, &hmac)),
                        hmac,
                    })
                }
            };
            cache.by_hmac.insert(known.hmac.clone(), id.clone());
            cache.by_id.insert(id.clone(), known);
        }
        *self.cache.write() = Arc::new(cache);
    }

    /// The token of `token_id`.
    pub fn get(&self, token_id: &str) -> Option<Arc<KnownToken>> {
        self.cache.read().by_id.get(token_id).cloned()
    }

    /// The token whose HMAC is `hmac` (Renew and Expire name tokens by it).
    pub fn by_hmac(&self, hmac: &[u8]) -> Option<Arc<KnownToken>> {
        let c = self.cache.read();
        c.by_hmac.get(hmac).and_then(|id| c.by_id.get(id)).cloned()
    }

    /// The tokens of the metadata as last given (what a single broker persists).
    pub fn snapshot(&self) -> DelegationTokens {
        self.cache.read().tokens.clone()
    }

    /// Every token that authenticates (none while tokens are disabled).
    pub fn all(&self) -> Vec<Arc<KnownToken>> {
        let mut v: Vec<_> = self.cache.read().by_id.values().cloned().collect();
        v.sort_by(|a, b| a.token.token_id.cmp(&b.token.token_id));
        v
    }
}

impl KnownToken {
    /// The SCRAM credential a token login with `mechanism` is checked against.
    pub fn credential(&self, mechanism: ScramMechanism) -> ScramCredential {
        self.scram[usize::from(mechanism == ScramMechanism::Sha512)].clone()
    }
}

/// The credential of password `base64(hmac)` for `m`.
fn credential(m: ScramMechanism, hmac: &[u8]) -> ScramCredential {
    use base64::Engine;
    let password = base64::engine::general_purpose::STANDARD.encode(hmac);
    let mut salt = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut salt);
    let salted = m.salted_password(password.as_bytes(), &salt, MIN_ITERATIONS as u32);
    m.credential(&salt, MIN_ITERATIONS, &salted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> TokenPolicy {
        TokenPolicy {
            secret: Some("secret".into()),
            max_lifetime_ms: 10_000,
            expiry_time_ms: 1_000,
            ..Default::default()
        }
    }

    #[test]
    fn lifetimes_follow_kafkas_controller() {
        let p = policy();
        let t = p
            .create("User:a".into(), "User:a".into(), vec![], 0, 100)
            .unwrap();
        assert_eq!((t.issue_ms, t.max_ms, t.expiry_ms), (100, 10_100, 1_100));
        assert_eq!(t.token_id.len(), 22);
        // A shorter maximum asked for is taken; a longer one is cut to the configured one.
        let short = p.create("User:a".into(), "User:a".into(), vec![], 500, 100);
        assert_eq!(short.unwrap().expiry_ms, 600);
        let long = p.create("User:a".into(), "User:a".into(), vec![], 1 << 40, 100);
        assert_eq!(long.unwrap().max_ms, 10_100);
        // Renewal: at most expiry.time.ms, never past the maximum.
        assert_eq!(p.renew(&t, "User:a", -1, 1_000).unwrap().expiry_ms, 2_000);
        assert_eq!(p.renew(&t, "User:a", 50, 1_000).unwrap().expiry_ms, 1_050);
        let late = DelegationToken {
            expiry_ms: 9_950,
            ..t.clone()
        };
        assert_eq!(
            p.renew(&late, "User:a", 0, 9_900).unwrap().expiry_ms,
            10_100
        );
        assert_eq!(
            p.renew(&t, "User:b", 0, 1_000).unwrap_err().0,
            ResponseError::DelegationTokenOwnerMismatch
        );
        assert_eq!(
            p.renew(&t, "User:a", 0, 1_101).unwrap_err().0,
            ResponseError::DelegationTokenExpired
        );
        // Expiry: negative removes, even an expired token; otherwise like a renewal.
        assert_eq!(p.expire(&t, "User:a", -1, 5_000).unwrap(), None);
        assert_eq!(
            p.expire(&t, "User:a", 0, 5_000).unwrap_err().0,
            ResponseError::DelegationTokenExpired
        );
        assert_eq!(
            p.expire(&t, "User:a", 10, 1_000)
                .unwrap()
                .unwrap()
                .expiry_ms,
            1_010
        );
        let disabled = TokenPolicy::default();
        assert_eq!(
            disabled
                .create("User:a".into(), "User:a".into(), vec![], 0, 0)
                .unwrap_err()
                .0,
            ResponseError::DelegationTokenAuthDisabled
        );
    }

    #[test]
    fn renewers_and_requesters() {
        let p = policy();
        let t = p
            .create(
                "User:a".into(),
                "User:r".into(),
                vec!["User:b".into()],
                0,
                0,
            )
            .unwrap();
        assert!(t.renewer("User:a") && t.renewer("User:b") && !t.renewer("User:r"));
        assert!(t.owner_or_renewer("User:r") && !t.owner_or_renewer("User:c"));
    }

    /// Kafka's HMAC: HmacSHA512 keyed by the secret's UTF-8 bytes over the token id's.
    #[test]
    fn hmac_is_hmac_sha512_of_the_token_id() {
        let p = policy();
        let mut m = Hmac::<Sha512>::new_from_slice(b"secret").unwrap();
        m.update(b"token-1");
        assert_eq!(
            p.hmac("token-1").unwrap(),
            m.finalize().into_bytes().to_vec()
        );
        assert_eq!(TokenPolicy::default().hmac("token-1"), None);
    }

    #[test]
    fn store_finds_tokens_by_id_and_hmac_and_keeps_credentials_on_renewal() {
        let store = TokenStore::new(policy());
        let t = store
            .policy
            .create("User:a".into(), "User:a".into(), vec![], 0, 0)
            .unwrap();
        let mut tokens = DelegationTokens::new();
        tokens.insert(t.token_id.clone(), t.clone());
        store.replace(&tokens);
        let k = store.get(&t.token_id).unwrap();
        assert_eq!(store.by_hmac(&k.hmac).unwrap().token, t);
        let salt = k.credential(ScramMechanism::Sha256).salt;
        tokens.get_mut(&t.token_id).unwrap().expiry_ms += 5;
        store.replace(&tokens);
        let k2 = store.get(&t.token_id).unwrap();
        assert_eq!(k2.token.expiry_ms, t.expiry_ms + 5);
        assert_eq!(k2.credential(ScramMechanism::Sha256).salt, salt);
        store.replace(&DelegationTokens::new());
        assert!(store.get(&t.token_id).is_none() && store.all().is_empty());
    }

    /// Without a secret key the store keeps the metadata's tokens (a single broker persists
    /// them as they are) but authenticates none.
    #[test]
    fn a_disabled_store_keeps_tokens_and_authenticates_none() {
        let t = policy()
            .create("User:a".into(), "User:a".into(), vec![], 0, 0)
            .unwrap();
        let tokens: DelegationTokens = [(t.token_id.clone(), t.clone())].into();
        let store = TokenStore::new(TokenPolicy::default());
        store.replace(&tokens);
        assert_eq!(store.snapshot(), tokens);
        assert!(store.get(&t.token_id).is_none() && store.all().is_empty());
    }
}
