//! Replica placement of new partitions (CreateTopics, CreatePartitions without an explicit
//! assignment): striped over the live brokers, rack-aware (issue 33).
//!
//! The brokers are arranged alternating between racks (racks by name, brokers by id within a
//! rack: `a0, b0, c0, a1, b1, c1, ...`), as Kafka's rack-aware assignment
//! (`AdminUtils.assignReplicasToBrokersRackAware`, KIP-36) arranges them. Partition `p` starts
//! at position `seed(topic) + p` of that list (so leaders spread over brokers and racks) and
//! takes the next brokers whose rack holds no replica of it yet; once every rack holds one it
//! starts over with all racks. So a partition with `rf` replicas spans `min(rf, racks)` racks.
//! A broker without `broker.rack` counts as one rack of its own kind (as Kafka's KRaft placer
//! treats an absent rack); with no racks at all this is plain striping by broker id.

use std::collections::{BTreeMap, BTreeSet};

use crate::controller::ControllerError;
use crate::image::{BrokerId, MetadataImage};

/// The live brokers alternating between racks: the first of each rack, then the second of
/// each, and so on (racks by name, an absent rack first; brokers by id).
pub fn rack_alternated(brokers: &[(BrokerId, Option<String>)]) -> Vec<(BrokerId, Option<String>)> {
    let mut by_rack: BTreeMap<Option<&str>, Vec<BrokerId>> = BTreeMap::new();
    for (id, rack) in brokers {
        by_rack.entry(rack.as_deref()).or_default().push(*id);
    }
    for ids in by_rack.values_mut() {
        ids.sort_unstable();
    }
    let most = by_rack.values().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(brokers.len());
    for i in 0..most {
        for (rack, ids) in &by_rack {
            if let Some(id) = ids.get(i) {
                out.push((*id, rack.map(str::to_string)));
            }
        }
    }
    out
}

/// The replicas of one partition: from position `start` of `arranged`, the next brokers of
/// racks that hold no replica yet, starting over with every rack once all hold one.
fn replicas_from(
    arranged: &[(BrokerId, Option<String>)],
    start: usize,
    rf: usize,
) -> Vec<BrokerId> {
    let racks: BTreeSet<Option<&str>> = arranged.iter().map(|(_, r)| r.as_deref()).collect();
    let mut chosen: Vec<BrokerId> = Vec::with_capacity(rf);
    let mut used: BTreeSet<Option<&str>> = BTreeSet::new();
    while chosen.len() < rf {
        let before = chosen.len();
        for i in 0..arranged.len() {
            let (id, rack) = &arranged[(start + i) % arranged.len()];
            if chosen.len() == rf {
                break;
            }
            if chosen.contains(id) || used.contains(&rack.as_deref()) {
                continue;
            }
            chosen.push(*id);
            used.insert(rack.as_deref());
            if used.len() == racks.len() {
                used.clear();
            }
        }
        if chosen.len() == before {
            // Every broker left is in a rack already used this round: start a new round.
            used.clear();
        }
    }
    chosen
}

/// Places `count` new partitions (indexes from `first`) of `topic` with `rf` replicas each over
/// the live brokers (see the module's doc); the first replica is the preferred leader.
///
/// Errors: INVALID_PARTITIONS for a count below 1, INVALID_REPLICATION_FACTOR when there are
/// not enough live brokers.
pub(crate) fn place(
    image: &MetadataImage,
    topic: &str,
    first: i32,
    count: i32,
    rf: i16,
) -> Result<Vec<Vec<BrokerId>>, ControllerError> {
    if count < 1 {
        return Err(ControllerError::InvalidPartitions(
            "number of partitions must be at least 1".into(),
        ));
    }
    let live: Vec<(BrokerId, Option<String>)> = image
        .live_brokers()
        .map(|b| (b.id, b.rack.clone()))
        .collect();
    if rf < 1 || rf as usize > live.len() {
        return Err(ControllerError::InvalidReplicationFactor(format!(
            "Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only {} broker(s) are registered.",
            live.len()
        )));
    }
    Ok(striped(&live, topic, first, count, rf as usize))
}

