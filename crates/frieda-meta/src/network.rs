//! The quorum's own TCP protocol on the controller listener: Raft RPCs between nodes and
//! requests to the active controller, each a frame of a 4-byte big-endian length and a JSON
//! body, answered in order on the same connection.
//!
//! Only Frieda nodes speak it (Kafka's KRaft uses Kafka APIs here; clients never do), so it is
//! plain serde of openraft's own request types.
//!
//! Security is injected ([`QuorumTransport`]; the `frieda` crate implements it with the
//! listener's TLS and SASL settings, this crate knows no crypto):
//!
//! ```text
//! accept ── connection slot (MAX_CONNECTIONS) ── transport.accept: TLS / SASL, bounded by
//!           authentication_timeout() ── PeerIdentity ── authorize? ── JSON frames, each
//!           authorized again (ACLs can change) ── answered in order
//! ```
//!
//! On a secured listener a peer that is not authorized (Kafka: CLUSTER_ACTION on the cluster,
//! as `ControllerApis` demands of Raft and broker-heartbeat requests) may send one frame of at
//! most [`UNAUTHORIZED_MAX_FRAME_BYTES`]; it is answered [`Response::Refused`] and the connection
//! is closed, with a log line naming the principal. PLAINTEXT ([`PlaintextTransport`]) admits
//! everyone, with frames up to [`MAX_FRAME_BYTES`] from the first, as Kafka's PLAINTEXT
//! controller listener does without an authorizer; with `authorizer.class.name` set the
//! `frieda` crate wraps it in a transport that authorizes every peer as `User:ANONYMOUS`
//! (CLUSTER_ACTION, `super.users`), as Kafka's `ControllerApis` does.
//!
//! Every connection begins with a [`Hello`]: the node it is meant for and the sender's cluster
//! id. A node answers a Hello meant for another node, or from another cluster, with
//! [`Response::Refused`] and closes the connection, and serves no other request on a connection
//! that did not begin with one: a voter address that reaches the wrong node (a port reused by
//! another cluster's node, a stale address) is refused before any Raft request could take a term
//! or entries from a quorum it does not belong to. Kafka's KRaft checks the same: `ClusterId` on
//! every Raft request (INCONSISTENT_CLUSTER_ID) and, since KIP-853, the receiving voter's id
//! (`VoterId`, INVALID_VOTER_KEY).

use std::fmt::Debug;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::controller::{Controller, ControllerError, ControllerReply, ControllerRequest};
use crate::types::{Raft, TypeConfig};

type NodeId = u64;

/// Largest frame accepted, bytes (a snapshot chunk is at most openraft's 3 MiB default).
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// Largest frame read from a peer the transport did not authorize, bytes (Kafka's
/// `sasl.server.max.receive.size` default): enough for any request it is then refused.
pub const UNAUTHORIZED_MAX_FRAME_BYTES: usize = 512 << 10;

/// Controller connections served at once (Raft streams, pooled controller-request
/// connections of every node, and connections still authenticating); one more is closed at
/// accept with a log line.
pub const MAX_CONNECTIONS: usize = 512;

/// Of [`MAX_CONNECTIONS`], how many may be authenticating at once (TLS handshakes and SASL
/// exchanges cost CPU; a flood of them must not starve the nodes' own connections).
pub const MAX_AUTHENTICATING: usize = 64;

/// How long an accepted connection may take to authenticate (TLS handshake and SASL exchange)
/// before it is closed, unless the transport says otherwise.
pub const AUTHENTICATION_TIMEOUT: Duration = Duration::from_secs(10);

/// A byte stream the quorum protocol runs over: TCP, or TLS over TCP (`Sync` because openraft
/// shares its network clients between threads).
pub trait QuorumStream: AsyncRead + AsyncWrite + Unpin + Send + Sync {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> QuorumStream for T {}

/// A boxed, sendable future (keeps [`QuorumTransport`] object safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who is on the other end of an accepted controller connection, as the transport
/// authenticated it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerIdentity {
    /// Kafka's principal text: `User:node-1` (SASL), `User:CN=node-1,O=example` (a client
    /// certificate's subject), `User:ANONYMOUS` when nothing authenticated the peer.
    pub principal: String,
    /// The peer's address.
    pub addr: SocketAddr,
}

