//! Security: who a connection is and what it may do.
//!
//! ```text
//! listener (security protocol) ── TLS handshake (tls) ── SASL handshake (sasl) ── Session
//!                                                                                   │
//!                        every request ── Authorizer (acl) ── allowed / *_AUTHORIZATION_FAILED
//! ```
//!
//! - [`config`]: Kafka's settings (`listener.security.protocol.map`, `ssl.*`, `sasl.*`,
//!   `listener.name.<listener>.` prefixes, `authorizer.class.name`, `super.users`).
//! - [`tls`]: rustls server configurations from PEM files, reloaded when the files change.
//! - [`sasl`]: SaslHandshake / SaslAuthenticate (KIP-43, KIP-152) and the mechanisms PLAIN
//!   (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677, KIP-84), re-authentication (KIP-368).
//! - [`scram`]: the SCRAM credential store (AlterUserScramCredentials, KIP-554).
//! - [`acl`]: ACL bindings and the authorizer with Kafka's `StandardAuthorizer` semantics.
//!
//! A connection's identity is a [`Session`]: the principal (`User:ANONYMOUS` on a PLAINTEXT
//! listener, the client certificate's distinguished name on an SSL listener with client
//! authentication, the SASL user name on a SASL listener), the listener and the client address.

pub mod acl;
pub mod audit;
pub mod client;
pub mod config;
pub mod delegation;
pub mod principal;
pub mod sasl;
pub mod scram;
pub mod tls;

pub use principal::Principal;

use std::net::IpAddr;
use std::sync::Arc;

/// A listener's security protocol (Kafka's `SecurityProtocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecurityProtocol {
    /// No encryption, no authentication: every client is `User:ANONYMOUS`.
    Plaintext,
    /// TLS; the principal is the client certificate's subject when `ssl.client.auth` asks for one.
    Ssl,
    /// SASL authentication without encryption.
    SaslPlaintext,
    /// SASL authentication over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Parses Kafka's name (`PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`), any case.
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Some(Self::Plaintext),
            "SSL" => Some(Self::Ssl),
            "SASL_PLAINTEXT" => Some(Self::SaslPlaintext),
            "SASL_SSL" => Some(Self::SaslSsl),
            _ => None,
        }
    }

    /// Kafka's name of the protocol.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plaintext => "PLAINTEXT",
            Self::Ssl => "SSL",
            Self::SaslPlaintext => "SASL_PLAINTEXT",
            Self::SaslSsl => "SASL_SSL",
        }
    }

    /// Whether connections are encrypted with TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    /// Whether clients authenticate with SASL before any other request but ApiVersions.
    pub fn uses_sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }
}

/// Who sent a request: the authenticated principal, over which listener, from where. Shared by
/// every request of a connection until it re-authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The authenticated principal (`User:ANONYMOUS` when nothing authenticated it).
    pub principal: Principal,
    /// Name of the listener the connection came in on (upper case, `PLAINTEXT`).
    pub listener: Arc<str>,
    /// The listener's security protocol.
    pub protocol: SecurityProtocol,
    /// The client's IP address (ACL host matching uses its text form).
    pub client_address: IpAddr,
    /// The SASL mechanism that authenticated the principal, if any.
    pub mechanism: Option<sasl::Mechanism>,
    /// Authenticated with a delegation token (KIP-48; Kafka's
    /// `KafkaPrincipal.tokenAuthenticated`): such a session may not create, renew, expire or
    /// describe tokens.
    pub token_authenticated: bool,
}

impl Session {
    /// An unauthenticated session on `listener` (`User:ANONYMOUS`).
    pub fn anonymous(listener: Arc<str>, protocol: SecurityProtocol, client: IpAddr) -> Self {
        Session {
            principal: Principal::anonymous(),
            listener,
            protocol,
            client_address: client,
            mechanism: None,
            token_authenticated: false,
        }
    }
}

/// What a listener asks of its connections.
pub struct ListenerSecurity {
    /// Listener name (upper case).
    pub name: Arc<str>,
    /// Its security protocol.
    pub protocol: SecurityProtocol,
    /// TLS (`SSL`, `SASL_SSL`).
    pub tls: Option<Arc<tls::TlsServer>>,
    /// SASL (`SASL_PLAINTEXT`, `SASL_SSL`).
    pub sasl: Option<Arc<sasl::SaslListener>>,
}

impl std::fmt::Debug for ListenerSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerSecurity")
            .field("name", &self.name)
            .field("protocol", &self.protocol)
            .finish()
    }
}

