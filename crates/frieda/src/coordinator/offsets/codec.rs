//! Records of the offsets log, in the format of Kafka's `__consumer_offsets` topic so Kafka's
//! own formatters can read them: keys and values are big-endian, strings are `i16` length +
//! UTF-8, nullable strings use length -1.
//!
//! - Offset commit: key v1 `(group, topic, partition)`, value v3
//!   `(offset, leader_epoch, metadata, commit_timestamp)`.
//! - Group metadata: key v2 `(group)`, value v3 `(protocol_type, generation, protocol, leader,
//!   current_state_timestamp, members)`; Frieda writes no members (they re-join after a restart).
//! - Share-partition state (KIP-932): key v`SHARE_STATE_KEY_VERSION` `(group, topic id,
//!   partition)`, value v0 `(state_epoch, leader_epoch, start_offset, [first, last, state,
//!   delivery_count])`. Frieda's own record: Kafka keeps this state in `__share_group_state`
//!   (`ShareSnapshotValue`), Frieda next to the share group's offsets, with its coordinator; Kafka's
//!   formatters skip the key version they do not know.
//! - A null value is a tombstone: the key was deleted.

use bytes::{BufMut, Bytes, BytesMut};

/// Key of an offsets-log record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogKey {
    /// A committed offset.
    Offset {
        /// Group id.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition index.
        partition: i32,
    },
    /// A group's metadata.
    Group {
        /// Group id.
        group: String,
    },
    /// A share group's state of one partition (KIP-932).
    ShareState {
        /// Group id.
        group: String,
        /// Topic id.
        topic_id: uuid::Uuid,
        /// Partition index.
        partition: i32,
    },
}

/// The key version of share-partition state records (Frieda's own, well above Kafka's).
pub const SHARE_STATE_KEY_VERSION: i16 = 1000;

/// A share-partition's durable state as stored (`WriteShareGroupState`'s fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareStateValue {
    /// State epoch: bumped when the offsets are altered, fencing writes of the older epoch.
    pub state_epoch: i32,
    /// The leader epoch of the partition leader that wrote it (older leaders are fenced).
    pub leader_epoch: i32,
    /// The share-partition start offset.
    pub start_offset: i64,
    /// In-flight runs `(first, last, state, delivery count)` (Kafka's `RecordState` ids).
    pub batches: Vec<(i64, i64, i8, i16)>,
}

/// A committed offset as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetValue {
    /// Next offset to consume.
    pub offset: i64,
    /// Leader epoch of the last consumed record, -1 if unknown.
    pub leader_epoch: i32,
    /// Client metadata string.
    pub metadata: String,
    /// When it was committed, ms since the epoch.
    pub commit_timestamp: i64,
}

/// A group's metadata as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupValue {
    /// Protocol type (`consumer`, `connect`, ...); empty for offsets-only groups.
    pub protocol_type: String,
    /// Generation of the group when written.
    pub generation: i32,
    /// Selected protocol (assignor) of that generation.
    pub protocol: Option<String>,
    /// Leader member id of that generation.
    pub leader: Option<String>,
    /// When the group entered its state, ms since the epoch.
    pub state_timestamp: i64,
    /// The members of a Stable group with their assignments, so a new coordinator (after a
    /// failover) knows them and their commits and heartbeats carry on; empty otherwise.
    pub members: Vec<MemberValue>,
}

/// One member as Kafka's `GroupMetadataValue` stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberValue {
    /// Member id.
    pub member_id: String,
    /// `group.instance.id` (v3+).
    pub instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Rebalance timeout, ms (v1+).
    pub rebalance_timeout_ms: i32,
    /// Session timeout, ms.
    pub session_timeout_ms: i32,
    /// Its metadata for the group's selected protocol (the subscription).
    pub subscription: Bytes,
    /// Its assignment.
    pub assignment: Bytes,
}

fn put_str(b: &mut BytesMut, s: &str) {
    let s = &s.as_bytes()[..s.len().min(i16::MAX as usize)];
    b.put_i16(s.len() as i16);
    b.put_slice(s);
}

fn put_nullable(b: &mut BytesMut, s: Option<&str>) {
    match s {
        Some(s) => put_str(b, s),
        None => b.put_i16(-1),
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }
    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }
    fn nullable(&mut self) -> Option<Option<String>> {
        let n = self.i16()?;
        if n < 0 {
            return Some(None);
        }
        let s = self.take(n as usize)?;
        Some(Some(String::from_utf8_lossy(s).into_owned()))
    }
    fn string(&mut self) -> Option<String> {
        self.nullable().map(Option::unwrap_or_default)
    }
    fn bytes(&mut self) -> Option<Bytes> {
        let n = self.i32()?;
        if n < 0 {
            return Some(Bytes::new());
        }
        Some(Bytes::copy_from_slice(self.take(n as usize)?))
    }
}

