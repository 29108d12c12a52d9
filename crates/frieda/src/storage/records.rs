//! Record batches the coordinators write to their internal logs (`__consumer_offsets`,
//! `__transaction_state`, `__diskless_coordinator`): uncompressed v2 batches of key/value
//! records, encoded with `kafka-protocol` ([`encode_batch`]); and the replay of such a log at a
//! coordinator's load ([`replay`]).

use bytes::{Bytes, BytesMut};
use frieda_log::BatchHeader;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::partition::Partition;

/// The producer of a transactional coordinator write (TxnOffsetCommit): its id and epoch;
/// the batch is marked transactional and carries no sequence (Kafka's coordinator appends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnProducer {
    /// Producer id.
    pub id: i64,
    /// Producer epoch.
    pub epoch: i16,
}

/// One batch of `records` (key, value or tombstone) stamped `now` (ms), from `producer` if
/// transactional; returns the bytes and their parsed header.
pub fn encode_batch(
    records: &[(Bytes, Option<Bytes>)],
    now: i64,
    producer: Option<TxnProducer>,
) -> (BytesMut, BatchHeader) {
    let recs: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Record {
            transactional: producer.is_some(),
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: producer.map_or(-1, |p| p.id),
            producer_epoch: producer.map_or(-1, |p| p.epoch),
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: -1,
            timestamp: now,
            key: Some(k.clone()),
            value: v.clone(),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::with_capacity(64 + records.len() * 64);
    RecordBatchEncoder::encode(
        &mut buf,
        recs.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .expect("encoding an uncompressed v2 batch cannot fail");
    let header = BatchHeader::parse(&buf).expect("a batch we just encoded parses");
    (buf, header)
}

/// Replays every record of `log` from its log start to its log end offset then, in offset
/// order, through `each`; returns that log end offset. `what` names the log in errors.
///
/// Errors: the log cannot be read, a batch does not decode, or `each` fails (the replay stops).
pub fn replay(
    log: &Partition,
    what: &str,
    mut each: impl FnMut(Record) -> anyhow::Result<()>,
) -> anyhow::Result<i64> {
    let reader = log.reader().clone();
    let mut offset = reader.log_start_offset();
    let end = reader.log_end_offset();
    while offset < end {
        let data = reader.read(offset, 8 << 20, end)?;
        if data.chunks.is_empty() || data.next_offset <= offset {
            break;
        }
        for chunk in &data.chunks {
            let mut buf = chunk.clone();
            let sets = RecordBatchDecoder::decode_all(&mut buf)
                .map_err(|e| anyhow::anyhow!("decoding {what} at {offset}: {e}"))?;
            for record in sets.into_iter().flat_map(|set| set.records) {
                each(record)?;
            }
        }
        offset = data.next_offset;
    }
    Ok(end)
}
