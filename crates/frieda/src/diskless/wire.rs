//! The requests a broker sends to the batch coordinator of another broker, and their answers
//! (docs/diskless.md, "Leaderless produce"): the uploader's CommitBatches and a reader's
//! FindBatches, Offsets and DeleteRecords. They travel as the `request_data` and
//! `response_data` of Kafka's EnvelopeRequest (API 58), which only broker principals may send
//! (CLUSTER_ACTION); [`MAGIC`] tells them from a Kafka request forwarded in an envelope.
//!
//! Layout (all integers big-endian; partitions, batches and answers as in [`super::codec`]):
//!
//! ```text
//! request:  magic "FDLS", version u8 (2), kind u8, coordinator partition i32, then by kind:
//!   1 Commit:        object [16], object_size u64, uploader i32, batches u32, batch each
//!                    (as in the codec), then its verification: u8 0, or 1 and token u64
//!   2 FindBatches:   partition, offset i64, max_bytes u64
//!   3 Offsets:       partition
//!   4 DeleteRecords: partition, offset i64
//!   5 Marker:        partition, bumps_epoch u8 (0, 1), marker (as in the codec)
//!   6 Producers:     partition
//!   7 Verify:        partition, producer_id i64, producer_epoch i16, supports_epoch_bump u8
//!   8 Block:         object [16], block index u64, block_bytes u64 (coordinator partition -1)
//!   9 Changed:       since u64, max_wait_ms u32
//! response: magic "FDLS", version u8 (2), error_code i16; when 0, by the request's kind:
//!   1 answers u32, answer each
//!   2 high_watermark i64, log_start i64, last_stable_offset i64, coordinates u32, then each:
//!     base_offset i64, last_offset i64, max_timestamp i64, location u8:
//!       0 object [16], byte_offset u32, byte_len u32
//!       1 marker
//!     then aborted u32, each: producer_id i64, first_offset i64, last_offset i64,
//!     last_stable_offset i64
//!   3 log_start i64, high_watermark i64, last_stable_offset i64
//!   4 log_start i64
//!   5 the marker's offset i64
//!   6 producers u32, each: producer_id i64, epoch i16, last_sequence i32, last_timestamp i64,
//!     coordinator_epoch i32, current_txn_start_offset i64
//!   7 the token u64
//!   8 u8 0 (the object is gone), or 1, length u32 and the block's bytes
//!   9 the change count u64
//! ```
//!
//! Version 2 (2026-12-07) added markers and the last stable offset (transactions); brokers of
//! version 1 and 2 do not understand each other's messages (a decode error, answered as
//! UNKNOWN_SERVER_ERROR and retried). Version 3 (2026-12-07) added the commit's verification
//! tokens and kinds 6 (Producers) and 7 (Verify). Kind 8 (Block, 2026-12-08: one broker of a
//! rack asks another for a block of an object, `driver::objects`) came without a new version: a
//! broker that does not know it refuses the envelope, and the asker reads the block from the
//! bucket itself. Kind 9 (Changed, 2026-12-08: a broker's long poll of the coordinator for its
//! waiting fetches, `driver::watch`) likewise: refused by an older broker, the waiting fetches
//! look again every 25 ms as before.

use super::codec::{
    put_answer, put_batch, put_commit_head, put_marker, put_partition, DecodeError, Reader,
};
use super::coordinator::{
    BatchAnswer, CommitBatches, Coordinate, DisklessPartition, Found, Location, ObjectId, Offsets,
    TxnMarker,
};
use bytes::Bytes;
use frieda_log::{AbortedTxn, ProducerInfo, MAX_PRODUCERS_PER_PARTITION};
use kafka_protocol::error::ResponseError as E;

/// The first bytes of every request and response.
pub const MAGIC: [u8; 4] = *b"FDLS";
/// The encoding's version.
pub const VERSION: u8 = 3;
/// The most coordinates a FindBatches answer may hold when decoded (the coordinator's bound
/// per partition, `diskless.coordinator.max.batches.per.partition`, is 16,384 by default).
pub const MAX_COORDINATES: u32 = 1 << 20;

/// A request to the coordinator loaded on partition `index` of `__diskless_coordinator`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorRequest {
    /// The `__diskless_coordinator` partition.
    pub index: i32,
    /// What is asked.
    pub call: Call,
}