/// How the controller listener secures its connections, both ways: what an accepted
/// connection must do before its first frame, how this node opens connections to the other
/// nodes, and who may send quorum requests. [`PlaintextTransport`] is Kafka's PLAINTEXT.
pub trait QuorumTransport: Debug + Send + Sync + 'static {
    /// Kafka's name of the listener's security protocol (`PLAINTEXT`, `SSL`, `SASL_SSL`, ...),
    /// for log lines.
    fn protocol(&self) -> &'static str;

    /// Authenticates a connection accepted from `peer` (a TLS handshake, a SASL exchange) and
    /// returns the stream the frames then travel on, with the peer's identity. Bounded by
    /// [`authentication_timeout`](Self::authentication_timeout).
    ///
    /// Errors: the peer failed to authenticate (the connection is closed; the implementation
    /// logs why).
    fn accept<'a>(
        &'a self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> BoxFuture<'a, std::io::Result<(Box<dyn QuorumStream>, PeerIdentity)>>;

    /// Opens a connection to the controller listener at `addr` (`host:port`) and
    /// authenticates this node on it, within `timeout`.
    ///
    /// Errors: connecting, the handshake or the login failed or timed out.
    fn connect<'a>(
        &'a self,
        addr: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, std::io::Result<Box<dyn QuorumStream>>>;

    /// Whether `peer` may send Raft RPCs and controller requests. Asked once a connection is
    /// authenticated and again before every request (ACLs change while connections live).
    fn authorize(&self, peer: &PeerIdentity) -> bool;

    /// The longest an accepted connection may take in [`accept`](Self::accept).
    fn authentication_timeout(&self) -> Duration {
        AUTHENTICATION_TIMEOUT
    }
}

/// Kafka's PLAINTEXT without an authorizer: no authentication, every peer is `User:ANONYMOUS`
/// and may send everything (keep such a listener on loopback or a private network). With an
/// authorizer the `frieda` crate authorizes `User:ANONYMOUS` over it instead.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlaintextTransport;

impl QuorumTransport for PlaintextTransport {
    fn protocol(&self) -> &'static str {
        "PLAINTEXT"
    }

    fn accept<'a>(
        &'a self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> BoxFuture<'a, std::io::Result<(Box<dyn QuorumStream>, PeerIdentity)>> {
        Box::pin(async move {
            let identity = PeerIdentity {
                principal: "User:ANONYMOUS".into(),
                addr: peer,
            };
            Ok((Box::new(stream) as Box<dyn QuorumStream>, identity))
        })
    }

    fn connect<'a>(
        &'a self,
        addr: &'a str,
        _timeout: Duration,
    ) -> BoxFuture<'a, std::io::Result<Box<dyn QuorumStream>>> {
        // The caller bounds the whole call (connect, write, read) by its timeout.
        Box::pin(async move {
            let s = TcpStream::connect(addr).await?;
            s.set_nodelay(true)?;
            Ok(Box::new(s) as Box<dyn QuorumStream>)
        })
    }

    fn authorize(&self, _peer: &PeerIdentity) -> bool {
        true
    }
}

/// Who this node is on its quorum connections: its node id and, once the metadata log holds
/// it, the cluster id. Shared by the controller listener (checks each connection's [`Hello`])
/// and this node's connections (send it).
#[derive(Debug)]
pub struct Identity {
    node_id: NodeId,
    /// The metadata image's cluster id, set once it is known (never changes after).
    cluster_id: std::sync::OnceLock<String>,
}

impl Identity {
    /// Node `node_id`, its cluster id not known yet.
    pub fn new(node_id: NodeId) -> Self {
        Identity {
            node_id,
            cluster_id: std::sync::OnceLock::new(),
        }
    }

    /// This node's id.
    pub fn node_id(&self) -> NodeId {
        self.node_id
    }

    /// Records the cluster id (the first call wins; a cluster id never changes).
    pub fn set_cluster_id(&self, cluster_id: &str) {
        let _ = self.cluster_id.set(cluster_id.to_string());
    }

