use super::*;
use crate::diskless::coordinator::{
    BatchCoordinator, CommitBatches, CommittedBatch, DEFAULT_MAX_BATCHES_PER_PARTITION,
};
use crate::diskless::testing::{header, object, part};
use frieda_log::{build_batch, encode_record, parse_records, validate_batches, Codec, RecordRef};
use std::collections::HashMap;

/// A real v2 batch of `values` (producer `pid` at `seq`), base offset 0 as a client sends it.
fn batch(values: &[&str], pid: i64, seq: i32) -> Vec<u8> {
    let mut records = Vec::new();
    for (i, v) in values.iter().enumerate() {
        encode_record(
            &mut records,
            &RecordRef {
                attributes: 0,
                timestamp_delta: 0,
                offset_delta: i as i32,
                key: None,
                value: Some(v.as_bytes()),
                headers: &[0],
            },
        );
    }
    build_batch(
        &header(values.len() as i32, pid, 0, seq),
        Codec::None,
        &records,
    )
}

/// Two objects committed to a coordinator: object 1 holds a 2-record and a 1-record batch,
/// object 2 a 3-record batch; returns the coordinator and the bucket.
fn setup() -> (BatchCoordinator, HashMap<ObjectId, Bytes>) {
    let mut c = BatchCoordinator::new(DEFAULT_MAX_BATCHES_PER_PARTITION);
    c.create_partition(part(0));
    let mut bucket = HashMap::new();
    let objects = [
        (
            1u128,
            vec![batch(&["a0", "a1"], 7, 0), batch(&["b0"], 7, 2)],
        ),
        (2, vec![batch(&["c0", "c1", "c2"], 7, 3)]),
    ];
    for (id, batches) in objects {
        let mut body = Vec::new();
        let mut committed = Vec::new();
        for b in &batches {
            committed.push(CommittedBatch {
                partition: part(0),
                byte_offset: body.len() as u32,
                byte_len: b.len() as u32,
                header: BatchHeader::parse(b).unwrap(),
                verification: None,
            });
            body.extend_from_slice(b);
        }
        let commit = CommitBatches {
            object: object(id),
            object_size: body.len() as u64,
            uploader: 1,
            batches: committed,
        };
        c.commit(0, &commit).unwrap();
        bucket.insert(object(id), Bytes::from(body));
    }
    (c, bucket)
}

fn reader(
    bucket: &HashMap<ObjectId, Bytes>,
) -> impl FnMut(ObjectId, u32, u32) -> Option<Bytes> + '_ {
    |o, at, len| {
        bucket
            .get(&o)
            .and_then(|b| b.get(at as usize..(at + len) as usize))
            .map(Bytes::copy_from_slice)
    }
}

fn values(records: &[u8]) -> Vec<(i64, String)> {
    let headers = validate_batches(records, usize::MAX).expect("valid batches, CRCs hold");
    let mut out = Vec::new();
    let mut pos = 0;
    for h in headers {
        let b = &records[pos..pos + h.total_size()];
        let section = frieda_log::records_section(b, &h).unwrap();
        for r in parse_records(&section, h.records_count).unwrap() {
            out.push((
                h.base_offset + i64::from(r.offset_delta),
                String::from_utf8(r.value.unwrap().to_vec()).unwrap(),
            ));
        }
        assert_eq!(h.partition_leader_epoch, 4);
        pos += h.total_size();
    }
    out
}

#[test]
fn batches_come_back_at_their_offsets_with_valid_crcs() {
    let (c, bucket) = setup();
    let found = c.find_batches(part(0), 0, u64::MAX).unwrap();
    let r = assemble(&found, 0, i64::MAX, usize::MAX, 4, reader(&bucket)).unwrap();
    assert_eq!(r.next_offset, 6);
    assert_eq!(
        values(&r.bytes),
        vec![
            (0, "a0".into()),
            (1, "a1".into()),
            (2, "b0".into()),
            (3, "c0".into()),
            (4, "c1".into()),
            (5, "c2".into()),
        ]
    );
}

#[test]
fn a_fetch_inside_a_batch_gets_the_whole_batch_and_max_bytes_keeps_at_least_one() {
    let (c, bucket) = setup();
    let found = c.find_batches(part(0), 4, u64::MAX).unwrap();
    let r = assemble(&found, 4, i64::MAX, 1, 4, reader(&bucket)).unwrap();
    assert_eq!(r.next_offset, 6);
    assert_eq!(
        values(&r.bytes)[0],
        (3, "c0".into()),
        "the batch holding 4, whole"
    );
    let found = c.find_batches(part(0), 0, u64::MAX).unwrap();
    let r = assemble(&found, 0, i64::MAX, 1, 4, reader(&bucket)).unwrap();
    assert_eq!(
        r.next_offset, 2,
        "one batch over the byte limit still comes"
    );
}

#[test]
fn a_missing_object_or_a_mismatched_coordinate_is_an_error_not_records() {
    let (c, mut bucket) = setup();
    let mut found = c.find_batches(part(0), 0, u64::MAX).unwrap();
    found.coordinates[1].last_offset += 1;
    assert!(matches!(
        assemble(&found, 0, i64::MAX, usize::MAX, 4, reader(&bucket)),
        Err(ReadError::Corrupt { .. })
    ));
    let found = c.find_batches(part(0), 0, u64::MAX).unwrap();
    bucket.remove(&object(2));
    assert_eq!(
        assemble(&found, 0, i64::MAX, usize::MAX, 4, reader(&bucket)),
        Err(ReadError::Missing(object(2)))
    );
    bucket.insert(object(2), Bytes::from_static(b"short"));
    assert_eq!(
        assemble(&found, 0, i64::MAX, usize::MAX, 4, reader(&bucket)),
        Err(ReadError::Missing(object(2))),
        "a range beyond the object's end"
    );
}

