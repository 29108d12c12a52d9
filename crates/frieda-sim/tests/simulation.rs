//! The simulator as part of `cargo test`: a run replays exactly, a batch of seeds keeps every
//! invariant, and short hand-written plans of the faults issue 28 found stay fixed.
//! (`scripts/test` runs a few thousand seeds with the release build; `scripts/simulate` soaks.)

use frieda_sim::{run_plan, run_seed, Action, Plan, Shape};

fn shape(brokers: i32, partitions: i32, fsync: bool) -> Shape {
    Shape {
        brokers,
        partitions,
        rf: 3,
        min_isr: 2,
        fsync,
        quorum: false,
        tier: None,
        offsets_partition: None,
        share: false,
        txn_partition: None,
        fetch_max_batches: 32,
        heal: 20_000,
        end: 30_000,
        real_log: true,
    }
}

fn produce(partition: i32, count: i64) -> Action {
    Action::Produce {
        partition,
        acks: -1,
        count,
        stale: false,
    }
}

/// Steady acks=all production to every partition from 2 s to `until`, 50 records/s.
fn steady(partitions: i32, until: u64) -> Vec<(u64, Action)> {
    (0..)
        .map(|i| 2_000 + i * 20)
        .take_while(|t| *t < until)
        .enumerate()
        .map(|(i, t)| (t, produce(i as i32 % partitions, 1 + (i as i64 % 3))))
        .collect()
}

fn assert_clean(plan: Plan) {
    run_clean(plan, false);
}

/// Runs `plan` (tracing it when `trace`), asserts it broke no invariant and acknowledged
/// something, and returns its report.
fn run_clean(plan: Plan, trace: bool) -> frieda_sim::Report {
    let (seed, fsync) = (plan.seed, plan.shape.fsync);
    let r = run_plan(plan, trace, &[]);
    assert_no_violation(&r, &format!("plan {seed} (fsync {fsync})"));
    assert!(r.stats.acked_all > 0, "nothing was acknowledged");
    r
}

/// Runs seed `seed`, asserts it broke no invariant, and returns its report.
fn run_seed_clean(seed: u64) -> frieda_sim::Report {
    let r = run_seed(seed, false, &[]);
    let replay = format!(
        "seed {seed} (replay: cargo run --release -p frieda-sim -- --seed {seed} --shrink)"
    );
    assert_no_violation(&r, &replay);
    r
}

/// The mutation test of a rule: seed `seed` with the rule turned off by `mutate` breaks
/// invariant `kind`; with the rule it runs clean (its report returned).
fn mutation_breaks_seed(
    seed: u64,
    mutate: impl FnOnce(frieda_sim::World) -> frieda_sim::World,
    kind: &str,
) -> frieda_sim::Report {
    let plan = frieda_sim::Plan::generate(seed);
    let off = mutate(frieda_sim::World::new(plan, false)).run();
    assert_eq!(
        off.violation.as_ref().map(|v| v.kind),
        Some(kind),
        "{:?}",
        off.violation
    );
    run_seed_clean(seed)
}

/// Fails with `what` and the run's violation, if it had one.
fn assert_no_violation(r: &frieda_sim::Report, what: &str) {
    assert!(
        r.violation.is_none(),
        "{what}: {:?}",
        r.violation
            .as_ref()
            .map(|v| format!("{} at {} ms: {}", v.kind, v.time, v.detail))
    );
}

#[test]
fn a_seed_replays_exactly() {
    // Seed 10 runs tiered storage (its object store and copy tasks replay too).
    let a = run_seed(10, true, &[]);
    let b = run_seed(10, true, &[]);
    assert_eq!(a.trace, b.trace);
    assert_eq!(a.stats.events, b.stats.events);
    assert!(a.stats.events > 10_000, "a run that does something");
}

