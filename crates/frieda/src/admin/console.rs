//! `frieda admin produce` and `frieda admin consume`: lines in and out of a topic, as
//! `kafka-console-producer.sh` and `kafka-console-consumer.sh` move them. Batches are built and
//! read with the broker's own record batch code (`frieda-log`; protocol guide "Record Batch").

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use frieda_log::BATCH_HEADER_LEN;
use frieda_log::{build_batch, parse_records, records_section, BatchHeader, Codec, RecordRef};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{BrokerId, FetchRequest, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::client::{error_text, Admin, Node};
use super::partitions::{self, TopicPartition, EARLIEST, LATEST};

/// One record to produce: (key, value).
type Line = (Option<Vec<u8>>, Vec<u8>);

/// Lines read from stdin per round of Produce requests (bounds memory for any input size).
const LINES_PER_ROUND: usize = 1000;
/// Attempts for a round whose leader moved (NOT_LEADER_OR_FOLLOWER and the like).
const PRODUCE_ATTEMPTS: usize = 5;
/// Bytes asked per partition per Fetch (`max.partition.fetch.bytes`' default).
const PARTITION_FETCH_BYTES: i32 = 1 << 20;
/// Broker-side wait of a Fetch with nothing new (`fetch.max.wait.ms`' default), ms.
const FETCH_WAIT_MS: i32 = 500;

/// Kafka's `Utils.murmur2` (seed 0x9747b28c), the hash its default partitioner places keyed
/// records with, so keys land on the partitions Java clients choose.
pub fn murmur2(data: &[u8]) -> i32 {
    const M: u32 = 0x5bd1_e995;
    let mut h: u32 = 0x9747_b28c ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        if rest.len() == 3 {
            h ^= u32::from(rest[2]) << 16;
        }
        if rest.len() >= 2 {
            h ^= u32::from(rest[1]) << 8;
        }
        h ^= u32::from(rest[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition Kafka's default partitioner gives `key` among `partitions`.
pub fn key_partition(key: &[u8], partitions: usize) -> i32 {
    ((murmur2(key) & 0x7fff_ffff) as usize % partitions.max(1)) as i32
}

/// What `produce` was asked.
pub struct ProduceArgs {
    /// The topic.
    pub topic: String,
    /// Every record to this partition; otherwise keyed records by key hash, others spread.
    pub partition: Option<i32>,
    /// Splits each line into key and value at its first occurrence (`parse.key`).
    pub key_separator: Option<String>,
    /// `all` (-1) or `1`.
    pub acks: i16,
}

/// Produces each line of stdin as one record (value = the line without its line end), in
/// order per partition; prints how many to stderr.
///
/// Errors: the topic does not exist, a partition has no leader after retries, a refused
/// batch (by Kafka's error name; earlier rounds stay written).
pub async fn produce(admin: &mut Admin, args: &ProduceArgs) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut leaders =
        partitions::leaders_for_produce(admin, &args.topic, admin.request_timeout()).await?;
    let count = leaders.len();
    if let Some(p) = args.partition {
        if p < 0 || p as usize >= count {
            bail!(
                "--partition {p}: topic {} has partitions 0-{}",
                args.topic,
                count - 1
            );
        }
    }
    let (mut next_spread, mut total) = (0usize, 0usize);
    loop {
        let mut round: BTreeMap<i32, Vec<Line>> = BTreeMap::new();
        let mut n = 0;
        for line in lines.by_ref() {
            let line = line.context("reading stdin")?;
            let (key, value) = match &args.key_separator {
                Some(sep) => match line.split_once(sep.as_str()) {
                    Some((k, v)) => (Some(k.as_bytes().to_vec()), v.as_bytes().to_vec()),
                    None => bail!("line {}: no key separator {sep:?}", total + n + 1),
                },
                None => (None, line.into_bytes()),
            };
            let partition = match (args.partition, &key) {
                (Some(p), _) => p,
                (None, Some(k)) => key_partition(k, count),
                (None, None) => {
                    next_spread += 1;
                    ((next_spread - 1) % count) as i32
                }
            };
            round.entry(partition).or_default().push((key, value));
            n += 1;
            if n == LINES_PER_ROUND {
                break;
            }
        }
        if n == 0 {
            break;
        }
        send_round(admin, args, &mut leaders, &round).await?;
        total += n;
    }
    eprintln!("Produced {total} record(s) to topic {}.", args.topic);
    Ok(())
}

/// Sends one batch per partition of `round`, grouped by leader, retrying partitions whose
/// leader moved.
async fn send_round(
    admin: &mut Admin,
    args: &ProduceArgs,
    leaders: &mut BTreeMap<TopicPartition, i32>,
    round: &BTreeMap<i32, Vec<Line>>,
) -> anyhow::Result<()> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let mut pending: Vec<i32> = round.keys().copied().collect();
    for attempt in 1..=PRODUCE_ATTEMPTS {
        let mut by_leader: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
        for p in &pending {
            let leader = leaders
                .get(&(args.topic.clone(), *p))
                .copied()
                .unwrap_or(-1);
            by_leader.entry(leader).or_default().push(*p);
        }
        let mut retry = Vec::new();
        let mut last_error = String::new();
        for (leader, parts) in by_leader {
            if leader < 0 {
                last_error = "LEADER_NOT_AVAILABLE".into();
                retry.extend(parts);
                continue;
            }
            let req = ProduceRequest::default()
                .with_acks(args.acks)
                .with_timeout_ms(admin.timeout().as_millis() as i32)
                .with_topic_data(vec![TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_string(args.topic.clone())))
                    .with_partition_data(
                        parts
                            .iter()
                            .map(|p| {
                                PartitionProduceData::default()
                                    .with_index(*p)
                                    .with_records(Some(batch(&round[p], now).into()))
                            })
                            .collect(),
                    )]);
            let resp = match admin.call(Node::Id(leader), &req).await {
                Ok(r) => r,
                Err(e) => {
                    last_error = format!("{e:#}");
                    retry.extend(parts);
                    continue;
                }
            };
            for t in &resp.responses {
                for p in &t.partition_responses {
                    match p.error_code {
                        0 => {}
                        // Not written: the leader moved or is not yet elected
                        // (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE,
                        // UNKNOWN_TOPIC_OR_PARTITION), or too few in-sync replicas
                        // (NOT_ENOUGH_REPLICAS). Ask again after new metadata.
                        6 | 5 | 3 | 19 => {
                            last_error = error_text(p.error_code, p.error_message.as_ref());
                            retry.push(p.index);
                        }
                        code => bail!(
                            "produce to {}-{}: {}",
                            args.topic,
                            p.index,
                            error_text(code, p.error_message.as_ref())
                        ),
                    }
                }
            }
        }
        if retry.is_empty() {
            return Ok(());
        }
        if attempt == PRODUCE_ATTEMPTS {
            bail!(
                "produce to {} partitions {retry:?}: {last_error}",
                args.topic
            );
        }
        tokio::time::sleep(Duration::from_millis(200 * attempt as u64)).await;
        *leaders = partitions::leaders(admin, std::slice::from_ref(&args.topic)).await?;
        pending = retry;
    }
    Ok(())
}

