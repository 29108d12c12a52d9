//! The security settings, with Kafka's names. A listener's TLS and SASL settings can be given
//! for every listener (`ssl.keystore.location`) or for one, prefixed with
//! `listener.name.<listener name in lower case>.` (`listener.name.sasl_ssl.ssl.keystore.location`);
//! the prefixed one wins (Kafka's `KafkaConfig.valuesWithPrefixOverride`). JAAS settings are per
//! mechanism: `listener.name.<listener>.<mechanism>.sasl.jaas.config` (or without the listener
//! prefix).

use super::principal::{Principal, PrincipalMapper};
use anyhow::{bail, Context};
use std::collections::BTreeMap;

/// Settings kept as text and read per listener (see the module doc).
const LISTENER_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.cipher.suites",
    "ssl.endpoint.identification.algorithm",
    "ssl.principal.mapping.rules",
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "sasl.server.callback.handler.class",
    "connections.max.reauth.ms",
];

/// The `sasl.oauthbearer.*` settings of OAUTHBEARER token validation.
const OAUTH_KEYS: &[&str] = &[
    "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.clock.skew.seconds",
];

/// Security settings of the broker. Units in the field docs.
#[derive(Debug, Clone)]
pub struct SecurityConfig {
    /// Listener-scoped settings as given, by full key (with or without the
    /// `listener.name.<l>.` prefix).
    raw: BTreeMap<String, String>,
    /// `authorizer.class.name`: ACLs are enforced (Kafka's
    /// `org.apache.kafka.metadata.authorizer.StandardAuthorizer`, or Frieda's own name `acl`).
    pub authorizer: bool,
    /// `super.users`: principals allowed everything (`User:admin;User:ops`).
    pub super_users: Vec<Principal>,
    /// `allow.everyone.if.no.acl.found` (default false): a resource without any ACL is open to
    /// everyone.
    pub allow_everyone_if_no_acl_found: bool,
    /// `sasl.server.max.receive.size`, bytes (default 524288): the largest request accepted
    /// before a SASL client has authenticated.
    pub sasl_max_receive_size: usize,
    /// `connection.failed.authentication.delay.ms` (default 100): a failed authentication is
    /// answered this late (the connection's own task waits; no other client is slowed).
    pub failed_authentication_delay_ms: u64,
    /// `quota.window.num` (11) and `quota.window.size.seconds` (1): the rate windows of client
    /// quotas.
    pub quota_window: crate::quota::QuotaWindow,
    /// `ssl.reload.check.interval.ms` (Frieda's, default 5000): how often the PEM files of TLS
    /// listeners are checked for changes; a changed file is loaded without a restart.
    pub ssl_reload_check_interval_ms: u64,
    /// Delegation tokens (KIP-48): `delegation.token.secret.key`,
    /// `delegation.token.max.lifetime.ms`, `delegation.token.expiry.time.ms`,
    /// `delegation.token.expiry.check.interval.ms`.
    pub tokens: super::delegation::TokenPolicy,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            raw: BTreeMap::new(),
            authorizer: false,
            super_users: Vec::new(),
            allow_everyone_if_no_acl_found: false,
            sasl_max_receive_size: 524_288,
            failed_authentication_delay_ms: 100,
            quota_window: crate::quota::QuotaWindow::default(),
            ssl_reload_check_interval_ms: 5_000,
            tokens: Default::default(),
        }
    }
}

/// Kafka's authorizer class names accepted for `authorizer.class.name`.
pub const AUTHORIZER_CLASSES: &[&str] = &[
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
    "acl",
];

