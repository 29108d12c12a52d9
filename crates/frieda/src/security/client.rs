//! How this broker connects to other brokers (follower fetches, transaction markers,
//! coordinator requests): over the inter-broker listener (`inter.broker.listener.name`), with
//! its security protocol, as Kafka's inter-broker clients do.
//!
//! - TLS (`SSL`, `SASL_SSL`): the listener's trust store verifies the other broker's
//!   certificate (for the address dialled: an IP address or a host name in its subject
//!   alternative names); the listener's key store is presented when the other side asks for a
//!   client certificate (`ssl.client.auth`).
//! - SASL (`SASL_*`): `sasl.mechanism.inter.broker.protocol` (default PLAIN), with the
//!   `username` and `password` options of the listener's JAAS line for that mechanism (Kafka's
//!   convention: `listener.name.sasl_ssl.plain.sasl.jaas.config = ... username="broker"
//!   password="..." user_broker="..." ...`). With an authorizer, that principal needs
//!   CLUSTER_ACTION on the cluster, usually through `super.users`.
//!
//! Connections to the controller listener (Raft between voters, brokers' heartbeats and
//! controller requests) are secured the same way with the controller listener's settings,
//! logging in with `sasl.mechanism.controller.protocol` ([`ClientSecurity::controller`]).

use super::config::SecurityConfig;
use super::sasl::{plain, Mechanism};
use super::SecurityProtocol;
use anyhow::{bail, Context};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::sync::Arc;

/// Which of this node's outgoing connections a [`ClientSecurity`] is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// To other brokers' inter-broker listener.
    InterBroker,
    /// To the controller listener of the quorum's nodes.
    Controller,
}

impl Role {
    /// The setting naming the SASL mechanism this node logs in with.
    fn mechanism_setting(self) -> &'static str {
        match self {
            Role::InterBroker => "sasl.mechanism.inter.broker.protocol",
            Role::Controller => "sasl.mechanism.controller.protocol",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Role::InterBroker => "inter-broker",
            Role::Controller => "controller",
        }
    }
}

/// SASL credentials of this broker.
#[derive(Clone)]
pub struct SaslCredentials {
    /// Mechanism (`sasl.mechanism.inter.broker.protocol` or
    /// `sasl.mechanism.controller.protocol`).
    pub mechanism: Mechanism,
    /// User name.
    pub username: String,
    /// Password.
    pub password: String,
}

impl std::fmt::Debug for SaslCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslCredentials")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// What an inter-broker connection does before its first request.
#[derive(Clone, Default)]
pub struct ClientSecurity {
    /// TLS client configuration (`SSL`, `SASL_SSL`).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// SASL credentials (`SASL_*`).
    pub sasl: Option<SaslCredentials>,
}

impl std::fmt::Debug for ClientSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSecurity")
            .field("tls", &self.tls.is_some())
            .field("sasl", &self.sasl)
            .finish()
    }
}

impl ClientSecurity {
    /// The inter-broker client settings of `listener` (its security protocol `protocol`).
    ///
    /// Errors: a TLS listener without a trust store, a SASL listener whose JAAS line for the
    /// inter-broker mechanism has no `username`/`password`, an unsupported mechanism.
    pub fn load(
        cfg: &SecurityConfig,
        listener: &str,
        protocol: SecurityProtocol,
    ) -> anyhow::Result<Self> {
        Self::load_for(cfg, listener, protocol, Role::InterBroker)
    }

    /// How this node connects to the controller listener `listener` of the quorum's nodes
    /// (its security protocol `protocol`): TLS with the listener's trust store and its key
    /// store as the client certificate (mutual TLS), SASL as `sasl.mechanism.controller.protocol`
    /// (default PLAIN; Kafka's default is GSSAPI, which Frieda lacks) with the `username` and
    /// `password` of that mechanism's JAAS line on the listener
    /// (`listener.name.controller.plain.sasl.jaas.config`), as Kafka's KRaft nodes log in.
    ///
    /// Errors: as [`load`](Self::load); a SCRAM or OAUTHBEARER mechanism (SCRAM credentials
    /// live in the metadata log, which a node must reach before it has them).
    pub fn controller(
        cfg: &SecurityConfig,
        listener: &str,
        protocol: SecurityProtocol,
    ) -> anyhow::Result<Self> {
        Self::load_for(cfg, listener, protocol, Role::Controller)
    }

    fn load_for(
        cfg: &SecurityConfig,
        listener: &str,
        protocol: SecurityProtocol,
        role: Role,
    ) -> anyhow::Result<Self> {
        let get = |k: &str| cfg.listener_value(listener, k).map(str::to_string);
        let tls = if protocol.uses_tls() {
            match tls_from_properties(&get)? {
                Some(config) => Some(config),
                None => bail!("the {} listener {listener} uses TLS: nodes need ssl.truststore.location to verify each other", role.what()),
            }
        } else {
            None
        };
        let sasl = if protocol.uses_sasl() {
            let setting = role.mechanism_setting();
            let name = get(setting).unwrap_or_else(|| "PLAIN".into());
            let mechanism = match (role, Mechanism::parse(name.trim())) {
                (Role::InterBroker, Some(m)) if m != Mechanism::OAuthBearer => m,
                (Role::InterBroker, _) => bail!("{setting}: `{name}` is not supported between brokers (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"),
                (Role::Controller, Some(Mechanism::Plain)) => Mechanism::Plain,
                (Role::Controller, _) => bail!("{setting}: `{name}` is not supported on the controller listener (PLAIN: SCRAM credentials live in the metadata log, which a node must reach before it has them)"),
            };
            let jaas = cfg.jaas_config(listener, mechanism.name()).with_context(|| {
                format!(
                    "listener.name.{}.{}.sasl.jaas.config: the node's own username and password for {} SASL",
                    listener.to_ascii_lowercase(),
                    mechanism.name().to_ascii_lowercase(),
                    role.what()
                )
            })?;
            let Some((username, password)) = plain::jaas_login(jaas)? else {
                bail!("the JAAS line of listener {listener} for {} needs username and password options (the node's own login)", mechanism.name());
            };
            Some(SaslCredentials {
                mechanism,
                username,
                password,
            })
        } else {
            None
        };
        Ok(ClientSecurity { tls, sasl })
    }

