//! Topics and partitions as the handlers and coordinators act on them: a partition's log with
//! its writer-owned state and waiting fetches, the log writer threads, topic configs, and the
//! checkpoint files that say what of each log is durable.
//!
//! - [`partition`]: one partition (the log's read side, appends, producer state, the replica's
//!   role, the wake-up of waiting fetches).
//! - [`writer`]: the log writer threads (group commit fsync; appends with
//!   `log.append.mode = "writer"`).
//! - [`backlog`]: the backlog read lane (reads that miss the tail cache, at idle CPU priority).
//! - [`bulk`]: the bulk-append lane (large produced batches, appended off the network threads).
//! - [`topic`]: a topic (id, partitions, config overrides) and the internal topics' names.
//! - [`topic_config`]: topic-level configs under Kafka's names, mapped onto the log's.
//! - [`checkpoint`], [`log_start`]: Kafka's offset checkpoint files.
//!
//! Below the coordinators and the [`Broker`](crate::broker::Broker) that holds the topic
//! registry: nothing here knows of either.

pub mod backlog;
pub mod bulk;
pub mod checkpoint;
pub mod clean_shutdown;
pub mod file_budget;
pub mod log_start;
pub mod meta_properties;
pub mod partition;
pub mod topic;
pub mod topic_config;
pub mod writer;
