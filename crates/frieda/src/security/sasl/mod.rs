//! SASL authentication of a connection (Kafka's `SaslServerAuthenticator`): SaslHandshake
//! names the mechanism (KIP-43), SaslAuthenticate carries its messages (KIP-152; SaslHandshake
//! v0 clients send them as bare size-prefixed tokens instead), and a successful exchange fixes
//! the connection's principal. Before that only ApiVersions, SaslHandshake and
//! SaslAuthenticate are accepted; anything else closes the connection. With
//! `connections.max.reauth.ms` the session has a lifetime (SaslAuthenticate v1+
//! `session_lifetime_ms`) and the client authenticates again on the live connection before it
//! ends, as the same principal (KIP-368); a request after the end closes the connection.
//!
//! Mechanisms: [`plain`] (RFC 4616, users from the listener's JAAS configuration) and
//! [`scram`] (RFC 5802 with SHA-256 and SHA-512, credentials from AlterUserScramCredentials).

pub mod oauthbearer;
pub mod plain;
pub mod scram;

use super::principal::Principal;
use super::scram::{ScramMechanism, ScramStore};
use super::{SecurityProtocol, Session};
use kafka_protocol::error::ResponseError;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A SASL mechanism Frieda serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mechanism {
    /// PLAIN (RFC 4616): user name and password in the clear (use it over TLS).
    Plain,
    /// SCRAM-SHA-256 or SCRAM-SHA-512 (RFC 5802, RFC 7677).
    Scram(ScramMechanism),
    /// OAUTHBEARER (RFC 7628, KIP-255/KIP-768): a JWT bearer token.
    OAuthBearer,
}

impl Mechanism {
    /// Parses a SASL mechanism name (`PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "PLAIN" => Some(Self::Plain),
            "OAUTHBEARER" => Some(Self::OAuthBearer),
            other => ScramMechanism::from_name(other).map(Self::Scram),
        }
    }

    /// The SASL name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::OAuthBearer => "OAUTHBEARER",
            Self::Scram(m) => m.name(),
        }
    }
}

/// The server side of one mechanism's exchange.
pub trait SaslServer: Send {
    /// Takes the client's next message; answers with a challenge, or with the final message
    /// and the authenticated user name.
    ///
    /// Errors: the authentication failed (the message is sent to the client).
    fn step(&mut self, message: &[u8]) -> Result<Step, AuthFailure>;
}

/// What a mechanism answers a client message with.
#[derive(Debug)]
pub enum Step {
    /// More is needed: this goes to the client, whose answer comes next.
    Challenge(Vec<u8>),
    /// Authenticated as `user`; `message` goes to the client (may be empty).
    Done {
        /// The authenticated user name (the principal is `User:<user>`).
        user: String,
        /// The server's final message.
        message: Vec<u8>,
        /// When the credential expires (ms since the epoch; an OAUTHBEARER token's `exp`, a
        /// delegation token's expiry): the session must re-authenticate before then.
        expires_at_ms: Option<i64>,
        /// Authenticated with a delegation token (SCRAM `tokenauth=true`): `user` is the
        /// token's owner, and the session may not ask for tokens (KIP-48).
        token_authenticated: bool,
    },
}

/// A failed authentication: what the client is told (Kafka's wording where it has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthFailure(pub String);

impl AuthFailure {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        AuthFailure(message.into())
    }
}

/// Where mechanisms find credentials: the listener's PLAIN users, the SCRAM store.
pub struct Credentials {
    /// PLAIN users and passwords (`user_<name>="<password>"` of the listener's JAAS config).
    pub plain_users: HashMap<String, String>,
    /// SCRAM credentials.
    pub scram: Arc<ScramStore>,
    /// Delegation tokens (SCRAM logins with `tokenauth=true`).
    pub tokens: Arc<super::delegation::TokenStore>,
    /// OAUTHBEARER token validation (when the listener enables it).
    pub oauth: Option<Arc<oauthbearer::OAuthValidator>>,
}