#[test]
fn a_batch_of_seeds_keeps_every_invariant() {
    // Seeds 0 and 1 run tiered storage; scripts/test runs 150 in release.
    for seed in 0..2 {
        run_seed_clean(seed);
    }
}

/// Issue 57 (frieda-sim seed 1085 before the fix): broker 1 copied [61, 91] in epoch 0;
/// broker 2 lost its unsynced 81..89 in a power cut (outside the acks=all contract), led
/// epoch 2 from offset 90 and acknowledged new records there; local retention took the old
/// copy for holding them and deleted the only local copies. The leader now truncates the remote
/// tier where it leaves its lineage and local retention compares epochs.
#[test]
fn seed_1085_copies_of_a_lost_lineage_are_truncated() {
    let r = run_seed_clean(1085);
    assert!(
        r.stats.remote_truncations >= 1,
        "the run truncated no remote tier: it no longer covers the case"
    );
}

/// Issue 57 (frieda-sim seed 1478, found by the soak after the fix of seed 1085): the new
/// leader's log diverges from a follower's at offset 215, below the follower's log start (its
/// local retention had deleted up to 221 under the old lineage's copies). The follower's
/// truncation stopped at its log start and it asked for the same divergence for ever; with
/// `min.insync.replicas=3` nothing was acknowledged again. It now empties its log and starts
/// again at the divergence (Kafka's `truncateFullyAndStartAt`).
#[test]
fn seed_1478_a_follower_truncates_below_its_log_start() {
    run_seed_clean(1478);
}

/// Issue 57 (frieda-sim seed 29819, found by the soak of seeds 28,000-30,999): broker 2 started
/// its log again above the copies at 76 with an empty epoch cache, then led; asked by broker 3
/// (whose records 37..75 were of epoch 0, replaced in epoch 2 by an earlier leader) where epoch
/// 0 ended, it answered 76 instead of 37, and broker 3 kept its stale records. Leading later, broker
/// 3 found the copies diverging from its log at 37 and truncated the remote tier there: committed
/// records that local retention had deleted from every replica were gone from the bucket too
/// (`isr-member-lacks-acked-record`). A log started again now takes the copies' lineage below
/// its start as its epoch cache (Kafka's `buildRemoteLogAuxState`).
#[test]
fn seed_29819_a_log_started_again_above_the_copies_keeps_their_lineage() {
    let r = run_seed_clean(29819);
    assert!(r.stats.copies > 0, "a tiered run");
}

/// Issue 57, the group coordinator in the simulator (seed 314): the leader of the offsets
/// partition and its one follower lose their controller sessions and are fenced; the
/// coordinator's write path had no lease check, so it went on acknowledging offset commits
/// (the produce handler refuses and answers nothing while its lease is lost). Now its writes
/// take the lease before the append and before the answer (`coordinator::LeaseCheck`); the run
/// still answers hundreds of commits OK, and every one survives.
#[test]
fn seed_314_a_fenced_group_coordinator_answers_no_commit() {
    let r = run_plan_clean(
        Plan::generate(314)
            .without_share_group()
            .without_transactions(),
    );
    assert!(r.stats.commits_ok > 100, "{:?}", r.stats);
    assert!(r.stats.coordinator_loads > 1, "{:?}", r.stats);
}

/// Issue 57, transactional offset commits in the simulator (seed 21): two transactions
/// committed offsets of one partition, written at 388 and 392, and their COMMIT markers landed
/// in the other order; the coordinator applied the last marker's offset, so a new coordinator
/// served 388's offset after 392's was answered OK (the committed offset went back). Kafka
/// applies a committed transaction's offset only if its record is later than the offset's
/// current record; Frieda now does too.
#[test]
fn seed_21_transactional_offsets_apply_by_their_place_in_the_log() {
    let r = run_plan_clean(
        Plan::generate(21)
            .without_share_group()
            .without_transactions(),
    );
    assert!(r.stats.commits_ok > 100, "{:?}", r.stats);
}