    /// The cluster id, once the metadata log holds it.
    pub fn cluster_id(&self) -> Option<&str> {
        self.cluster_id.get().map(String::as_str)
    }

    /// The Hello this node opens a connection to node `to` with (`None`: an address whose node
    /// is not known, a `controller.quorum.bootstrap.servers` entry).
    pub fn hello(&self, to: Option<NodeId>) -> Hello {
        Hello {
            from: self.node_id,
            to,
            cluster_id: self.cluster_id().map(str::to_string),
        }
    }

    /// Whether a connection opened with `hello` may be served here.
    ///
    /// Errors (why, for the Refused answer and the log line): the Hello is meant for another
    /// node; both sides know their cluster ids and they differ.
    pub fn admit(&self, hello: &Hello) -> Result<(), String> {
        if let Some(to) = hello.to {
            if to != self.node_id {
                return Err(format!(
                    "this is node {}, not node {to}: node {}'s address for node {to} reaches another node",
                    self.node_id, hello.from
                ));
            }
        }
        if let (Some(ours), Some(theirs)) = (self.cluster_id(), hello.cluster_id.as_deref()) {
            if ours != theirs {
                return Err(format!(
                    "node {} of cluster {theirs} reached node {} of cluster {ours}",
                    hello.from, self.node_id
                ));
            }
        }
        Ok(())
    }
}

/// The first frame of every quorum connection: who sends, to whom, in which cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The sender's node id.
    pub from: NodeId,
    /// The node the sender means to reach (`None`: a bootstrap address).
    pub to: Option<NodeId>,
    /// The sender's cluster id, if its metadata log holds one yet.
    pub cluster_id: Option<String>,
}

/// A request between nodes.
#[derive(Debug, Serialize, Deserialize)]
pub enum Request {
    /// The first frame of a connection (answered [`Response::Hello`] or refused).
    Hello(Hello),
    /// Raft AppendEntries.
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    /// Raft RequestVote.
    Vote(VoteRequest<NodeId>),
    /// Raft InstallSnapshot (one chunk).
    InstallSnapshot(InstallSnapshotRequest<TypeConfig>),
    /// For the active controller.
    Controller(ControllerRequest),
}

impl Request {
    /// The request's kind, for log lines.
    fn kind(&self) -> &'static str {
        match self {
            Request::Hello(_) => "Hello",
            Request::AppendEntries(_) => "AppendEntries",
            Request::Vote(_) => "Vote",
            Request::InstallSnapshot(_) => "InstallSnapshot",
            Request::Controller(c) => c.kind(),
        }
    }
}

/// The answer to a [`Request`].
#[derive(Debug, Serialize, Deserialize)]
pub enum Response {
    /// To a Hello the node admits.
    Hello,
    /// To AppendEntries.
    AppendEntries(Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>),
    /// To RequestVote.
    Vote(Result<VoteResponse<NodeId>, RaftError<NodeId>>),
    /// To InstallSnapshot.
    InstallSnapshot(
        Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>,
    ),
    /// From the controller.
    Controller(Result<ControllerReply, ControllerError>),
    /// The sender may not send quorum requests (why); the connection closes after it.
    Refused(String),
}

pub(crate) async fn write_frame<T: Serialize>(
    s: &mut dyn QuorumStream,
    v: &T,
) -> std::io::Result<()> {
    let body = serde_json::to_vec(v).map_err(std::io::Error::other)?;
    if body.len() > MAX_FRAME_BYTES {
        return Err(std::io::Error::other("frame too large"));
    }
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&(body.len() as u32).to_be_bytes());
    buf.extend_from_slice(&body);
    s.write_all(&buf).await?;
    s.flush().await
}

pub(crate) async fn read_frame<T: for<'de> Deserialize<'de>>(
    s: &mut dyn QuorumStream,
    max: usize,
) -> std::io::Result<T> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len) as usize;
    if len > max {
        return Err(std::io::Error::other(format!(
            "frame of {len} bytes refused (at most {max})"
        )));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await?;
    serde_json::from_slice(&body).map_err(std::io::Error::other)
}

