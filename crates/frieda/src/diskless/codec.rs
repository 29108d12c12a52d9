//! The encoding of the batch coordinator's [`Decision`]s: the value of each record the
//! coordinator partition's leader writes (docs/diskless.md, "The batch coordinator"), read back
//! by its replicas and by a load that replays the partition.
//!
//! Layout (all integers big-endian):
//!
//! ```text
//! version u8 (1), crc u32 (CRC-32C of what follows), kind u8, then by kind:
//!   0 CreatePartition: topic_id [16], partition i32
//!   1 Commit:          now_ms i64, object [16], object_size u64, uploader i32, batches u32, then
//!                      per batch: topic_id [16], partition i32, byte_offset u32, byte_len u32,
//!                      header [61] (the v2 batch header as stored), answer:
//!                        0 Appended base_offset i64 last_offset i64
//!                        1 Duplicate base_offset i64 last_offset i64
//!                        2 Refused error_code i16
//!   2 DeleteRecords:   now_ms i64, topic_id [16], partition i32, log_start i64
//!   3 DeleteTopic:     now_ms i64, topic_id [16]
//!   4 ObjectsDeleted:  count u32, object [16] each
//!   5 Marker:          now_ms i64, topic_id [16], partition i32, offset i64, then the marker:
//!                      producer_id i64, producer_epoch i16, coordinator_epoch i32, commit u8
//!   6 ExpireProducers: now_ms i64, expiration_ms i64
//!   7 Compacted:       now_ms i64, topic_id [16], partition i32, object [16], size u64,
//!                      compactor i32, base_offset i64, last_offset i64, max_timestamp i64
//! ```
//!
//! A commit costs 46 bytes plus 89 per batch and its answer (17 bytes stored or duplicate, 3
//! refused).

use super::coordinator::{
    BatchAnswer, CommitBatches, CommittedBatch, CompactedRun, Decision, DisklessPartition,
    ObjectId, TxnMarker,
};
use frieda_log::{BatchHeader, BATCH_HEADER_LEN};
use kafka_protocol::error::ResponseError as E;
use uuid::Uuid;

/// The encoding's version.
pub const VERSION: u8 = 1;

/// The most batches one commit may hold when decoded (an 8 MiB object of 61-byte empty batches
/// would hold ~137,000; a commit of more is refused as corrupt rather than allocated).
pub const MAX_BATCHES_PER_COMMIT: u32 = 1 << 18;

/// Why a record does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Unknown version.
    #[error("decision encoding version {0} is not known")]
    Version(u8),
    /// The CRC does not match: the record is corrupt.
    #[error("decision record CRC mismatch")]
    Crc,
    /// Shorter than its fields, longer than them, or a field out of range.
    #[error("malformed decision record: {0}")]
    Malformed(&'static str),
}