/// Issue 57, share groups in the simulator (seed 21; 59 too): the leader of the consumed
/// partition lost it (its log went offline) while a member's ACCEPT of offsets 68-69 was
/// staged and its state write in flight; the group coordinator moved, and the write kept
/// trying. The new leader read the stored state (without the ACCEPT) and delivered 68 again;
/// the old leader's write then landed (the stored leader epoch was still the old one) and both
/// ACCEPTs were answered OK. A newer leader's ReadShareGroupState now records its epoch in
/// the offsets log before it is answered, and a state of an older epoch landing after it is
/// fenced (`OffsetsState::apply_share_state`), as Kafka's
/// `readStateAndMaybeUpdateLeaderEpoch`.
#[test]
fn seed_21_a_deposed_share_partition_leader_cannot_accept_a_redelivered_record() {
    let r = run_seed_clean(21);
    assert!(r.stats.share_acks_ok > 50, "{:?}", r.stats);
}

/// Runs `plan`, asserts it broke no invariant, and returns its report.
fn run_plan_clean(plan: Plan) -> frieda_sim::Report {
    let seed = plan.seed;
    let r = run_plan(plan, false, &[]);
    assert_no_violation(&r, &format!("plan of seed {seed}"));
    r
}

/// Issue 28, item 1 (frieda-sim seed 6 before the fix, shrunk): both followers of partition 0
/// are cut off, the leader's stall detection shrinks the ISR to itself, and the produce that was
/// waiting must not be acknowledged (min.insync.replicas=2).
#[test]
fn item_1_followers_cut_off_during_a_produce() {
    let mut actions = steady(3, 4_000);
    actions.push((
        5_000,
        Action::Partition {
            side: vec![2, 3],
            with_controller: true,
            len: 5_500,
        },
    ));
    actions.push((5_020, produce(0, 1)));
    actions.push((7_000, produce(0, 3)));
    actions.sort_by_key(|(t, _)| *t);
    assert_clean(Plan {
        seed: 6,
        shape: shape(4, 3, false),
        actions,
    });
}

/// Issue 34 (`replication.ack.policy=quorum`): follower 2 of partition 0 (replicas [1, 2, 3],
/// the first an ISR election would pick) is paused while records are acknowledged on 1 and 3
/// alone; then the leader 1 crashes. The controller must wait for two claims and elect 3, whose
/// log is the longest; 2 resumes, truncates nothing acknowledged and catches up.
#[test]
fn quorum_leader_crash_while_the_preferred_follower_lags() {
    for fsync in [false, true] {
        let mut actions = steady(1, 16_000);
        actions.push((
            4_000,
            Action::Pause {
                broker: 2,
                len: 6_000,
            },
        ));
        actions.push((
            7_000,
            Action::Crash {
                broker: 1,
                down: 4_000,
            },
        ));
        actions.sort_by_key(|(t, _)| *t);
        assert_clean(Plan {
            seed: 34,
            shape: Shape {
                quorum: true,
                tier: None,
                ..shape(3, 1, fsync)
            },
            actions,
        });
    }
}