/// One uncompressed RecordBatch v2 of `records`, timestamps `now_ms`, no producer id.
fn batch(records: &[Line], now_ms: i64) -> Vec<u8> {
    let mut section = Vec::new();
    for (i, (key, value)) in records.iter().enumerate() {
        frieda_log::encode_record(
            &mut section,
            &RecordRef {
                attributes: 0,
                timestamp_delta: 0,
                offset_delta: i as i32,
                key: key.as_deref(),
                value: Some(value),
                headers: &[0], // no headers: a zero count
            },
        );
    }
    let header = BatchHeader {
        base_offset: 0,
        batch_length: 0,
        partition_leader_epoch: -1,
        magic: 2,
        crc: 0,
        attributes: 0,
        last_offset_delta: records.len() as i32 - 1,
        base_timestamp: now_ms,
        max_timestamp: now_ms,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records_count: records.len() as i32,
    };
    build_batch(&header, Codec::None, &section)
}

/// Where `consume` starts.
#[derive(Debug, Clone, Copy)]
pub enum StartAt {
    /// The log start offset (`--from-beginning`).
    Earliest,
    /// The high watermark: only records produced from now on (the default).
    Latest,
    /// This offset (`--offset N`, with `--partition`).
    Offset(i64),
}

/// What `consume` was asked.
pub struct ConsumeArgs {
    /// The topic.
    pub topic: String,
    /// Only this partition; otherwise all.
    pub partition: Option<i32>,
    /// Where to start.
    pub start: StartAt,
    /// Stop after this many records.
    pub max_messages: Option<usize>,
    /// Stop when no record came for this long.
    pub idle_timeout: Option<Duration>,
    /// Print `key<separator>value`.
    pub print_key: bool,
    /// Print `partition:offset<separator>` first.
    pub print_offset: bool,
    /// Between the printed parts (default a tab).
    pub separator: String,
    /// Skip aborted transactions and stop at the last stable offset (`read_committed`).
    pub read_committed: bool,
}

