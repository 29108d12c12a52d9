//! The controller listener secured (`CONTROLLER:SSL`, `SASL_SSL`, `SASL_PLAINTEXT` in
//! `listener.security.protocol.map`): the [`QuorumTransport`] the metadata quorum's network
//! layer runs with, built from the broker's own security code.
//!
//! - Accepting: the TLS handshake of the listener (`ssl.client.auth=required` or `requested`:
//!   mutual TLS, the node certificate's subject is the principal), then on a SASL listener
//!   Kafka's SaslHandshake and SaslAuthenticate exchanges (KIP-43, KIP-152) with the broker's
//!   SASL state machine, before any quorum frame, as Kafka's KRaft authenticates controller
//!   connections with its `SaslServerAuthenticator`. Until authenticated, frames are at most
//!   `sasl.server.max.receive.size` bytes and nothing but SaslHandshake and SaslAuthenticate is
//!   taken; a failed login is answered after `connection.failed.authentication.delay.ms` and
//!   closes the connection.
//! - Connecting: the listener's trust store verifies the other node, its key store is this
//!   node's client certificate, and the login is the `username`/`password` of the JAAS line for
//!   `sasl.mechanism.controller.protocol` on the listener ([`ClientSecurity::controller`]).
//! - Authorizing: a peer may send Raft RPCs, heartbeats and controller requests only when its
//!   principal is authenticated (never `User:ANONYMOUS`) and, with `authorizer.class.name` set,
//!   allowed CLUSTER_ACTION on the cluster (Kafka's `ControllerApis` demands it of Vote,
//!   BeginQuorumEpoch, Fetch, BrokerHeartbeat and BrokerRegistration). The ACLs live in the
//!   quorum itself, so node principals normally get it from `super.users` (static config):
//!   a node whose image has no ACLs yet must still accept the leader.
//!
//! A PLAINTEXT controller listener with `authorizer.class.name` set runs
//! [`AuthorizedPlaintextTransport`]: nothing authenticates a peer, so every one is
//! `User:ANONYMOUS`, and it is authorized like any principal (CLUSTER_ACTION on the cluster,
//! `super.users`), as Kafka's `ControllerApis` authorizes the PLAINTEXT controller listener's
//! `User:ANONYMOUS`: such a cluster needs `User:ANONYMOUS` in `super.users` to form. Without an
//! authorizer PLAINTEXT obeys everyone ([`frieda_meta::PlaintextTransport`]), as Kafka's does.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use frieda_meta::{BoxFuture, PeerIdentity, PlaintextTransport, QuorumStream, QuorumTransport};
use kafka_protocol::messages::ApiKey;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::authentication as auth;
use crate::broker::Broker;
use crate::handlers;
use crate::membership::client::BrokerClient;
use crate::security::acl::{op, resource, CLUSTER_NAME};
use crate::security::client::ClientSecurity;
use crate::security::sasl::{Authenticator, SaslListener};
use crate::security::{ListenerSecurity, Principal, SecurityProtocol, Session};

/// The secured controller listener of this node, both ways.
pub struct ControllerTransport {
    broker: Arc<Broker>,
    listener: Arc<ListenerSecurity>,
    client: ClientSecurity,
    client_id: String,
}

impl std::fmt::Debug for ControllerTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerTransport")
            .field("listener", &self.listener.name)
            .field("protocol", &self.listener.protocol)
            .field("client", &self.client)
            .finish()
    }
}

fn other(message: impl Into<String>) -> std::io::Error {
    std::io::Error::other(message.into())
}

impl ControllerTransport {
    /// The transport of controller listener `name` of `broker` (its TLS and SASL server
    /// settings are in `broker.security`; the client side is loaded here).
    ///
    /// Errors: the listener is PLAINTEXT (use [`frieda_meta::PlaintextTransport`]); its client
    /// side does not load (no trust store, no `username`/`password` in the JAAS line of
    /// `sasl.mechanism.controller.protocol`, an unsupported mechanism).
    pub fn new(broker: Arc<Broker>, name: &str) -> anyhow::Result<Self> {
        let listener = broker.security.listener(name);
        if listener.protocol == SecurityProtocol::Plaintext {
            anyhow::bail!("controller listener {name} is PLAINTEXT: nothing to secure");
        }
        let client = ClientSecurity::controller(&broker.config.security, name, listener.protocol)?;
        let client_id = format!("frieda-controller-{}", broker.config.node_id);
        Ok(ControllerTransport {
            broker,
            listener,
            client,
            client_id,
        })
    }