impl Credentials {
    fn server(&self, mechanism: Mechanism) -> Box<dyn SaslServer> {
        match mechanism {
            Mechanism::Plain => Box::new(plain::PlainServer::new(self.plain_users.clone())),
            Mechanism::Scram(m) => Box::new(
                scram::ScramServer::new(m, self.scram.clone()).with_tokens(self.tokens.clone()),
            ),
            Mechanism::OAuthBearer => match &self.oauth {
                Some(v) => Box::new(oauthbearer::OAuthServer::new(v.clone())),
                None => Box::new(Refuse),
            },
        }
    }
}

/// A mechanism without its settings: every attempt fails.
struct Refuse;

impl SaslServer for Refuse {
    fn step(&mut self, _: &[u8]) -> Result<Step, AuthFailure> {
        Err(AuthFailure::new(
            "Authentication failed: mechanism not configured",
        ))
    }
}

/// A SASL listener's settings.
pub struct SaslListener {
    /// `sasl.enabled.mechanisms` of the listener, in order.
    pub mechanisms: Vec<Mechanism>,
    /// Credentials.
    pub credentials: Credentials,
    /// `connections.max.reauth.ms` (0: sessions do not expire).
    pub reauth_ms: u64,
}

/// Where a connection's authentication stands.
enum State {
    /// Waiting for SaslHandshake (first authentication or a re-authentication).
    Handshake,
    /// The mechanism is chosen; its messages come in SaslAuthenticate requests (or bare tokens
    /// after a SaslHandshake v0).
    Exchange {
        server: Box<dyn SaslServer>,
        mechanism: Mechanism,
        bare_tokens: bool,
    },
}

/// What the connection does after an authentication step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Send the answer and go on reading.
    Continue,
    /// Send the answer (after `connection.failed.authentication.delay.ms` for a failed
    /// authentication), then close the connection.
    Close,
}

/// The answer to a SaslHandshake.
#[derive(Debug, Clone)]
pub struct HandshakeAnswer {
    /// NONE, UNSUPPORTED_SASL_MECHANISM (33) or ILLEGAL_SASL_STATE (34).
    pub error: Option<ResponseError>,
    /// The listener's enabled mechanisms.
    pub mechanisms: Vec<&'static str>,
    /// Whether to close the connection after the answer.
    pub verdict: Verdict,
}

/// The answer to a SaslAuthenticate (or a bare token).
#[derive(Debug, Clone)]
pub struct AuthenticateAnswer {
    /// NONE, SASL_AUTHENTICATION_FAILED (58) or ILLEGAL_SASL_STATE (34).
    pub error: Option<ResponseError>,
    /// Error message for the client.
    pub message: Option<String>,
    /// The mechanism's message to the client.
    pub bytes: Vec<u8>,
    /// Session lifetime to tell the client (0: none), ms.
    pub session_lifetime_ms: i64,
    /// Whether to close the connection after the answer.
    pub verdict: Verdict,
}

/// One SASL connection's authentication state (owned by its connection task).
pub struct Authenticator {
    listener: Arc<SaslListener>,
    state: State,
    /// The session once authenticated (`None` before).
    session: Option<Arc<Session>>,
    /// The session before a re-authentication (requests keep using it meanwhile).
    base: Arc<Session>,
    /// When the session ends (re-authentication due), if it does.
    expires: Option<Instant>,
}

impl Authenticator {
    /// A new connection on a SASL listener from `client`.
    pub fn new(
        listener: Arc<SaslListener>,
        name: Arc<str>,
        protocol: SecurityProtocol,
        client: IpAddr,
    ) -> Self {
        Authenticator {
            listener,
            state: State::Handshake,
            session: None,
            base: Arc::new(Session::anonymous(name, protocol, client)),
            expires: None,
        }
    }

    /// The authenticated session, if the client has authenticated.
    pub fn session(&self) -> Option<&Arc<Session>> {
        self.session.as_ref()
    }

    /// The unauthenticated session (for ApiVersions before authentication).
    pub fn unauthenticated(&self) -> &Arc<Session> {
        &self.base
    }

    /// Whether the next frame is a bare SASL token (after a SaslHandshake v0).
    pub fn expects_bare_token(&self) -> bool {
        matches!(
            self.state,
            State::Exchange {
                bare_tokens: true,
                ..
            }
        )
    }

