//! Errors of the partition log.

use crate::batch::BatchError;
use crate::producer_state::ProducerError;

/// Error returned by [`crate::PartitionLog`] and [`crate::LogReader`].
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// A fetch or lookup below the log start offset or above the log end offset
    /// (Kafka `OFFSET_OUT_OF_RANGE`).
    #[error("offset {offset} out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        /// The requested offset.
        offset: i64,
        /// First offset stored at the time of the request.
        log_start_offset: i64,
        /// Offset the next appended record will get.
        log_end_offset: i64,
    },
    /// The appended bytes are not valid v2 batches.
    #[error(transparent)]
    Batch(#[from] BatchError),
    /// File-system error; on append nothing was stored.
    #[error("log I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Stored data that cannot be read back (e.g. a bad batch header inside a closed segment).
    #[error("corrupt log data: {0}")]
    Corrupt(String),
    /// The log went offline after a failed fsync or write; the broker answers
    /// `KAFKA_STORAGE_ERROR` until it restarts and recovers the log from disk.
    #[error("the partition log is offline after a failed fsync or write")]
    Offline,
    /// The producer state refused a batch or marker (the Kafka error each variant names);
    /// nothing was stored.
    #[error(transparent)]
    Producer(#[from] ProducerError),
    /// A new segment would take the process past its budget of open segment files
    /// (`log.segment.files.max`, see [`crate::limits`]); nothing was created and the log stays
    /// online. The broker answers KAFKA_STORAGE_ERROR (56).
    #[error("open-file budget reached: {held} segment files open, budget {budget} (log.segment.files.max); delete topics or raise the process's open-file limit")]
    OpenFilesBudget {
        /// Segment files open.
        held: usize,
        /// The budget.
        budget: usize,
    },
}
