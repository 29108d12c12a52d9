//! `frieda-sim`: runs seeds of the cluster simulator and reports; replays one seed with its
//! trace; shrinks a failing seed.
//!
//! ```text
//! frieda-sim --seeds 1000 [--start 0] [--threads 2]   run seeds start..start+seeds
//! frieda-sim --seed 42 --trace                          replay seed 42 with its event log
//! frieda-sim --seed 42 --shrink                         shrink a failing seed's plan and print its trace
//! frieda-sim --seed 42 --without-share-group            the seed's plan without its share group
//! frieda-sim --quorum --seeds 100 [--start 0]           the metadata quorum's seeds (KIP-853 voter changes)
//! frieda-sim --quorum --seed 42 --trace                 replay one quorum seed with its event log
//! frieda-sim --diskless --seeds 200 [--start 0]        diskless topics' seeds (issue 60)
//! frieda-sim --diskless --seed 42 --trace               replay one diskless seed with its event log
//! ```
//! Exits 1 if any seed broke an invariant.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::Parser;
use frieda_sim::diskless::{run_diskless_mutant, DisklessReport, DisklessStats, Mutation};
use frieda_sim::quorum::{run_quorum_seed, QuorumReport, QuorumStats};
use frieda_sim::{run_plan, shrink, Plan, Report, Stats};

#[derive(Parser)]
#[command(about = "Deterministic simulation of a Frieda cluster")]
struct Args {
    /// Number of seeds to run.
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Run this one seed (and print its outcome).
    #[arg(long)]
    seed: Option<u64>,
    /// With --seed: print the run's event log.
    #[arg(long)]
    trace: bool,
    /// With --seed: shrink a failing plan, then print the short plan's trace.
    #[arg(long)]
    shrink: bool,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Stop at the first failing seed.
    #[arg(long)]
    fail_fast: bool,
    /// With --seed: run the seed's plan without its share group (to tell a share group's part
    /// in a failure from the rest).
    #[arg(long)]
    without_share_group: bool,
    /// With --seed: run the seed's plan without its transactional producers.
    #[arg(long)]
    without_transactions: bool,
    /// Simulate the metadata quorum (openraft with Frieda's log store, state machine and
    /// controller; voter changes, crashes, cuts) instead of the cluster.
    #[arg(long)]
    quorum: bool,
    /// Simulate diskless topics (`frieda_sim::diskless`: the broker's append path and batch
    /// coordinator host, a simulated bucket, brokers killed and paused, the store answering 503)
    /// instead of the cluster.
    #[arg(long)]
    diskless: bool,
    /// With --diskless: put a defect in on purpose (`answer-before-replicated`,
    /// `put-lost`, `no-commit-age`, `read-speculative`, `no-aborted-list`,
    /// `committed-reads-to-hw`) to see the checks find it.
    #[arg(long)]
    mutation: Option<String>,
    /// Alter the topic's min.insync.replicas while the faults run (`Plan::with_min_insync_changes`;
    /// not in the default plans yet; seeds 0-299 with it run clean).
    #[arg(long)]
    min_insync_changes: bool,
    /// Run the controller's auto leader rebalance every 4-12 s (`Plan::with_leader_rebalance`;
    /// not in the default plans).
    #[arg(long)]
    leader_rebalance: bool,
    /// Run the model logs alone, without the broker's own partition log (frieda_log on an
    /// in-memory file system) in lock-step beside each (`Plan::without_real_log`; about 7 %
    /// faster).
    #[arg(long)]
    model_log_only: bool,
    /// Invariant kinds not to stop for (comma-separated), to look past a known defect.
    #[arg(long, value_delimiter = ',')]
    ignore: Vec<String>,
}

fn print_report(r: &Report) {
    match &r.violation {
        Some(v) => println!(
            "seed {}: VIOLATION {} at {} ms: {}",
            r.seed, v.kind, v.time, v.detail
        ),
        None => println!(
            "seed {}: ok ({} events, {} acks=all acknowledged, {} faults, {} offset commits answered OK)",
            r.seed, r.stats.events, r.stats.acked_all, r.stats.faults, r.stats.commits_ok
        ),
    }
}

fn print_quorum_report(r: &QuorumReport) {
    match &r.violation {
        Some(v) => println!(
            "quorum seed {}: VIOLATION {} at {} ms: {}",
            r.seed, v.kind, v.time, v.detail
        ),
        None => println!("quorum seed {}: ok ({:?})", r.seed, r.stats),
    }
}

