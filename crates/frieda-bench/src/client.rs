//! A minimal Kafka client on tokio + `kafka-protocol`: framing, ApiVersions negotiation, and the
//! control-plane calls the load generator needs (Metadata, CreateTopics, ListOffsets). The
//! pipelined produce path lives in `produce.rs` and uses the framing helpers here.

use anyhow::{anyhow, bail, Context, Result};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    create_topics_request::{CreatableTopic, CreatableTopicConfig},
    list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic},
    metadata_request::MetadataRequestTopic,
    ApiKey, ApiVersionsRequest, BrokerId, CreateTopicsRequest, ListOffsetsRequest, MetadataRequest,
    RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const CLIENT_ID: &str = "frieda-bench";
/// Largest response frame we accept (guards against garbage lengths).
const MAX_FRAME: usize = 256 << 20;

/// The highest version of each API this client speaks (all use topic names, not topic ids).
pub fn our_max(key: ApiKey) -> i16 {
    match key {
        ApiKey::ApiVersions => 3,
        ApiKey::Metadata => 12,
        ApiKey::Produce => 12, // v13 addresses topics by id
        ApiKey::Fetch => 12,   // v13 addresses topics by id
        ApiKey::CreateTopics => 7,
        ApiKey::ListOffsets => 7,
        ApiKey::DeleteTopics => 6,
        ApiKey::DescribeQuorum => 2,
        _ => 0,
    }
}

/// Versions the broker advertised: api key -> (min, max).
#[derive(Clone, Debug, Default)]
pub struct ApiVersions(pub HashMap<i16, (i16, i16)>);

impl ApiVersions {
    /// The highest version both sides speak.
    pub fn pick<R: Request>(&self) -> Result<i16> {
        let key = ApiKey::try_from(R::KEY).map_err(|_| anyhow!("unknown api key {}", R::KEY))?;
        let ours = (R::VERSIONS.min.max(0), our_max(key).min(R::VERSIONS.max));
        let &(bmin, bmax) = self
            .0
            .get(&R::KEY)
            .ok_or_else(|| anyhow!("broker does not support {key:?}"))?;
        let v = ours.1.min(bmax);
        if v < bmin || v < ours.0 {
            bail!(
                "no common version for {key:?}: broker {bmin}..={bmax}, ours {}..={}",
                ours.0,
                ours.1
            );
        }
        Ok(v)
    }
}

/// Appends one request frame (length prefix, header, body) to `buf`.
pub fn encode_request<R: Request>(
    buf: &mut BytesMut,
    corr: i32,
    version: i16,
    req: &R,
) -> Result<()> {
    let start = buf.len();
    buf.put_i32(0);
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(corr)
        .with_client_id(Some(StrBytes::from_static_str(CLIENT_ID)));
    header.encode(buf, R::header_version(version))?;
    req.encode(buf, version)?;
    let len = (buf.len() - start - 4) as i32;
    buf[start..start + 4].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

/// Reads one response frame (without the length prefix).
pub async fn read_frame<S: AsyncRead + Unpin>(s: &mut S) -> Result<Bytes> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await?;
    let len = i32::from_be_bytes(len);
    if len < 4 || len as usize > MAX_FRAME {
        bail!("bad response frame length {len}");
    }
    let mut body = BytesMut::zeroed(len as usize);
    s.read_exact(&mut body).await?;
    Ok(body.freeze())
}

/// Decodes the response header and returns (correlation id, body).
pub fn decode_header<R: Request>(frame: &mut Bytes, version: i16) -> Result<i32> {
    let h = ResponseHeader::decode(frame, R::Response::header_version(version))?;
    Ok(h.correlation_id)
}

pub fn decode_response<R: Request>(
    mut frame: Bytes,
    version: i16,
    expect_corr: i32,
) -> Result<R::Response> {
    let corr = decode_header::<R>(&mut frame, version)?;
    if corr != expect_corr {
        bail!("correlation id mismatch: got {corr}, expected {expect_corr}");
    }
    R::Response::decode(&mut frame, version).context("decoding response body")
}

/// A simple one-request-at-a-time connection for control-plane calls.
pub struct Conn {
    pub stream: TcpStream,
    pub corr: i32,
    pub versions: ApiVersions,
    pub addr: String,
}

