//! The metadata quorum's simulation (`frieda-sim --quorum`) as part of `cargo test`: a seed
//! replays exactly, a batch of seeds keeps the invariants, the removed-leader defect stays
//! fixed, and the known epoch finding is pinned (see `frieda_sim::quorum`).

use frieda_sim::quorum::run_quorum_seed;

const EPOCH: &str = "two-leaders-in-one-epoch";

#[test]
fn a_quorum_seed_replays_exactly() {
    let a = run_quorum_seed(7, true, &[]);
    let b = run_quorum_seed(7, true, &[]);
    assert!(a.trace.len() > 20, "a trace: {:?}", a.trace);
    assert_eq!(a.trace, b.trace);
    assert_eq!(a.stats, b.stats);
}

#[test]
fn quorum_seeds_keep_every_invariant_while_voters_change() {
    let ignore = vec![EPOCH.to_string()];
    let mut changes = 0;
    for seed in 0..40 {
        let r = run_quorum_seed(seed, false, &ignore);
        assert!(r.violation.is_none(), "seed {seed}: {:?}", r.violation);
        assert!(r.stats.allocations > 0, "seed {seed}: no write answered");
        changes += r.stats.voters_added + r.stats.voters_removed;
    }
    assert!(changes > 100, "only {changes} voter changes in 40 seeds");
}

/// Seed 647: voter 1 leads and removes itself; openraft 0.9 kept it leading as a learner, it
/// accepted the next voter change, and after a crash the one remaining voter lacked that change
/// while the nodes holding it would not campaign: no leader for good (no-progress). The
/// controller now decides only while a voter, and a removed leader resigns.
#[test]
fn seed_647_a_leader_removed_from_the_voters_resigns_and_decides_nothing() {
    let r = run_quorum_seed(647, true, &[EPOCH.to_string()]);
    assert!(r.violation.is_none(), "{:?}", r.violation);
    assert!(r
        .trace
        .iter()
        .any(|l| l.contains("node 1 leads term 1 but is not a voter")));
}

/// A known defect, pinned until fixed: openraft's default leader ids are (term, node), so two
/// nodes can lead one term one after the other, and DescribeQuorum's LeaderEpoch (the term)
/// does not name one leader as KRaft's epoch does. The fix is openraft's `single-term-leader`
/// with a migration of the stored votes and log ids; when it lands this test must flip.
#[test]
fn seed_20_two_nodes_lead_term_1_known_epoch_defect() {
    let r = run_quorum_seed(20, false, &[]);
    let v = r.violation.expect("seed 20 shows two leaders in term 1");
    assert_eq!(v.kind, EPOCH);
}
