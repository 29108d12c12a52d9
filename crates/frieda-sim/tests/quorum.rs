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

/// Seed 647: voter 1 led and removed itself; openraft 0.9 kept it leading as a learner, it
/// accepted the next voter change, and after a crash the one remaining voter lacked that change
/// while the nodes holding it would not campaign: no leader for good (no-progress). A leader
/// now hands over before its removal; one that a change still leaves outside the voters (an
/// AddVoter completing a joint configuration without it) decides nothing and resigns.
#[test]
fn seed_647_a_leader_leaving_the_voters_decides_nothing() {
    let r = run_quorum_seed(647, false, &[EPOCH.to_string()]);
    assert!(r.violation.is_none(), "{:?}", r.violation);
    assert!(r.stats.voters_removed > 0);
}

/// Seed 1200: voters {1, 3}, leader 1 removed itself; the configuration {3} was appended on 1
/// only when 3 campaigned, and 3 needed the vote of 1, which refused it (longer log) and, outside
/// its latest configuration, never stood for election: no leader for good. The active
/// controller now hands its leadership over and the new one removes it as a follower.
#[test]
fn seed_1200_the_active_controller_hands_over_before_its_removal() {
    let r = run_quorum_seed(1200, false, &[EPOCH.to_string()]);
    assert!(r.violation.is_none(), "{:?}", r.violation);
    assert!(r.stats.voters_removed > 0);
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