/// What a [`CoordinatorRequest`] asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// Commit an uploaded object ([`super::driver::coordinator::HostedCoordinator::commit`]).
    Commit(CommitBatches),
    /// Where the batches at `offset` are, up to `max_bytes`.
    FindBatches {
        /// The partition.
        partition: DisklessPartition,
        /// The offset.
        offset: i64,
        /// Bytes of batches wanted (the first whole).
        max_bytes: u64,
    },
    /// The partition's log start and high watermark.
    Offsets(DisklessPartition),
    /// DeleteRecords below `offset` (-1: the high watermark).
    DeleteRecords {
        /// The partition.
        partition: DisklessPartition,
        /// The new log start asked for.
        offset: i64,
    },
    /// Write a transaction marker (WriteTxnMarkers).
    Marker {
        /// The partition.
        partition: DisklessPartition,
        /// The marker.
        marker: TxnMarker,
        /// Transactions v2: its epoch must be above the producer's.
        bumps_epoch: bool,
    },
    /// The producers the partition remembers (DescribeProducers).
    Producers(DisklessPartition),
    /// A verification token for a transactional batch (KIP-890).
    Verify {
        /// The partition.
        partition: DisklessPartition,
        /// The producer.
        producer_id: i64,
        /// Its epoch.
        producer_epoch: i16,
        /// Transactions v2.
        supports_epoch_bump: bool,
    },
    /// Block `index` (`block_bytes` long, shorter at the object's end) of `object`, from the
    /// broker of the asker's rack that reads it from the bucket for the rack
    /// ([`super::driver::objects`]).
    Block {
        /// The object.
        object: ObjectId,
        /// Which block: bytes from `index * block_bytes`.
        index: u64,
        /// The asker's block size (bytes).
        block_bytes: u64,
    },
    /// Answer once the coordinator's change count differs from `since`, or after
    /// `max_wait_ms` (a long poll for the fetches waiting on another broker).
    Changed {
        /// The count the asker knows.
        since: u64,
        /// The longest the answer waits (ms; the coordinator caps it).
        max_wait_ms: u32,
    },
}

/// The answer to a [`Call`] (the same kind).
///
/// (`Block` is asked of any broker, not of a coordinator: `driver::objects` sends it and
/// `driver::Diskless::serve` answers it.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Commit: one answer per batch, in order.
    Committed(Vec<BatchAnswer>),
    /// FindBatches.
    Found(Found),
    /// Offsets.
    Offsets(Offsets),
    /// DeleteRecords: the new log start.
    LogStart(i64),
    /// Marker: its offset.
    MarkerAt(i64),
    /// Producers: by producer id.
    Producers(Vec<ProducerInfo>),
    /// Verify: the token.
    Token(u64),
    /// Block: its bytes (`None`: the object is gone from the bucket).
    Block(Option<Bytes>),
    /// Changed: the change count now.
    Changes(u64),
}

impl Call {
    fn kind(&self) -> u8 {
        match self {
            Call::Commit(_) => 1,
            Call::FindBatches { .. } => 2,
            Call::Offsets(_) => 3,
            Call::DeleteRecords { .. } => 4,
            Call::Marker { .. } => 5,
            Call::Producers(_) => 6,
            Call::Verify { .. } => 7,
            Call::Block { .. } => 8,
            Call::Changed { .. } => 9,
        }
    }
}

fn head(out: &mut Vec<u8>) {
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
}

fn check_head(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    if r.take(4)? != MAGIC {
        return Err(DecodeError::Malformed("not a diskless coordinator message"));
    }
    match r.u8()? {
        VERSION => Ok(()),
        v => Err(DecodeError::Version(v)),
    }
}

