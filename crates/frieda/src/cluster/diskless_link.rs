//! The diskless drivers' way to coordinators on other brokers
//! ([`crate::diskless::driver::route::CoordinatorLink`]): the leader of a
//! `__diskless_coordinator` partition from the latest metadata image, and a request as the
//! `request_data` of a Kafka EnvelopeRequest (API 58, v0) over the broker's inter-broker
//! connections ([`crate::membership::clients`]), answered by
//! [`crate::handlers`]' Envelope handler.

use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::EnvelopeRequest;

use crate::diskless::config::COORDINATOR_TOPIC;
use crate::diskless::driver::route::{CoordinatorLink, Reply};
use crate::membership::ClusterNode;

/// The link of broker `node`.
pub struct NodeLink {
    node: Weak<ClusterNode>,
    me: i32,
}

impl NodeLink {
    /// The link of `node`.
    pub fn link(node: &Arc<ClusterNode>) -> Arc<dyn CoordinatorLink> {
        Arc::new(NodeLink {
            node: Arc::downgrade(node),
            me: node.me,
        })
    }
}

impl CoordinatorLink for NodeLink {
    fn leader_of(&self, index: i32) -> Option<i32> {
        let node = self.node.upgrade()?;
        let image = node.image();
        let p = image
            .topics
            .get(COORDINATOR_TOPIC)?
            .partitions
            .get(usize::try_from(index).ok()?)?;
        (p.leader != frieda_meta::NO_LEADER).then_some(p.leader)
    }

    fn me(&self) -> i32 {
        self.me
    }

    fn rack_peers(&self) -> Vec<i32> {
        let Some(node) = self.node.upgrade() else {
            return Vec::new();
        };
        let image = node.image();
        // this broker's registration (before it registered: none of a rack, so no peers in a
        // cluster with racks)
        let rack = image.brokers.get(&self.me).and_then(|b| b.rack.as_deref());
        image
            .live_brokers()
            .filter(|b| b.rack.as_deref() == rack)
            .map(|b| b.id)
            .collect()
    }

    fn call(&self, to: i32, request: Vec<u8>, timeout: Duration) -> Reply {
        let node = self.node.clone();
        Box::pin(async move {
            let node = node
                .upgrade()
                .ok_or_else(|| std::io::Error::other("broker shutting down"))?;
            let envelope = EnvelopeRequest::default()
                .with_request_data(Bytes::from(request))
                .with_client_host_address(Bytes::new());
            let answer = node.clients.call(to, 0, &envelope, timeout).await?;
            if answer.error_code != 0 {
                return Err(std::io::Error::other(format!(
                    "broker {to} refused the envelope: error {}",
                    answer.error_code
                )));
            }
            answer
                .response_data
                .ok_or_else(|| std::io::Error::other(format!("broker {to}: an empty envelope")))
        })
    }
}