impl SecurityConfig {
    /// Takes `key` if it is a security setting. `Ok(false)`: not one (the caller tries others).
    ///
    /// Errors: a bad value, or a security key Frieda does not know.
    pub fn set(&mut self, key: &str, text: &str) -> anyhow::Result<bool> {
        match key {
            "authorizer.class.name" => {
                let t = text.trim();
                self.authorizer = if t.is_empty() {
                    false
                } else if AUTHORIZER_CLASSES.contains(&t) {
                    true
                } else {
                    bail!("unknown authorizer `{t}` (use org.apache.kafka.metadata.authorizer.StandardAuthorizer)")
                };
            }
            "super.users" => {
                self.super_users = text
                    .split(';')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| {
                        Principal::parse(s)
                            .with_context(|| format!("`{s}` is not a principal (User:name)"))
                    })
                    .collect::<anyhow::Result<_>>()?;
            }
            "allow.everyone.if.no.acl.found" => {
                self.allow_everyone_if_no_acl_found = text.trim().parse()?
            }
            "sasl.server.max.receive.size" => self.sasl_max_receive_size = text.trim().parse()?,
            "connection.failed.authentication.delay.ms" => {
                self.failed_authentication_delay_ms = text.trim().parse()?
            }
            "quota.window.num" => {
                let n: usize = text.trim().parse()?;
                if n < 2 {
                    bail!("must be at least 2");
                }
                self.quota_window.samples = n;
            }
            "quota.window.size.seconds" => {
                let n: u64 = text.trim().parse()?;
                if n == 0 {
                    bail!("must be at least 1");
                }
                self.quota_window.width = std::time::Duration::from_secs(n);
            }
            "ssl.reload.check.interval.ms" => {
                let n: u64 = text.trim().parse()?;
                if n == 0 {
                    bail!("must be at least 1");
                }
                self.ssl_reload_check_interval_ms = n;
            }
            "delegation.token.secret.key" => {
                let t = text.trim();
                self.tokens.secret = (!t.is_empty()).then(|| t.to_string());
            }
            "delegation.token.max.lifetime.ms" | "delegation.token.expiry.time.ms" => {
                let n: i64 = text.trim().parse()?;
                if n < 1 {
                    bail!("must be at least 1");
                }
                if key == "delegation.token.max.lifetime.ms" {
                    self.tokens.max_lifetime_ms = n;
                } else {
                    self.tokens.expiry_time_ms = n;
                }
            }
            "delegation.token.expiry.check.interval.ms" => {
                let n: u64 = text.trim().parse()?;
                if n == 0 {
                    bail!("must be at least 1");
                }
                self.tokens.expiry_check_interval_ms = n;
            }
            "security.inter.broker.protocol"
            | "sasl.mechanism.inter.broker.protocol"
            | "sasl.mechanism.controller.protocol" => {
                self.raw.insert(key.to_string(), text.to_string());
            }
            _ => {
                let base = listener_scoped_base(key);
                if !is_security_key(base) {
                    return Ok(false);
                }
                check_value(base, text)?;
                self.raw.insert(key.to_string(), text.to_string());
            }
        }
        Ok(true)
    }

    /// Setting `key` (unprefixed, e.g. `ssl.keystore.location`) for `listener`: the
    /// `listener.name.<listener>.` form first, then the plain one.
    pub fn listener_value(&self, listener: &str, key: &str) -> Option<&str> {
        let prefixed = format!("listener.name.{}.{key}", listener.to_ascii_lowercase());
        self.raw
            .get(&prefixed)
            .or_else(|| self.raw.get(key))
            .map(String::as_str)
    }

    /// The JAAS configuration for `mechanism` (`PLAIN`) on `listener`:
    /// `listener.name.<l>.<mechanism>.sasl.jaas.config`, `<mechanism>.sasl.jaas.config`, then
    /// `listener.name.<l>.sasl.jaas.config` and `sasl.jaas.config`.
    pub fn jaas_config(&self, listener: &str, mechanism: &str) -> Option<&str> {
        let m = mechanism.to_ascii_lowercase();
        self.listener_value(listener, &format!("{m}.sasl.jaas.config"))
            .or_else(|| self.listener_value(listener, "sasl.jaas.config"))
    }

    /// `ssl.principal.mapping.rules` of `listener`. Errors: bad rules.
    pub fn principal_mapper(&self, listener: &str) -> anyhow::Result<PrincipalMapper> {
        match self.listener_value(listener, "ssl.principal.mapping.rules") {
            Some(t) => PrincipalMapper::parse(t).context("ssl.principal.mapping.rules"),
            None => Ok(PrincipalMapper::default()),
        }
    }

    /// Every security setting in force under Kafka's names, for DescribeConfigs and the
    /// start-up log: `None` for the values of passwords, private keys and JAAS configurations
    /// (sensitive, which Kafka reports as null).
    pub fn describe(&self) -> Vec<(String, Option<String>)> {
        let mut out: Vec<(String, Option<String>)> = vec![
            (
                "authorizer.class.name".into(),
                Some(if self.authorizer {
                    AUTHORIZER_CLASSES[0].into()
                } else {
                    String::new()
                }),
            ),
            (
                "super.users".into(),
                Some(
                    self.super_users
                        .iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(";"),
                ),
            ),
            (
                "allow.everyone.if.no.acl.found".into(),
                Some(self.allow_everyone_if_no_acl_found.to_string()),
            ),
            (
                "sasl.server.max.receive.size".into(),
                Some(self.sasl_max_receive_size.to_string()),
            ),
            (
                "connection.failed.authentication.delay.ms".into(),
                Some(self.failed_authentication_delay_ms.to_string()),
            ),
            (
                "ssl.reload.check.interval.ms".into(),
                Some(self.ssl_reload_check_interval_ms.to_string()),
            ),
            // A secret: reported as null when set, as Kafka reports passwords.
            ("delegation.token.secret.key".into(), None),
            (
                "delegation.token.max.lifetime.ms".into(),
                Some(self.tokens.max_lifetime_ms.to_string()),
            ),
            (
                "delegation.token.expiry.time.ms".into(),
                Some(self.tokens.expiry_time_ms.to_string()),
            ),
            (
                "delegation.token.expiry.check.interval.ms".into(),
                Some(self.tokens.expiry_check_interval_ms.to_string()),
            ),
        ];
        out.extend(self.raw.iter().map(|(k, v)| {
            let secret =
                k.contains("password") || k.ends_with("jaas.config") || k.ends_with("keystore.key");
            (k.clone(), (!secret).then(|| v.clone()))
        }));
        out
    }
}

