//! Diskless topics' simulation (`frieda-sim --diskless`) as part of `cargo test`: seeds keep
//! every invariant, a seed replays exactly, and defects put in on purpose are found (see
//! `frieda_sim::diskless`). Debug builds run a few seeds; `scripts/test` runs 300 in release.

use frieda_sim::diskless::{run_diskless_mutant, run_diskless_seed, DisklessStats, Mutation};

#[test]
fn diskless_seeds_keep_every_invariant_through_kills_pauses_and_store_outages() {
    let mut total = DisklessStats::default();
    for seed in 0..16 {
        let r = run_diskless_seed(seed, false);
        assert!(r.violation.is_none(), "seed {seed}: {:?}", r.violation);
        total.add(&r.stats);
    }
    // The faults happened and the paths they open were taken.
    assert!(total.crashes > 30, "{total:?}");
    assert!(total.pauses > 15, "{total:?}");
    assert!(total.puts_failed > 100, "{total:?}");
    assert!(total.loads > 50, "{total:?}");
    assert!(total.failed_writes > 0, "no write timed out: {total:?}");
    assert!(
        total.duplicates > 0,
        "no resend answered DUPLICATE: {total:?}"
    );
    assert!(total.objects_deleted > 100, "{total:?}");
    assert!(total.deletes > 20, "{total:?}");
    assert!(total.swept > 0, "no orphan swept: {total:?}");
    assert!(
        total.batches_read > 3_000,
        "consumers read little: {total:?}"
    );
}

#[test]
fn a_diskless_seed_replays_exactly() {
    for seed in [1, 7] {
        let a = run_diskless_seed(seed, true);
        let b = run_diskless_seed(seed, true);
        assert!(a.trace.len() > 100);
        assert_eq!(a.trace, b.trace, "seed {seed}");
        assert_eq!(a.stats, b.stats, "seed {seed}");
    }
}

/// The checks can fail: answering commits before they are replicated loses acknowledged
/// batches at a failover (the producer's next batch is then refused out of order), a bucket
/// that loses PUTs it answered OK loses acknowledged batches, and `read_committed` readers
/// given no aborted transactions, or reading to the high watermark, deliver aborted batches.
#[test]
fn defects_put_in_on_purpose_are_found() {
    for (mutation, kinds) in [
        (
            Mutation::AnswerBeforeReplicated,
            &[
                "acked-record-lost",
                "replicas-diverged",
                "out-of-order-sequence",
            ][..],
        ),
        (Mutation::PutLost, &["acked-record-lost"][..]),
        (
            Mutation::NoAbortedList,
            &["aborted-delivered", "aborted-list"][..],
        ),
        (
            Mutation::CommittedReadsToHighWatermark,
            &["aborted-delivered"][..],
        ),
    ] {
        let found = (0..60).find_map(|seed| {
            run_diskless_mutant(seed, false, mutation)
                .violation
                .map(|v| (seed, v.kind))
        });
        let Some((seed, kind)) = found else {
            panic!("{mutation:?}: no seed of 60 failed");
        };
        assert!(kinds.contains(&kind), "{mutation:?}: seed {seed}: {kind}");
    }
}

/// Seed 92 with the commit-age bound removed (11 of seeds 0-999 fail so): a commit arrives after its object was swept as an
/// orphan, and the batches it acknowledges name an object the bucket no longer holds. With the
/// bound (the broker's code) the late commit is refused and its batches are resent.
#[test]
fn without_the_commit_age_bound_the_sweep_deletes_a_committed_object() {
    let r = run_diskless_mutant(92, false, Mutation::NoCommitAge);
    let v = r.violation.expect("seed 92 fails without the bound");
    assert_eq!(v.kind, "acked-record-lost", "{v:?}");
    assert!(v.detail.contains("not in the bucket"), "{v:?}");
    let r = run_diskless_seed(92, false);
    assert!(r.violation.is_none(), "{:?}", r.violation);
    assert!(r.stats.swept > 0, "{:?}", r.stats);
}

/// Seed 76 with FindBatches answered from the leader's speculative state: a consumer reads a
/// batch whose decision a failover then takes back (22 of seeds 0-999 fail so). The broker's
/// host answers readers only from decisions below the high watermark.
#[test]
fn readers_see_only_decisions_below_the_high_watermark() {
    let r = run_diskless_mutant(76, false, Mutation::ReadSpeculative);
    let v = r.violation.expect("seed 76 fails with speculative reads");
    assert!(
        [
            "read-uncommitted",
            "read-beyond-hw",
            "read-differs",
            "consumer-gap"
        ]
        .contains(&v.kind),
        "{v:?}"
    );
    let r = run_diskless_seed(76, false);
    assert!(r.violation.is_none(), "{:?}", r.violation);
    assert!(r.stats.batches_read > 200, "{:?}", r.stats);
}
