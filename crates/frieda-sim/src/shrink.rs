//! Shrinking a failing run (delta debugging over the plan's actions): drop chunks of the plan,
//! halving the chunk size, keeping every removal after which the run still breaks the same
//! invariant; then the same for single produce requests. The result replays exactly (same seed,
//! same network randomness for the same sequence of sends).

use crate::plan::Plan;

/// Shrinks `plan`, which breaks invariant `kind`, to a shorter plan that still breaks it,
/// running at most `budget` simulations. Returns the shorter plan.
pub fn shrink(plan: &Plan, kind: &str, budget: usize, ignore: &[String]) -> Plan {
    let mut best = plan.clone();
    let mut runs = 0;
    let fails = |p: &Plan, runs: &mut usize| {
        *runs += 1;
        crate::run_plan(p.clone(), false, ignore)
            .violation
            .is_some_and(|v| v.kind == kind)
    };
    // Stop the run right after the violation: later actions cannot matter.
    if let Some(v) = crate::run_plan(best.clone(), false, ignore).violation {
        let cut = v.time;
        let mut shorter = best.clone();
        shorter.actions.retain(|(t, _)| *t <= cut);
        shorter.shape.heal = shorter.shape.heal.max(cut + 1);
        if fails(&shorter, &mut runs) {
            best = shorter;
        }
    }
    let mut chunk = best.actions.len().div_ceil(2).max(1);
    while chunk >= 1 && runs < budget {
        let mut i = 0;
        let mut removed_any = false;
        while i < best.actions.len() && runs < budget {
            let mut candidate = best.clone();
            let end = (i + chunk).min(candidate.actions.len());
            candidate.actions.drain(i..end);
            if fails(&candidate, &mut runs) {
                best = candidate;
                removed_any = true;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 && !removed_any {
            break;
        }
        chunk = if chunk == 1 { 1 } else { chunk / 2 };
    }
    best
}
