//! A deterministic simulator of a Frieda cluster (TigerBeetle's VOPR and FoundationDB's
//! simulation in spirit): brokers, the controller quorum and producer clients run in one
//! process on simulated time, network and disk, driven by a seed.
//!
//! - The brokers run Frieda's own replication rules ([`frieda::replication`]: ISR, high
//!   watermark, acknowledgements, truncation, roles) and lease ([`frieda::membership::lease`]); the
//!   controller decides with `frieda-meta`'s functions on its `MetadataImage`, the same
//!   transition function every node applies. Where the broker's glue around those rules is
//!   sans-IO, the simulator runs it too: each followed partition's fetch state
//!   ([`frieda::replication::follower::PartitionFetch`]), the reconciler's role step
//!   ([`frieda::replication::assignment::take_role`]), the leader's decision on a batch before
//!   its append ([`frieda::storage::leader_append::decide`]) and the controller's broker sessions
//!   ([`frieda_meta::sessions::BrokerSessions`]). What is simulated is only the I/O around them:
//!   messages (delayed, lost, duplicated, reordered, cut by partitions), disks (a synced prefix
//!   a power loss keeps, fsyncs that fail), processes (crashes, pauses, suspends, controlled
//!   shutdowns) and clocks.
//! - [`plan`]: a seed's cluster shape and timed faults, operator actions and produce requests.
//! - [`world`]: the event loop and the simulated brokers and controller.
//! - `check`: the invariants, after every event and at the end.
//! - `tier`: tiered storage (issue 57): the broker's own copy task
//!   (`frieda::tiering::task`) against the simulated controller and a simulated object store,
//!   local retention over the copies, followers starting again above them.
//! - `groups`: the group coordinator's offsets log (issue 57): offset commits written as the
//!   broker's coordinator writes them, each coordinator's state kept by the broker's own state
//!   machine (`frieda::coordinator::offsets::state`); an offset commit answered OK survives
//!   every failover.
//! - `share`: share groups (issue 57): members fetching and acknowledging through the broker's
//!   own share-partition state machine (`frieda::coordinator::share::partition`), its durable
//!   state written to and read back from the group coordinator; no record accepted twice or
//!   redelivered after an accepted ACCEPT, none skipped, delivery counts never lower than
//!   stored, locks expiring so that the group finishes after the faults heal.
//! - [`diskless`]: diskless topics (issue 60), a separate mode (`--diskless`): three brokers
//!   running the broker's own append path and batch coordinator host against a simulated
//!   bucket and a small model of the coordinator partition's ISR; every acknowledged batch
//!   found at its offset, byte for byte, once, after SIGKILLs, pauses and store outages.
//! - [`shrink`]: a failing plan made short.
//!
//! `cargo run --release -p frieda-sim -- --seeds 1000` runs seeds 0..1000; `--seed N --trace`
//! replays one with its event log; `scripts/simulate` runs long soaks.

#![warn(missing_docs)]

mod check;
pub mod disk;
pub mod diskless;
mod groups;
pub mod net;
pub mod plan;
pub mod quorum;
mod real_log;
mod share;
pub mod shrink;
mod tier;
mod txn;
pub mod world;

pub use plan::{Action, Plan, Shape, Time};
pub use world::{Report, Stats, Violation, World};

/// Runs the plan of `seed`, not stopping for violations of the `ignore`d kinds.
pub fn run_seed(seed: u64, trace: bool, ignore: &[String]) -> Report {
    run_plan(Plan::generate(seed), trace, ignore)
}

/// Runs `plan`. A broken assertion of the replication rules (`frieda::invariant!`, a panic)
/// is reported as the violation `replication-assertion`.
pub fn run_plan(plan: Plan, trace: bool, ignore: &[String]) -> Report {
    let seed = plan.seed;
    let world = World::new(plan, trace).ignore(ignore);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| world.run())) {
        Ok(report) => report,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Report {
                seed,
                violation: Some(Violation {
                    time: 0,
                    kind: "replication-assertion",
                    detail: what,
                }),
                stats: Stats::default(),
                trace: Vec::new(),
            }
        }
    }
}
