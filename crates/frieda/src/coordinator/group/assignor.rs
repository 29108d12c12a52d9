//! The server-side assignors of KIP-848 consumer groups: `uniform` (Kafka's default,
//! `UniformAssignor`) and `range` (`RangeAssignor`). Pure functions from the members'
//! subscriptions and racks, the subscribed topics' partition counts and replica racks, and the
//! previous target assignment to the new target assignment; unit-tested below.
//!
//! Racks (KIP-881, issue 33): a member that says its rack (`client.rack`, the heartbeat's
//! `RackId`) is *on rack* for a partition with a replica in that rack, and the assignors prefer
//! on-rack members, so that with fetch-from-follower (KIP-392) the consumer reads in its own
//! rack. Balance comes first: `uniform` still leaves the counts at most one apart and `range`
//! keeps each member's count per topic; racks only choose which partitions. Without racks (no
//! member rack, or no replica rack known) `range` gives Kafka's contiguous ranges.
//! Kafka 4.4's built-in server assignors do not use racks (its client-side assignors do, since
//! KIP-881 in 3.5); this is where Frieda goes further.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use uuid::Uuid;

/// Partitions per topic id: a member's assignment.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// One member as an assignor sees it.
#[derive(Debug, Clone)]
pub struct AssignorMember<'a> {
    /// Member id.
    pub id: &'a str,
    /// The topic ids it subscribes to (existing topics only).
    pub topics: BTreeSet<Uuid>,
    /// Its rack (`client.rack`), if it said one.
    pub rack: Option<&'a str>,
}

/// One subscribed topic as an assignor sees it.
#[derive(Debug, Clone, Copy)]
pub struct AssignorTopic<'a> {
    /// Partition count.
    pub partitions: i32,
    /// Per partition, the racks of its replicas (shorter, or empty sets, where unknown).
    pub racks: &'a [BTreeSet<String>],
}

/// The assignors Frieda serves (KIP-848 `group.consumer.assignors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignor {
    /// Balanced partition counts, sticky: a partition stays with its member unless that would
    /// leave the counts more than one apart, or the member is off rack for it while a
    /// subscribed member is on rack (Kafka's `uniform`, the default).
    Uniform,
    /// Per topic, partitions over the subscribed members in member id order, each member's
    /// count as Kafka's `range` gives it; contiguous ranges unless racks move partitions to
    /// on-rack members within those counts.
    Range,
}

impl Assignor {
    /// The assignor named `name` (`uniform`, `range`), `None` for any other (UNSUPPORTED_ASSIGNOR).
    pub fn parse(name: &str) -> Option<Assignor> {
        match name {
            "uniform" => Some(Assignor::Uniform),
            "range" => Some(Assignor::Range),
            _ => None,
        }
    }

    /// Its Kafka name.
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Uniform => "uniform",
            Assignor::Range => "range",
        }
    }

    /// The target assignment of `members` over `topics` (topic id -> partitions and racks),
    /// starting from `previous` (member id -> assignment). Every partition of a topic that at
    /// least one member subscribes to goes to exactly one subscribed member.
    pub fn assign(
        self,
        members: &[AssignorMember<'_>],
        topics: &BTreeMap<Uuid, AssignorTopic<'_>>,
        previous: &HashMap<String, Assignment>,
    ) -> HashMap<String, Assignment> {
        let view = View::new(members, topics);
        let out = match self {
            Assignor::Uniform => uniform(&view, previous),
            Assignor::Range => range(&view),
        };
        debug_assert!(each_partition_once(&out), "a partition assigned twice");
        out
    }
}

/// The members and topics, indexed for the assignors.
struct View<'v, 'a> {
    members: BTreeMap<&'a str, &'v AssignorMember<'a>>,
    topics: &'v BTreeMap<Uuid, AssignorTopic<'a>>,
}

impl<'v, 'a> View<'v, 'a> {
    fn new(
        members: &'v [AssignorMember<'a>],
        topics: &'v BTreeMap<Uuid, AssignorTopic<'a>>,
    ) -> Self {
        View {
            members: members.iter().map(|m| (m.id, m)).collect(),
            topics,
        }
    }

    /// Member ids in order.
    fn ids(&self) -> Vec<&'a str> {
        self.members.keys().copied().collect()
    }

    fn subscribed(&self, id: &str, t: &Uuid) -> bool {
        self.members.get(id).is_some_and(|m| m.topics.contains(t))
    }

    /// Whether member `id` has a rack that holds a replica of partition `p` of `t`.
    fn on_rack(&self, id: &str, t: &Uuid, p: i32) -> bool {
        let Some(rack) = self.members.get(id).and_then(|m| m.rack) else {
            return false;
        };
        self.topics
            .get(t)
            .and_then(|topic| topic.racks.get(usize::try_from(p).ok()?))
            .is_some_and(|racks| racks.contains(rack))
    }

    /// Whether some member subscribed to `t` is on rack for partition `p`.
    fn wants_rack(&self, t: &Uuid, p: i32) -> bool {
        self.members
            .keys()
            .any(|id| self.subscribed(id, t) && self.on_rack(id, t, p))
    }
}