    /// The TLS server name to verify for `addr` (`host:port`, IPv6 in brackets).
    ///
    /// Errors: the host is neither an IP address nor a valid DNS name.
    pub fn server_name(addr: &str) -> std::io::Result<ServerName<'static>> {
        let host = addr
            .rsplit_once(':')
            .map(|(h, _)| h)
            .unwrap_or(addr)
            .trim_start_matches('[')
            .trim_end_matches(']');
        ServerName::try_from(host.to_string())
            .map_err(|e| std::io::Error::other(format!("TLS server name {host}: {e}")))
    }
}

/// The TLS client configuration Kafka's settings describe (`get` looks one up):
/// `ssl.truststore.location` (a PEM file) or `ssl.truststore.certificates` (PEM text) to trust,
/// and `ssl.keystore.location` (one PEM file with the chain and key) or
/// `ssl.keystore.certificate.chain` with `ssl.keystore.key` (PEM text) as the client
/// certificate. `None` when no trust store is set.
///
/// Errors: a file that cannot be read; see [`tls_client_config`].
pub fn tls_from_properties(
    get: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Option<Arc<rustls::ClientConfig>>> {
    let pem = match (
        get("ssl.truststore.location"),
        get("ssl.truststore.certificates"),
    ) {
        (Some(path), _) => {
            std::fs::read(&path).with_context(|| format!("ssl.truststore.location {path}"))?
        }
        (None, Some(inline)) => inline.into_bytes(),
        (None, None) => return Ok(None),
    };
    let keystore = match (
        get("ssl.keystore.location"),
        get("ssl.keystore.certificate.chain"),
        get("ssl.keystore.key"),
    ) {
        (Some(path), _, _) => {
            let text =
                std::fs::read(&path).with_context(|| format!("ssl.keystore.location {path}"))?;
            Some((text.clone(), text))
        }
        (None, Some(chain), Some(key)) => Some((chain.into_bytes(), key.into_bytes())),
        _ => None,
    };
    tls_client_config(&pem, keystore).map(Some)
}

/// A TLS client configuration trusting the PEM certificates `trust_pem` (a trust store) and,
/// when `keystore` is given as (certificate chain PEM, private key PEM), presenting that
/// certificate to servers that ask for one (mutual TLS). TLS 1.2 and 1.3, rustls' defaults.
///
/// Errors: text that is not PEM, a certificate unusable as a trust anchor, a key that does not
/// match its chain.
pub fn tls_client_config(
    trust_pem: &[u8],
    keystore: Option<(Vec<u8>, Vec<u8>)>,
) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(trust_pem) {
        roots
            .add(cert.context("ssl.truststore: not valid PEM")?)
            .context("ssl.truststore: a certificate is not usable as a trust anchor")?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_root_certificates(roots);
    let config = match keystore {
        Some((chain, key)) => {
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&chain)
                .collect::<Result<_, _>>()
                .context("ssl.keystore: certificate chain")?;
            let key = PrivateKeyDer::from_pem_slice(&key).context("ssl.keystore: key")?;
            builder
                .with_client_auth_cert(chain, key)
                .context("ssl.keystore: client certificate")?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_login_uses_the_controller_mechanism_and_its_jaas_line() {
        let mut cfg = SecurityConfig::default();
        cfg.set(
            "listener.name.controller.plain.sasl.jaas.config",
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="node" password="node-secret" user_node="node-secret";"#,
        )
        .unwrap();
        cfg.set("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512")
            .unwrap();
        let c = ClientSecurity::controller(&cfg, "CONTROLLER", SecurityProtocol::SaslPlaintext)
            .unwrap();
        let sasl = c.sasl.unwrap();
        assert_eq!(sasl.mechanism, Mechanism::Plain);
        assert_eq!(
            (sasl.username.as_str(), sasl.password.as_str()),
            ("node", "node-secret")
        );
        // The inter-broker setting does not apply to the controller listener, and SCRAM is
        // refused there (its credentials live in the quorum itself).
        cfg.set("sasl.mechanism.controller.protocol", "SCRAM-SHA-256")
            .unwrap();
        let e = ClientSecurity::controller(&cfg, "CONTROLLER", SecurityProtocol::SaslPlaintext)
            .unwrap_err();
        assert!(
            e.to_string().contains("sasl.mechanism.controller.protocol"),
            "{e}"
        );
        // TLS needs a trust store to verify the other nodes.
        let e = ClientSecurity::controller(&cfg, "CONTROLLER", SecurityProtocol::Ssl).unwrap_err();
        assert!(e.to_string().contains("ssl.truststore.location"), "{e}");
    }
}