/// Issue 34 (`replication.ack.policy=quorum`), Raft's figure 8 (§5.4.2): a leader must not
/// count an older epoch's record as committed because enough replicas now hold it. Leader 1
/// appends x while both followers are cut off, and is killed; the next leader (2 or 3, both
/// claim) appends y at the same offset, cut off from the third replica, and is killed too. 1
/// returns, is elected from its claim (its last epoch is the newest there), and copies x to the
/// surviving replica: two replicas hold x, but no record of 1's own epoch, so x is not below the
/// high watermark. 1 is killed; the second leader returns and wins (its last epoch, y's, is
/// newer than x's), and the survivor replaces x by y. Had x been counted, the survivor would
/// hold a different record below its high watermark than it had before
/// (replicas-disagree-below-hw); dropping the own-epoch condition from
/// `Leader::quorum_high_watermark` makes this plan fail.
#[test]
fn quorum_figure_8_an_old_epochs_record_is_not_committed_by_counting() {
    for fsync in [false, true] {
        let mut actions: Vec<(u64, Action)> =
            (0..5).map(|i| (2_000 + i * 100, produce(0, 1))).collect();
        actions.push((
            5_500,
            Action::Partition {
                side: vec![2, 3],
                with_controller: false,
                len: 1_000,
            },
        ));
        actions.push((5_700, produce(0, 1))); // x, on the leader alone
        actions.push((
            6_000,
            Action::KillLeaderTwice {
                partition: 0,
                gap: 600,
                down: 5_000,
            },
        ));
        actions.push((
            7_000,
            Action::Partition {
                side: vec![2],
                with_controller: false,
                len: 3_500,
            },
        ));
        // y, on the second leader alone, whenever it takes over (about 3 s after the kill)
        actions.extend((0..16).map(|i| (8_800 + i * 50, produce(0, 1))));
        actions.push((
            13_800,
            Action::Crash {
                broker: 1,
                down: 9_000,
            },
        ));
        actions.extend((0..20).map(|i| (18_000 + i * 100, produce(0, 1))));
        actions.sort_by_key(|(t, _)| *t);
        let plan = Plan {
            seed: 808,
            shape: Shape {
                quorum: true,
                tier: None,
                ..shape(3, 1, fsync)
            },
            actions,
        };
        let r = run_clean(plan, true);
        // The plan took the figure-8 path: after 1 (the first leader, not logged as a change),
        // X, then 1 again, then X again.
        let mut leaders: Vec<i32> = Vec::new();
        for line in &r.trace {
            let Some(rest) = line.split("image: partition 0 leader ").nth(1) else {
                continue;
            };
            let leader: i32 = rest
                .split(' ')
                .next()
                .and_then(|l| l.parse().ok())
                .unwrap_or(-1);
            if leader > 0 && leaders.last() != Some(&leader) {
                leaders.push(leader);
            }
        }
        let shape_seen = leaders
            .windows(3)
            .any(|w| w[0] != 1 && w[1] == 1 && w[2] == w[0]);
        assert!(
            shape_seen,
            "fsync {fsync}: leaders {leaders:?}, not the figure-8 sequence"
        );
        assert!(
            r.stats.truncations > 0,
            "fsync {fsync}: nothing was truncated"
        );
    }
}

/// Issue 28, item 3 (frieda-sim seed 12 before the fix, shrunk): a follower loses power after
/// its high watermark was checkpointed past what it had synced; it restarts with HW <= LEO and
/// rejoins.
#[test]
fn item_3_power_loss_after_a_checkpoint() {
    // Checkpoints are written every 5 s from each broker's start, the page cache is written back
    // every 0.5-5 s: losses just after a checkpoint catch one newer than the synced log. Each
    // moment with one broker, every broker in turn (all 12 pairs took a minute in the debug
    // build; scripts/test's release seeds cut power at random moments too).
    for (i, at) in [5_010, 10_010, 10_300, 15_020].into_iter().enumerate() {
        let broker = 1 + i as i32 % 3;
        let mut actions = steady(3, 20_000);
        actions.push((
            at,
            Action::PowerLoss {
                broker,
                down: 2_000,
            },
        ));
        actions.sort_by_key(|(t, _)| *t);
        assert_clean(Plan {
            seed: 12 + i as u64 * 10 + broker as u64,
            shape: shape(3, 3, false),
            actions,
        });
    }
}

