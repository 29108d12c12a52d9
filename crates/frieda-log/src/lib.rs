//! Frieda's partition log: the storage engine of a Kafka-wire-compatible broker.
//!
//! A synchronous, single-writer log per partition storing Kafka RecordBatch v2 bytes exactly as
//! received (Kafka protocol guide, "Record Batch"), with the broker-assigned base offset patched in.
//! Segments are named and laid out like Kafka's (`<20-digit base offset>.log`, `.index`,
//! `.timeindex`). One writer thread owns each [`PartitionLog`]; any number of threads read through
//! cloned [`LogReader`]s with `pread`, never blocked by the writer's I/O.
//!
//! Modules: `batch` (v2 header parsing, validation, CRC-32C, patching), `config`, `error`, `index`
//! (offset and time indexes), `segment` (one `.log` + indexes), `cache` (in-memory tail cache),
//! `partition` ([`PartitionLog`], [`LogReader`]), `recovery` (torn-tail validation), `retention`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod batch;
mod cache;
mod config;
mod error;
mod index;
mod partition;
mod recovery;
mod retention;
mod segment;

pub use batch::{
    patch_base_offset, set_log_append_time, validate_batches, BatchError, BatchHeader,
    BATCH_HEADER_LEN, LOG_OVERHEAD,
};
pub use config::{LogConfig, TimestampType};
pub use error::LogError;
pub use partition::{
    AppendInfo, FetchData, FlushTicket, LogReader, PartitionLog, RecoveryReport, RetentionReport,
};