/// Encodes `decision`.
pub fn encode(decision: &Decision) -> Vec<u8> {
    let mut body = Vec::with_capacity(64);
    match decision {
        Decision::CreatePartition(p) => {
            body.push(0);
            put_partition(&mut body, p);
        }
        Decision::Commit {
            now_ms,
            commit,
            answers,
        } => {
            body.push(1);
            body.extend_from_slice(&now_ms.to_be_bytes());
            put_commit_head(&mut body, commit);
            for (b, a) in commit.batches.iter().zip(answers) {
                put_batch(&mut body, b);
                put_answer(&mut body, a);
            }
        }
        Decision::DeleteRecords {
            now_ms,
            partition,
            log_start,
        } => {
            body.push(2);
            body.extend_from_slice(&now_ms.to_be_bytes());
            put_partition(&mut body, partition);
            body.extend_from_slice(&log_start.to_be_bytes());
        }
        Decision::DeleteTopic { now_ms, topic_id } => {
            body.push(3);
            body.extend_from_slice(&now_ms.to_be_bytes());
            body.extend_from_slice(topic_id.as_bytes());
        }
        Decision::Marker {
            now_ms,
            partition,
            marker,
            offset,
        } => {
            body.push(5);
            body.extend_from_slice(&now_ms.to_be_bytes());
            put_partition(&mut body, partition);
            body.extend_from_slice(&offset.to_be_bytes());
            put_marker(&mut body, marker);
        }
        Decision::ObjectsDeleted(ids) => {
            body.push(4);
            body.extend_from_slice(&(ids.len() as u32).to_be_bytes());
            for id in ids {
                body.extend_from_slice(id.0.as_bytes());
            }
        }
        Decision::ExpireProducers {
            now_ms,
            expiration_ms,
        } => {
            body.push(6);
            body.extend_from_slice(&now_ms.to_be_bytes());
            body.extend_from_slice(&expiration_ms.to_be_bytes());
        }
        Decision::Compacted { now_ms, run } => {
            body.push(7);
            body.extend_from_slice(&now_ms.to_be_bytes());
            put_partition(&mut body, &run.partition);
            body.extend_from_slice(run.object.0.as_bytes());
            body.extend_from_slice(&run.size.to_be_bytes());
            body.extend_from_slice(&run.compactor.to_be_bytes());
            body.extend_from_slice(&run.base_offset.to_be_bytes());
            body.extend_from_slice(&run.last_offset.to_be_bytes());
            body.extend_from_slice(&run.max_timestamp.to_be_bytes());
        }
    }
    let mut out = Vec::with_capacity(5 + body.len());
    out.push(VERSION);
    out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Decodes a record [`encode`] wrote.
///
/// Errors: [`DecodeError`]: an unknown version, a CRC mismatch, a record shorter or longer
/// than its fields, an unknown kind, answer or error code, or more than
/// [`MAX_BATCHES_PER_COMMIT`] batches.
pub fn decode(bytes: &[u8]) -> Result<Decision, DecodeError> {
    let mut r = Reader(bytes);
    let version = r.u8()?;
    if version != VERSION {
        return Err(DecodeError::Version(version));
    }
    let crc = r.u32()?;
    if crc32c::crc32c(r.0) != crc {
        return Err(DecodeError::Crc);
    }
    let decision = match r.u8()? {
        0 => Decision::CreatePartition(r.partition()?),
        1 => {
            let now_ms = r.i64()?;
            let (object, object_size, uploader, n) = r.commit_head()?;
            let mut batches = Vec::with_capacity(n as usize);
            let mut answers = Vec::with_capacity(n as usize);
            for _ in 0..n {
                batches.push(r.batch()?);
                answers.push(r.answer()?);
            }
            Decision::Commit {
                now_ms,
                commit: CommitBatches {
                    object,
                    object_size,
                    uploader,
                    batches,
                },
                answers,
            }
        }
        2 => Decision::DeleteRecords {
            now_ms: r.i64()?,
            partition: r.partition()?,
            log_start: r.i64()?,
        },
        3 => Decision::DeleteTopic {
            now_ms: r.i64()?,
            topic_id: r.uuid()?,
        },
        4 => {
            let n = r.u32()?;
            if u64::from(n) * 16 > r.0.len() as u64 {
                return Err(DecodeError::Malformed("object count past the end"));
            }
            let mut ids = Vec::with_capacity(n as usize);
            for _ in 0..n {
                ids.push(ObjectId(r.uuid()?));
            }
            Decision::ObjectsDeleted(ids)
        }
        5 => Decision::Marker {
            now_ms: r.i64()?,
            partition: r.partition()?,
            offset: r.i64()?,
            marker: r.marker()?,
        },
        6 => Decision::ExpireProducers {
            now_ms: r.i64()?,
            expiration_ms: r.i64()?,
        },
        7 => Decision::Compacted {
            now_ms: r.i64()?,
            run: CompactedRun {
                partition: r.partition()?,
                object: ObjectId(r.uuid()?),
                size: r.u64()?,
                compactor: r.i32()?,
                base_offset: r.i64()?,
                last_offset: r.i64()?,
                max_timestamp: r.i64()?,
            },
        },
        _ => return Err(DecodeError::Malformed("unknown kind")),
    };
    if !r.0.is_empty() {
        return Err(DecodeError::Malformed("bytes after the decision"));
    }
    Ok(decision)
}

/// Appends `p`: topic id [16], partition i32.
pub(super) fn put_partition(out: &mut Vec<u8>, p: &DisklessPartition) {
    out.extend_from_slice(p.topic_id.as_bytes());
    out.extend_from_slice(&p.partition.to_be_bytes());
}

/// Appends `m`: producer_id i64, producer_epoch i16, coordinator_epoch i32, commit u8 (0, 1).
pub(super) fn put_marker(out: &mut Vec<u8>, m: &TxnMarker) {
    out.extend_from_slice(&m.producer_id.to_be_bytes());
    out.extend_from_slice(&m.producer_epoch.to_be_bytes());
    out.extend_from_slice(&m.coordinator_epoch.to_be_bytes());
    out.push(u8::from(m.commit));
}

/// Appends the head of `commit`: object [16], object_size u64, uploader i32, batches u32.
pub(super) fn put_commit_head(out: &mut Vec<u8>, commit: &CommitBatches) {
    out.extend_from_slice(commit.object.0.as_bytes());
    out.extend_from_slice(&commit.object_size.to_be_bytes());
    out.extend_from_slice(&commit.uploader.to_be_bytes());
    out.extend_from_slice(&(commit.batches.len() as u32).to_be_bytes());
}

/// Appends `b`: partition, byte_offset u32, byte_len u32, header [61].
pub(super) fn put_batch(out: &mut Vec<u8>, b: &CommittedBatch) {
    put_partition(out, &b.partition);
    out.extend_from_slice(&b.byte_offset.to_be_bytes());
    out.extend_from_slice(&b.byte_len.to_be_bytes());
    out.extend_from_slice(&b.header.encode());
}

/// Appends `a`: kind u8, then 0 Appended / 1 Duplicate base_offset i64 last_offset i64, or
/// 2 Refused error_code i16.
pub(super) fn put_answer(out: &mut Vec<u8>, a: &BatchAnswer) {
    match a {
        BatchAnswer::Appended {
            base_offset,
            last_offset,
        } => {
            out.push(0);
            out.extend_from_slice(&base_offset.to_be_bytes());
            out.extend_from_slice(&last_offset.to_be_bytes());
        }
        BatchAnswer::Duplicate {
            base_offset,
            last_offset,
        } => {
            out.push(1);
            out.extend_from_slice(&base_offset.to_be_bytes());
            out.extend_from_slice(&last_offset.to_be_bytes());
        }
        BatchAnswer::Refused(e) => {
            out.push(2);
            out.extend_from_slice(&e.code().to_be_bytes());
        }
    }
}

/// Reads the fields of a big-endian encoding front to back; every read fails with
/// [`DecodeError::Malformed`] past the end.
pub(super) struct Reader<'a>(pub(super) &'a [u8]);

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.0.len() < n {
            return Err(DecodeError::Malformed("truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    pub(super) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    pub(super) fn i16(&mut self) -> Result<i16, DecodeError> {
        Ok(i16::from_be_bytes(self.array()?))
    }

    pub(super) fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    pub(super) fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub(super) fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    pub(super) fn uuid(&mut self) -> Result<Uuid, DecodeError> {
        Ok(Uuid::from_bytes(self.array()?))
    }

    pub(super) fn partition(&mut self) -> Result<DisklessPartition, DecodeError> {
        Ok(DisklessPartition {
            topic_id: self.uuid()?,
            partition: self.i32()?,
        })
    }

    /// What [`put_commit_head`] wrote: (object, object_size, uploader, batches).
    ///
    /// Errors: more than [`MAX_BATCHES_PER_COMMIT`] batches.
    pub(super) fn commit_head(&mut self) -> Result<(ObjectId, u64, i32, u32), DecodeError> {
        let head = (
            ObjectId(self.uuid()?),
            self.u64()?,
            self.i32()?,
            self.u32()?,
        );
        if head.3 > MAX_BATCHES_PER_COMMIT {
            return Err(DecodeError::Malformed("too many batches"));
        }
        Ok(head)
    }

    /// What [`put_marker`] wrote.
    pub(super) fn marker(&mut self) -> Result<TxnMarker, DecodeError> {
        Ok(TxnMarker {
            producer_id: self.i64()?,
            producer_epoch: self.i16()?,
            coordinator_epoch: self.i32()?,
            commit: match self.u8()? {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::Malformed("marker result")),
            },
        })
    }

    /// What [`put_batch`] wrote.
    pub(super) fn batch(&mut self) -> Result<CommittedBatch, DecodeError> {
        Ok(CommittedBatch {
            partition: self.partition()?,
            byte_offset: self.u32()?,
            byte_len: self.u32()?,
            header: BatchHeader::parse(self.take(BATCH_HEADER_LEN)?)
                .map_err(|_| DecodeError::Malformed("batch header"))?,
            // not in a decision (its answer is decided); the Commit call adds it (wire.rs)
            verification: None,
        })
    }

    /// What [`put_answer`] wrote.
    pub(super) fn answer(&mut self) -> Result<BatchAnswer, DecodeError> {
        Ok(match self.u8()? {
            0 => BatchAnswer::Appended {
                base_offset: self.i64()?,
                last_offset: self.i64()?,
            },
            1 => BatchAnswer::Duplicate {
                base_offset: self.i64()?,
                last_offset: self.i64()?,
            },
            2 => BatchAnswer::Refused(self.error()?),
            _ => return Err(DecodeError::Malformed("unknown answer")),
        })
    }

    /// A Kafka error code (i16) that names an error (not NONE).
    pub(super) fn error(&mut self) -> Result<E, DecodeError> {
        E::try_from_code(self.i16()?).ok_or(DecodeError::Malformed("unknown error code"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diskless::coordinator::BatchCoordinator;

    fn header(seq: i32) -> BatchHeader {
        BatchHeader {
            base_offset: 0,
            batch_length: 88,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0xdead_beef,
            attributes: 0x08,
            last_offset_delta: 2,
            base_timestamp: 1_700_000_000_000,
            max_timestamp: 1_700_000_000_009,
            producer_id: 42,
            producer_epoch: 3,
            base_sequence: seq,
            records_count: 3,
        }
    }

    fn decisions() -> Vec<Decision> {
        let p = DisklessPartition {
            topic_id: Uuid::from_u128(7),
            partition: 3,
        };
        let batch = |seq, at| CommittedBatch {
            partition: p,
            byte_offset: at,
            byte_len: 149,
            header: header(seq),
            verification: None,
        };
        vec![
            Decision::CreatePartition(p),
            Decision::Commit {
                now_ms: 5,
                commit: CommitBatches {
                    object: ObjectId(Uuid::from_u128(99)),
                    object_size: 447,
                    uploader: 2,
                    batches: vec![batch(0, 0), batch(0, 149), batch(9, 298)],
                },
                answers: vec![
                    BatchAnswer::Appended {
                        base_offset: 0,
                        last_offset: 2,
                    },
                    BatchAnswer::Duplicate {
                        base_offset: 0,
                        last_offset: 2,
                    },
                    BatchAnswer::Refused(E::OutOfOrderSequenceNumber),
                ],
            },
            Decision::Marker {
                now_ms: 6,
                partition: p,
                marker: TxnMarker {
                    producer_id: 42,
                    producer_epoch: 4,
                    coordinator_epoch: 9,
                    commit: false,
                },
                offset: 3,
            },
            Decision::DeleteRecords {
                now_ms: 6,
                partition: p,
                log_start: 2,
            },
            Decision::DeleteTopic {
                now_ms: 7,
                topic_id: p.topic_id,
            },
            Decision::ObjectsDeleted(vec![ObjectId(Uuid::from_u128(99)), ObjectId(Uuid::nil())]),
            Decision::ObjectsDeleted(vec![]),
            Decision::ExpireProducers {
                now_ms: 8,
                expiration_ms: 86_400_000,
            },
            Decision::Compacted {
                now_ms: 9,
                run: CompactedRun {
                    partition: p,
                    object: ObjectId(Uuid::from_u128(100)),
                    size: 10_000,
                    compactor: 1,
                    base_offset: 0,
                    last_offset: 3,
                    max_timestamp: 1_700_000_000_009,
                },
            },
        ]
    }

    #[test]
    fn every_decision_reads_back_as_written() {
        for d in decisions() {
            let bytes = encode(&d);
            assert_eq!(decode(&bytes), Ok(d.clone()), "{d:?}");
            if let Decision::Commit { commit, .. } = &d {
                assert_eq!(bytes.len(), 46 + 89 * commit.batches.len() + 17 + 17 + 3);
            }
        }
    }

    #[test]
    fn a_replica_fed_the_encoded_records_reaches_the_leaders_state() {
        let p = DisklessPartition {
            topic_id: Uuid::from_u128(7),
            partition: 0,
        };
        let mut leader = BatchCoordinator::new(16);
        let mut log = vec![encode(&leader.create_partition(p))];
        for n in 0..10u32 {
            let commit = CommitBatches {
                object: ObjectId(Uuid::from_u128(u128::from(n) + 1)),
                object_size: 1_000,
                uploader: 1,
                // each object: the next batch, and the previous one again (a retry)
                batches: [3 * n as i32, 3 * (n as i32 - 1).max(0)]
                    .iter()
                    .enumerate()
                    .map(|(i, seq)| CommittedBatch {
                        partition: p,
                        byte_offset: 149 * i as u32,
                        byte_len: 149,
                        header: header(*seq),
                        verification: None,
                    })
                    .collect(),
            };
            let (_, d) = leader.commit(i64::from(n), &commit).unwrap();
            log.push(encode(&d.unwrap()));
        }
        // the first three coordinates (offsets 0..=8) compacted into one object
        let compacted = ObjectId::v7(1_000, 7);
        let now = compacted.created_ms();
        log.push(encode(
            &leader
                .compacted(
                    now,
                    CompactedRun {
                        partition: p,
                        object: compacted,
                        size: 447,
                        compactor: 1,
                        base_offset: 0,
                        last_offset: 8,
                        max_timestamp: 1_700_000_000_009,
                    },
                )
                .unwrap(),
        ));
        assert_eq!(leader.compacted_coordinates(p), Some((1, 8)));
        log.push(encode(&leader.delete_records(20, p, 9).unwrap().1));
        let deletable: Vec<ObjectId> = leader.deletable(100, 0).into_iter().map(|d| d.0).collect();
        assert!(!deletable.is_empty());
        log.push(encode(&leader.objects_deleted(&deletable).1));
        let mut replica = BatchCoordinator::new(16);
        for record in &log {
            replica.apply(&decode(record).unwrap());
        }
        assert_eq!(replica.state_digest(), leader.state_digest());
        assert_eq!(replica.high_watermark(p), Some(30));
    }

    #[test]
    fn damaged_records_are_refused_not_applied() {
        for d in decisions() {
            let bytes = encode(&d);
            for cut in 0..bytes.len() {
                assert!(decode(&bytes[..cut]).is_err(), "{d:?} cut at {cut}");
            }
            for at in 0..bytes.len() {
                let mut bad = bytes.clone();
                bad[at] ^= 0x40;
                assert!(decode(&bad).is_err(), "{d:?} flipped at {at}");
            }
            let mut long = bytes.clone();
            long.push(0);
            assert!(decode(&long).is_err());
        }
        // a well-formed record with a count past its end: refused without allocating it
        let mut body = vec![4u8];
        body.extend_from_slice(&u32::MAX.to_be_bytes());
        let mut bytes = vec![VERSION];
        bytes.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
        bytes.extend_from_slice(&body);
        assert_eq!(
            decode(&bytes),
            Err(DecodeError::Malformed("object count past the end"))
        );
    }
}