/// Issue 28, items 2 and 4 territory: the leader is killed, then the next one right after it
/// takes over, while production continues (Jepsen's leader-killing nemesis), with and without
/// fsync.
#[test]
fn leaders_killed_twice_in_a_row() {
    for fsync in [false, true] {
        for gap in [0, 40, 150] {
            let mut actions = steady(2, 20_000);
            actions.push((
                6_000,
                Action::KillLeaderTwice {
                    partition: 0,
                    gap,
                    down: 3_000,
                },
            ));
            actions.sort_by_key(|(t, _)| *t);
            assert_clean(Plan {
                seed: 100 + gap,
                shape: shape(4, 2, fsync),
                actions,
            });
        }
    }
}

/// Issue 57, transactions in the simulator (seed 1121): the transaction state partition's new
/// leader loaded its log to the log end offset, whose tail (tx-0's PrepareCommit) was not
/// replicated, and resumed its markers; the next leader, without that tail, aborted the
/// transaction by its timeout (`txn-decided-twice`: committed on partition 0, aborted by its
/// coordinator). A coordinator now serves and resumes markers only once its partition's high
/// watermark reaches the end it loaded (`TxnPartition::is_committed`).
#[test]
fn seed_1121_a_transaction_coordinator_acts_only_on_a_committed_load() {
    let r = run_seed_clean(1121);
    assert!(r.stats.txn_commits > 40, "{:?}", r.stats);
    assert!(r.stats.txn_aborts > 5, "{:?}", r.stats);
}

/// Issue 57, the simulated transaction coordinator of transactional offset commits (seed 3293,
/// 857): it resent every pending transaction's marker every second whether or not the last
/// one was answered, and on an offsets partition whose follower fetches one batch at a time the
/// marker batches outgrew the follower for good: no offset commit was answered after healing.
/// It now sends one marker request at a time per transaction, as Kafka's marker channel does.
#[test]
fn seed_3293_marker_retries_wait_for_their_answer() {
    let r = run_seed_clean(3293);
    assert!(r.stats.commits_ok > 100, "{:?}", r.stats);
}

/// Issue 57, share groups (seed 2396): a copy of the leader's share state write (start 1188)
/// landed after its newer write (start 1203, with a member's ACCEPT of 1224) and replaced the
/// stored state; the next leader delivered 1224 again. Within a state epoch the coordinator now
/// joins each write into the stored state (`offsets::state::join_share_states`).
#[test]
fn seed_2396_a_late_share_state_write_takes_no_accept_back() {
    let r = run_seed_clean(2396);
    assert!(r.stats.share_acks_ok > 20, "{:?}", r.stats);
}

/// Issue 57, the group coordinator (seed 271; 881 and 1298 too): a coordinator loads its
/// offsets partition to the log end offset, and a new leader's tail may not be replicated. It
/// now serves only once the high watermark reaches the end it loaded
/// (`OffsetStore::is_committed`; before, COORDINATOR_LOAD_IN_PROGRESS), and the simulator holds
/// the delivery counts of a served load to the promise. With the gate removed this seed serves
/// broker 1's load (to offset 162, high watermark 136); broker 2 loads next without that tail,
/// and its leader delivers offset 157 with a count the served state already held
/// (`share-delivery-count-went-down`).
#[test]
fn seed_271_a_group_coordinator_serves_only_a_committed_load() {
    let r = run_seed_clean(271);
    assert!(r.stats.share_acks_ok > 10, "{:?}", r.stats);
}

/// Issue 57, the share-partition leader's calls to the coordinator (seed 1814; 1632, 2045 and
/// others of 1500-4000): a coordinator killed while a state write was in flight left the
/// leader waiting its 10-s attempt timeout, where TCP would have failed the call at once (the
/// restarted peer resets the connection), and after healing the share group could not finish
/// in time (`liveness-share-group-stuck`). Attempts in flight to a broker whose process ends
/// now fail at once (COORDINATOR_NOT_AVAILABLE, retried).
#[test]
fn seed_1814_a_killed_coordinator_fails_the_calls_in_flight() {
    let r = run_seed_clean(1814);
    assert!(r.stats.share_acks_ok > 10, "{:?}", r.stats);
}