impl ListenerSecurity {
    /// A PLAINTEXT listener (tests, tools).
    pub fn plaintext(name: &str) -> Arc<Self> {
        Arc::new(ListenerSecurity {
            name: name.into(),
            protocol: SecurityProtocol::Plaintext,
            tls: None,
            sasl: None,
        })
    }
}

/// The broker's security state: each listener's TLS and SASL settings, the SCRAM credentials
/// and the authorizer with its ACLs.
pub struct Security {
    /// The settings.
    pub config: config::SecurityConfig,
    listeners: std::collections::HashMap<String, Arc<ListenerSecurity>>,
    /// SCRAM credentials.
    pub scram: Arc<scram::ScramStore>,
    /// Delegation tokens (KIP-48) with their HMACs and SCRAM credentials.
    pub tokens: Arc<delegation::TokenStore>,
    /// The authorizer (`authorizer.class.name` set), else every request is allowed.
    pub authorizer: Option<acl::Authorizer>,
    /// Client quotas (produce and fetch byte rates per user and client id).
    pub quotas: crate::quota::QuotaManager,
    /// The client quotas as configured (for DescribeClientQuotas).
    client_quotas: parking_lot::RwLock<Arc<frieda_meta::ClientQuotas>>,
}

impl Security {
    /// Builds the security of `listeners` (name, protocol): TLS files loaded, JAAS users read.
    ///
    /// Errors: a TLS listener whose key or trust store does not load, a SASL listener without
    /// mechanisms or with PLAIN but no users (each names the setting).
    pub fn new(
        cfg: &config::SecurityConfig,
        listeners: &[(String, SecurityProtocol)],
    ) -> anyhow::Result<Self> {
        use anyhow::Context;
        let scram = Arc::new(scram::ScramStore::default());
        let tokens = Arc::new(delegation::TokenStore::new(cfg.tokens.clone()));
        let mut map = std::collections::HashMap::new();
        for (name, protocol) in listeners {
            let tls = if protocol.uses_tls() {
                Some(Arc::new(tls::TlsServer::load(cfg, name)?))
            } else {
                None
            };
            let sasl = if protocol.uses_sasl() {
                let mechanisms: Vec<sasl::Mechanism> = cfg
                    .listener_value(name, "sasl.enabled.mechanisms")
                    .unwrap_or("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512")
                    .split(',')
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                    .map(|m| {
                        sasl::Mechanism::parse(m).with_context(|| {
                            format!("sasl.enabled.mechanisms: `{m}` is not supported")
                        })
                    })
                    .collect::<anyhow::Result<_>>()?;
                if mechanisms.is_empty() {
                    anyhow::bail!("listener {name}: sasl.enabled.mechanisms is empty");
                }
                let plain_users = match cfg.jaas_config(name, "PLAIN") {
                    Some(jaas) => sasl::plain::jaas_users(jaas)
                        .with_context(|| format!("listener {name}: plain.sasl.jaas.config"))?,
                    None => Default::default(),
                };
                if mechanisms.contains(&sasl::Mechanism::Plain) && plain_users.is_empty() {
                    tracing::warn!(listener = %name, "SASL PLAIN is enabled but no users are configured (listener.name.<listener>.plain.sasl.jaas.config with user_<name>=\"<password>\"): every PLAIN login will fail");
                }
                let oauth = if mechanisms.contains(&sasl::Mechanism::OAuthBearer) {
                    let v = sasl::oauthbearer::OAuthValidator::new(|k| {
                        cfg.listener_value(name, k).map(str::to_string)
                    })
                    .with_context(|| format!("listener {name}: OAUTHBEARER"))?;
                    if !v.secured() {
                        tracing::warn!(listener = %name, "OAUTHBEARER without sasl.oauthbearer.jwks.endpoint.url accepts unsigned tokens (Kafka's unsecured validator): for tests only");
                    }
                    Some(Arc::new(v))
                } else {
                    None
                };
                let reauth_ms = cfg
                    .listener_value(name, "connections.max.reauth.ms")
                    .map(|v| v.trim().parse::<u64>())
                    .transpose()
                    .context("connections.max.reauth.ms")?
                    .unwrap_or(0);
                Some(Arc::new(sasl::SaslListener {
                    mechanisms,
                    credentials: sasl::Credentials {
                        plain_users,
                        scram: scram.clone(),
                        tokens: tokens.clone(),
                        oauth,
                    },
                    reauth_ms,
                }))
            } else {
                None
            };
            map.insert(
                name.clone(),
                Arc::new(ListenerSecurity {
                    name: name.as_str().into(),
                    protocol: *protocol,
                    tls,
                    sasl,
                }),
            );
        }
        let authorizer = cfg.authorizer.then(|| {
            acl::Authorizer::new(
                cfg.super_users.clone(),
                cfg.allow_everyone_if_no_acl_found,
                Default::default(),
            )
        });
        Ok(Security {
            config: cfg.clone(),
            listeners: map,
            scram,
            tokens,
            authorizer,
            quotas: crate::quota::QuotaManager::new(cfg.quota_window),
            client_quotas: Default::default(),
        })
    }