    /// Whether the session's lifetime is over at `now` (a request other than a
    /// re-authentication must then close the connection, KIP-368).
    pub fn expired(&self, now: Instant) -> bool {
        self.expires.is_some_and(|t| now >= t)
    }

    /// Handles SaslHandshake `version` naming `mechanism`.
    pub fn handshake(&mut self, version: i16, mechanism: &str) -> HandshakeAnswer {
        let mechanisms: Vec<&'static str> =
            self.listener.mechanisms.iter().map(|m| m.name()).collect();
        if !matches!(self.state, State::Handshake) {
            return HandshakeAnswer {
                error: Some(ResponseError::IllegalSaslState),
                mechanisms,
                verdict: Verdict::Close,
            };
        }
        let chosen = Mechanism::parse(mechanism).filter(|m| self.listener.mechanisms.contains(m));
        let Some(chosen) = chosen else {
            tracing::warn!(client = %self.base.client_address, listener = %self.base.listener, mechanism,
                "closing connection: SASL mechanism not enabled on this listener");
            return HandshakeAnswer {
                error: Some(ResponseError::UnsupportedSaslMechanism),
                mechanisms,
                verdict: Verdict::Close,
            };
        };
        if let Some(s) = &self.session {
            if s.mechanism != Some(chosen) {
                tracing::warn!(client = %self.base.client_address, mechanism,
                    "closing connection: re-authentication with another SASL mechanism");
                return HandshakeAnswer {
                    error: Some(ResponseError::IllegalSaslState),
                    mechanisms,
                    verdict: Verdict::Close,
                };
            }
        }
        if version == 0 && self.session.is_some() {
            // Re-authentication needs SaslAuthenticate (KIP-368).
            return HandshakeAnswer {
                error: Some(ResponseError::IllegalSaslState),
                mechanisms,
                verdict: Verdict::Close,
            };
        }
        self.state = State::Exchange {
            server: self.listener.credentials.server(chosen),
            mechanism: chosen,
            bare_tokens: version == 0,
        };
        HandshakeAnswer {
            error: None,
            mechanisms,
            verdict: Verdict::Continue,
        }
    }