/// Prints the records of the topic, one per line, as they arrive at each partition's leader
/// (Fetch without a session, KIP-227's "full fetch"); control records and, with
/// `read_committed`, aborted records are skipped.
///
/// Errors: the topic does not exist, an offset out of range with `--offset`, a leader's
/// refusal (by Kafka's error name).
pub async fn consume(admin: &mut Admin, args: &ConsumeArgs) -> anyhow::Result<()> {
    let mut leaders = partitions::leaders(admin, std::slice::from_ref(&args.topic)).await?;
    if let Some(p) = args.partition {
        leaders.retain(|(_, q), _| *q == p);
        if leaders.is_empty() {
            bail!(
                "--partition {p}: topic {} has no such partition",
                args.topic
            );
        }
    }
    let mut position: HashMap<i32, i64> = match args.start {
        StartAt::Offset(o) => leaders.keys().map(|(_, p)| (*p, o)).collect(),
        StartAt::Earliest | StartAt::Latest => {
            let ts = if matches!(args.start, StartAt::Earliest) {
                EARLIEST
            } else {
                LATEST
            };
            partitions::list_offsets(admin, &leaders, ts)
                .await?
                .into_iter()
                .map(|((_, p), o)| (p, o))
                .collect()
        }
    };
    let mut printed = 0usize;
    let mut last_record = Instant::now();
    let out = std::io::stdout();
    loop {
        if args.max_messages.is_some_and(|m| printed >= m) {
            break;
        }
        if args
            .idle_timeout
            .is_some_and(|t| last_record.elapsed() >= t)
        {
            break;
        }
        let mut by_leader: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
        for ((_, p), leader) in &leaders {
            by_leader.entry(*leader).or_default().push(*p);
        }
        let mut refresh = false;
        for (leader, parts) in by_leader {
            if leader < 0 {
                refresh = true;
                continue;
            }
            let req = FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(FETCH_WAIT_MS)
                .with_min_bytes(1)
                .with_max_bytes(50 << 20)
                .with_isolation_level(i8::from(args.read_committed))
                .with_session_id(0)
                .with_session_epoch(-1)
                .with_topics(vec![FetchTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(args.topic.clone())))
                    .with_partitions(
                        parts
                            .iter()
                            .map(|p| {
                                FetchPartition::default()
                                    .with_partition(*p)
                                    .with_current_leader_epoch(-1)
                                    .with_fetch_offset(position[p])
                                    .with_last_fetched_epoch(-1)
                                    .with_log_start_offset(-1)
                                    .with_partition_max_bytes(PARTITION_FETCH_BYTES)
                            })
                            .collect(),
                    )]);
            let resp = match admin.call(Node::Id(leader), &req).await {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("frieda admin: fetch from broker {leader}: {e:#}");
                    refresh = true;
                    continue;
                }
            };
            if resp.error_code != 0 {
                bail!("Fetch: {}", error_text(resp.error_code, None));
            }
            for t in &resp.responses {
                for p in &t.partitions {
                    let part = p.partition_index;
                    match p.error_code {
                        0 => {}
                        1 if matches!(args.start, StartAt::Offset(_)) => bail!(
                            "{}-{part}: offset {} is out of range (OFFSET_OUT_OF_RANGE)",
                            args.topic,
                            position[&part]
                        ),
                        1 => {
                            let one: BTreeMap<_, _> =
                                [((args.topic.clone(), part), leader)].into_iter().collect();
                            let o = partitions::list_offsets(admin, &one, EARLIEST).await?;
                            position.insert(part, o[&(args.topic.clone(), part)]);
                            continue;
                        }
                        6 | 5 | 3 | 74 | 75 => {
                            refresh = true;
                            continue;
                        }
                        code => bail!("fetch {}-{part}: {}", args.topic, error_text(code, None)),
                    }
                    let aborted: Vec<(i64, i64)> = p
                        .aborted_transactions
                        .iter()
                        .flatten()
                        .map(|a| (a.producer_id.0, a.first_offset))
                        .collect();
                    let records = p.records.as_deref().unwrap_or(&[]);
                    let limit = args.max_messages.map(|m| m - printed);
                    let (n, next) = print_records(
                        &mut out.lock(),
                        args,
                        part,
                        records,
                        position[&part],
                        &aborted,
                        limit,
                    )?;
                    position.insert(part, next);
                    printed += n;
                    if n > 0 {
                        last_record = Instant::now();
                    }
                    if args.max_messages.is_some_and(|m| printed >= m) {
                        return Ok(());
                    }
                }
            }
        }
        if refresh {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let mut fresh = partitions::leaders(admin, std::slice::from_ref(&args.topic)).await?;
            fresh.retain(|k, _| leaders.contains_key(k));
            leaders = fresh;
        }
    }
    Ok(())
}

