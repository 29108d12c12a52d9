//! The quorum's own TCP protocol on the controller listener: Raft RPCs between nodes and
//! requests to the active controller, each a frame of a 4-byte big-endian length and a JSON
//! body, answered in order on the same connection.
//!
//! Only Frieda nodes speak it (Kafka's KRaft uses Kafka APIs here; clients never do), so it is
//! plain serde of openraft's own request types.

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
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::controller::{Controller, ControllerError, ControllerReply, ControllerRequest};
use crate::types::{Raft, TypeConfig};

type NodeId = u64;

/// Largest frame accepted, bytes (a snapshot chunk is at most openraft's 3 MiB default).
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// A request between nodes.
#[derive(Debug, Serialize, Deserialize)]
pub enum Request {
    /// Raft AppendEntries.
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    /// Raft RequestVote.
    Vote(VoteRequest<NodeId>),
    /// Raft InstallSnapshot (one chunk).
    InstallSnapshot(InstallSnapshotRequest<TypeConfig>),
    /// For the active controller.
    Controller(ControllerRequest),
}

/// The answer to a [`Request`].
#[derive(Debug, Serialize, Deserialize)]
pub enum Response {
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
}

async fn write_frame<T: Serialize>(s: &mut TcpStream, v: &T) -> std::io::Result<()> {
    let body = serde_json::to_vec(v).map_err(std::io::Error::other)?;
    if body.len() > MAX_FRAME_BYTES {
        return Err(std::io::Error::other("frame too large"));
    }
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&(body.len() as u32).to_be_bytes());
    buf.extend_from_slice(&body);
    s.write_all(&buf).await
}

async fn read_frame<T: for<'de> Deserialize<'de>>(s: &mut TcpStream) -> std::io::Result<T> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(std::io::Error::other(format!(
            "frame of {len} bytes refused"
        )));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await?;
    serde_json::from_slice(&body).map_err(std::io::Error::other)
}

/// A connection to one node, opened on first use and reopened after an error.
pub struct Conn {
    addr: String,
    stream: Option<TcpStream>,
}

impl Conn {
    /// A connection to `addr` (host:port), not yet open.
    pub fn new(addr: String) -> Self {
        Conn { addr, stream: None }
    }

    /// Sends `req` and waits for its answer, at most `timeout`.
    ///
    /// Errors: connecting, writing, reading or the timeout (the connection is then dropped).
    pub async fn call(&mut self, req: &Request, timeout: Duration) -> std::io::Result<Response> {
        let r = tokio::time::timeout(timeout, async {
            if self.stream.is_none() {
                let s = TcpStream::connect(&self.addr).await?;
                s.set_nodelay(true)?;
                self.stream = Some(s);
            }
            let s = self.stream.as_mut().expect("just connected");
            write_frame(s, req).await?;
            read_frame(s).await
        })
        .await
        .unwrap_or_else(|_| {
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "timed out",
            ))
        });
        if r.is_err() {
            self.stream = None;
        }
        r
    }
}

/// openraft's network factory: one [`NodeClient`] per peer.
#[derive(Clone, Default)]
pub struct Network;

/// The connection to one peer for Raft RPCs.
pub struct NodeClient {
    target: NodeId,
    conn: Conn,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = NodeClient;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> NodeClient {
        NodeClient {
            target,
            conn: Conn::new(node.addr.clone()),
        }
    }
}

impl NodeClient {
    async fn rpc<E: std::error::Error>(
        &mut self,
        req: Request,
        option: &RPCOption,
    ) -> Result<Response, RPCError<NodeId, BasicNode, E>> {
        match self.conn.call(&req, option.hard_ttl()).await {
            Ok(r) => Ok(r),
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
        match self.rpc(Request::AppendEntries(rpc), &option).await? {
            Response::AppendEntries(r) => r.map_err(|e| RemoteError::new(self.target, e).into()),
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

/// Serves the controller listener until the task is aborted: each connection's frames are
/// handled in order (Raft RPCs by `raft`, controller requests by `controller`).
pub async fn serve(listener: TcpListener, raft: Raft, controller: Arc<Controller>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "controller listener accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let raft = raft.clone();
        let controller = controller.clone();
        tokio::spawn(async move {
            let mut stream = stream;
            loop {
                let req: Request = match read_frame(&mut stream).await {
                    Ok(r) => r,
                    Err(e) => {
                        if e.kind() != std::io::ErrorKind::UnexpectedEof {
                            tracing::debug!(%peer, error = %e, "controller connection closed");
                        }
                        return;
                    }
                };
                let resp = match req {
                    Request::AppendEntries(r) => {
                        Response::AppendEntries(raft.append_entries(r).await)
                    }
                    Request::Vote(r) => Response::Vote(raft.vote(r).await),
                    Request::InstallSnapshot(r) => {
                        Response::InstallSnapshot(raft.install_snapshot(r).await)
                    }
                    Request::Controller(r) => Response::Controller(controller.handle(r).await),
                };
                if let Err(e) = write_frame(&mut stream, &resp).await {
                    tracing::debug!(%peer, error = %e, "controller connection closed");
                    return;
                }
            }
        });
    }
}