/// Encodes `request`.
pub fn encode_request(request: &CoordinatorRequest) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    head(&mut out);
    out.push(request.call.kind());
    out.extend_from_slice(&request.index.to_be_bytes());
    match &request.call {
        Call::Commit(c) => {
            put_commit_head(&mut out, c);
            for b in &c.batches {
                put_batch(&mut out, b);
                match b.verification {
                    None => out.push(0),
                    Some(token) => {
                        out.push(1);
                        out.extend_from_slice(&token.to_be_bytes());
                    }
                }
            }
        }
        Call::FindBatches {
            partition,
            offset,
            max_bytes,
        } => {
            put_partition(&mut out, partition);
            out.extend_from_slice(&offset.to_be_bytes());
            out.extend_from_slice(&max_bytes.to_be_bytes());
        }
        Call::Offsets(partition) => put_partition(&mut out, partition),
        Call::DeleteRecords { partition, offset } => {
            put_partition(&mut out, partition);
            out.extend_from_slice(&offset.to_be_bytes());
        }
        Call::Marker {
            partition,
            marker,
            bumps_epoch,
        } => {
            put_partition(&mut out, partition);
            out.push(u8::from(*bumps_epoch));
            put_marker(&mut out, marker);
        }
        Call::Producers(partition) => put_partition(&mut out, partition),
        Call::Verify {
            partition,
            producer_id,
            producer_epoch,
            supports_epoch_bump,
        } => {
            put_partition(&mut out, partition);
            out.extend_from_slice(&producer_id.to_be_bytes());
            out.extend_from_slice(&producer_epoch.to_be_bytes());
            out.push(u8::from(*supports_epoch_bump));
        }
        Call::Block {
            object,
            index,
            block_bytes,
        } => {
            out.extend_from_slice(object.0.as_bytes());
            out.extend_from_slice(&index.to_be_bytes());
            out.extend_from_slice(&block_bytes.to_be_bytes());
        }
        Call::Changed { since, max_wait_ms } => {
            out.extend_from_slice(&since.to_be_bytes());
            out.extend_from_slice(&max_wait_ms.to_be_bytes());
        }
    }
    out
}

/// Decodes what [`encode_request`] wrote.
///
/// Errors: [`DecodeError`]: another magic (a Kafka request in the envelope), version or kind,
/// bytes short of or past the fields, more than [`super::codec::MAX_BATCHES_PER_COMMIT`]
/// batches.
pub fn decode_request(bytes: &[u8]) -> Result<CoordinatorRequest, DecodeError> {
    let mut r = Reader(bytes);
    check_head(&mut r)?;
    let kind = r.u8()?;
    let index = r.i32()?;
    let call = match kind {
        1 => {
            let (object, object_size, uploader, n) = r.commit_head()?;
            if n as usize * 89 > r.0.len() {
                return Err(DecodeError::Malformed("batch count past the end"));
            }
            let mut batches = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let mut b = r.batch()?;
                b.verification = match r.u8()? {
                    0 => None,
                    1 => Some(r.u64()?),
                    _ => return Err(DecodeError::Malformed("verification")),
                };
                batches.push(b);
            }
            Call::Commit(CommitBatches {
                object,
                object_size,
                uploader,
                batches,
            })
        }
        2 => Call::FindBatches {
            partition: r.partition()?,
            offset: r.i64()?,
            max_bytes: r.u64()?,
        },
        3 => Call::Offsets(r.partition()?),
        4 => Call::DeleteRecords {
            partition: r.partition()?,
            offset: r.i64()?,
        },
        5 => Call::Marker {
            partition: r.partition()?,
            bumps_epoch: match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::Malformed("bumps_epoch")),
            },
            marker: r.marker()?,
        },
        6 => Call::Producers(r.partition()?),
        7 => Call::Verify {
            partition: r.partition()?,
            producer_id: r.i64()?,
            producer_epoch: r.i16()?,
            supports_epoch_bump: match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::Malformed("supports_epoch_bump")),
            },
        },
        8 => Call::Block {
            object: ObjectId(r.uuid()?),
            index: r.u64()?,
            block_bytes: r.u64()?,
        },
        9 => Call::Changed {
            since: r.u64()?,
            max_wait_ms: r.u32()?,
        },
        _ => return Err(DecodeError::Malformed("unknown request kind")),
    };
    if !r.0.is_empty() {
        return Err(DecodeError::Malformed("bytes after the request"));
    }
    Ok(CoordinatorRequest { index, call })
}