/// Encodes a key.
pub fn encode_key(key: &LogKey) -> Bytes {
    let mut b = BytesMut::with_capacity(64);
    match key {
        LogKey::Offset {
            group,
            topic,
            partition,
        } => {
            b.put_i16(1);
            put_str(&mut b, group);
            put_str(&mut b, topic);
            b.put_i32(*partition);
        }
        LogKey::Group { group } => {
            b.put_i16(2);
            put_str(&mut b, group);
        }
        LogKey::ShareState {
            group,
            topic_id,
            partition,
        } => {
            b.put_i16(SHARE_STATE_KEY_VERSION);
            put_str(&mut b, group);
            b.put_slice(topic_id.as_bytes());
            b.put_i32(*partition);
        }
    }
    b.freeze()
}

/// Encodes a share-partition state (value v0).
pub fn encode_share_state(v: &ShareStateValue) -> Bytes {
    let mut b = BytesMut::with_capacity(24 + 19 * v.batches.len());
    b.put_i16(0);
    b.put_i32(v.state_epoch);
    b.put_i32(v.leader_epoch);
    b.put_i64(v.start_offset);
    b.put_i32(v.batches.len() as i32);
    for (first, last, state, count) in &v.batches {
        b.put_i64(*first);
        b.put_i64(*last);
        b.put_i8(*state);
        b.put_i16(*count);
    }
    b.freeze()
}

/// Decodes a share-partition state; `None` for an unknown version or malformed bytes.
pub fn decode_share_state(bytes: &[u8]) -> Option<ShareStateValue> {
    let mut r = Reader(bytes);
    if r.i16()? != 0 {
        return None;
    }
    let (state_epoch, leader_epoch, start_offset) = (r.i32()?, r.i32()?, r.i64()?);
    let n = r.i32()?;
    if n < 0 || n as usize > bytes.len() / 19 {
        return None;
    }
    let mut batches = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let (first, last) = (r.i64()?, r.i64()?);
        let state = r.take(1)?[0] as i8;
        batches.push((first, last, state, r.i16()?));
    }
    Some(ShareStateValue {
        state_epoch,
        leader_epoch,
        start_offset,
        batches,
    })
}

/// Decodes a key; `None` for an unknown version or malformed bytes.
pub fn decode_key(bytes: &[u8]) -> Option<LogKey> {
    let mut r = Reader(bytes);
    match r.i16()? {
        0 | 1 => Some(LogKey::Offset {
            group: r.string()?,
            topic: r.string()?,
            partition: r.i32()?,
        }),
        2 => Some(LogKey::Group { group: r.string()? }),
        SHARE_STATE_KEY_VERSION => Some(LogKey::ShareState {
            group: r.string()?,
            topic_id: uuid::Uuid::from_slice(r.take(16)?).ok()?,
            partition: r.i32()?,
        }),
        _ => None,
    }
}

/// Encodes a committed offset (value v3).
pub fn encode_offset(v: &OffsetValue) -> Bytes {
    let mut b = BytesMut::with_capacity(32 + v.metadata.len());
    b.put_i16(3);
    b.put_i64(v.offset);
    b.put_i32(v.leader_epoch);
    put_str(&mut b, &v.metadata);
    b.put_i64(v.commit_timestamp);
    b.freeze()
}

/// Decodes a committed offset of any of Kafka's value versions (0-4).
pub fn decode_offset(bytes: &[u8]) -> Option<OffsetValue> {
    let mut r = Reader(bytes);
    let version = r.i16()?;
    let offset = r.i64()?;
    let leader_epoch = if version >= 3 { r.i32()? } else { -1 };
    let metadata = r.string()?;
    let commit_timestamp = r.i64()?;
    Some(OffsetValue {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp,
    })
}

/// Encodes group metadata (value v3, no members).
pub fn encode_group(v: &GroupValue) -> Bytes {
    let mut b = BytesMut::with_capacity(64);
    b.put_i16(3);
    put_str(&mut b, &v.protocol_type);
    b.put_i32(v.generation);
    put_nullable(&mut b, v.protocol.as_deref());
    put_nullable(&mut b, v.leader.as_deref());
    b.put_i64(v.state_timestamp);
    b.put_i32(v.members.len() as i32);
    for m in &v.members {
        put_str(&mut b, &m.member_id);
        put_nullable(&mut b, m.instance_id.as_deref());
        put_str(&mut b, &m.client_id);
        put_str(&mut b, &m.client_host);
        b.put_i32(m.rebalance_timeout_ms);
        b.put_i32(m.session_timeout_ms);
        b.put_i32(m.subscription.len() as i32);
        b.put_slice(&m.subscription);
        b.put_i32(m.assignment.len() as i32);
        b.put_slice(&m.assignment);
    }
    b.freeze()
}