/// Issue 57, the same calls to a coordinator that is already down (seed 2906): the image still
/// named broker 3 (killed, not yet fenced) as the share coordinator, and the leader's next
/// attempt to it waited its 10-s timeout, where connecting to a port no process listens on is
/// refused at once; after healing the share group ended 10 records short
/// (`liveness-share-group-stuck`). An attempt to a broker whose process is down now fails at
/// once (COORDINATOR_NOT_AVAILABLE, retried); a paused broker's still waits.
#[test]
fn seed_2906_a_coordinator_that_is_down_refuses_the_call() {
    let r = run_seed_clean(2906);
    assert!(r.stats.share_acks_ok > 10, "{:?}", r.stats);
}

/// Issue 57, the transaction check's power-loss exemption (seed 4489, quorum acks without
/// fsync): tx-0's PrepareCommit was acknowledged on two replicas of the transaction state
/// partition; one lost it in a power loss, the other was killed, and the replica elected from
/// the claims never had it (outside the contract: a power loss without fsync). The check voided
/// the decision, but the COMMIT marker already written from it on partition 0 still counted, so
/// the new coordinator's abort of the reloaded transaction was reported as
/// `txn-marker-contradicts-decision`. A marker written from a voided decision is exempt, as the
/// decision is (and as `txn_check_marker` already had it).
///
/// Since the clients pipeline their batches (2026-12-03) the seed's run is another one (10
/// commits, 4 aborts): it stays a clean run with transactions, no longer this power loss.
#[test]
fn seed_4489_a_marker_of_a_decision_a_power_loss_voided_is_exempt() {
    let r = run_seed_clean(4489);
    assert!(r.stats.txn_commits >= 5, "{:?}", r.stats);
}

/// Issue 57, the model's lost messages on share-state calls (seeds 10779, 11823): a share-state
/// answer (or request) the network lost on a connection that was not cut off left the
/// share-partition leader waiting its 10-s attempt timeout, twice in a row after healing, and
/// the group ended short (`liveness-share-group-stuck`). A lost message on a live connection is
/// a broken connection, which the caller sees at once (COORDINATOR_NOT_AVAILABLE, retried); a
/// network cut still leaves the call to its timeout.
#[test]
fn seed_10779_a_lost_share_state_answer_breaks_the_connection() {
    let r = run_seed_clean(10779);
    assert!(r.stats.share_acks_ok > 10, "{:?}", r.stats);
}

/// Issue 57, defect 3 in the simulator: the transactional clients pipeline their batches on one
/// connection, partition 0's leader verifies a batch that opens a transaction with the
/// coordinator (KIP-890 part 1) and decides a connection's appends in the order it read them
/// (the broker's `produce_order::book::OrderBook`). With that rule off, a later batch whose
/// verification came back first is refused OUT_OF_ORDER_SEQUENCE_NUMBER while the earlier one
/// is then appended (what Kafka Streams' exactly-once producers met): seed 91 finds it
/// (21 of seeds 0-99 did); with the rule, the same seed runs clean.
#[test]
fn seed_91_pipelined_produces_without_the_produce_order_rule_go_out_of_order() {
    let on = mutation_breaks_seed(
        91,
        |w| w.without_produce_order(),
        "txn-produce-out-of-order",
    );
    assert!(on.stats.txn_waited_turns > 0, "{:?}", on.stats);
    assert!(on.stats.txn_verifications > 0, "{:?}", on.stats);
}