/// A connection to one node, opened on first use (with a [`Hello`]) and reopened after an
/// error.
pub struct Conn {
    addr: String,
    transport: Arc<dyn QuorumTransport>,
    /// This node, for the Hello.
    identity: Arc<Identity>,
    /// The node meant at `addr` (`None`: a bootstrap address).
    to: Option<NodeId>,
    stream: Option<Box<dyn QuorumStream>>,
}

impl Conn {
    /// A connection from `identity` to node `to` at `addr` (host:port) secured by `transport`,
    /// not yet open.
    pub fn new(
        addr: String,
        transport: Arc<dyn QuorumTransport>,
        identity: Arc<Identity>,
        to: Option<NodeId>,
    ) -> Self {
        Conn {
            addr,
            transport,
            identity,
            to,
            stream: None,
        }
    }

    /// The address it connects to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Sends `req` and waits for its answer, at most `timeout` (connecting and authenticating
    /// included).
    ///
    /// A new connection's Hello refused is answered as `Ok(Response::Refused(why))`, as a
    /// refused request is.
    ///
    /// Errors: connecting, authenticating, writing, reading or the timeout (the connection is
    /// then dropped).
    pub async fn call(&mut self, req: &Request, timeout: Duration) -> std::io::Result<Response> {
        let r = tokio::time::timeout(timeout, async {
            if self.stream.is_none() {
                let mut s = self.transport.connect(&self.addr, timeout).await?;
                write_frame(s.as_mut(), &Request::Hello(self.identity.hello(self.to))).await?;
                match read_frame(s.as_mut(), MAX_FRAME_BYTES).await? {
                    Response::Hello => {}
                    Response::Refused(why) => return Ok(Response::Refused(why)),
                    _ => return Err(std::io::Error::other("unexpected answer to Hello")),
                }
                self.stream = Some(s);
            }
            let s = self.stream.as_mut().expect("just connected");
            write_frame(s.as_mut(), req).await?;
            read_frame(s.as_mut(), MAX_FRAME_BYTES).await
        })
        .await
        .unwrap_or_else(|_| {
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "timed out",
            ))
        });
        // A refusal closes the connection on the other side.
        if r.is_err() || matches!(r, Ok(Response::Refused(_))) {
            self.stream = None;
        }
        r
    }
}

/// openraft's network factory: one [`NodeClient`] per peer and purpose (openraft opens one
/// for each replication stream, election and leadership check), each connecting with the
/// transport.
#[derive(Clone)]
pub struct Network {
    transport: Arc<dyn QuorumTransport>,
    identity: Arc<Identity>,
    reachability: Arc<Reachability>,
}

impl Network {
    /// Connects as `identity` with `transport`, recording each peer's answers in
    /// `reachability` (which DescribeQuorum reads).
    pub fn with_reachability(
        transport: Arc<dyn QuorumTransport>,
        identity: Arc<Identity>,
        reachability: Arc<Reachability>,
    ) -> Self {
        Network {
            transport,
            identity,
            reachability,
        }
    }
}

/// Whether each peer answered its last Raft request, shared by every [`NodeClient`] of this
/// node, so that a peer going away or coming back is logged once per change (WARN when a peer
/// that answered stops, INFO when it answers again or has not answered yet since this node
/// started) rather than once per retry, as openraft's own reports would (logging.rs leaves
/// those out).
///
/// It also keeps, for DescribeQuorum, when each peer last acknowledged this node's
/// AppendEntries ([`Contact`]).
#[derive(Default)]
pub struct Reachability {
    /// Peer → how its last Raft request went; absent until the first request. At most one
    /// entry per node of the metadata log's membership.
    peers: parking_lot::Mutex<std::collections::HashMap<NodeId, Peer>>,
    /// Peer → when it last acknowledged this node's AppendEntries; absent until it first did.
    /// At most one entry per node of the metadata log's membership.
    contacts: parking_lot::Mutex<std::collections::HashMap<NodeId, Contact>>,
}

