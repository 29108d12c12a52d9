//! Frieda's partition log: the storage engine of a Kafka-wire-compatible broker.
//!
//! A synchronous, single-writer log per partition storing Kafka RecordBatch v2 bytes exactly as
//! received (Kafka protocol guide, "Record Batch"), with the broker-assigned base offset patched in.
//! Segments are named and laid out like Kafka's (`<20-digit base offset>.log`, `.index`,
//! `.timeindex`). One writer thread owns each [`PartitionLog`]; any number of threads read through
//! cloned [`LogReader`]s with `pread`, never blocked by the writer's I/O.
//!
//! Modules: `batch` (v2 header parsing, validation, CRC-32C, patching, building), `compression`
//! (codecs, bounded), `records` (the records inside a batch), `validator` (Kafka's LogValidator
//! checks of produced records), `config`, `error`, `index`
//! (offset and time indexes), `segment` (one `.log` + indexes), `cache` (in-memory tail cache),
//! `partition` ([`PartitionLog`], [`LogReader`]), `recovery` (batch-by-batch validation after an
//! unclean shutdown), `retention`, `cleaner` (log compaction); for transactions (KIP-98, KIP-890)
//! `control` (commit/abort markers), `producer_state` (sequences, epochs, open transactions),
//! `snapshot` (`<offset>.snapshot` files of the producer state) and `txn_index` (the aborted
//! transactions of each segment, `<base>.txnindex`). See `docs/transactions.md`. Every file
//! operation goes through [`fs::FileSystem`]: [`OsFs`] in the broker, [`MemFs`] (`mem_fs`) in
//! tests and the simulator, which crash it and check what a power cut must not lose.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod batch;
mod cache;
mod cleaner;
mod closed_segment;
mod compression;
mod config;
mod control;
#[cfg(test)]
mod crash_tests;
mod epoch;
mod error;
mod file_slice;
pub mod fs;
mod index;
pub mod limits;
mod mem_fs;
mod partition;
mod producer_state;
mod records;
mod recovery;
mod retention;
mod segment;
mod snapshot;
pub mod stats;
mod txn_index;
mod validator;

pub use batch::{
    build_batch, find_record, patch_base_offset, patch_leader_epoch, records_section,
    set_log_append_time, validate_batches, BatchError, BatchHeader, RecordError, BATCH_HEADER_LEN,
    LOG_OVERHEAD,
};
pub use cleaner::{
    CleanContext, CleanReason, CleanStats, CleanedLog, CleaningCandidate, PendingSwap, Throttle,
    BYTES_PER_MAP_ENTRY,
};
pub use closed_segment::{ClosedSegment, RemoteIndexes, INDEXES_MAGIC, INDEXES_MAGIC_V1};
pub use compression::{Codec, MAX_DECOMPRESSED_BYTES};
pub use config::{LogConfig, TimestampType};
pub use control::{
    build_marker_batch, read_control_record, ControlRecord, ControlType, EndTxnMarker, CONTROL_BIT,
    TRANSACTIONAL_BIT,
};
pub use epoch::{
    epoch_at, first_divergence, EpochEntry, Epochs, EPOCH_CHECKPOINT_FILE, UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
};
pub use error::LogError;
pub use file_slice::{FileFetch, FileSlice};
pub use fs::{FileRef, FileSystem, LogDir, LogFile, OsFs};
pub use mem_fs::{CrashStats, MemFs};
pub use partition::{
    create_dir_durably, AppendInfo, DiskRead, FetchData, FlushTicket, LogReader, PartitionLog,
    RecoveryReport, RemovedSegments, RetentionReport, RECOVERY_CEILING_FILE,
};
pub use producer_state::{
    CompletedTxn, ProducerError, ProducerInfo, ProducerStateManager, SequenceCheck, TxnFrontier,
    BATCHES_TO_RETAIN, MAX_PRODUCERS_PER_PARTITION,
};
pub use records::{encode_record, parse_records, RecordRef};
pub use segment::{CacheProbe, SegmentWriteback};
pub use txn_index::AbortedTxn;
pub use validator::{validate_header, validate_records, RecordPolicy};