fn each_partition_once(a: &HashMap<String, Assignment>) -> bool {
    let mut seen = BTreeSet::new();
    a.values()
        .flat_map(|m| {
            m.iter()
                .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
        })
        .all(|tp| seen.insert(tp))
}

/// An empty assignment for every member.
fn empty(view: &View<'_, '_>) -> HashMap<String, Assignment> {
    view.ids()
        .into_iter()
        .map(|id| (id.to_string(), Assignment::new()))
        .collect()
}

/// Adds partition `p` of topic `t` to member `id`'s assignment.
fn give(out: &mut HashMap<String, Assignment>, id: &str, t: Uuid, p: i32) {
    out.get_mut(id)
        .expect("member")
        .entry(t)
        .or_default()
        .insert(p);
}

fn count(a: &Assignment) -> usize {
    a.values().map(BTreeSet::len).sum()
}

/// How good a balancing move is: rack matches gained, then the receiver's count (fewer first).
type MoveRank = (i32, std::cmp::Reverse<usize>);

fn uniform(
    view: &View<'_, '_>,
    previous: &HashMap<String, Assignment>,
) -> HashMap<String, Assignment> {
    let mut out = empty(view);
    let ids = view.ids();
    // 1. Keep what each member had, where the partition still exists, it still subscribes, and
    //    it is on rack or no subscribed member is.
    let mut owner: HashMap<(Uuid, i32), String> = HashMap::new();
    for id in &ids {
        let Some(prev) = previous.get(*id) else {
            continue;
        };
        for (t, ps) in prev {
            let Some(topic) = view.topics.get(t) else {
                continue;
            };
            if !view.subscribed(id, t) {
                continue;
            }
            for &p in ps.iter().filter(|&&p| p < topic.partitions) {
                if owner.contains_key(&(*t, p))
                    || (!view.on_rack(id, t, p) && view.wants_rack(t, p))
                {
                    continue;
                }
                owner.insert((*t, p), id.to_string());
                give(&mut out, id, *t, p);
            }
        }
    }
    // 2. Every other partition to the least loaded on-rack subscribed member, else the least
    //    loaded subscribed member.
    for (t, topic) in view.topics {
        for p in 0..topic.partitions {
            if owner.contains_key(&(*t, p)) {
                continue;
            }
            let best = ids
                .iter()
                .filter(|id| view.subscribed(id, t))
                .min_by_key(|id| (!view.on_rack(id, t, p), count(&out[**id]), **id));
            if let Some(id) = best {
                owner.insert((*t, p), id.to_string());
                give(&mut out, id, *t, p);
            }
        }
    }
    // 3. Balance: move one partition at a time from a member to a subscribed one with at least
    //    two fewer; among the possible moves, the one that gains the most rack matches, then to
    //    the least loaded member. Each move lowers the sum of squared counts, so this ends.
    let bound = owner.len() * ids.len().max(1) + 1;
    for _ in 0..bound {
        let mut order: Vec<&str> = ids.clone();
        order.sort_by_key(|id| (std::cmp::Reverse(count(&out[*id])), *id));
        let mut moved = None;
        for from in &order {
            let from_count = count(&out[*from]);
            // (rack matches gained, fewer partitions at the receiver), receiver, topic, partition.
            let mut best: Option<(MoveRank, &str, Uuid, i32)> = None;
            for (t, ps) in &out[*from] {
                for to in ids
                    .iter()
                    .filter(|id| view.subscribed(id, t) && count(&out[**id]) + 1 < from_count)
                {
                    for &p in ps.iter().rev() {
                        let gain =
                            i32::from(view.on_rack(to, t, p)) - i32::from(view.on_rack(from, t, p));
                        let key = (gain, std::cmp::Reverse(count(&out[*to])));
                        if best.as_ref().is_none_or(|(k, ..)| key > *k) {
                            best = Some((key, to, *t, p));
                        }
                    }
                }
            }
            if let Some((_, to, t, p)) = best {
                moved = Some((from.to_string(), to.to_string(), t, p));
                break;
            }
        }
        let Some((from, to, t, p)) = moved else {
            break;
        };
        let f = out.get_mut(&from).expect("member");
        let set = f.get_mut(&t).expect("topic");
        set.remove(&p);
        if set.is_empty() {
            f.remove(&t);
        }
        give(&mut out, &to, t, p);
    }
    out
}

