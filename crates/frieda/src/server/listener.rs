//! The listener: accepts connections (bounded by `max.connections`, sharing one budget of request
//! bytes, `queued.max.request.bytes`) until shutdown, then waits for connections to finish their
//! in-flight requests.

use super::connection::serve_connection;
use super::frame::RequestBudget;
use crate::broker::Broker;
use crate::config::BrokerConfig;
use crate::security::ListenerSecurity;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

/// How long shutdown waits for connections to finish in-flight requests.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(3);

/// Binds the listening socket. `socket.send.buffer.bytes` / `socket.receive.buffer.bytes` are set
/// on it, so every accepted connection inherits them (a client that stops reading can then park
/// only that much of its responses in the kernel before backpressure reaches its connection).
pub fn bind(addr: SocketAddr, config: &BrokerConfig) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    if let Some(n) = config.socket_send_buffer_bytes {
        socket.set_send_buffer_size(n)?;
    }
    if let Some(n) = config.socket_receive_buffer_bytes {
        socket.set_recv_buffer_size(n)?;
    }
    socket.bind(addr)?;
    socket.listen(1024)
}

/// The next connection on `listener`, or `None` after a failed accept (logged with `what`,
/// the listener's name, then a 10 ms pause so a persistent error such as EMFILE cannot spin).
pub async fn accept(listener: &TcpListener, what: &str) -> Option<(TcpStream, SocketAddr)> {
    match listener.accept().await {
        Ok(x) => Some(x),
        Err(e) => {
            tracing::warn!(listener = what, error = %e, "accept failed");
            tokio::time::sleep(Duration::from_millis(10)).await;
            None
        }
    }
}

/// Accepts and serves connections until `shutdown` turns true; `security` says what the
/// listener asks of them (TLS, SASL).
pub async fn serve(
    listener: TcpListener,
    security: Arc<ListenerSecurity>,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
) {
    let limit = Arc::new(Semaphore::new(broker.config.max_connections));
    // `queued.max.request.bytes`: one budget of request bytes for every connection.
    let budget = (broker.config.queued_max_request_bytes < Semaphore::MAX_PERMITS)
        .then(|| RequestBudget::new(broker.config.queued_max_request_bytes));
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = accept(&listener, "kafka") => {
                let Some((stream, peer)) = accepted else { continue };
                let Ok(permit) = limit.clone().try_acquire_owned() else {
                    tracing::warn!(%peer, max = broker.config.max_connections, "closing connection: max.connections reached");
                    drop(stream);
                    continue;
                };
                let broker = broker.clone();
                let rx = shutdown.clone();
                let budget = budget.clone();
                let security = security.clone();
                conns.spawn(async move {
                    serve_connection(stream, peer, broker, security, budget, rx).await;
                    drop(permit);
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = shutdown.changed() => break,
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            remaining = conns.len(),
            "connections still busy after the drain timeout; closing them"
        );
        conns.abort_all();
    }
}