#[test]
fn a_marker_is_built_as_a_control_batch_and_reads_stop_at_the_end_given() {
    use crate::diskless::coordinator::TxnMarker;
    use frieda_log::{read_control_record, ControlRecord, ControlType};
    let (mut c, bucket) = setup();
    let m = TxnMarker {
        producer_id: 7,
        producer_epoch: 0,
        coordinator_epoch: 5,
        commit: false,
    };
    let (at, _) = c.marker(1_234, part(0), m, false).unwrap();
    assert_eq!(at, 6);
    let found = c.find_batches(part(0), 0, u64::MAX).unwrap();
    let r = assemble(&found, 0, i64::MAX, usize::MAX, 4, reader(&bucket)).unwrap();
    assert_eq!(r.next_offset, 7);
    let headers = validate_batches(&r.bytes, usize::MAX).expect("valid batches, CRCs hold");
    assert_eq!(headers.len(), 4);
    let h = headers[3];
    assert!(h.is_control());
    assert_eq!(
        (
            h.base_offset,
            h.producer_id,
            h.producer_epoch,
            h.max_timestamp
        ),
        (6, 7, 0, 1_234)
    );
    assert_eq!(h.partition_leader_epoch, 4);
    let start = r.bytes.len() - h.total_size();
    match read_control_record(&r.bytes[start..], &h).unwrap() {
        ControlRecord::Marker(marker) => {
            assert_eq!(marker.control, ControlType::Abort);
            assert_eq!(marker.coordinator_epoch, 5);
        }
        other => panic!("{other:?}"),
    }
    // the same bytes at every read (the CRC the client checks does not change)
    let again = assemble(&found, 6, i64::MAX, usize::MAX, 4, reader(&bucket)).unwrap();
    assert_eq!(&again.bytes[..], &r.bytes[start..]);
    // a read_committed reader with the last stable offset at 3 gets the batches below it only
    let r = assemble(&found, 0, 3, usize::MAX, 4, reader(&bucket)).unwrap();
    assert_eq!(r.next_offset, 3);
    assert_eq!(values(&r.bytes).len(), 3);
    let r = assemble(&found, 3, 3, usize::MAX, 4, reader(&bucket)).unwrap();
    assert!(r.bytes.is_empty());
    assert_eq!(r.next_offset, 3);
}

/// Compaction's object: the run's batches as a reader gets them (offsets patched in, markers
/// built), written one after another; read back through its one coordinate exactly as before.
#[test]
fn a_compacted_run_reads_back_batch_by_batch_as_the_batches_it_replaced() {
    use crate::diskless::coordinator::{CompactionPolicy, TxnMarker};
    let (mut c, mut bucket) = setup();
    let m = TxnMarker {
        producer_id: 7,
        producer_epoch: 0,
        coordinator_epoch: 5,
        commit: true,
    };
    c.marker(1_234, part(0), m, false).unwrap();
    let before = c.find_batches(part(0), 0, u64::MAX).unwrap();
    let whole = assemble(&before, 0, i64::MAX, usize::MAX, 4, reader(&bucket)).unwrap();
    let policy = CompactionPolicy {
        max_bytes: 1 << 20,
        max_age_ms: 0,
    };
    let plan = c
        .compaction_plan(part(0), 10, 7, &policy)
        .expect("due by age");
    assert_eq!((plan.base_offset(), plan.last_offset()), (0, 6));
    let body = assemble_run(&plan, reader(&bucket)).unwrap();
    let id = ObjectId::v7(10, 99);
    c.compacted(10, plan.compacted(id, body.len() as u64, 1))
        .unwrap();
    bucket.insert(id, Bytes::from(body));
    assert_eq!(c.compacted_coordinates(part(0)), Some((1, 1)));
    assert!(
        c.compaction_plan(part(0), 10, 7, &policy).is_none(),
        "nothing left to compact"
    );
    assert_eq!(
        c.deletable(10, 0).len(),
        2,
        "both shared objects unreferenced"
    );
    let after = c.find_batches(part(0), 0, u64::MAX).unwrap();
    assert_eq!(after.coordinates.len(), 1);
    let r = assemble(&after, 0, i64::MAX, usize::MAX, 4, reader(&bucket)).unwrap();
    assert_eq!(r, whole, "the same bytes, CRCs and all");
    // a fetch inside the run starts at the batch holding its offset
    let found = c.find_batches(part(0), 4, u64::MAX).unwrap();
    let r = assemble(&found, 4, i64::MAX, usize::MAX, 4, reader(&bucket)).unwrap();
    assert_eq!(r.next_offset, 7);
    assert_eq!(values(&r.bytes)[0], (3, "c0".into()));
    // max bytes: one batch at least, then whole batches within the limit
    let r = assemble(&found, 0, i64::MAX, 1, 4, reader(&bucket)).unwrap();
    assert_eq!(r.next_offset, 2);
    // a read_committed reader's end inside the run
    let r = assemble(&found, 0, 3, usize::MAX, 4, reader(&bucket)).unwrap();
    assert_eq!(r.next_offset, 3);
    assert_eq!(values(&r.bytes).len(), 3);
    // damaged: a coordinate claiming one offset more than its batches hold
    let mut bad = after.clone();
    bad.coordinates[0].last_offset += 1;
    assert!(matches!(
        assemble(&bad, 0, i64::MAX, usize::MAX, 4, reader(&bucket)),
        Err(ReadError::Corrupt { .. })
    ));
}