/// `--quorum`: one seed with its trace, or many seeds on `threads` threads.
fn quorum_main(args: &Args) -> ! {
    if !cfg!(tokio_unstable) {
        eprintln!(
            "warning: built without --cfg tokio_unstable (RUSTFLAGS replaced .cargo/config.toml): \
             tokio's select! is not seeded, a quorum seed may not replay"
        );
    }
    if let Some(seed) = args.seed {
        let report = run_quorum_seed(seed, args.trace, &args.ignore);
        for line in &report.trace {
            println!("{line}");
        }
        print_quorum_report(&report);
        std::process::exit(i32::from(report.violation.is_some()));
    }
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(args.start));
    let end = args.start + args.seeds;
    let results = Arc::new(Mutex::new((0u64, QuorumStats::default(), Vec::new())));
    let workers: Vec<_> = (0..args.threads.max(1))
        .map(|_| {
            let (next, results) = (next.clone(), results.clone());
            let ignore = args.ignore.clone();
            std::thread::spawn(move || loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= end {
                    return;
                }
                let r = run_quorum_seed(seed, false, &ignore);
                let mut t = results.lock().expect("results");
                t.0 += 1;
                t.1.add(&r.stats);
                if t.0 % 1000 == 0 {
                    eprintln!("{} quorum seeds done, {} failed", t.0, t.2.len());
                }
                if r.violation.is_some() {
                    print_quorum_report(&r);
                    t.2.push(r);
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    let (seeds, t, failures) = results.lock().expect("results").clone();
    println!(
        "simulated {seeds} quorum seeds ({}..{end}) in {:.1} s: {:.1} simulated hours, {} terms led, {} crashes, {} network cuts, {} RPCs lost, {} voters added and {} removed ({} changes refused or timed out), {} snapshots installed, {} producer-id blocks allocated, {} Raft terms led by two nodes (openraft's leader ids; not KRaft epochs), {} ignored violations; {} failed",
        args.start,
        started.elapsed().as_secs_f64(),
        t.sim_ms as f64 / 3_600_000.0,
        t.terms_led,
        t.crashes,
        t.cuts,
        t.lost,
        t.voters_added,
        t.voters_removed,
        t.voter_changes_failed,
        t.snapshots_installed,
        t.allocations,
        t.terms_with_two_leaders,
        t.ignored,
        failures.len()
    );
    std::process::exit(i32::from(!failures.is_empty()));
}

fn print_diskless_report(r: &DisklessReport) {
    match &r.violation {
        Some(v) => println!(
            "diskless seed {}: VIOLATION {} at {} ms: {}",
            r.seed, v.kind, v.time, v.detail
        ),
        None => println!("diskless seed {}: ok ({:?})", r.seed, r.stats),
    }
}

/// `--diskless`: one seed with its trace, or many seeds on `threads` threads.
fn diskless_main(args: &Args) -> ! {
    let mutation = match args.mutation.as_deref() {
        None => Mutation::None,
        Some("answer-before-replicated") => Mutation::AnswerBeforeReplicated,
        Some("put-lost") => Mutation::PutLost,
        Some("no-commit-age") => Mutation::NoCommitAge,
        Some("read-speculative") => Mutation::ReadSpeculative,
        Some("no-aborted-list") => Mutation::NoAbortedList,
        Some("committed-reads-to-hw") => Mutation::CommittedReadsToHighWatermark,
        Some(other) => {
            eprintln!("unknown --mutation {other}");
            std::process::exit(2);
        }
    };
    if let Some(seed) = args.seed {
        let report = run_diskless_mutant(seed, args.trace, mutation);
        for line in &report.trace {
            println!("{line}");
        }
        print_diskless_report(&report);
        std::process::exit(i32::from(report.violation.is_some()));
    }
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(args.start));
    let end = args.start + args.seeds;
    let results = Arc::new(Mutex::new((0u64, DisklessStats::default(), 0u64)));
    let workers: Vec<_> = (0..args.threads.max(1))
        .map(|_| {
            let (next, results) = (next.clone(), results.clone());
            std::thread::spawn(move || loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= end {
                    return;
                }
                let r = run_diskless_mutant(seed, false, mutation);
                let mut t = results.lock().expect("results");
                t.0 += 1;
                t.1.add(&r.stats);
                if r.violation.is_some() {
                    print_diskless_report(&r);
                    t.2 += 1;
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    let (seeds, t, failed) = results.lock().expect("results").clone();
    println!(
        "simulated {seeds} diskless seeds ({}..{end}) in {:.1} s: {} batches acknowledged ({} of them as DUPLICATE, a resend's original; {} acknowledged again, the same), {} objects committed, {} coordinator loads ({} after a write timed out), {} brokers killed, {} paused, {} store outages ({} PUTs failed), {} DeleteRecords, {} objects deleted, {} orphans swept, {} left; {} batches read back by consumers; {} transactions committed and {} aborted, read_committed consumers delivered {} batches and skipped {} aborted; {} runs compacted ({} refused), {} batches and markers refused KAFKA_STORAGE_ERROR and resent (every fourth seed: coordinate bound 32, only crowded partitions compacted); {failed} failed",
        args.start,
        started.elapsed().as_secs_f64(),
        t.acked,
        t.duplicates,
        t.acked_again,
        t.commits,
        t.loads,
        t.failed_writes,
        t.crashes,
        t.pauses,
        t.outages,
        t.puts_failed,
        t.deletes,
        t.objects_deleted,
        t.swept,
        t.orphans,
        t.batches_read,
        t.txns_committed,
        t.txns_aborted,
        t.committed_delivered,
        t.aborted_skipped,
        t.compactions,
        t.compactions_refused,
        t.storage_refusals,
    );
    std::process::exit(i32::from(failed > 0));
}

fn main() {
    let args = Args::parse();
    // `FRIEDA_SIM_LOG=openraft=info,frieda_meta=debug` prints the simulated nodes' own logs
    // (openraft's spans carry the node id) to stderr; unset, nothing is logged.
    if let Ok(filter) = std::env::var("FRIEDA_SIM_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .init();
    }
    if args.quorum {
        quorum_main(&args);
    }
    if args.diskless {
        diskless_main(&args);
    }
    if let Some(seed) = args.seed {
        let mut plan = Plan::generate(seed);
        if args.without_share_group {
            plan = plan.without_share_group();
        }
        if args.without_transactions {
            plan = plan.without_transactions();
        }
        if args.min_insync_changes {
            plan = plan.with_min_insync_changes();
        }
        if args.leader_rebalance {
            plan = plan.with_leader_rebalance();
        }
        if args.model_log_only {
            plan = plan.without_real_log();
        }
        let report = run_plan(plan.clone(), args.trace && !args.shrink, &args.ignore);
        if args.shrink {
            if let Some(v) = &report.violation {
                let small = shrink::shrink(&plan, v.kind, 2_000, &args.ignore);
                println!(
                    "seed {seed}: {} of {} actions left after shrinking",
                    small.actions.len(),
                    plan.actions.len()
                );
                for (t, a) in &small.actions {
                    println!("  plan {t:>6} {a:?}");
                }
                let again = run_plan(small, true, &args.ignore);
                for line in &again.trace {
                    println!("{line}");
                }
                print_report(&again);
                std::process::exit(1);
            }
        }
        for line in &report.trace {
            println!("{line}");
        }
        print_report(&report);
        std::process::exit(i32::from(report.violation.is_some()));
    }
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(args.start));
    let end = args.start + args.seeds;
    let failures = Arc::new(Mutex::new(Vec::new()));
    let totals = Arc::new(Mutex::new((0u64, Stats::default())));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = (0..args.threads.max(1))
        .map(|_| {
            let (next, failures, totals, stop) =
                (next.clone(), failures.clone(), totals.clone(), stop.clone());
            let fail_fast = args.fail_fast;
            let ignore = args.ignore.clone();
            let min_insync_changes = args.min_insync_changes;
            let leader_rebalance = args.leader_rebalance;
            let model_log_only = args.model_log_only;
            std::thread::spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= end {
                    return;
                }
                let mut plan = Plan::generate(seed);
                if min_insync_changes {
                    plan = plan.with_min_insync_changes();
                }
                if leader_rebalance {
                    plan = plan.with_leader_rebalance();
                }
                if model_log_only {
                    plan = plan.without_real_log();
                }
                let r = run_plan(plan, false, &ignore);
                {
                    let mut t = totals.lock().expect("totals");
                    t.0 += 1;
                    if t.0 % 5_000 == 0 {
                        println!(
                            "progress: {} seeds done, {:.1} simulated hours, {} failed so far, {:.0} s",
                            t.0,
                            t.1.sim_ms as f64 / 3_600_000.0,
                            failures.lock().expect("failures").len(),
                            started.elapsed().as_secs_f64()
                        );
                    }
                    t.1.add(&r.stats);
                }
                if r.violation.is_some() {
                    print_report(&r);
                    failures.lock().expect("failures").push(r);
                    if fail_fast {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    let (seeds, t) = totals.lock().expect("totals").clone();
    let failures = failures.lock().expect("failures");
    println!(
        "simulated {} seeds ({}..{}) in {:.1} s: {:.1} simulated hours, {} events, {} faults injected, {} leader elections ({} from the ELR, {} from quorum claims), {} acks=all records acknowledged, {} copies to the bucket ({} remote tier truncations), {} offset commits answered OK ({} coordinator loads), {} share group acknowledgements answered OK, {} transactions committed and {} aborted ({} KIP-890 verifications and adds, {} adds retried, {} pipelined produces waited for an earlier one), {} rounds of idempotent batches answered OK ({} epoch bumps); {} failed",
        seeds,
        args.start,
        end,
        started.elapsed().as_secs_f64(),
        t.sim_ms as f64 / 3_600_000.0,
        t.events,
        t.faults,
        t.elections,
        t.elr_elections,
        t.claim_elections,
        t.acked_all,
        t.copies,
        t.remote_truncations,
        t.commits_ok,
        t.coordinator_loads,
        t.share_acks_ok,
        t.txn_commits,
        t.txn_aborts,
        t.txn_verifications,
        t.txn_add_retries,
        t.txn_waited_turns,
        t.idempotent_rounds,
        t.idempotent_bumps,
        failures.len()
    );
    let mut kinds: std::collections::BTreeMap<&str, Vec<u64>> = Default::default();
    for f in failures.iter() {
        if let Some(v) = &f.violation {
            kinds.entry(v.kind).or_default().push(f.seed);
        }
    }
    for (k, seeds) in &kinds {
        let shown: Vec<String> = seeds.iter().take(10).map(|s| s.to_string()).collect();
        println!("  {k}: {} seeds (e.g. {})", seeds.len(), shown.join(", "));
    }
    std::process::exit(i32::from(!failures.is_empty()));
}
