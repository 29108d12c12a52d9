//! A connection's authentication: the TLS handshake of `SSL`/`SASL_SSL` listeners (with the
//! client certificate's principal), and the SASL requests of `SASL_*` listeners, decoded and
//! answered here in the read loop's order so that authentication is strictly sequential while
//! everything after it is overlapped.

use crate::broker::Broker;
use crate::handlers::table::{self, Auth};
use crate::handlers::{self, CloseConnection, RequestContext};
use crate::security::sasl::{Authenticator, Verdict};
use crate::security::tls::{explain_failure, subject_dn, TlsServer};
use crate::security::{ListenerSecurity, Principal, Session};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

/// Runs the TLS handshake of a new connection (bounded by `request.read.timeout.ms`) and
/// returns the stream with the session it authenticates: the client certificate's subject
/// mapped by `ssl.principal.mapping.rules` when the client sent one, else `User:ANONYMOUS`.
/// `None` when the handshake failed (logged with the peer, counted as a failed authentication).
pub async fn tls_handshake(
    tls: &TlsServer,
    listener: &ListenerSecurity,
    stream: TcpStream,
    peer: SocketAddr,
    broker: &Broker,
) -> Option<(TlsStream<TcpStream>, Session)> {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.config());
    let limit = Duration::from_millis(broker.config.request_read_timeout_ms);
    let failed = |reason: String| {
        broker
            .stats
            .authentication_failures
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(%peer, listener = %listener.name, reason, "closing connection: TLS handshake failed");
    };
    let stream = match tokio::time::timeout(limit, acceptor.accept(stream)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            // Closed before a ClientHello: a port probe or health check, not a login attempt.
            tracing::debug!(%peer, listener = %listener.name, "connection closed before the TLS handshake");
            return None;
        }
        Ok(Err(e)) => {
            failed(explain_failure(&e.to_string()));
            return None;
        }
        Err(_) => {
            failed(format!("not complete within {} ms", limit.as_millis()));
            return None;
        }
    };
    let mut session = Session::anonymous(listener.name.clone(), listener.protocol, peer.ip());
    if let Some(cert) = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
    {
        match subject_dn(cert) {
            Some(dn) => session.principal = Principal::user(tls.mapper.map(&dn)),
            None => {
                failed("the client certificate's subject cannot be read".into());
                return None;
            }
        }
    }
    if !listener.protocol.uses_sasl() {
        broker.stats.authentications.fetch_add(1, Ordering::Relaxed);
    }
    Some((stream, session))
}

/// What the read loop does with a SASL step's answer.
pub struct SaslOutcome {
    /// The encoded response (with its size prefix), if one is due.
    pub response: Option<Bytes>,
    /// Wait this long before sending it (a failed authentication,
    /// `connection.failed.authentication.delay.ms`).
    pub delay: Duration,
    /// Close the connection after the response.
    pub close: bool,
}

fn outcome(
    broker: &Broker,
    response: Result<Bytes, CloseConnection>,
    verdict: Verdict,
    failed: bool,
) -> SaslOutcome {
    let close = verdict == Verdict::Close || response.is_err();
    if failed {
        broker
            .stats
            .authentication_failures
            .fetch_add(1, Ordering::Relaxed);
    }
    SaslOutcome {
        response: response.ok(),
        delay: if failed {
            Duration::from_millis(broker.config.security.failed_authentication_delay_ms)
        } else {
            Duration::ZERO
        },
        close,
    }
}

/// Handles a SaslHandshake or SaslAuthenticate request of a SASL listener's connection.
pub fn sasl_request(
    broker: &Broker,
    auth: &mut Authenticator,
    ctx: &RequestContext,
    body: Bytes,
) -> SaslOutcome {
    let was_authenticated = auth.session().is_some();
    match ctx.api_key {
        ApiKey::SaslHandshake => {
            let Ok(req) = handlers::decode::<SaslHandshakeRequest>(ctx, body) else {
                return outcome(broker, Err(CloseConnection), Verdict::Close, false);
            };
            let a = auth.handshake(ctx.api_version, req.mechanism.as_str());
            let resp = SaslHandshakeResponse::default()
                .with_error_code(a.error.map_or(0, |e| e.code()))
                .with_mechanisms(
                    a.mechanisms
                        .iter()
                        .map(|m| handlers::str_bytes(m))
                        .collect(),
                );
            outcome(
                broker,
                handlers::encode(ctx, &resp),
                a.verdict,
                a.error.is_some(),
            )
        }
        _ => {
            let Ok(req) = handlers::decode::<SaslAuthenticateRequest>(ctx, body) else {
                return outcome(broker, Err(CloseConnection), Verdict::Close, false);
            };
            let a = auth.authenticate(ctx.api_version, &req.auth_bytes, std::time::Instant::now());
            if a.error.is_none() && auth.session().is_some() && !was_authenticated {
                broker.stats.authentications.fetch_add(1, Ordering::Relaxed);
            }
            let resp = SaslAuthenticateResponse::default()
                .with_error_code(a.error.map_or(0, |e| e.code()))
                .with_error_message(a.message.as_deref().map(handlers::str_bytes))
                .with_auth_bytes(Bytes::from(a.bytes))
                .with_session_lifetime_ms(a.session_lifetime_ms);
            outcome(
                broker,
                handlers::encode(ctx, &resp),
                a.verdict,
                a.error.is_some(),
            )
        }
    }
}

/// Handles a bare SASL token (after a SaslHandshake v0): the answer goes back as a bare
/// size-prefixed token; a failure closes the connection without an answer (the v0 protocol
/// has no way to say why).
pub fn sasl_bare_token(broker: &Broker, auth: &mut Authenticator, token: &[u8]) -> SaslOutcome {
    let was_authenticated = auth.session().is_some();
    let a = auth.authenticate(-1, token, std::time::Instant::now());
    if a.error.is_some() {
        return outcome(broker, Err(CloseConnection), Verdict::Close, true);
    }
    if auth.session().is_some() && !was_authenticated {
        broker.stats.authentications.fetch_add(1, Ordering::Relaxed);
    }
    let mut buf = BytesMut::with_capacity(4 + a.bytes.len());
    buf.put_i32(a.bytes.len() as i32);
    buf.put_slice(&a.bytes);
    outcome(broker, Ok(buf.freeze()), a.verdict, false)
}

/// Whether a request of `api` may pass before (or during) SASL authentication: ApiVersions
/// ([`Auth::Open`] in the API table).
pub fn allowed_before_authentication(api: ApiKey) -> bool {
    table::spec(api).is_some_and(|s| s.auth == Auth::Open)
}

/// Whether a request of `api` is part of the SASL exchange (SaslHandshake, SaslAuthenticate:
/// [`Auth::Exchange`] in the API table), which [`sasl_request`] answers on a SASL listener.
pub fn sasl_exchange(api: ApiKey) -> bool {
    table::spec(api).is_some_and(|s| s.auth == Auth::Exchange)
}

/// The session requests of this connection run as.
pub fn current_session(auth: &Authenticator) -> Arc<Session> {
    auth.session()
        .unwrap_or_else(|| auth.unauthenticated())
        .clone()
}
