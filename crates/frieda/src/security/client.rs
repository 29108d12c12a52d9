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

use super::config::SecurityConfig;
use super::sasl::{plain, Mechanism};
use super::SecurityProtocol;
use anyhow::{bail, Context};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::sync::Arc;

/// SASL credentials of this broker.
#[derive(Clone)]
pub struct SaslCredentials {
    /// Mechanism (`sasl.mechanism.inter.broker.protocol`).
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
        let get = |k: &str| cfg.listener_value(listener, k).map(str::to_string);
        let tls = if protocol.uses_tls() {
            let pem = match (get("ssl.truststore.location"), get("ssl.truststore.certificates")) {
                (Some(path), _) => std::fs::read(&path)
                    .with_context(|| format!("ssl.truststore.location {path}"))?,
                (None, Some(inline)) => inline.into_bytes(),
                (None, None) => bail!("the inter-broker listener {listener} uses TLS: brokers need ssl.truststore.location to verify each other"),
            };
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&pem) {
                roots
                    .add(cert.context("ssl.truststore: not valid PEM")?)
                    .context("ssl.truststore: a certificate is not usable as a trust anchor")?;
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let builder = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .context("TLS versions")?
                .with_root_certificates(roots);
            // The broker's own key store doubles as its client certificate (mTLS listeners).
            let keystore = match (
                get("ssl.keystore.location"),
                get("ssl.keystore.certificate.chain"),
                get("ssl.keystore.key"),
            ) {
                (Some(path), _, _) => {
                    let text = std::fs::read(&path)
                        .with_context(|| format!("ssl.keystore.location {path}"))?;
                    Some((text.clone(), text))
                }
                (None, Some(chain), Some(key)) => Some((chain.into_bytes(), key.into_bytes())),
                _ => None,
            };
            let config = match keystore {
                Some((chain, key)) => {
                    let chain: Vec<CertificateDer<'static>> =
                        CertificateDer::pem_slice_iter(&chain)
                            .collect::<Result<_, _>>()
                            .context("ssl.keystore: certificate chain")?;
                    let key = PrivateKeyDer::from_pem_slice(&key).context("ssl.keystore: key")?;
                    builder
                        .with_client_auth_cert(chain, key)
                        .context("ssl.keystore: client certificate")?
                }
                None => builder.with_no_client_auth(),
            };
            Some(Arc::new(config))
        } else {
            None
        };
        let sasl = if protocol.uses_sasl() {
            let name =
                get("sasl.mechanism.inter.broker.protocol").unwrap_or_else(|| "PLAIN".into());
            let mechanism = Mechanism::parse(name.trim())
                .filter(|m| *m != Mechanism::OAuthBearer)
                .with_context(|| format!("sasl.mechanism.inter.broker.protocol: `{name}` is not supported between brokers (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"))?;
            let jaas = cfg.jaas_config(listener, mechanism.name()).with_context(|| {
                format!(
                    "listener.name.{}.{}.sasl.jaas.config: the broker's own username and password for inter-broker SASL",
                    listener.to_ascii_lowercase(),
                    mechanism.name().to_ascii_lowercase()
                )
            })?;
            let options = plain::jaas_options(jaas)?;
            let opt = |k: &str| {
                options
                    .iter()
                    .find(|(ok, _)| ok == k)
                    .map(|(_, v)| v.clone())
            };
            let (Some(username), Some(password)) = (opt("username"), opt("password")) else {
                bail!("the JAAS line of listener {listener} for {} needs username and password options (the broker's own login)", mechanism.name());
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
