//! The listener: accepts connections (bounded by `max.connections`) until shutdown, then waits
//! for connections to finish their in-flight requests.

use super::connection::serve_connection;
use crate::broker::Broker;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

/// How long shutdown waits for connections to finish in-flight requests.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(3);

/// Accepts and serves connections until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
) {
    let limit = Arc::new(Semaphore::new(broker.config.max_connections));
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let Ok(permit) = limit.clone().try_acquire_owned() else {
                    tracing::warn!(%peer, max = broker.config.max_connections, "closing connection: max.connections reached");
                    drop(stream);
                    continue;
                };
                let broker = broker.clone();
                let rx = shutdown.clone();
                conns.spawn(async move {
                    serve_connection(stream, peer, broker, rx).await;
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