    /// Handles one mechanism message (a SaslAuthenticate of `version`, or a bare token with
    /// `version` -1), at `now`.
    pub fn authenticate(&mut self, version: i16, bytes: &[u8], now: Instant) -> AuthenticateAnswer {
        let fail = |error, message: String| AuthenticateAnswer {
            error: Some(error),
            message: Some(message),
            bytes: Vec::new(),
            session_lifetime_ms: 0,
            verdict: Verdict::Close,
        };
        let State::Exchange {
            server, mechanism, ..
        } = &mut self.state
        else {
            tracing::warn!(client = %self.base.client_address,
                "closing connection: SaslAuthenticate before SaslHandshake");
            return fail(
                ResponseError::IllegalSaslState,
                "Unexpected SaslAuthenticate request: no SaslHandshake before it".into(),
            );
        };
        let mechanism = *mechanism;
        match server.step(bytes) {
            Ok(Step::Challenge(c)) => AuthenticateAnswer {
                error: None,
                message: None,
                bytes: c,
                session_lifetime_ms: 0,
                verdict: Verdict::Continue,
            },
            Ok(Step::Done {
                user,
                message,
                expires_at_ms,
                token_authenticated,
            }) => {
                let principal = Principal::user(user);
                if let Some(prev) = &self.session {
                    if prev.principal != principal {
                        tracing::warn!(client = %self.base.client_address, previous = %prev.principal, new = %principal,
                            "closing connection: re-authenticated as another principal");
                        return fail(
                            ResponseError::SaslAuthenticationFailed,
                            "Cannot change principals during re-authentication".into(),
                        );
                    }
                }
                let reauth = self.listener.reauth_ms;
                // A SaslAuthenticate v0 (or a bare token) cannot carry a lifetime: no expiry.
                // An expiring credential (an OAUTHBEARER token) shortens it (Kafka's
                // SaslServerAuthenticator: the earlier of the two).
                let until_expiry = expires_at_ms
                    .map(|exp| u64::try_from(exp - crate::clock::now_ms()).unwrap_or(0));
                let lifetime = if reauth > 0 && version >= 1 {
                    until_expiry.map_or(reauth, |left| reauth.min(left.max(1)))
                } else {
                    0
                };
                self.expires = (lifetime > 0).then(|| now + Duration::from_millis(lifetime));
                let mut session = (*self.base).clone();
                session.principal = principal;
                session.mechanism = Some(mechanism);
                session.token_authenticated = token_authenticated;
                if self.session.is_none() {
                    tracing::debug!(client = %session.client_address, principal = %session.principal,
                        mechanism = mechanism.name(), "SASL authentication succeeded");
                } else {
                    tracing::info!(client = %session.client_address, principal = %session.principal,
                        mechanism = mechanism.name(), lifetime_ms = lifetime, "SASL session re-authenticated (KIP-368)");
                }
                self.session = Some(Arc::new(session));
                self.state = State::Handshake;
                AuthenticateAnswer {
                    error: None,
                    message: None,
                    bytes: message,
                    session_lifetime_ms: lifetime as i64,
                    verdict: Verdict::Continue,
                }
            }
            Err(AuthFailure(message)) => {
                tracing::warn!(client = %self.base.client_address, listener = %self.base.listener,
                    mechanism = mechanism.name(), reason = %message, "SASL authentication failed; closing connection");
                fail(ResponseError::SaslAuthenticationFailed, message)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listener(reauth_ms: u64) -> Arc<SaslListener> {
        Arc::new(SaslListener {
            mechanisms: vec![Mechanism::Plain],
            credentials: Credentials {
                plain_users: [("alice".to_string(), "secret".to_string())].into(),
                scram: Arc::new(ScramStore::default()),
                tokens: Default::default(),
                oauth: None,
            },
            reauth_ms,
        })
    }

    fn auth(reauth_ms: u64) -> Authenticator {
        Authenticator::new(
            listener(reauth_ms),
            "SASL_PLAINTEXT".into(),
            SecurityProtocol::SaslPlaintext,
            "127.0.0.1".parse().unwrap(),
        )
    }

    #[test]
    fn plain_login_sets_the_principal_and_a_lifetime() {
        let mut a = auth(1000);
        let now = Instant::now();
        assert_eq!(a.handshake(1, "PLAIN").error, None);
        let r = a.authenticate(2, b"\0alice\0secret", now);
        assert_eq!(r.error, None, "{:?}", r.message);
        assert_eq!(r.session_lifetime_ms, 1000);
        assert_eq!(a.session().unwrap().principal.to_string(), "User:alice");
        assert!(!a.expired(now));
        assert!(a.expired(now + Duration::from_millis(1000)));
        // Re-authentication as the same user renews the session.
        assert_eq!(a.handshake(1, "PLAIN").error, None);
        let later = now + Duration::from_millis(900);
        assert_eq!(a.authenticate(2, b"\0alice\0secret", later).error, None);
        assert!(!a.expired(now + Duration::from_millis(1000)));
    }

    #[test]
    fn wrong_password_unknown_mechanism_and_out_of_order_requests_close() {
        let mut a = auth(0);
        let r = a.authenticate(1, b"\0alice\0secret", Instant::now());
        assert_eq!(r.error, Some(ResponseError::IllegalSaslState));
        assert_eq!(r.verdict, Verdict::Close);

        let mut a = auth(0);
        let h = a.handshake(1, "SCRAM-SHA-256");
        assert_eq!(h.error, Some(ResponseError::UnsupportedSaslMechanism));
        assert_eq!(h.mechanisms, vec!["PLAIN"]);

        let mut a = auth(0);
        a.handshake(1, "PLAIN");
        let r = a.authenticate(1, b"\0alice\0wrong", Instant::now());
        assert_eq!(r.error, Some(ResponseError::SaslAuthenticationFailed));
        assert_eq!(r.verdict, Verdict::Close);
        assert!(a.session().is_none());
    }

    #[test]
    fn bare_tokens_after_handshake_v0() {
        let mut a = auth(0);
        a.handshake(0, "PLAIN");
        assert!(a.expects_bare_token());
        let r = a.authenticate(-1, b"\0alice\0secret", Instant::now());
        assert_eq!(r.error, None);
        assert_eq!(r.session_lifetime_ms, 0);
        assert!(!a.expects_bare_token());
    }
}