    /// The TLS handshake and the SASL exchange of an accepted connection.
    async fn authenticate(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> std::io::Result<(Box<dyn QuorumStream>, PeerIdentity)> {
        let l = &self.listener;
        let (mut io, mut session): (Box<dyn QuorumStream>, Session) = match &l.tls {
            None => (
                Box::new(stream),
                Session::anonymous(l.name.clone(), l.protocol, peer.ip()),
            ),
            Some(tls) => {
                // Logs and counts a failure itself.
                let (s, session) = auth::tls_handshake(tls, l, stream, peer, &self.broker)
                    .await
                    .ok_or_else(|| other("TLS handshake failed"))?;
                (Box::new(s), session)
            }
        };
        if let Some(sasl) = &l.sasl {
            session = self.sasl_exchange(io.as_mut(), sasl, peer).await?;
        }
        let identity = PeerIdentity {
            principal: session.principal.to_string(),
            addr: peer,
        };
        tracing::debug!(%peer, principal = %identity.principal, listener = %l.name, "controller connection authenticated");
        Ok((io, identity))
    }

    /// Kafka's SaslHandshake + SaslAuthenticate exchanges (or a v0 handshake and bare tokens)
    /// until the peer is authenticated: its session.
    ///
    /// Errors: a frame over `sasl.server.max.receive.size`, a request that is not a SASL one,
    /// a failed login (answered first, after the failed-authentication delay).
    async fn sasl_exchange(
        &self,
        io: &mut dyn QuorumStream,
        sasl: &Arc<SaslListener>,
        peer: SocketAddr,
    ) -> std::io::Result<Session> {
        let l = &self.listener;
        let max = self.broker.config.security.sasl_max_receive_size;
        let mut a = Authenticator::new(sasl.clone(), l.name.clone(), l.protocol, peer.ip());
        loop {
            let len = io.read_u32().await? as usize;
            if len > max {
                return Err(other(format!(
                    "a frame of {len} bytes before SASL authentication (sasl.server.max.receive.size is {max})"
                )));
            }
            let mut buf = vec![0u8; len];
            io.read_exact(&mut buf).await?;
            let payload = Bytes::from(buf);
            let out = if a.expects_bare_token() {
                auth::sasl_bare_token(&self.broker, &mut a, &payload)
            } else {
                let session = auth::current_session(&a);
                let Ok((ctx, body)) = handlers::parse_request(payload, peer, &session) else {
                    return Err(other(
                        "not a Kafka request: the controller listener takes SaslHandshake and SaslAuthenticate first",
                    ));
                };
                if !matches!(
                    ctx.api_key,
                    ApiKey::SaslHandshake | ApiKey::SaslAuthenticate
                ) {
                    return Err(other(format!(
                        "{:?} before SASL authentication (only SaslHandshake and SaslAuthenticate are taken)",
                        ctx.api_key
                    )));
                }
                auth::sasl_request(&self.broker, &mut a, &ctx, body)
            };
            if let Some(resp) = out.response {
                if !out.delay.is_zero() {
                    tokio::time::sleep(out.delay).await;
                }
                io.write_all(&resp).await?;
                io.flush().await?;
            }
            if out.close {
                // The authenticator logged the reason.
                return Err(other("SASL authentication failed"));
            }
            if let Some(s) = a.session() {
                return Ok((**s).clone());
            }
        }
    }
}

impl QuorumTransport for ControllerTransport {
    fn protocol(&self) -> &'static str {
        self.listener.protocol.name()
    }

    fn accept<'a>(
        &'a self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> BoxFuture<'a, std::io::Result<(Box<dyn QuorumStream>, PeerIdentity)>> {
        Box::pin(self.authenticate(stream, peer))
    }

    fn connect<'a>(
        &'a self,
        addr: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, std::io::Result<Box<dyn QuorumStream>>> {
        Box::pin(async move {
            BrokerClient::connect(addr, &self.client_id, timeout, &self.client)
                .await
                .map(BrokerClient::into_stream)
        })
    }