/// Prints the records of `data` (whole batches; a cut last batch is left for the next fetch)
/// at or after `from`, at most `limit`; returns how many were printed and the next offset.
fn print_records(
    out: &mut impl std::io::Write,
    args: &ConsumeArgs,
    partition: i32,
    data: &[u8],
    from: i64,
    aborted: &[(i64, i64)],
    limit: Option<usize>,
) -> anyhow::Result<(usize, i64)> {
    let mut next = from;
    let mut printed = 0usize;
    let mut open_aborts: HashSet<i64> = HashSet::new();
    let mut at = 0usize;
    while data.len() - at >= BATCH_HEADER_LEN {
        let h = BatchHeader::parse(&data[at..]).map_err(|e| anyhow!("{e}"))?;
        let size = h.total_size();
        if size < BATCH_HEADER_LEN || size > data.len() - at {
            break;
        }
        let whole = &data[at..at + size];
        at += size;
        if h.last_offset() < from {
            continue;
        }
        // An aborted transaction's records start at its first offset (KIP-98 fetch answer).
        for (pid, first) in aborted {
            if *first <= h.last_offset() && *pid == h.producer_id {
                open_aborts.insert(*pid);
            }
        }
        if h.is_control() {
            open_aborts.remove(&h.producer_id);
            next = h.last_offset() + 1;
            continue;
        }
        if h.is_transactional() && open_aborts.contains(&h.producer_id) {
            next = h.last_offset() + 1;
            continue;
        }
        let section = records_section(whole, &h).map_err(|e| anyhow!("{e}"))?;
        for r in parse_records(&section, h.records_count).map_err(|e| anyhow!("{e}"))? {
            let offset = h.base_offset + i64::from(r.offset_delta);
            if offset < from {
                continue;
            }
            if limit.is_some_and(|l| printed >= l) {
                return Ok((printed, next));
            }
            let mut line = Vec::new();
            if args.print_offset {
                line.extend_from_slice(
                    format!("{partition}:{offset}{}", args.separator).as_bytes(),
                );
            }
            if args.print_key {
                line.extend_from_slice(r.key.unwrap_or(b"null"));
                line.extend_from_slice(args.separator.as_bytes());
            }
            line.extend_from_slice(r.value.unwrap_or(b"null"));
            line.push(b'\n');
            out.write_all(&line)?;
            printed += 1;
            next = offset + 1;
        }
        next = next.max(h.last_offset() + 1);
    }
    out.flush()?;
    Ok((printed, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_gives_kafkas_own_test_vectors() {
        // org.apache.kafka.common.utils.UtilsTest.testMurmur2
        for (input, want) in [
            ("21", -973932308),
            ("foobar", -790332482),
            ("a-little-bit-long-string", -985981536),
            ("a-little-bit-longer-string", -1486304829),
            (
                "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58897971,
            ),
            ("abc", 479470107),
        ] {
            assert_eq!(murmur2(input.as_bytes()), want, "{input}");
        }
    }

    #[test]
    fn produced_batches_read_back_from_any_offset() {
        let recs: Vec<Line> = (0..5)
            .map(|i| {
                (
                    Some(format!("k{i}").into_bytes()),
                    format!("v{i}").into_bytes(),
                )
            })
            .collect();
        let mut b = batch(&recs, 1_700_000_000_000);
        frieda_log::patch_base_offset(&mut b, 10);
        let args = ConsumeArgs {
            topic: "t".into(),
            partition: None,
            start: StartAt::Earliest,
            max_messages: None,
            idle_timeout: None,
            print_key: true,
            print_offset: true,
            separator: "\t".into(),
            read_committed: false,
        };
        let mut out = Vec::new();
        // A cut copy of the batch at the end is left for the next fetch.
        let mut data = b.clone();
        data.extend_from_slice(&b[..b.len() - 3]);
        let (n, next) = print_records(&mut out, &args, 0, &data, 12, &[], None).unwrap();
        assert_eq!((n, next), (3, 15));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "0:12\tk2\tv2\n0:13\tk3\tv3\n0:14\tk4\tv4\n"
        );
        let mut out = Vec::new();
        let (n, next) = print_records(&mut out, &args, 0, &b, 10, &[], Some(2)).unwrap();
        assert_eq!((n, next), (2, 12));
    }
}
