//! The consumer protocol embedded in the classic group protocol (Kafka's `ConsumerProtocol`):
//! a JoinGroup protocol's metadata is a `ConsumerProtocolSubscription`, a SyncGroup assignment a
//! `ConsumerProtocolAssignment`, each prefixed by its version (i16, 0-3). Used by classic groups
//! (their subscribed topics) and by consumer groups with classic members (KIP-848's upgrade
//! path), which translate between topic names on this wire and topic ids.

use super::assignor::Assignment;
use super::consumer::TopicsView;
use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::error::ResponseError as E;
use kafka_protocol::messages::{
    consumer_protocol_assignment, ConsumerProtocolAssignment, ConsumerProtocolSubscription,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use std::collections::BTreeMap;
use uuid::Uuid;

/// The embedded protocol's version: the first two bytes of its metadata (0 if absent).
pub fn embedded_version(b: &[u8]) -> i16 {
    if b.len() < 2 {
        0
    } else {
        i16::from_be_bytes([b[0], b[1]]).clamp(0, 3)
    }
}

/// Decodes a `ConsumerProtocolSubscription` (version prefix, then the body).
///
/// Errors: INCONSISTENT_GROUP_PROTOCOL (23) when it cannot be read.
pub fn decode_subscription(meta: &Bytes) -> Result<ConsumerProtocolSubscription, E> {
    let mut b = meta.clone();
    if b.len() < 2 {
        return Err(E::InconsistentGroupProtocol);
    }
    let version = b.get_i16().clamp(0, 3);
    ConsumerProtocolSubscription::decode(&mut b, version).map_err(|_| E::InconsistentGroupProtocol)
}

/// Decodes a `ConsumerProtocolAssignment` into topic ids (unknown topics are left out; empty
/// bytes are an empty assignment).
pub fn decode_assignment(bytes: &Bytes, topics: &TopicsView) -> Assignment {
    let mut b = bytes.clone();
    let mut out = Assignment::new();
    if b.len() < 2 {
        return out;
    }
    let version = b.get_i16().clamp(0, 3);
    let Ok(a) = ConsumerProtocolAssignment::decode(&mut b, version) else {
        return out;
    };
    for tp in a.assigned_partitions {
        if let Some(t) = topics.get(tp.topic.as_str()) {
            out.entry(t.id).or_default().extend(tp.partitions);
        }
    }
    out.retain(|_, ps| !ps.is_empty());
    out
}

/// Encodes `assigned` as a `ConsumerProtocolAssignment` of `version` (topic names from
/// `topics`; partitions of topics it no longer knows are left out).
pub fn encode_assignment(assigned: &Assignment, topics: &TopicsView, version: i16) -> Bytes {
    let names: BTreeMap<Uuid, &str> = topics
        .iter()
        .map(|(name, t)| (t.id, name.as_str()))
        .collect();
    let assignment = ConsumerProtocolAssignment::default().with_assigned_partitions(
        assigned
            .iter()
            .filter_map(|(id, ps)| {
                Some(
                    consumer_protocol_assignment::TopicPartition::default()
                        .with_topic(TopicName(StrBytes::from_string(names.get(id)?.to_string())))
                        .with_partitions(ps.iter().copied().collect()),
                )
            })
            .collect(),
    );
    let mut b = BytesMut::new();
    b.extend_from_slice(&version.to_be_bytes());
    // Encoding into memory fails only for values the schema cannot hold (none here).
    if assignment.encode(&mut b, version).is_err() {
        return Bytes::new();
    }
    b.freeze()
}

/// The owned partitions of a subscription (v1+), as topic ids (unknown topics left out).
pub fn owned_partitions(sub: &ConsumerProtocolSubscription, topics: &TopicsView) -> Assignment {
    let mut out = Assignment::new();
    for tp in &sub.owned_partitions {
        if let Some(t) = topics.get(tp.topic.as_str()) {
            out.entry(t.id)
                .or_default()
                .extend(tp.partitions.iter().copied());
        }
    }
    out.retain(|_, ps| !ps.is_empty());
    out
}
