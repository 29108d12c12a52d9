//! Fetch from follower (KIP-392): which replica a consumer should read a partition from.
//!
//! A consumer that says its rack (`client.rack`, Fetch v11+ `rack_id`) and fetches from the
//! leader gets a *preferred read replica* in the answer when `replica.selector.class` is
//! Kafka's `RackAwareReplicaSelector`: an in-sync follower in the consumer's rack that holds the
//! fetch offset. The consumer then reads from that follower, up to the follower's high
//! watermark, until it fails or the client's metadata ages out (`metadata.max.age.ms`).
//!
//! The rules are Kafka 4.4's (`ReplicaManager.findPreferredReadReplica` and
//! `RackAwareReplicaSelector.select`, read from the 4.4.0 jars):
//! - candidates are the leader and every follower in the ISR whose log holds the fetch offset
//!   (log start <= offset <= log end) and whose broker is registered and unfenced;
//! - with no rack from the client, or no candidate in its rack, the leader (no preferred
//!   replica is sent); the leader when it is in the client's rack;
//! - otherwise the candidate of that rack with the largest log end offset, then the one caught
//!   up most recently (Kafka's `ReplicaView.comparator`); ties go to the lowest broker id
//!   (Kafka's set order is arbitrary there).

use frieda_meta::BrokerId;

/// `replica.selector.class`: how a leader picks the replica a consumer should read from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReplicaSelector {
    /// Unset (Kafka's default): consumers read from the leader.
    #[default]
    Leader,
    /// `org.apache.kafka.common.replica.RackAwareReplicaSelector`: a follower in the
    /// consumer's rack when there is one.
    RackAware,
}

impl ReplicaSelector {
    /// Kafka's class name for the rack-aware selector.
    pub const RACK_AWARE_CLASS: &'static str =
        "org.apache.kafka.common.replica.RackAwareReplicaSelector";

    /// Parses a `replica.selector.class` value: empty for none, or Kafka's rack-aware class
    /// name (with or without its package). `None` for any other class (Frieda runs no plugins).
    pub fn parse(class: &str) -> Option<ReplicaSelector> {
        match class.trim() {
            "" => Some(ReplicaSelector::Leader),
            Self::RACK_AWARE_CLASS | "RackAwareReplicaSelector" => Some(ReplicaSelector::RackAware),
            _ => None,
        }
    }

    /// The class name as Kafka's DescribeConfigs reports it (`None` when unset).
    pub fn class_name(self) -> Option<&'static str> {
        match self {
            ReplicaSelector::Leader => None,
            ReplicaSelector::RackAware => Some(Self::RACK_AWARE_CLASS),
        }
    }
}

/// One replica the leader may send a consumer to (Kafka's `ReplicaView`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadCandidate {
    /// Its broker id.
    pub broker: BrokerId,
    /// Its broker's `broker.rack`, if set.
    pub rack: Option<String>,
    /// Its log end offset as the leader knows it (the leader's own for the leader).
    pub log_end_offset: i64,
    /// How long since it was last caught up with the leader, ms (0 for the leader).
    pub since_caught_up_ms: i64,
}

/// The preferred read replica for a consumer in `client_rack` (`None` or empty: no rack), given
/// the `leader` and the in-sync `followers` that hold the fetch offset (see the module doc).
/// `None` means "read from the leader": Kafka never names the leader as the preferred replica.
pub fn select(
    selector: ReplicaSelector,
    client_rack: Option<&str>,
    leader: &ReadCandidate,
    followers: &[ReadCandidate],
) -> Option<BrokerId> {
    if selector != ReplicaSelector::RackAware {
        return None;
    }
    let rack = client_rack.filter(|r| !r.is_empty())?;
    if leader.rack.as_deref() == Some(rack) {
        return None;
    }
    followers
        .iter()
        .filter(|c| c.rack.as_deref() == Some(rack))
        .max_by(|a, b| {
            a.log_end_offset
                .cmp(&b.log_end_offset)
                .then(b.since_caught_up_ms.cmp(&a.since_caught_up_ms))
                .then(b.broker.cmp(&a.broker))
        })
        .map(|c| c.broker)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(broker: BrokerId, rack: &str, leo: i64, since: i64) -> ReadCandidate {
        ReadCandidate {
            broker,
            rack: (!rack.is_empty()).then(|| rack.to_string()),
            log_end_offset: leo,
            since_caught_up_ms: since,
        }
    }

    #[test]
    fn a_follower_in_the_clients_rack_is_preferred() {
        let leader = c(1, "a", 100, 0);
        let f = [c(2, "b", 90, 5), c(3, "c", 100, 0)];
        let rack_aware = ReplicaSelector::RackAware;
        assert_eq!(select(rack_aware, Some("b"), &leader, &f), Some(2));
        assert_eq!(select(rack_aware, Some("c"), &leader, &f), Some(3));
        // The leader's own rack, an unknown rack, no rack: the leader.
        assert_eq!(select(rack_aware, Some("a"), &leader, &f), None);
        assert_eq!(select(rack_aware, Some("z"), &leader, &f), None);
        assert_eq!(select(rack_aware, Some(""), &leader, &f), None);
        assert_eq!(select(rack_aware, None, &leader, &f), None);
        // Without the rack-aware selector, never a follower.
        assert_eq!(
            select(ReplicaSelector::Leader, Some("b"), &leader, &f),
            None
        );
    }

    #[test]
    fn the_most_caught_up_follower_of_the_rack_wins() {
        let leader = c(1, "a", 100, 0);
        let f = [c(2, "b", 90, 0), c(3, "b", 95, 50), c(4, "b", 95, 10)];
        assert_eq!(
            select(ReplicaSelector::RackAware, Some("b"), &leader, &f),
            Some(4)
        );
        let tie = [c(5, "b", 95, 10), c(4, "b", 95, 10)];
        assert_eq!(
            select(ReplicaSelector::RackAware, Some("b"), &leader, &tie),
            Some(4)
        );
    }

    #[test]
    fn selector_class_names() {
        assert_eq!(ReplicaSelector::parse(""), Some(ReplicaSelector::Leader));
        assert_eq!(
            ReplicaSelector::parse(ReplicaSelector::RACK_AWARE_CLASS),
            Some(ReplicaSelector::RackAware)
        );
        assert_eq!(ReplicaSelector::parse("com.example.Mine"), None);
        assert_eq!(
            ReplicaSelector::RackAware.class_name(),
            Some(ReplicaSelector::RACK_AWARE_CLASS)
        );
    }
}