fn range(view: &View<'_, '_>) -> HashMap<String, Assignment> {
    let mut out = empty(view);
    for (t, topic) in view.topics {
        let n = topic.partitions;
        let subs: Vec<&str> = view
            .ids()
            .into_iter()
            .filter(|id| view.subscribed(id, t))
            .collect();
        if subs.is_empty() || n <= 0 {
            continue;
        }
        let m = subs.len() as i32;
        let (each, extra) = (n / m, n % m);
        let mut quota: Vec<i32> = (0..m).map(|i| each + i32::from(i < extra)).collect();
        let mut taken = vec![false; n as usize];
        // On-rack partitions first, each member within its count; then the rest in order.
        for on_rack_only in [true, false] {
            for (i, id) in subs.iter().enumerate() {
                for p in 0..n {
                    if quota[i] == 0 {
                        break;
                    }
                    if taken[p as usize] || (on_rack_only && !view.on_rack(id, t, p)) {
                        continue;
                    }
                    taken[p as usize] = true;
                    quota[i] -= 1;
                    give(&mut out, id, *t, p);
                }
            }
        }
        debug_assert!(taken.iter().all(|t| *t));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topics(n: &[(u128, i32)]) -> BTreeMap<Uuid, AssignorTopic<'static>> {
        n.iter()
            .map(|(t, c)| {
                let topic = AssignorTopic {
                    partitions: *c,
                    racks: &[],
                };
                (Uuid::from_u128(*t), topic)
            })
            .collect()
    }

    fn member<'a>(id: &'a str, t: &[u128]) -> AssignorMember<'a> {
        AssignorMember {
            id,
            topics: t.iter().map(|t| Uuid::from_u128(*t)).collect(),
            rack: None,
        }
    }

    fn racked<'a>(id: &'a str, t: &[u128], rack: &'a str) -> AssignorMember<'a> {
        AssignorMember {
            rack: Some(rack),
            ..member(id, t)
        }
    }

    /// Partition i of a topic has its replicas in rack `r{i % racks}` and the next one.
    fn rack_list(partitions: i32, racks: i32) -> Vec<BTreeSet<String>> {
        (0..partitions)
            .map(|i| BTreeSet::from([format!("r{}", i % racks), format!("r{}", (i + 1) % racks)]))
            .collect()
    }

    /// Topic 1, one partition per entry of `racks`.
    fn racked_topic(racks: &[BTreeSet<String>]) -> BTreeMap<Uuid, AssignorTopic<'_>> {
        let topic = AssignorTopic {
            partitions: racks.len() as i32,
            racks,
        };
        BTreeMap::from([(Uuid::from_u128(1), topic)])
    }

    /// How many of `a`'s partitions are with an on-rack member.
    fn on_rack_count(
        a: &HashMap<String, Assignment>,
        ms: &[AssignorMember<'_>],
        racks: &[BTreeSet<String>],
    ) -> usize {
        ms.iter()
            .map(|m| {
                a[m.id]
                    .values()
                    .flatten()
                    .filter(|p| m.rack.is_some_and(|r| racks[**p as usize].contains(r)))
                    .count()
            })
            .sum()
    }

    fn total(a: &HashMap<String, Assignment>) -> usize {
        a.values().map(count).sum()
    }

    #[test]
    fn uniform_balances_and_is_sticky() {
        let parts = topics(&[(1, 6), (2, 3)]);
        let ms = vec![member("a", &[1, 2]), member("b", &[1, 2])];
        let first = Assignor::Uniform.assign(&ms, &parts, &HashMap::new());
        assert_eq!(total(&first), 9);
        let counts: Vec<usize> = ["a", "b"].iter().map(|m| count(&first[*m])).collect();
        assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1);
        // A third member takes three partitions; a and b keep the rest of theirs.
        let ms3 = vec![
            member("a", &[1, 2]),
            member("b", &[1, 2]),
            member("c", &[1, 2]),
        ];
        let second = Assignor::Uniform.assign(&ms3, &parts, &first);
        assert_eq!(total(&second), 9);
        for m in ["a", "b", "c"] {
            assert_eq!(count(&second[m]), 3, "{m}: {second:?}");
        }
        for m in ["a", "b"] {
            for (t, ps) in &second[m] {
                assert!(ps.is_subset(&first[m][t]), "{m} moved partitions");
            }
        }
    }

    #[test]
    fn uniform_respects_subscriptions() {
        let parts = topics(&[(1, 4), (2, 4)]);
        let ms = vec![member("a", &[1]), member("b", &[1, 2]), member("c", &[2])];
        let a = Assignor::Uniform.assign(&ms, &parts, &HashMap::new());
        assert_eq!(total(&a), 8);
        assert!(a["a"].keys().all(|t| *t == Uuid::from_u128(1)));
        assert!(a["c"].keys().all(|t| *t == Uuid::from_u128(2)));
        for m in ["a", "b", "c"] {
            assert!((2..=3).contains(&count(&a[m])), "{a:?}");
        }
    }

    #[test]
    fn uniform_drops_vanished_partitions_and_members() {
        let prev: HashMap<String, Assignment> = [(
            "gone".to_string(),
            Assignment::from([(Uuid::from_u128(1), BTreeSet::from([0, 1]))]),
        )]
        .into();
        let parts = topics(&[(1, 2)]);
        let a = Assignor::Uniform.assign(&[member("x", &[1])], &parts, &prev);
        assert_eq!(a.len(), 1);
        assert_eq!(count(&a["x"]), 2);
    }

    #[test]
    fn range_splits_each_topic_in_member_order() {
        let parts = topics(&[(1, 5)]);
        let ms = vec![member("b", &[1]), member("a", &[1])];
        let a = Assignor::Range.assign(&ms, &parts, &HashMap::new());
        assert_eq!(a["a"][&Uuid::from_u128(1)], BTreeSet::from([0, 1, 2]));
        assert_eq!(a["b"][&Uuid::from_u128(1)], BTreeSet::from([3, 4]));
    }

    #[test]
    fn uniform_prefers_on_rack_members_and_stays_balanced() {
        // 6 partitions over racks r0..r2 (partition i on r(i%3) and r(i+1 %3)); one member
        // per rack: every partition can go on rack, two each.
        let racks = rack_list(6, 3);
        let parts = racked_topic(&racks);
        let ms = vec![
            racked("a", &[1], "r0"),
            racked("b", &[1], "r1"),
            racked("c", &[1], "r2"),
        ];
        let a = Assignor::Uniform.assign(&ms, &parts, &HashMap::new());
        assert_eq!(total(&a), 6);
        for m in ["a", "b", "c"] {
            assert_eq!(count(&a[m]), 2, "{a:?}");
        }
        assert_eq!(on_rack_count(&a, &ms, &racks), 6, "{a:?}");
        // A previous off-rack owner gives way to an on-rack member.
        let prev: HashMap<String, Assignment> = [
            (
                "a".to_string(),
                Assignment::from([(Uuid::from_u128(1), BTreeSet::from([1, 2]))]),
            ),
            (
                "b".to_string(),
                Assignment::from([(Uuid::from_u128(1), BTreeSet::from([0, 3]))]),
            ),
            (
                "c".to_string(),
                Assignment::from([(Uuid::from_u128(1), BTreeSet::from([4, 5]))]),
            ),
        ]
        .into();
        let b = Assignor::Uniform.assign(&ms, &parts, &prev);
        assert_eq!(on_rack_count(&b, &ms, &racks), 6, "{b:?}");
        for m in ["a", "b", "c"] {
            assert_eq!(count(&b[m]), 2, "{b:?}");
        }
        // Balance before racks: all members in r0 still get two each.
        let same = vec![
            racked("a", &[1], "r0"),
            racked("b", &[1], "r0"),
            racked("c", &[1], "r0"),
        ];
        let c = Assignor::Uniform.assign(&same, &parts, &HashMap::new());
        for m in ["a", "b", "c"] {
            assert_eq!(count(&c[m]), 2, "{c:?}");
        }
        // Partitions 0, 2, 3 and 5 have a replica on r0: on rack wherever they went.
        assert_eq!(on_rack_count(&c, &same, &racks), 4, "{c:?}");
    }

    #[test]
    fn range_keeps_counts_and_prefers_on_rack_partitions() {
        let racks = rack_list(6, 3);
        let parts = racked_topic(&racks);
        let ms = vec![racked("a", &[1], "r2"), racked("b", &[1], "r0")];
        let a = Assignor::Range.assign(&ms, &parts, &HashMap::new());
        assert_eq!(count(&a["a"]), 3);
        assert_eq!(count(&a["b"]), 3);
        // a (r2) takes its on-rack 1, 2, 4 (r1/r2, r2/r0, r1/r2); b the rest, 0, 3, 5 all on r0.
        assert_eq!(a["a"][&Uuid::from_u128(1)], BTreeSet::from([1, 2, 4]));
        assert_eq!(a["b"][&Uuid::from_u128(1)], BTreeSet::from([0, 3, 5]));
        // Without member racks: contiguous ranges.
        let plain = vec![member("a", &[1]), member("b", &[1])];
        let r = Assignor::Range.assign(&plain, &parts, &HashMap::new());
        assert_eq!(r["a"][&Uuid::from_u128(1)], BTreeSet::from([0, 1, 2]));
    }

    #[test]
    fn names() {
        assert_eq!(Assignor::parse("uniform"), Some(Assignor::Uniform));
        assert_eq!(Assignor::parse("range"), Some(Assignor::Range));
        assert_eq!(Assignor::parse("sticky"), None);
        assert_eq!(Assignor::Range.name(), "range");
    }
}