    /// The security of listener `name` (PLAINTEXT for a name not configured).
    pub fn listener(&self, name: &str) -> Arc<ListenerSecurity> {
        self.listeners
            .get(name)
            .cloned()
            .unwrap_or_else(|| ListenerSecurity::plaintext(name))
    }

    /// Takes new SCRAM credentials, ACLs, client quotas and delegation tokens (from
    /// `meta/security.json` or the metadata image).
    pub fn apply(
        &self,
        creds: &scram::ScramCredentials,
        acls: &std::collections::BTreeSet<acl::AclEntry>,
        quotas: &frieda_meta::ClientQuotas,
        tokens: &frieda_meta::DelegationTokens,
    ) {
        self.tokens.replace(tokens);
        if *self.scram.snapshot() != *creds {
            self.scram.replace(creds.clone());
        }
        if let Some(a) = &self.authorizer {
            a.replace(acls.clone());
        }
        if **self.client_quotas.read() != *quotas {
            self.quotas.replace(quotas);
            *self.client_quotas.write() = Arc::new(quotas.clone());
        }
    }

    /// The client quotas as configured.
    pub fn client_quotas(&self) -> Arc<frieda_meta::ClientQuotas> {
        self.client_quotas.read().clone()
    }

    /// Whether `session` may do `operation` on `resource_type`/`name` (always, without an
    /// authorizer), for `request` (Kafka's API name, `Produce`; or `Controller` for the quorum's
    /// peers). The decision goes to the audit log in Kafka's words ([`audit`]): denied at INFO,
    /// allowed at DEBUG.
    pub fn authorize(
        &self,
        session: &Session,
        request: &str,
        operation: i8,
        resource_type: i8,
        name: &str,
    ) -> bool {
        self.authorize_logged(session, request, operation, resource_type, name, true)
    }

    /// As [`authorize`](Self::authorize) for a check that only filters what a request sees
    /// (an all-topics listing, ListGroups): a denial is logged at TRACE only, as Kafka's
    /// `logIfDenied = false`.
    pub fn authorize_filter(
        &self,
        session: &Session,
        request: &str,
        operation: i8,
        resource_type: i8,
        name: &str,
    ) -> bool {
        self.authorize_logged(session, request, operation, resource_type, name, false)
    }

    fn authorize_logged(
        &self,
        session: &Session,
        request: &str,
        operation: i8,
        resource_type: i8,
        name: &str,
        log_if_denied: bool,
    ) -> bool {
        let Some(a) = &self.authorizer else {
            return true;
        };
        let rule = a.decide(session, operation, resource_type, name);
        let principal = session.principal.to_string();
        let host = session.client_address.to_string();
        audit::log(
            &audit::Decision {
                principal: &principal,
                host: &host,
                operation,
                resource_type,
                resource_name: name,
                request,
                rule: &rule,
            },
            log_if_denied,
        );
        rule.allows()
    }

    /// Whether `session` may do `operation` on some resource of `resource_type`.
    pub fn authorize_any(&self, session: &Session, operation: i8, resource_type: i8) -> bool {
        self.authorizer
            .as_ref()
            .is_none_or(|a| a.authorize_any(session, operation, resource_type))
    }

    /// The `authorized_operations` bit field of a resource for `session`.
    pub fn authorized_operations(&self, session: &Session, resource_type: i8, name: &str) -> i32 {
        match &self.authorizer {
            Some(a) => a.authorized_operations(session, resource_type, name),
            None => acl::all_operations(resource_type),
        }
    }

    /// Checks every TLS listener's files for changes every `ssl.reload.check.interval.ms`
    /// until `shutdown` (a task of the broker's runtime).
    pub async fn reload_tls(self: Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let tls: Vec<Arc<tls::TlsServer>> = self
            .listeners
            .values()
            .filter_map(|l| l.tls.clone())
            .collect();
        if tls.is_empty() {
            return;
        }
        let every = std::time::Duration::from_millis(self.config.ssl_reload_check_interval_ms);
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = shutdown.changed() => return,
            }
            for t in &tls {
                let t = t.clone();
                let _ = tokio::task::spawn_blocking(move || t.reload_if_changed()).await;
            }
        }
    }
}