/// When a peer last acknowledged this (leading) node's AppendEntries, as DescribeQuorum
/// reports it (KRaft's `ReplicaState`; in KRaft followers fetch, here the leader sends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Contact {
    /// The last acknowledgement (KRaft's LastFetchTimestamp), ms since the epoch.
    pub last_fetch_ms: i64,
    /// The last acknowledgement that left the peer holding every entry the leader had
    /// committed when it sent them (KRaft's LastCaughtUpTimestamp, measured against the high
    /// watermark instead of the leader's log end), ms since the epoch; -1 if never.
    pub last_caught_up_ms: i64,
}

/// How the last Raft request to a peer went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    /// It answered.
    Answering,
    /// It has not answered since this node started.
    NotYet,
    /// It answered before, and did not last time.
    Lost,
}

impl Reachability {
    /// When `node` last acknowledged this node's AppendEntries, if it ever did.
    pub fn contact(&self, node: NodeId) -> Option<Contact> {
        self.contacts.lock().get(&node).copied()
    }

    /// `node` acknowledged AppendEntries at `now_ms`, holding every entry up to `matched`
    /// (a log index) while the leader had committed up to `committed`.
    fn acknowledged(
        &self,
        node: NodeId,
        now_ms: i64,
        matched: Option<u64>,
        committed: Option<u64>,
    ) {
        let mut contacts = self.contacts.lock();
        let c = contacts.entry(node).or_insert(Contact {
            last_fetch_ms: now_ms,
            last_caught_up_ms: -1,
        });
        c.last_fetch_ms = now_ms;
        if matched >= committed {
            c.last_caught_up_ms = now_ms;
        }
    }

    /// Records the outcome of a request to `node` at `addr`; logs when it changes.
    fn record(&self, node: NodeId, addr: &str, result: Result<(), &dyn std::fmt::Display>) {
        let mut peers = self.peers.lock();
        let before = peers.get(&node).copied();
        let now = match (before, &result) {
            (_, Ok(())) => Peer::Answering,
            (None | Some(Peer::NotYet), Err(_)) => Peer::NotYet,
            (Some(Peer::Answering | Peer::Lost), Err(_)) => Peer::Lost,
        };
        peers.insert(node, now);
        drop(peers);
        if before == Some(now) {
            return;
        }
        match (before, result) {
            (Some(Peer::Lost), Ok(())) => tracing::info!(node, addr, "quorum peer answers again"),
            (Some(Peer::NotYet), Ok(())) => tracing::info!(node, addr, "quorum peer answers"),
            (_, Err(e)) if now == Peer::Lost => tracing::warn!(node, addr, error = %e,
                "quorum peer does not answer; retrying quietly until it does"),
            (_, Err(e)) => tracing::info!(node, addr, error = %e,
                "quorum peer does not answer yet; retrying quietly until it does"),
            _ => {}
        }
    }
}

/// The connection to one peer for Raft RPCs.
pub struct NodeClient {
    target: NodeId,
    conn: Conn,
    /// Whether a refusal by the peer was logged already (once per client).
    refusal_logged: bool,
    reachability: Arc<Reachability>,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = NodeClient;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> NodeClient {
        NodeClient {
            target,
            conn: Conn::new(
                node.addr.clone(),
                self.transport.clone(),
                self.identity.clone(),
                Some(target),
            ),
            refusal_logged: false,
            reachability: self.reachability.clone(),
        }
    }
}