impl Conn {
    /// Connects to the first address of a comma-separated bootstrap list that answers.
    pub async fn connect_any(bootstrap: &str, timeout: Duration) -> Result<Conn> {
        let mut last = None;
        for addr in bootstrap
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            match Conn::connect(addr, timeout).await {
                Ok(c) => return Ok(c),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow!("empty bootstrap list")))
    }

    pub async fn connect(addr: &str, timeout: Duration) -> Result<Conn> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| anyhow!("connect to {addr} timed out"))?
            .with_context(|| format!("connecting to {addr}"))?;
        stream.set_nodelay(true)?;
        let mut c = Conn {
            stream,
            corr: 0,
            versions: ApiVersions::default(),
            addr: addr.to_string(),
        };
        c.handshake(timeout).await?;
        Ok(c)
    }

    async fn handshake(&mut self, timeout: Duration) -> Result<()> {
        // ApiVersions v3; a broker that does not speak it answers UNSUPPORTED_VERSION (35) in a
        // v0 body listing what it does speak, and we retry with v0.
        let req = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str(CLIENT_ID))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let mut version = 3;
        for _ in 0..2 {
            let resp = match tokio::time::timeout(timeout, self.call_raw(&req, version)).await {
                Err(_) => bail!("ApiVersions to {} timed out", self.addr),
                Ok(r) => r,
            };
            let resp = match resp {
                Ok(r) => r,
                Err(e) if version > 0 => {
                    // Some brokers close or send an undecodable body for unknown versions.
                    bail!("ApiVersions v{version} failed: {e:#}")
                }
                Err(e) => return Err(e),
            };
            if resp.error_code == 35 && version > 0 {
                version = 0;
                continue;
            }
            if resp.error_code != 0 {
                bail!("ApiVersions error code {}", resp.error_code);
            }
            self.versions = ApiVersions(
                resp.api_keys
                    .iter()
                    .map(|k| (k.api_key, (k.min_version, k.max_version)))
                    .collect(),
            );
            return Ok(());
        }
        bail!("ApiVersions negotiation failed")
    }

    async fn call_raw<R: Request>(&mut self, req: &R, version: i16) -> Result<R::Response> {
        self.corr += 1;
        let corr = self.corr;
        let mut buf = BytesMut::new();
        encode_request(&mut buf, corr, version, req)?;
        self.stream.write_all(&buf).await?;
        let frame = read_frame(&mut self.stream).await?;
        decode_response::<R>(frame, version, corr)
    }

    pub async fn call<R: Request>(&mut self, req: &R) -> Result<R::Response> {
        let v = self.versions.pick::<R>()?;
        self.call_raw(req, v).await
    }

    pub async fn metadata(&mut self, topic: &str) -> Result<TopicMeta> {
        let req = MetadataRequest::default()
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(topic_name(topic)))
            ]))
            .with_allow_auto_topic_creation(false);
        let resp = self.call(&req).await?;
        let brokers: BTreeMap<i32, String> = resp
            .brokers
            .iter()
            .map(|b| (b.node_id.0, format!("{}:{}", b.host.as_str(), b.port)))
            .collect();
        let t = resp
            .topics
            .iter()
            .find(|t| t.name.as_ref().map(|n| n.0.as_str()) == Some(topic))
            .ok_or_else(|| anyhow!("topic {topic} missing from metadata response"))?;
        let mut partitions: Vec<(i32, i32, i16)> = t
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.leader_id.0, p.error_code))
            .collect();
        partitions.sort();
        let mut detail: Vec<PartitionDetail> = t
            .partitions
            .iter()
            .map(|p| PartitionDetail {
                partition: p.partition_index,
                leader: p.leader_id.0,
                leader_epoch: p.leader_epoch,
                replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
                isr: p.isr_nodes.iter().map(|b| b.0).collect(),
                offline: p.offline_replicas.iter().map(|b| b.0).collect(),
                error_code: p.error_code,
            })
            .collect();
        detail.sort_by_key(|p| p.partition);
        Ok(TopicMeta {
            error_code: t.error_code,
            partitions,
            brokers,
            controller_id: resp.controller_id.0,
            detail,
        })
    }

    /// The registered (unfenced) brokers Metadata lists, and the controller id it names.
    pub async fn brokers(&mut self) -> Result<(BTreeMap<i32, String>, i32)> {
        let req = MetadataRequest::default()
            .with_topics(Some(vec![]))
            .with_allow_auto_topic_creation(false);
        let resp = self.call(&req).await?;
        Ok((
            resp.brokers
                .iter()
                .map(|b| (b.node_id.0, format!("{}:{}", b.host.as_str(), b.port)))
                .collect(),
            resp.controller_id.0,
        ))
    }

    /// DescribeQuorum of `__cluster_metadata` (a broker forwards it to the controller): the
    /// active controller (Raft leader), its epoch, the voters and the observers.
    pub async fn describe_quorum(&mut self) -> Result<QuorumInfo> {
        use kafka_protocol::messages::{describe_quorum_request, DescribeQuorumRequest};
        let req = DescribeQuorumRequest::default().with_topics(vec![
            describe_quorum_request::TopicData::default()
                .with_topic_name(topic_name("__cluster_metadata"))
                .with_partitions(vec![
                    describe_quorum_request::PartitionData::default().with_partition_index(0)
                ]),
        ]);
        let resp = self.call(&req).await?;
        if resp.error_code != 0 {
            bail!("DescribeQuorum: error code {}", resp.error_code);
        }
        let p = resp
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .ok_or_else(|| anyhow!("empty DescribeQuorum response"))?;
        if p.error_code != 0 {
            bail!("DescribeQuorum partition: error code {}", p.error_code);
        }
        Ok(QuorumInfo {
            leader_id: p.leader_id.0,
            leader_epoch: p.leader_epoch,
            high_watermark: p.high_watermark,
            voters: p.current_voters.iter().map(|r| r.replica_id.0).collect(),
            observers: p.observers.iter().map(|r| r.replica_id.0).collect(),
        })
    }

    /// Creates the topic (replication factor `rf`, optional configs). An existing topic is fine.
    pub async fn create_topic(
        &mut self,
        topic: &str,
        partitions: i32,
        rf: i16,
        configs: &[(String, String)],
    ) -> Result<i16> {
        let t = CreatableTopic::default()
            .with_name(topic_name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(rf)
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        CreatableTopicConfig::default()
                            .with_name(StrBytes::from_string(k.clone()))
                            .with_value(Some(StrBytes::from_string(v.clone())))
                    })
                    .collect(),
            );
        let req = CreateTopicsRequest::default()
            .with_topics(vec![t])
            .with_timeout_ms(30_000);
        let resp = self.call(&req).await?;
        let r = resp
            .topics
            .first()
            .ok_or_else(|| anyhow!("empty CreateTopics response"))?;
        match r.error_code {
            0 | 36 => Ok(r.error_code), // 36 = TOPIC_ALREADY_EXISTS
            c => bail!(
                "CreateTopics {topic}: error code {c} {}",
                r.error_message
                    .as_ref()
                    .map(|m| m.as_str().to_string())
                    .unwrap_or_default()
            ),
        }
    }

    /// Waits until metadata shows the topic with `partitions` partitions, all with a leader.
    pub async fn wait_for_topic(
        &mut self,
        topic: &str,
        partitions: usize,
        timeout: Duration,
    ) -> Result<TopicMeta> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let m = self.metadata(topic).await;
            if let Ok(m) = &m {
                if m.error_code == 0
                    && m.partitions.len() >= partitions.max(1)
                    && m.partitions.iter().all(|p| p.2 == 0 && p.1 >= 0)
                {
                    return Ok(m.clone());
                }
            }
            if tokio::time::Instant::now() > deadline {
                return match m {
                    Ok(m) => Err(anyhow!("topic {topic} not ready: {m:?}")),
                    Err(e) => Err(e),
                };
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Produces one small record to every partition until all accept it: right after
    /// CreateTopics a broker can still answer NOT_LEADER_OR_FOLLOWER for a moment although
    /// Metadata already names the leader. Returns the number of attempts.
    pub async fn probe_writable(
        &mut self,
        topic: &str,
        partitions: &[i32],
        timeout: Duration,
    ) -> Result<u32> {
        use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
        use kafka_protocol::messages::ProduceRequest;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let data = partitions
                .iter()
                .map(|&p| {
                    let mut b = crate::batch::BatchBuilder::new(0, 64);
                    b.push(0, None, b"frieda-bench probe");
                    PartitionProduceData::default()
                        .with_index(p)
                        .with_records(Some(b.finish()))
                })
                .collect();
            let req = ProduceRequest::default()
                .with_acks(1)
                .with_timeout_ms(10_000)
                .with_topic_data(vec![TopicProduceData::default()
                    .with_name(topic_name(topic))
                    .with_partition_data(data)]);
            let resp = self.call(&req).await?;
            let bad: Vec<(i32, i16)> = resp
                .responses
                .iter()
                .flat_map(|t| {
                    t.partition_responses
                        .iter()
                        .filter(|p| p.error_code != 0)
                        .map(|p| (p.index, p.error_code))
                })
                .collect();
            if bad.is_empty() {
                return Ok(attempts);
            }
            if tokio::time::Instant::now() > deadline {
                bail!("topic {topic} not writable after {attempts} attempts: partition errors {bad:?}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Deletes a topic (frees the disk a scenario used). A missing topic is fine.
    pub async fn delete_topic(&mut self, topic: &str) -> Result<i16> {
        use kafka_protocol::messages::{
            delete_topics_request::DeleteTopicState, DeleteTopicsRequest,
        };
        let v = self.versions.pick::<DeleteTopicsRequest>()?;
        let mut req = DeleteTopicsRequest::default().with_timeout_ms(30_000);
        // v6 names topics in `topics`, older versions in `topic_names`; set only the one this
        // version has (the encoder refuses fields outside their versions)
        if v >= 6 {
            req = req.with_topics(vec![
                DeleteTopicState::default().with_name(Some(topic_name(topic)))
            ]);
        } else {
            req = req.with_topic_names(vec![topic_name(topic)]);
        }
        let resp = self.call_raw(&req, v).await?;
        let code = resp.responses.first().map(|r| r.error_code).unwrap_or(0);
        match code {
            0 | 3 => Ok(code), // 3 = UNKNOWN_TOPIC_OR_PARTITION
            c => bail!("DeleteTopics {topic}: error code {c}"),
        }
    }

    /// Latest offset (log end) of each partition.
    pub async fn latest_offsets(
        &mut self,
        topic: &str,
        partitions: &[i32],
    ) -> Result<HashMap<i32, i64>> {
        let req = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(
                    partitions
                        .iter()
                        .map(|&p| {
                            ListOffsetsPartition::default()
                                .with_partition_index(p)
                                .with_current_leader_epoch(-1)
                                .with_timestamp(-1)
                        })
                        .collect(),
                )]);
        let resp = self.call(&req).await?;
        let mut out = HashMap::new();
        for t in resp.topics {
            for p in t.partitions {
                if p.error_code != 0 {
                    bail!(
                        "ListOffsets partition {}: error code {}",
                        p.partition_index,
                        p.error_code
                    );
                }
                out.insert(p.partition_index, p.offset);
            }
        }
        Ok(out)
    }
}

#[derive(Clone, Debug)]
pub struct TopicMeta {
    pub error_code: i16,
    /// (partition, leader id, error code), sorted by partition.
    pub partitions: Vec<(i32, i32, i16)>,
    pub brokers: BTreeMap<i32, String>,
    pub controller_id: i32,
    /// Replicas and ISR of each partition, sorted by partition.
    pub detail: Vec<PartitionDetail>,
}

#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct PartitionDetail {
    pub partition: i32,
    pub leader: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub offline: Vec<i32>,
    pub error_code: i16,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct QuorumInfo {
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub voters: Vec<i32>,
    pub observers: Vec<i32>,
}

impl TopicMeta {
    /// The single leader address all partitions share (multi-leader clusters are not supported yet).
    pub fn single_leader(&self, bootstrap: &str) -> Result<String> {
        let mut leaders: Vec<i32> = self.partitions.iter().map(|p| p.1).collect();
        leaders.sort();
        leaders.dedup();
        match leaders.as_slice() {
            [l] => Ok(self.brokers.get(l).cloned().unwrap_or_else(|| bootstrap.to_string())),
            [] => bail!("topic has no partitions"),
            _ => bail!("partitions have different leaders {leaders:?}: multi-broker clusters are not supported yet"),
        }
    }
}

pub fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// Connects, creates the topic if asked, waits for it, and returns (leader address, metadata,
/// negotiated versions).
pub async fn prepare_topic(
    bootstrap: &str,
    topic: &str,
    create: bool,
    partitions: usize,
    rf: i16,
    configs: &[(String, String)],
) -> Result<(String, TopicMeta, ApiVersions)> {
    let mut c = Conn::connect_any(bootstrap, Duration::from_secs(10)).await?;
    if create {
        c.create_topic(topic, partitions as i32, rf, configs)
            .await?;
    }
    let meta = c
        .wait_for_topic(
            topic,
            if create { partitions } else { 1 },
            Duration::from_secs(30),
        )
        .await?;
    let leader = meta.single_leader(&c.addr)?;
    if create {
        // in a cluster only the leader takes produce requests
        let parts: Vec<i32> = meta.partitions.iter().map(|p| p.0).collect();
        if leader != c.addr {
            let mut l = Conn::connect(&leader, Duration::from_secs(10)).await?;
            l.probe_writable(topic, &parts, Duration::from_secs(30))
                .await?;
        } else {
            c.probe_writable(topic, &parts, Duration::from_secs(30))
                .await?;
        }
    }
    Ok((leader, meta, c.versions.clone()))
}