/// Encodes the answer (or the coordinator's error) to a request.
pub fn encode_response(answer: &Result<Answer, E>) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    head(&mut out);
    let answer = match answer {
        Err(e) => {
            out.extend_from_slice(&e.code().to_be_bytes());
            return out;
        }
        Ok(a) => a,
    };
    out.extend_from_slice(&0i16.to_be_bytes());
    match answer {
        Answer::Committed(answers) => {
            out.extend_from_slice(&(answers.len() as u32).to_be_bytes());
            for a in answers {
                put_answer(&mut out, a);
            }
        }
        Answer::Found(found) => {
            out.extend_from_slice(&found.high_watermark.to_be_bytes());
            out.extend_from_slice(&found.log_start.to_be_bytes());
            out.extend_from_slice(&found.last_stable_offset.to_be_bytes());
            out.extend_from_slice(&(found.coordinates.len() as u32).to_be_bytes());
            for c in &found.coordinates {
                out.extend_from_slice(&c.base_offset.to_be_bytes());
                out.extend_from_slice(&c.last_offset.to_be_bytes());
                out.extend_from_slice(&c.max_timestamp.to_be_bytes());
                match &c.location {
                    Location::Object {
                        object,
                        byte_offset,
                        byte_len,
                    } => {
                        out.push(0);
                        out.extend_from_slice(object.0.as_bytes());
                        out.extend_from_slice(&byte_offset.to_be_bytes());
                        out.extend_from_slice(&byte_len.to_be_bytes());
                    }
                    Location::Marker(m) => {
                        out.push(1);
                        put_marker(&mut out, m);
                    }
                }
            }
            out.extend_from_slice(&(found.aborted.len() as u32).to_be_bytes());
            for a in &found.aborted {
                for v in [
                    a.producer_id,
                    a.first_offset,
                    a.last_offset,
                    a.last_stable_offset,
                ] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
        }
        Answer::Offsets(o) => {
            out.extend_from_slice(&o.log_start.to_be_bytes());
            out.extend_from_slice(&o.high_watermark.to_be_bytes());
            out.extend_from_slice(&o.last_stable_offset.to_be_bytes());
        }
        Answer::LogStart(log_start) => out.extend_from_slice(&log_start.to_be_bytes()),
        Answer::MarkerAt(offset) => out.extend_from_slice(&offset.to_be_bytes()),
        Answer::Token(token) => out.extend_from_slice(&token.to_be_bytes()),
        Answer::Changes(count) => out.extend_from_slice(&count.to_be_bytes()),
        Answer::Block(None) => out.push(0),
        Answer::Block(Some(bytes)) => {
            out.reserve(5 + bytes.len());
            out.push(1);
            out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            out.extend_from_slice(bytes);
        }
        Answer::Producers(producers) => {
            out.extend_from_slice(&(producers.len() as u32).to_be_bytes());
            for p in producers {
                out.extend_from_slice(&p.producer_id.to_be_bytes());
                out.extend_from_slice(&p.epoch.to_be_bytes());
                out.extend_from_slice(&p.last_sequence.to_be_bytes());
                out.extend_from_slice(&p.last_timestamp.to_be_bytes());
                out.extend_from_slice(&p.coordinator_epoch.to_be_bytes());
                out.extend_from_slice(&p.current_txn_start_offset.to_be_bytes());
            }
        }
    }
    out
}