impl NodeClient {
    async fn rpc<E: std::error::Error>(
        &mut self,
        req: Request,
        option: &RPCOption,
    ) -> Result<Response, RPCError<NodeId, BasicNode, E>> {
        let result = self.conn.call(&req, option.hard_ttl()).await;
        let outcome: Result<(), &dyn std::fmt::Display> = match &result {
            Ok(Response::Refused(why)) => Err(why),
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        self.reachability
            .record(self.target, self.conn.addr(), outcome);
        match result {
            Ok(Response::Refused(why)) => {
                if !self.refusal_logged {
                    self.refusal_logged = true;
                    tracing::warn!(node = self.target, addr = %self.conn.addr(), reason = %why,
                        "node refused this node's Raft requests (a principal that is not a super user there, or an address that reaches another node or cluster)");
                }
                Err(RPCError::Unreachable(Unreachable::new(
                    &std::io::Error::other(format!("refused: {why}")),
                )))
            }
            Ok(r) => {
                self.refusal_logged = false;
                Ok(r)
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                Err(RPCError::Network(NetworkError::new(&e)))
            }
            Err(e) => Err(RPCError::Unreachable(Unreachable::new(&e))),
        }
    }
}

fn unexpected<E: std::error::Error>(what: &str) -> RPCError<NodeId, BasicNode, E> {
    RPCError::Network(NetworkError::new(&std::io::Error::other(format!(
        "unexpected answer to {what}"
    ))))
}

impl RaftNetwork<TypeConfig> for NodeClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        // What the request leaves the peer holding if it succeeds, and what was committed.
        let end = rpc
            .entries
            .last()
            .map(|e| e.log_id.index)
            .or(rpc.prev_log_id.map(|l| l.index));
        let committed = rpc.leader_commit.map(|l| l.index);
        match self.rpc(Request::AppendEntries(rpc), &option).await? {
            Response::AppendEntries(r) => {
                let matched = match &r {
                    Ok(AppendEntriesResponse::Success) => Some(end),
                    Ok(AppendEntriesResponse::PartialSuccess(m)) => Some(m.map(|l| l.index)),
                    _ => None,
                };
                if let Some(matched) = matched {
                    self.reachability.acknowledged(
                        self.target,
                        crate::now_ms(),
                        matched,
                        committed,
                    );
                }
                r.map_err(|e| RemoteError::new(self.target, e).into())
            }
            _ => Err(unexpected("AppendEntries")),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        match self.rpc(Request::InstallSnapshot(rpc), &option).await? {
            Response::InstallSnapshot(r) => r.map_err(|e| RemoteError::new(self.target, e).into()),
            _ => Err(unexpected("InstallSnapshot")),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        match self.rpc(Request::Vote(rpc), &option).await? {
            Response::Vote(r) => r.map_err(|e| RemoteError::new(self.target, e).into()),
            _ => Err(unexpected("Vote")),
        }
    }
}

/// Serves the controller listener until the task is aborted: each connection is authenticated
/// by `transport` and must begin with a [`Hello`] that `identity` admits, then its frames are
/// handled in order (Raft RPCs by `raft`, controller requests by `controller`), each only if
/// `transport` authorizes the peer.
pub async fn serve(
    listener: TcpListener,
    raft: Raft,
    controller: Arc<Controller>,
    transport: Arc<dyn QuorumTransport>,
    identity: Arc<Identity>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let authenticating = Arc::new(Semaphore::new(MAX_AUTHENTICATING));
    // When the last "connection refused: too many" line was logged (one per second at most).
    let mut last_full_log: Option<std::time::Instant> = None;
    // The connections' tasks: aborted with this one when it is aborted (the node's shutdown),
    // so that no request reaches Raft after it stopped. Finished ones are reaped at each
    // accept; at most MAX_CONNECTIONS run.
    let mut connections = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "controller listener accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let slot = slots.clone().try_acquire_owned();
        let auth_slot = authenticating.clone().try_acquire_owned();
        let (Ok(slot), Ok(auth_slot)) = (slot, auth_slot) else {
            if last_full_log.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                last_full_log = Some(std::time::Instant::now());
                tracing::warn!(%peer, max_connections = MAX_CONNECTIONS, max_authenticating = MAX_AUTHENTICATING,
                    "controller listener: too many connections; closing new ones");
            }
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let raft = raft.clone();
        let controller = controller.clone();
        let transport = transport.clone();
        let identity = identity.clone();
        connections.spawn(async move {
            let _slot = slot;
            let limit = transport.authentication_timeout();
            let (mut stream, who) = match tokio::time::timeout(
                limit,
                transport.accept(stream, peer),
            )
            .await
            {
                Ok(Ok(x)) => x,
                Ok(Err(e)) => {
                    tracing::warn!(%peer, protocol = transport.protocol(), error = %e,
                            "controller connection closed: authentication failed");
                    return;
                }
                Err(_) => {
                    tracing::warn!(%peer, protocol = transport.protocol(), limit_ms = limit.as_millis() as u64,
                            "controller connection closed: not authenticated in time");
                    return;
                }
            };
            drop(auth_slot);
            serve_connection(
                stream.as_mut(),
                &who,
                &raft,
                &controller,
                &*transport,
                &identity,
            )
            .await;
            let _ = tokio::time::timeout(Duration::from_secs(1), stream.shutdown()).await;
        });
    }
}