    fn authorize(&self, peer: &PeerIdentity) -> bool {
        // On a secured listener an unauthenticated peer (an SSL client without a certificate
        // under `ssl.client.auth=requested`) is never a node, whatever the ACLs say.
        if Principal::parse(&peer.principal).is_none_or(|p| p == Principal::anonymous()) {
            return false;
        }
        cluster_action(&self.broker, &self.listener, peer)
    }
}

/// Whether `peer` (its principal as the transport established it) is allowed CLUSTER_ACTION on
/// the cluster through `listener`: `super.users`, or an ACL of the image (Kafka's
/// `ControllerApis` asks it of Vote, BeginQuorumEpoch, Fetch, BrokerHeartbeat and
/// BrokerRegistration). A denial is logged by `kafka.authorizer.logger`.
fn cluster_action(broker: &Broker, listener: &ListenerSecurity, peer: &PeerIdentity) -> bool {
    let Some(principal) = Principal::parse(&peer.principal) else {
        return false;
    };
    let mut session = Session::anonymous(listener.name.clone(), listener.protocol, peer.addr.ip());
    session.principal = principal;
    broker.security.authorize(
        &session,
        "Controller",
        op::CLUSTER_ACTION,
        resource::CLUSTER,
        CLUSTER_NAME,
    )
}

/// A PLAINTEXT controller listener on a node with `authorizer.class.name` set: connections are
/// plain TCP both ways ([`PlaintextTransport`]) and every peer is `User:ANONYMOUS`, which must
/// be allowed CLUSTER_ACTION on the cluster (in practice: listed in `super.users` on every
/// node) for its Raft RPCs, heartbeats and controller requests (AlterAcls, topics, configs) to
/// be taken; otherwise each is answered `Refused` and the connection closed with a WARN line
/// (`frieda_meta::network`). Kafka does the same: its `ControllerApis` authorizes the
/// listener's principal, `User:ANONYMOUS` on PLAINTEXT, and its documentation asks for
/// `User:ANONYMOUS` in `super.users` with a PLAINTEXT controller listener and an authorizer.
pub struct AuthorizedPlaintextTransport {
    broker: Arc<Broker>,
    listener: Arc<ListenerSecurity>,
}

impl std::fmt::Debug for AuthorizedPlaintextTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizedPlaintextTransport")
            .field("listener", &self.listener.name)
            .finish()
    }
}

impl AuthorizedPlaintextTransport {
    /// The transport of PLAINTEXT controller listener `name` of `broker`.
    ///
    /// Errors: the listener is not PLAINTEXT (use [`ControllerTransport`]).
    pub fn new(broker: Arc<Broker>, name: &str) -> anyhow::Result<Self> {
        let listener = broker.security.listener(name);
        if listener.protocol != SecurityProtocol::Plaintext {
            anyhow::bail!(
                "controller listener {name} is {}, not PLAINTEXT",
                listener.protocol.name()
            );
        }
        Ok(AuthorizedPlaintextTransport { broker, listener })
    }

    /// Whether `User:ANONYMOUS` from `addr` is allowed CLUSTER_ACTION now (at start: by
    /// `super.users` alone, the image's ACLs are not loaded yet).
    pub fn anonymous_allowed(&self, addr: SocketAddr) -> bool {
        self.authorize(&PeerIdentity {
            principal: Principal::anonymous().to_string(),
            addr,
        })
    }
}

impl QuorumTransport for AuthorizedPlaintextTransport {
    fn protocol(&self) -> &'static str {
        PlaintextTransport.protocol()
    }

    fn accept<'a>(
        &'a self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> BoxFuture<'a, std::io::Result<(Box<dyn QuorumStream>, PeerIdentity)>> {
        Box::pin(async move { PlaintextTransport.accept(stream, peer).await })
    }

    fn connect<'a>(
        &'a self,
        addr: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, std::io::Result<Box<dyn QuorumStream>>> {
        Box::pin(async move { PlaintextTransport.connect(addr, timeout).await })
    }

    fn authorize(&self, peer: &PeerIdentity) -> bool {
        cluster_action(&self.broker, &self.listener, peer)
    }
}