/// Decodes the answer to a request of `call`'s kind: the coordinator's answer or its error.
///
/// Errors: [`DecodeError`] as [`decode_request`], an unknown error code, more than
/// [`MAX_COORDINATES`] coordinates or [`MAX_PRODUCERS_PER_PARTITION`] producers.
pub fn decode_response(call: &Call, bytes: &[u8]) -> Result<Result<Answer, E>, DecodeError> {
    let mut r = Reader(bytes);
    check_head(&mut r)?;
    if r.0.len() >= 2 && r.0[..2] != [0, 0] {
        let e = r.error()?;
        return if r.0.is_empty() {
            Ok(Err(e))
        } else {
            Err(DecodeError::Malformed("bytes after the error"))
        };
    }
    r.i16()?;
    let answer = match call {
        Call::Commit(_) => {
            let n = r.u32()?;
            if n as usize * 3 > r.0.len() {
                return Err(DecodeError::Malformed("answer count past the end"));
            }
            let mut answers = Vec::with_capacity(n as usize);
            for _ in 0..n {
                answers.push(r.answer()?);
            }
            Answer::Committed(answers)
        }
        Call::FindBatches { .. } => {
            let high_watermark = r.i64()?;
            let log_start = r.i64()?;
            let last_stable_offset = r.i64()?;
            let n = r.u32()?;
            // each at least 25 + 15 bytes (a marker)
            if n > MAX_COORDINATES || n as usize * 40 > r.0.len() {
                return Err(DecodeError::Malformed("coordinate count past the end"));
            }
            let mut coordinates = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let (base_offset, last_offset, max_timestamp) = (r.i64()?, r.i64()?, r.i64()?);
                let location = match r.u8()? {
                    0 => Location::Object {
                        object: ObjectId(r.uuid()?),
                        byte_offset: r.u32()?,
                        byte_len: r.u32()?,
                    },
                    1 => Location::Marker(r.marker()?),
                    _ => return Err(DecodeError::Malformed("unknown location")),
                };
                coordinates.push(Coordinate {
                    location,
                    base_offset,
                    last_offset,
                    max_timestamp,
                });
            }
            let n = r.u32()?;
            if n as usize * 32 > r.0.len() {
                return Err(DecodeError::Malformed("aborted count past the end"));
            }
            let mut aborted = Vec::with_capacity(n as usize);
            for _ in 0..n {
                aborted.push(AbortedTxn {
                    producer_id: r.i64()?,
                    first_offset: r.i64()?,
                    last_offset: r.i64()?,
                    last_stable_offset: r.i64()?,
                });
            }
            Answer::Found(Found {
                coordinates,
                high_watermark,
                log_start,
                last_stable_offset,
                aborted,
            })
        }
        Call::Offsets(_) => Answer::Offsets(Offsets {
            log_start: r.i64()?,
            high_watermark: r.i64()?,
            last_stable_offset: r.i64()?,
        }),
        Call::DeleteRecords { .. } => Answer::LogStart(r.i64()?),
        Call::Marker { .. } => Answer::MarkerAt(r.i64()?),
        Call::Producers(_) => {
            let n = r.u32()?;
            // each 34 bytes
            if n as usize > MAX_PRODUCERS_PER_PARTITION || n as usize * 34 > r.0.len() {
                return Err(DecodeError::Malformed("producer count past the end"));
            }
            let mut producers = Vec::with_capacity(n as usize);
            for _ in 0..n {
                producers.push(ProducerInfo {
                    producer_id: r.i64()?,
                    epoch: r.i16()?,
                    last_sequence: r.i32()?,
                    last_timestamp: r.i64()?,
                    coordinator_epoch: r.i32()?,
                    current_txn_start_offset: r.i64()?,
                });
            }
            Answer::Producers(producers)
        }
        Call::Verify { .. } => Answer::Token(r.u64()?),
        Call::Block { .. } => Answer::Block(match r.u8()? {
            0 => None,
            1 => {
                let len = r.u32()? as usize;
                Some(Bytes::copy_from_slice(r.take(len)?))
            }
            _ => return Err(DecodeError::Malformed("block presence")),
        }),
        Call::Changed { .. } => Answer::Changes(r.u64()?),
    };
    if !r.0.is_empty() {
        return Err(DecodeError::Malformed("bytes after the answer"));
    }
    Ok(Ok(answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diskless::coordinator::CommittedBatch;
    use frieda_log::BatchHeader;
    use uuid::Uuid;

    fn p() -> DisklessPartition {
        DisklessPartition {
            topic_id: Uuid::from_u128(7),
            partition: 3,
        }
    }

    fn calls() -> Vec<Call> {
        let header = BatchHeader {
            base_offset: 0,
            batch_length: 88,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 1,
            attributes: 0,
            last_offset_delta: 2,
            base_timestamp: 10,
            max_timestamp: 12,
            producer_id: 42,
            producer_epoch: 1,
            base_sequence: 5,
            records_count: 3,
        };
        vec![
            Call::Commit(CommitBatches {
                object: ObjectId(Uuid::from_u128(99)),
                object_size: 298,
                uploader: 2,
                batches: vec![
                    CommittedBatch {
                        partition: p(),
                        byte_offset: 0,
                        byte_len: 149,
                        header,
                        verification: Some(7 << 32 | 3),
                    },
                    CommittedBatch {
                        partition: p(),
                        byte_offset: 149,
                        byte_len: 149,
                        header,
                        verification: None,
                    },
                ],
            }),
            Call::FindBatches {
                partition: p(),
                offset: 17,
                max_bytes: 1 << 20,
            },
            Call::Offsets(p()),
            Call::DeleteRecords {
                partition: p(),
                offset: -1,
            },
            Call::Marker {
                partition: p(),
                marker: marker(),
                bumps_epoch: true,
            },
            Call::Producers(p()),
            Call::Verify {
                partition: p(),
                producer_id: 42,
                producer_epoch: 3,
                supports_epoch_bump: true,
            },
            Call::Block {
                object: ObjectId(Uuid::from_u128(99)),
                index: 2,
                block_bytes: 4 << 20,
            },
            Call::Block {
                object: ObjectId(Uuid::from_u128(98)),
                index: 0,
                block_bytes: 1 << 16,
            },
            Call::Changed {
                since: 41,
                max_wait_ms: 500,
            },
        ]
    }

    fn marker() -> TxnMarker {
        TxnMarker {
            producer_id: 42,
            producer_epoch: 3,
            coordinator_epoch: 7,
            commit: false,
        }
    }

    fn answers() -> Vec<Answer> {
        vec![
            Answer::Committed(vec![
                BatchAnswer::Appended {
                    base_offset: 0,
                    last_offset: 2,
                },
                BatchAnswer::Duplicate {
                    base_offset: 0,
                    last_offset: 2,
                },
                BatchAnswer::Refused(E::OutOfOrderSequenceNumber),
            ]),
            Answer::Found(Found {
                coordinates: vec![
                    Coordinate {
                        location: Location::Object {
                            object: ObjectId(Uuid::from_u128(99)),
                            byte_offset: 149,
                            byte_len: 149,
                        },
                        base_offset: 3,
                        last_offset: 5,
                        max_timestamp: 12,
                    },
                    Coordinate {
                        location: Location::Marker(marker()),
                        base_offset: 6,
                        last_offset: 6,
                        max_timestamp: 13,
                    },
                ],
                high_watermark: 7,
                log_start: 0,
                last_stable_offset: 7,
                aborted: vec![AbortedTxn {
                    producer_id: 42,
                    first_offset: 3,
                    last_offset: 6,
                    last_stable_offset: 7,
                }],
            }),
            Answer::Offsets(Offsets {
                log_start: 2,
                high_watermark: 6,
                last_stable_offset: 4,
            }),
            Answer::LogStart(4),
            Answer::MarkerAt(9),
            Answer::Producers(vec![
                ProducerInfo {
                    producer_id: 42,
                    epoch: 3,
                    last_sequence: 17,
                    last_timestamp: 1_700_000_000_000,
                    coordinator_epoch: 7,
                    current_txn_start_offset: 3,
                },
                ProducerInfo {
                    producer_id: 43,
                    epoch: 0,
                    last_sequence: -1,
                    last_timestamp: -1,
                    coordinator_epoch: -1,
                    current_txn_start_offset: -1,
                },
            ]),
            Answer::Token(7 << 32 | 5),
            Answer::Block(Some(Bytes::from_static(b"some bytes of an object"))),
            Answer::Block(None),
            Answer::Changes(42),
        ]
    }

    #[test]
    fn requests_and_answers_read_back_as_written() {
        for (call, answer) in calls().into_iter().zip(answers()) {
            let req = CoordinatorRequest {
                index: 0,
                call: call.clone(),
            };
            assert_eq!(decode_request(&encode_request(&req)), Ok(req));
            let ok = Ok(answer);
            assert_eq!(decode_response(&call, &encode_response(&ok)), Ok(ok));
            let err = Err(E::NotCoordinator);
            assert_eq!(decode_response(&call, &encode_response(&err)), Ok(err));
        }
    }

    #[test]
    fn damaged_or_foreign_messages_are_refused() {
        for (call, answer) in calls().into_iter().zip(answers()) {
            let req = encode_request(&CoordinatorRequest {
                index: 0,
                call: call.clone(),
            });
            for cut in 0..req.len() {
                assert!(
                    decode_request(&req[..cut]).is_err(),
                    "{call:?} cut at {cut}"
                );
            }
            let mut long = req.clone();
            long.push(0);
            assert!(decode_request(&long).is_err());
            let resp = encode_response(&Ok(answer));
            for cut in 0..resp.len() {
                assert!(
                    decode_response(&call, &resp[..cut]).is_err(),
                    "cut at {cut}"
                );
            }
        }
        // a Kafka request header (api key 0, version 9) forwarded in an envelope
        assert!(decode_request(&[0, 0, 0, 9, 0, 0, 0, 1]).is_err());
        // a commit claiming more batches than its bytes hold: refused before allocating them
        let mut req = encode_request(&CoordinatorRequest {
            index: 0,
            call: calls().remove(0),
        });
        req.truncate(10 + 16 + 8 + 4);
        req.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode_request(&req).is_err());
    }
}
