//! The process's open-file limit and the log's budget of open segment files (issue 30; see
//! `frieda_log::limits`): at start-up the broker raises its soft `RLIMIT_NOFILE` to the hard
//! limit (as Kafka's packaging and Redpanda ask of the operator), then sets the budget of
//! segment files to `log.segment.files.max`, by default 80% of that limit, leaving the rest for
//! connections, snapshots and checkpoints. Also the shortest time-based roll
//! (`log.segment.ms.min`).

use rustix::process::{getrlimit, setrlimit, Resource};

/// Share of the open-file limit segment files may take by default, percent.
pub const DEFAULT_SHARE_PERCENT: u64 = 80;

/// Raises the soft open-file limit to the hard one (when it can) and returns the soft limit
/// in force; `None` when unlimited or unreadable.
pub fn raise_open_file_limit() -> Option<u64> {
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let before = limit.current;
        limit.current = limit.maximum;
        match setrlimit(Resource::Nofile, limit) {
            Ok(()) => tracing::info!(
                from = ?before,
                to = ?limit.current,
                "raised the open-file limit (RLIMIT_NOFILE) to its hard limit"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "cannot raise the open-file limit (RLIMIT_NOFILE)");
                limit.current = before;
            }
        }
    }
    limit.current
}

/// Applies `log.segment.files.max` (`segment_files_max`; `None`: the default share of the
/// limit) and `log.segment.ms.min` (`segment_ms_min`, ms) to the log; returns the budget.
pub fn apply(segment_files_max: Option<usize>, segment_ms_min: i64) -> usize {
    let limit = raise_open_file_limit();
    let budget = match (segment_files_max, limit) {
        (Some(n), _) => n,
        (None, Some(l)) => usize::try_from(l / 100 * DEFAULT_SHARE_PERCENT).unwrap_or(usize::MAX),
        (None, None) => usize::MAX,
    };
    frieda_log::limits::set_open_files_budget(budget);
    frieda_log::limits::set_min_segment_ms(segment_ms_min);
    tracing::info!(
        open_file_limit = ?limit,
        segment_files_budget = budget,
        idle_partitions = budget / frieda_log::limits::LOG_FILES_PER_SEGMENT,
        segments_with_indexes = budget / frieda_log::limits::FILES_PER_SEGMENT,
        "open-file budget of the log (log.segment.files.max)"
    );
    budget
}
