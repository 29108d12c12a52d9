//! Connections to other brokers for the coordinators' requests: a transaction coordinator's
//! WriteTxnMarkers to partition leaders, a partition leader's AddPartitionsToTxn to a
//! transaction coordinator (KIP-890 verification and implicit adds). Kafka's
//! `TransactionMarkerChannelManager` and `AddPartitionsToTxnManager` own such channels.
//!
//! Up to [`MAX_IDLE_PER_BROKER`] idle connections are kept per broker; a request takes one (or
//! connects, at most [`MAX_CONNECTIONS_PER_BROKER`] at once), and gives it back unless the
//! request failed (a failed connection is dropped: the next request reconnects; when a kept one
//! failed, every kept one of that broker is dropped, as they outlived the same peer).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use frieda_meta::BrokerId;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request};
use parking_lot::Mutex;
use tokio::sync::Semaphore;

use super::client::BrokerClient;
use super::ClusterNode;

/// Idle connections kept per broker.
pub const MAX_IDLE_PER_BROKER: usize = 4;
/// Connections open at once per broker (requests beyond wait).
pub const MAX_CONNECTIONS_PER_BROKER: usize = 16;
/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Default)]
struct PerBroker {
    idle: Vec<BrokerClient>,
}

/// The pool of one broker (`me`).
pub struct BrokerClients {
    node: std::sync::Weak<ClusterNode>,
    brokers: Mutex<HashMap<BrokerId, PerBroker>>,
    permits: Mutex<HashMap<BrokerId, Arc<Semaphore>>>,
}

impl BrokerClients {
    /// A pool using `node`'s metadata for addresses.
    pub fn new(node: std::sync::Weak<ClusterNode>) -> Self {
        BrokerClients {
            node,
            brokers: Mutex::new(HashMap::new()),
            permits: Mutex::new(HashMap::new()),
        }
    }

    /// Sends `req` as `version` to broker `to` and waits at most `timeout` for the answer.
    ///
    /// Errors: the broker is unknown or unreachable, the request timed out, or the answer did
    /// not decode.
    pub async fn call<R>(
        &self,
        to: BrokerId,
        version: i16,
        req: &R,
        timeout: Duration,
    ) -> std::io::Result<R::Response>
    where
        R: Request + Encodable + HeaderVersion,
        R::Response: Decodable + HeaderVersion,
    {
        let permits = self
            .permits
            .lock()
            .entry(to)
            .or_insert_with(|| Arc::new(Semaphore::new(MAX_CONNECTIONS_PER_BROKER)))
            .clone();
        let _permit = tokio::time::timeout(timeout, permits.acquire_owned())
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no free connection"))?
            .map_err(std::io::Error::other)?;
        let idle = self.brokers.lock().get_mut(&to).and_then(|b| b.idle.pop());
        let reused = idle.is_some();
        let mut client = match idle {
            Some(c) => c,
            None => {
                let node = self
                    .node
                    .upgrade()
                    .ok_or_else(|| std::io::Error::other("broker shutting down"))?;
                let addr = node.address_of(to).ok_or_else(|| {
                    std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("broker {to} has no known address"),
                    )
                })?;
                BrokerClient::connect(
                    &addr,
                    &format!("frieda-broker-{}", node.me),
                    CONNECT_TIMEOUT,
                    &node.inter_broker_security(),
                )
                .await?
            }
        };
        let result = client.call(version, req, timeout).await;
        if result.is_ok() {
            let mut brokers = self.brokers.lock();
            let b = brokers.entry(to).or_default();
            if b.idle.len() < MAX_IDLE_PER_BROKER {
                b.idle.push(client);
            }
        } else if reused {
            // A kept connection failed: the broker likely restarted, and the other kept ones
            // would fail the same way one request at a time. The next request reconnects.
            self.brokers.lock().remove(&to);
        }
        result
    }
}