/// Issue 57, the request pipeline for idempotent producers: an idempotent client pipelines
/// its batches on partition 0 beside the transactional ones; a retried batch the leader
/// finds a duplicate of is answered with the original's offset once the original is
/// acknowledged (the produce handler's wait for the replicas). Answered at once, the
/// original (not yet replicated) was lost with its leader and another batch took its
/// offset: seed 497 finds it (`producer-ack-lost`, 6 of seeds 0-1,199 since the ISR and fetch
/// changes of 2026-12-05 moved the runs; seed 345 before, seed 234 before client tx-1 became a
/// Produce v12 client; treating duplicates as new batches broke `producer-batch-duplicated`
/// in 60 of seeds 0-299); with the wait it runs clean.
#[test]
fn seed_497_a_duplicate_is_answered_once_its_original_is_acknowledged() {
    let on = mutation_breaks_seed(497, |w| w.answer_duplicates_at_once(), "producer-ack-lost");
    assert!(on.stats.idempotent_rounds > 10, "{:?}", on.stats);
}

/// Issue 57, KIP-890 part 2 as Kafka 4's Java clients run it (Produce v12+, what Kafka
/// Streams' exactly-once producers send): client tx-1 never adds partition 0 to its
/// transaction; partition 0's leader asks the coordinator to add it before the first batch of
/// a transaction is appended, and asks again every 20 ms for up to 100 ms while the
/// coordinator answers CONCURRENT_TRANSACTIONS (the previous transaction's markers are being
/// written; `txn_verify::add_retry`, the produce handler's rule). A leader that appends
/// without the add leaves a batch the coordinator never heard of: no marker ever closes it
/// and partition 0's last stable offset is stuck (`liveness-txn-hanging`, 14 of the 16
/// transaction runs among seeds 0-59).
#[test]
fn seed_2_a_produce_v12_batch_waits_for_the_leaders_add() {
    let on = mutation_breaks_seed(2, |w| w.without_leader_add(), "liveness-txn-hanging");
    assert!(on.stats.txn_commits > 10, "{:?}", on.stats);
    assert!(on.stats.txn_add_retries > 0, "{:?}", on.stats);
}

/// Simulator seed 24194 (issue 57's soak): client tx-1 had begun a transaction before the
/// quiet last 10 s, and two of its AddPartitionsToTxn requests were lost in a row (53.7 s and
/// 56.7 s), so its transaction opened at 59.7 s of 60 and was still open at the end: in
/// progress, not hanging. The check exempts transactions opened in the quiet period; a
/// transaction opened before it and left open still fails `liveness-txn-hanging`. (Since
/// tx-1 became a Produce v12 client that sends no AddPartitionsToTxn, the seed draws another
/// schedule; it stays as a clean run.)
#[test]
fn seed_24194_a_transaction_opened_in_the_last_seconds_is_not_hanging() {
    let r = run_seed_clean(24194);
    assert!(r.stats.txn_commits > 0, "a transactions run");
}

/// Simulator seed 36747 (issue 57's soak, `txn-decided-twice` before the check was fixed):
/// power losses without fsync on two replicas of the transaction state partition (11.9 s and
/// 30.2 s, each then leading alone: outside the contract) took tx-1's PrepareCommit and
/// CompleteCommit of epoch 12 from every copy; the next coordinator loaded the transaction
/// Ongoing and aborted it on timeout. The commit had been recorded from a coordinator load
/// without the ids of the writes it was replayed from, so the check could not see that the
/// power loss voided it. A load's decisions now carry their writes' ids, and a decision is
/// voided only when every write that carried it is lost.
#[test]
fn seed_36747_a_decision_recovered_by_a_load_is_voided_with_its_writes() {
    let r = run_seed_clean(36747);
    assert!(r.stats.txn_decisions_voided > 0, "{:?}", r.stats);
}

/// Issue 57 (frieda-sim seed 64373, found by the soak of seeds 64,000-65,999): broker 5's log
/// of partition 0 failed an fsync, a reassignment moved the partition away and another brought
/// it back; the broker made a new log and fetched, but the image still marked the replica
/// offline, so it could neither join the ISR nor lead. The `quorum` partition, leaderless after
/// its leader's power loss, held its longest claim on broker 5 and never elected
/// (`liveness-no-leader`). The image now forgets an offline replica that leaves the replicas
/// (`MetadataImage::apply`).
#[test]
fn seed_64373_an_offline_replica_moved_away_and_back_may_lead_again() {
    let r = run_seed_clean(64373);
    assert!(r.stats.claim_elections >= 2, "{:?}", r.stats);
}