/// [`place`] over an explicit broker list (tests, the simulator).
pub fn striped(
    live: &[(BrokerId, Option<String>)],
    topic: &str,
    first: i32,
    count: i32,
    rf: usize,
) -> Vec<Vec<BrokerId>> {
    let arranged = rack_alternated(live);
    let seed = topic
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b))) as usize;
    (first..first + count)
        .map(|p| {
            let start = seed.wrapping_add(p as usize) % arranged.len();
            replicas_from(&arranged, start, rf)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brokers(list: &[(i32, Option<&str>)]) -> Vec<(BrokerId, Option<String>)> {
        list.iter()
            .map(|(id, r)| (*id, r.map(str::to_string)))
            .collect()
    }

    fn rack_of(live: &[(BrokerId, Option<String>)], id: BrokerId) -> Option<String> {
        live.iter().find(|(b, _)| *b == id).unwrap().1.clone()
    }

    #[test]
    fn replicas_span_racks_and_leaders_spread() {
        let live = brokers(&[
            (1, Some("a")),
            (2, Some("a")),
            (3, Some("b")),
            (4, Some("b")),
            (5, Some("c")),
            (6, Some("c")),
        ]);
        let placed = striped(&live, "orders", 0, 12, 3);
        let mut leaders: BTreeMap<BrokerId, usize> = BTreeMap::new();
        for replicas in &placed {
            assert_eq!(replicas.len(), 3);
            let racks: BTreeSet<_> = replicas.iter().map(|b| rack_of(&live, *b)).collect();
            assert_eq!(racks.len(), 3, "one replica per rack: {replicas:?}");
            let distinct: BTreeSet<_> = replicas.iter().collect();
            assert_eq!(distinct.len(), 3);
            *leaders.entry(replicas[0]).or_default() += 1;
        }
        assert_eq!(leaders.len(), 6, "every broker leads some: {leaders:?}");
        assert!(leaders.values().all(|n| *n == 2), "{leaders:?}");
        // RF 2 over 3 racks: two racks each; RF 4: every rack, one twice.
        for replicas in striped(&live, "orders", 0, 6, 2) {
            assert_ne!(rack_of(&live, replicas[0]), rack_of(&live, replicas[1]));
        }
        for replicas in striped(&live, "orders", 0, 6, 4) {
            let racks: BTreeSet<_> = replicas.iter().map(|b| rack_of(&live, *b)).collect();
            assert_eq!(
                (racks.len(), replicas.iter().collect::<BTreeSet<_>>().len()),
                (3, 4)
            );
        }
    }

    #[test]
    fn uneven_racks_and_brokers_without_a_rack() {
        let live = brokers(&[
            (1, Some("a")),
            (2, Some("a")),
            (3, Some("a")),
            (4, Some("b")),
            (5, None),
        ]);
        for replicas in striped(&live, "t", 0, 10, 3) {
            let racks: BTreeSet<_> = replicas.iter().map(|b| rack_of(&live, *b)).collect();
            assert_eq!(racks.len(), 3, "{replicas:?}");
        }
        // RF = brokers: everyone, once.
        for replicas in striped(&live, "t", 0, 5, 5) {
            assert_eq!(replicas.iter().collect::<BTreeSet<_>>().len(), 5);
        }
    }

    #[test]
    fn without_racks_it_stripes_by_broker_id() {
        let live = brokers(&[(1, None), (2, None), (3, None)]);
        let placed = striped(&live, "t", 0, 3, 2);
        let starts: BTreeSet<_> = placed.iter().map(|r| r[0]).collect();
        assert_eq!(starts.len(), 3);
        for r in &placed {
            let next = r[0] % 3 + 1;
            assert_eq!(r[1], next, "consecutive ids: {r:?}");
        }
    }
}