/// Decodes group metadata (value v0-v4; the members of v0-v3, v4's flexible encoding keeps
/// none).
pub fn decode_group(bytes: &[u8]) -> Option<GroupValue> {
    let mut r = Reader(bytes);
    let version = r.i16()?;
    let protocol_type = r.string()?;
    let generation = r.i32()?;
    let protocol = r.nullable()?;
    let leader = r.nullable()?;
    let state_timestamp = if version >= 2 { r.i64()? } else { -1 };
    let mut members = Vec::new();
    if version <= 3 {
        let n = r.i32()?;
        // Bounded by the bytes left: a damaged count cannot make us reserve memory for it.
        for _ in 0..n.max(0) {
            let member_id = r.string()?;
            let instance_id = if version >= 3 { r.nullable()? } else { None };
            let client_id = r.string()?;
            let client_host = r.string()?;
            let session_timeout_ms;
            let rebalance_timeout_ms;
            if version >= 1 {
                rebalance_timeout_ms = r.i32()?;
                session_timeout_ms = r.i32()?;
            } else {
                session_timeout_ms = r.i32()?;
                rebalance_timeout_ms = session_timeout_ms;
            }
            let subscription = r.bytes()?;
            let assignment = r.bytes()?;
            members.push(MemberValue {
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                subscription,
                assignment,
            });
        }
    }
    Some(GroupValue {
        protocol_type,
        generation,
        protocol,
        leader,
        state_timestamp,
        members,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let k = LogKey::Offset {
            group: "g".into(),
            topic: "t".into(),
            partition: 7,
        };
        assert_eq!(decode_key(&encode_key(&k)), Some(k));
        let k = LogKey::Group { group: "gg".into() };
        assert_eq!(decode_key(&encode_key(&k)), Some(k));
        let v = OffsetValue {
            offset: 42,
            leader_epoch: 3,
            metadata: "m".into(),
            commit_timestamp: 99,
        };
        assert_eq!(decode_offset(&encode_offset(&v)), Some(v));
        let g = GroupValue {
            protocol_type: "consumer".into(),
            generation: 5,
            protocol: Some("range".into()),
            leader: None,
            state_timestamp: 1234,
            members: vec![],
        };
        assert_eq!(decode_group(&encode_group(&g)), Some(g));
        let g = GroupValue {
            protocol_type: "consumer".into(),
            generation: 6,
            protocol: Some("range".into()),
            leader: Some("m-1".into()),
            state_timestamp: 1235,
            members: vec![
                MemberValue {
                    member_id: "m-1".into(),
                    instance_id: None,
                    client_id: "c1".into(),
                    client_host: "/127.0.0.1".into(),
                    rebalance_timeout_ms: 300_000,
                    session_timeout_ms: 45_000,
                    subscription: Bytes::from_static(b"sub"),
                    assignment: Bytes::from_static(b"asg"),
                },
                MemberValue {
                    member_id: "m-2".into(),
                    instance_id: Some("i-2".into()),
                    client_id: "c2".into(),
                    client_host: "/127.0.0.2".into(),
                    rebalance_timeout_ms: 1,
                    session_timeout_ms: 2,
                    subscription: Bytes::new(),
                    assignment: Bytes::new(),
                },
            ],
        };
        assert_eq!(decode_group(&encode_group(&g)), Some(g));
        // A member count larger than the bytes there: refused, not allocated.
        let mut bad = encode_group(&GroupValue {
            members: vec![],
            ..decode_group(&encode_group(&GroupValue {
                protocol_type: String::new(),
                generation: 0,
                protocol: None,
                leader: None,
                state_timestamp: 0,
                members: vec![],
            }))
            .unwrap()
        })
        .to_vec();
        let n = bad.len();
        bad[n - 4..].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(decode_group(&bad), None);
    }

    #[test]
    fn kafka_layout_and_garbage() {
        // Offset key v1 as Kafka writes it: version, group, topic, partition.
        let k = encode_key(&LogKey::Offset {
            group: "ab".into(),
            topic: "c".into(),
            partition: 1,
        });
        assert_eq!(&k[..], &[0, 1, 0, 2, b'a', b'b', 0, 1, b'c', 0, 0, 0, 1]);
        assert_eq!(decode_key(&[0, 9, 0, 0]), None);
        assert_eq!(decode_key(&[0, 1, 0, 5, b'a']), None);
        assert_eq!(decode_offset(&[0, 3, 1]), None);
    }
}