/// `listener.name.<l>.<key>` -> `<key>`; `<mechanism>.sasl.jaas.config` -> `sasl.jaas.config`.
fn listener_scoped_base(key: &str) -> &str {
    let key = match key.strip_prefix("listener.name.") {
        Some(rest) => rest.split_once('.').map(|(_, k)| k).unwrap_or(rest),
        None => key,
    };
    match key.split_once('.') {
        Some((mech, rest))
            if (rest == "sasl.jaas.config" || rest == "sasl.server.callback.handler.class")
                && !mech.is_empty() =>
        {
            rest
        }
        _ => key,
    }
}

fn is_security_key(base: &str) -> bool {
    LISTENER_KEYS.contains(&base) || OAUTH_KEYS.contains(&base)
}

/// Checks the values that can be checked alone.
fn check_value(base: &str, text: &str) -> anyhow::Result<()> {
    let t = text.trim();
    match base {
        "ssl.keystore.type" | "ssl.truststore.type" if !t.eq_ignore_ascii_case("PEM") => {
            bail!("only PEM key and trust stores are supported (got `{t}`): convert a JKS or PKCS12 store with keytool/openssl")
        }
        "ssl.key.password" if !t.is_empty() => {
            bail!("encrypted private keys are not supported: give the key unencrypted (PKCS#8 or PKCS#1 PEM) with file permissions protecting it")
        }
        "ssl.client.auth"
            if !["none", "requested", "required"].contains(&t.to_ascii_lowercase().as_str()) =>
        {
            bail!("expected none, requested or required, got `{t}`")
        }
        "ssl.enabled.protocols" => {
            for p in t.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                if p != "TLSv1.2" && p != "TLSv1.3" {
                    bail!("unsupported TLS version `{p}` (TLSv1.2 and TLSv1.3 are)")
                }
            }
        }
        "sasl.enabled.mechanisms" => {
            for m in t.split(',').map(str::trim).filter(|m| !m.is_empty()) {
                if super::sasl::Mechanism::parse(m).is_none() {
                    bail!("unsupported SASL mechanism `{m}` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER are; GSSAPI is not)")
                }
            }
        }
        "connections.max.reauth.ms" => {
            let _: u64 = t
                .parse()
                .context("expected milliseconds (0: no re-authentication)")?;
        }
        "ssl.principal.mapping.rules" => {
            PrincipalMapper::parse(t)?;
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listener_prefix_wins_and_jaas_is_per_mechanism() {
        let mut c = SecurityConfig::default();
        assert!(c.set("ssl.keystore.location", "/a.pem").unwrap());
        assert!(c
            .set("listener.name.sasl_ssl.ssl.keystore.location", "/b.pem")
            .unwrap());
        assert!(c
            .set(
                "listener.name.sasl_ssl.plain.sasl.jaas.config",
                "x required;"
            )
            .unwrap());
        assert!(!c.set("num.partitions", "3").unwrap());
        assert_eq!(
            c.listener_value("SASL_SSL", "ssl.keystore.location"),
            Some("/b.pem")
        );
        assert_eq!(
            c.listener_value("SSL", "ssl.keystore.location"),
            Some("/a.pem")
        );
        assert_eq!(c.jaas_config("SASL_SSL", "PLAIN"), Some("x required;"));
        assert_eq!(c.jaas_config("SASL_SSL", "SCRAM-SHA-256"), None);
        assert!(c.set("ssl.keystore.type", "JKS").is_err());
        assert!(c.set("sasl.enabled.mechanisms", "GSSAPI").is_err());
        assert!(c.set("ssl.client.auth", "sometimes").is_err());
        c.set("super.users", "User:admin; User:CN=ops,O=x").unwrap();
        assert_eq!(c.super_users[1].name, "CN=ops,O=x");
        assert!(c
            .set(
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
            )
            .unwrap());
        assert!(c.authorizer);
        let shown = c.describe();
        assert!(shown
            .iter()
            .any(|(k, v)| k.ends_with("jaas.config") && v.is_none()));
    }
}