/// Issue 57 (frieda-sim seed 81383, found by the soak of seeds 80,000-81,999): a reassignment
/// added three replicas that needed 20 s to catch up while `min.insync.replicas=2` held the
/// high watermark still; the coordinator's abort marker, appended at 43.9 s, was still above
/// the high watermark at the end, and the check took the transaction for a hanging one. A
/// marker the leader appended counts as the transaction ending.
#[test]
fn seed_81383_a_marker_awaiting_replication_is_no_hanging_transaction() {
    let r = run_seed_clean(81383);
    assert!(r.stats.txn_commits >= 10, "{:?}", r.stats);
}

/// Issue 57 (frieda-sim seed 73576, found by the soak of seeds 72,000-73,999): leader 1 was
/// paused with a heartbeat answer ("unfenced") in flight; the controller fenced it and elected
/// broker 2. Resumed, broker 1 fenced itself, then took the old answer for a fresh one, led
/// again on its stale image (an ISR of [1, 3], its pending expansion to [1, 2, 3] forgotten)
/// and moved its high watermark to 254 with broker 3's stale fetch, over records the new
/// leader did not have (`replicas-disagree-below-hw`). An answer older than a session now says
/// nothing (`membership::lease::answer_is_fresh`, in the broker's heartbeat loop too).
#[test]
fn seed_73576_a_heartbeat_answer_older_than_a_session_does_not_unfence() {
    run_seed_clean(73576);
}

/// Issue 57, `--min-insync-changes` (seed 155 of 0-299): the ISR of an `isr` topic's partition
/// had emptied into the ELR, then an operator's min.insync.replicas change cleared the ELR and
/// the last known ELR (KAFKA-16540), leaving no replica that may lead cleanly. Kafka 4.4 does
/// the same (ClearElrRecord; its last-known-leader election is an unclean path), so the end
/// check exempts such a partition instead of calling it `liveness-no-leader`.
#[test]
fn seed_155_a_min_insync_change_that_clears_the_elr_of_an_empty_isr_leaves_no_leader_as_kafka() {
    let r = run_plan(Plan::generate(155).with_min_insync_changes(), true, &[]);
    assert_no_violation(&r, "seed 155 with --min-insync-changes");
    assert!(
        r.trace
            .iter()
            .any(|l| l.contains("no clean leader is left")),
        "the run no longer clears the ELR of an empty ISR: it no longer covers the case"
    );
}

/// Issue 57, `--min-insync-changes` (seed 509 of 300-3,299): leader 2 had not heard the
/// operator's min.insync.replicas=4 (its metadata fetch lost) when the controller committed its
/// ISR shrink to [1, 2] and, the ISR being below the minimum, put broker 3 into the ELR. The
/// leader installed the answer with its stale min.insync.replicas=1, moved the high watermark
/// over an ISR of two and acknowledged offset 26, which ELR member 3 lacked
/// (`isr-member-lacks-acked-record`). A committed answer now waits for the leader's image, which
/// has applied the config committed before it (`Replication::on_alter_answer`).
#[test]
fn seed_509_a_leader_installs_its_isr_change_with_the_configs_committed_before_it() {
    let r = run_plan(Plan::generate(509).with_min_insync_changes(), true, &[]);
    assert_no_violation(&r, "seed 509 with --min-insync-changes");
    assert!(r.stats.acked_all > 0, "nothing was acknowledged");
    assert!(
        r.trace
            .iter()
            .any(|l| l.contains("applies min.insync.replicas=4")),
        "the run no longer raises min.insync.replicas above the replica count: it no longer covers the case"
    );
}
