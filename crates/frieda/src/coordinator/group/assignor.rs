//! The server-side assignors of KIP-848 consumer groups: `uniform` (Kafka's default,
//! `UniformAssignor`) and `range` (`RangeAssignor`). Pure functions from the members'
//! subscriptions, the subscribed topics' partition counts and the previous target assignment to
//! the new target assignment; unit-tested below.

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
}

/// The assignors Frieda serves (KIP-848 `group.consumer.assignors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignor {
    /// Balanced partition counts, sticky: a partition stays with its member unless that would
    /// leave the counts more than one apart (Kafka's `uniform`, the default).
    Uniform,
    /// Per topic, contiguous ranges of partitions over the subscribed members in member id order
    /// (Kafka's `range`).
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

    /// The target assignment of `members` over `partitions` (topic id -> partition count),
    /// starting from `previous` (member id -> assignment). Every partition of a topic that at
    /// least one member subscribes to goes to exactly one subscribed member.
    pub fn assign(
        self,
        members: &[AssignorMember<'_>],
        partitions: &BTreeMap<Uuid, i32>,
        previous: &HashMap<String, Assignment>,
    ) -> HashMap<String, Assignment> {
        let out = match self {
            Assignor::Uniform => uniform(members, partitions, previous),
            Assignor::Range => range(members, partitions),
        };
        debug_assert!(each_partition_once(&out), "a partition assigned twice");
        out
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
fn empty(members: &[AssignorMember<'_>]) -> HashMap<String, Assignment> {
    members
        .iter()
        .map(|m| (m.id.to_string(), Assignment::new()))
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

fn uniform(
    members: &[AssignorMember<'_>],
    partitions: &BTreeMap<Uuid, i32>,
    previous: &HashMap<String, Assignment>,
) -> HashMap<String, Assignment> {
    let mut out = empty(members);
    let subscribed =
        |id: &str, t: &Uuid| members.iter().any(|m| m.id == id && m.topics.contains(t));
    // 1. Keep what each member had, where the partition still exists and it still subscribes.
    let mut owner: HashMap<(Uuid, i32), String> = HashMap::new();
    let mut ids: Vec<&str> = members.iter().map(|m| m.id).collect();
    ids.sort_unstable();
    for id in &ids {
        let Some(prev) = previous.get(*id) else {
            continue;
        };
        for (t, ps) in prev {
            let Some(&n) = partitions.get(t) else {
                continue;
            };
            if !subscribed(id, t) {
                continue;
            }
            for &p in ps.iter().filter(|&&p| p < n) {
                if owner.contains_key(&(*t, p)) {
                    continue;
                }
                owner.insert((*t, p), id.to_string());
                give(&mut out, id, *t, p);
            }
        }
    }
    // 2. Every other partition to the least loaded subscribed member.
    for (t, &n) in partitions {
        for p in 0..n {
            if owner.contains_key(&(*t, p)) {
                continue;
            }
            let best = ids
                .iter()
                .filter(|id| subscribed(id, t))
                .min_by_key(|id| (count(&out[**id]), **id));
            if let Some(id) = best {
                owner.insert((*t, p), id.to_string());
                give(&mut out, id, *t, p);
            }
        }
    }
    // 3. Balance: move one partition at a time from a member to a subscribed one with at least
    //    two fewer. Each move lowers the sum of squared counts, so this ends.
    let bound = owner.len() * ids.len().max(1) + 1;
    for _ in 0..bound {
        let mut order: Vec<&str> = ids.clone();
        order.sort_by_key(|id| (std::cmp::Reverse(count(&out[*id])), *id));
        let mut moved = None;
        'search: for from in &order {
            let from_count = count(&out[*from]);
            for (t, ps) in &out[*from] {
                let to = ids
                    .iter()
                    .filter(|id| subscribed(id, t) && count(&out[**id]) + 1 < from_count)
                    .min_by_key(|id| (count(&out[**id]), **id));
                if let (Some(to), Some(&p)) = (to, ps.iter().next_back()) {
                    moved = Some((from.to_string(), to.to_string(), *t, p));
                    break 'search;
                }
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

fn range(
    members: &[AssignorMember<'_>],
    partitions: &BTreeMap<Uuid, i32>,
) -> HashMap<String, Assignment> {
    let mut out = empty(members);
    for (t, &n) in partitions {
        let mut subs: Vec<&str> = members
            .iter()
            .filter(|m| m.topics.contains(t))
            .map(|m| m.id)
            .collect();
        if subs.is_empty() || n <= 0 {
            continue;
        }
        subs.sort_unstable();
        let m = subs.len() as i32;
        let (each, extra) = (n / m, n % m);
        let mut next = 0;
        for (i, id) in subs.iter().enumerate() {
            let take = each + i32::from((i as i32) < extra);
            if take > 0 {
                out.get_mut(*id)
                    .expect("member")
                    .insert(*t, (next..next + take).collect());
            }
            next += take;
        }
        debug_assert_eq!(next, n);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topics(n: &[(u128, i32)]) -> BTreeMap<Uuid, i32> {
        n.iter().map(|(t, c)| (Uuid::from_u128(*t), *c)).collect()
    }

    fn member<'a>(id: &'a str, t: &[u128]) -> AssignorMember<'a> {
        AssignorMember {
            id,
            topics: t.iter().map(|t| Uuid::from_u128(*t)).collect(),
        }
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
    fn names() {
        assert_eq!(Assignor::parse("uniform"), Some(Assignor::Uniform));
        assert_eq!(Assignor::parse("range"), Some(Assignor::Range));
        assert_eq!(Assignor::parse("sticky"), None);
        assert_eq!(Assignor::Range.name(), "range");
    }
}