/// Serves one authenticated connection until the peer closes it, sends bad input or is
/// refused.
async fn serve_connection(
    stream: &mut dyn QuorumStream,
    who: &PeerIdentity,
    raft: &Raft,
    controller: &Controller,
    transport: &dyn QuorumTransport,
    identity: &Identity,
) {
    let peer = who.addr;
    let mut authorized = transport.authorize(who);
    let mut greeted = false;
    loop {
        let max = if authorized {
            MAX_FRAME_BYTES
        } else {
            UNAUTHORIZED_MAX_FRAME_BYTES
        };
        let req: Request = match read_frame(stream, max).await {
            Ok(r) => r,
            Err(e) => {
                if !authorized {
                    tracing::warn!(%peer, principal = %who.principal, error = %e,
                        "controller connection closed: an unauthorized peer sent an oversized or malformed frame");
                } else if e.kind() != std::io::ErrorKind::UnexpectedEof {
                    tracing::debug!(%peer, error = %e, "controller connection closed");
                }
                return;
            }
        };
        // Asked again for every request: an ACL removed meanwhile takes effect at once.
        authorized = authorized && transport.authorize(who);
        if !authorized {
            tracing::warn!(%peer, principal = %who.principal, request = req.kind(), protocol = transport.protocol(),
                "refused a quorum request and closed the connection: the principal may not send Raft or controller requests (it needs CLUSTER_ACTION on the cluster: list node principals in super.users)");
            let why = format!(
                "{} may not send quorum requests (CLUSTER_ACTION on the cluster needed)",
                who.principal
            );
            let _ = write_frame(stream, &Response::Refused(why)).await;
            return;
        }
        let refusal = match &req {
            Request::Hello(hello) => identity.admit(hello).err(),
            _ if !greeted => Some(format!(
                "a quorum connection must begin with Hello (node {} speaks a newer protocol than the sender)",
                identity.node_id()
            )),
            _ => None,
        };
        if let Some(why) = refusal {
            tracing::warn!(%peer, request = req.kind(), reason = %why,
                "refused a quorum connection: it is not meant for this node or cluster");
            let _ = write_frame(stream, &Response::Refused(why)).await;
            return;
        }
        let resp = match req {
            Request::Hello(_) => {
                greeted = true;
                Response::Hello
            }
            Request::AppendEntries(r) => Response::AppendEntries(raft.append_entries(r).await),
            Request::Vote(r) => Response::Vote(raft.vote(r).await),
            Request::InstallSnapshot(r) => {
                Response::InstallSnapshot(raft.install_snapshot(r).await)
            }
            Request::Controller(r) => Response::Controller(controller.handle(r).await),
        };
        if let Err(e) = write_frame(stream, &resp).await {
            tracing::debug!(%peer, error = %e, "controller connection closed");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DescribeQuorum's times (issue 59): every acknowledgement is a fetch; only one that left
    /// the peer holding everything committed is a catch-up.
    #[test]
    fn a_peer_is_caught_up_only_when_it_holds_what_was_committed() {
        let r = Reachability::default();
        assert_eq!(r.contact(2), None);
        r.acknowledged(2, 1_000, Some(9), Some(9));
        r.acknowledged(2, 2_000, Some(5), Some(9));
        assert_eq!(
            r.contact(2),
            Some(Contact {
                last_fetch_ms: 2_000,
                last_caught_up_ms: 1_000
            })
        );
        r.acknowledged(3, 3_000, Some(4), Some(9));
        assert_eq!(r.contact(3).map(|c| c.last_caught_up_ms), Some(-1));
        r.acknowledged(3, 4_000, None, None);
        assert_eq!(
            r.contact(3).map(|c| c.last_caught_up_ms),
            Some(4_000),
            "nothing committed yet"
        );
    }
}
