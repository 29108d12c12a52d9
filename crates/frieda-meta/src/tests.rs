//! Three quorum nodes in one process on loopback: they form the quorum without a format step,
//! elect a leader, name the cluster, register brokers, fence a silent one, survive the leader's
//! loss, and replay their state after a restart.

use super::*;
use std::net::TcpListener as StdListener;

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Cluster {
    dirs: Vec<tempfile::TempDir>,
    voters: BTreeMap<u64, String>,
    nodes: BTreeMap<u64, Arc<MetadataQuorum>>,
    transport: Arc<dyn QuorumTransport>,
}

impl Cluster {
    fn new(n: u64) -> Cluster {
        Self::with_transport(n, Arc::new(PlaintextTransport))
    }

    fn with_transport(n: u64, transport: Arc<dyn QuorumTransport>) -> Cluster {
        let voters = (1..=n)
            .map(|id| (id, format!("127.0.0.1:{}", free_port())))
            .collect();
        Cluster {
            dirs: (0..n).map(|_| tempfile::tempdir().unwrap()).collect(),
            voters,
            nodes: BTreeMap::new(),
            transport,
        }
    }

    async fn start(&mut self, id: u64) {
        let addr = self.voters[&id].clone();
        let cfg = QuorumConfig {
            node_id: id,
            voters: self.voters.clone(),
            bootstrap: Vec::new(),
            listen: addr.parse().unwrap(),
            advertised: addr,
            dir: self.dirs[(id - 1) as usize].path().join("meta"),
            election_timeout_ms: 300,
            heartbeat_interval_ms: 100,
            broker_session_timeout_ms: 1500,
            leader_rebalance_interval_ms: None,
            leader_imbalance_percentage: 10,
            leader_placement: Default::default(),
            unclean_leader_election: false,
            min_insync_replicas: 1,
            quorum_acks: false,
            transport: self.transport.clone(),
        };
        self.nodes
            .insert(id, MetadataQuorum::start(cfg).await.unwrap());
    }

    async fn stop(&mut self, id: u64) {
        if let Some(n) = self.nodes.remove(&id) {
            n.shutdown().await;
        }
    }

    async fn leader(&self) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let leaders: Vec<u64> = self
                .nodes
                .values()
                .filter(|n| n.is_leader())
                .map(|n| n.node_id())
                .collect();
            if let [l] = leaders[..] {
                return l;
            }
            assert!(Instant::now() < deadline, "no single leader: {leaders:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn heartbeat(id: BrokerId, incarnation: u128) -> ControllerRequest {
    ControllerRequest::Heartbeat(Heartbeat {
        id,
        incarnation: uuid::Uuid::from_u128(incarnation),
        endpoints: vec![Endpoint {
            name: "PLAINTEXT".into(),
            host: "127.0.0.1".into(),
            port: 19000 + id as u16,
        }],
        rack: None,
        raft_addr: String::new(),
        shutting_down: false,
        offline_replicas: vec![],
        clean_shutdown: true,
        leader_cost_us: None,
        claims: vec![],
    })
}

const T: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_voters_elect_decide_fence_fail_over_and_replay() {
    let mut c = Cluster::new(3);
    for id in 1..=3 {
        c.start(id).await;
    }
    let leader = c.leader().await;
    // The cluster names itself; every node applies the same image.
    for n in c.nodes.values() {
        n.wait_for(T, |i| i.cluster_id.is_some())
            .await
            .expect("cluster id");
    }
    let cluster_id = c.nodes[&1].image().cluster_id.clone();
    assert!(c.nodes.values().all(|n| n.image().cluster_id == cluster_id));

    // Brokers register through any node (forwarded to the leader).
    for b in 1..=3 {
        let via = &c.nodes[&(b as u64)];
        assert!(matches!(
            via.request(heartbeat(b, b as u128), T).await.unwrap(),
            ControllerReply::Heartbeat { fenced: false, .. }
        ));
    }
    let create = ControllerRequest::CreateTopic {
        name: "orders".into(),
        partitions: 6,
        replication_factor: 3,
        assignment: None,
        configs: BTreeMap::new(),
        validate_only: false,
    };
    c.nodes[&2].request(create.clone(), T).await.unwrap();
    assert!(matches!(
        c.nodes[&3].request(create, T).await,
        Err(ControllerError::Meta(MetaError::TopicExists(_)))
    ));
    assert!(matches!(
        c.nodes[&1]
            .request(
                ControllerRequest::CreateTopic {
                    name: "too-wide".into(),
                    partitions: 1,
                    replication_factor: 4,
                    assignment: None,
                    configs: BTreeMap::new(),
                    validate_only: false,
                },
                T
            )
            .await,
        Err(ControllerError::InvalidReplicationFactor(_))
    ));
    for n in c.nodes.values() {
        n.wait_for(T, |i| i.topics.contains_key("orders"))
            .await
            .unwrap();
    }
    let img = c.nodes[&3].image();
    let t = &img.topics["orders"];
    assert_eq!(t.partitions.len(), 6);
    let leaders: std::collections::BTreeSet<BrokerId> =
        t.partitions.iter().map(|p| p.leader).collect();
    assert_eq!(leaders.len(), 3, "leaders are spread over the brokers");
    assert!(t.partitions.iter().all(|p| p.isr.len() == 3));

    // Broker 1 and 2 keep heartbeating; broker 3 goes silent and is fenced within its session.
    let beat = {
        let nodes: Vec<Arc<MetadataQuorum>> = c.nodes.values().cloned().collect();
        tokio::spawn(async move {
            loop {
                for b in 1..=2 {
                    let _ = nodes[0]
                        .request(heartbeat(b, b as u128), Duration::from_secs(2))
                        .await;
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        })
    };
    let img = c.nodes[&1]
        .wait_for(T, |i| i.brokers.get(&3).is_some_and(|b| b.fenced))
        .await
        .expect("broker 3 fenced");
    for p in &img.topics["orders"].partitions {
        assert_ne!(p.leader, 3, "a fenced broker leads nothing");
        assert!(!p.isr.contains(&3));
    }
    // It comes back (same incarnation): unfenced.
    c.nodes[&1].request(heartbeat(3, 3), T).await.unwrap();
    c.nodes[&1]
        .wait_for(T, |i| i.brokers.get(&3).is_some_and(|b| !b.fenced))
        .await
        .expect("broker 3 unfenced");
    beat.abort();

    // The quorum leader goes: the others elect a new one and keep deciding.
    c.stop(leader).await;
    let new_leader = c.leader().await;
    assert_ne!(new_leader, leader);
    let survivor = c.nodes.keys().copied().find(|&n| n != new_leader).unwrap();
    c.nodes[&survivor]
        .request(
            ControllerRequest::SetTopicConfigs {
                name: "orders".into(),
                configs: BTreeMap::from([("retention.ms".into(), "1000".into())]),
            },
            T,
        )
        .await
        .unwrap();
    let block = c.nodes[&survivor]
        .request(ControllerRequest::AllocateProducerIds, T)
        .await
        .unwrap();
    assert_eq!(
        block,
        ControllerReply::ProducerIds {
            start: 0,
            count: PRODUCER_ID_BLOCK
        }
    );
    // The old leader restarts from its own log and catches up.
    c.start(leader).await;
    let img = c.nodes[&leader]
        .wait_for(T, |i| {
            i.topics
                .get("orders")
                .is_some_and(|t| t.configs.get("retention.ms").is_some_and(|v| v == "1000"))
        })
        .await
        .expect("restarted node catches up");
    assert_eq!(img.cluster_id, cluster_id);
    assert_eq!(img.next_producer_id, PRODUCER_ID_BLOCK);
    let status = c.nodes[&new_leader].status();
    assert_eq!(status.leader, Some(new_leader));
    assert_eq!(status.voters.len(), 3);
    for id in 1..=3 {
        c.stop(id).await;
    }
}

/// openraft's own storage test suite (`openraft::testing::Suite`) against the Raft log kept in a
/// Frieda partition log and the metadata state machine: appends, truncation inside a batch,
/// purges, vote, membership, snapshots.
#[test]
fn openraft_storage_suite() {
    struct Builder;
    impl
        openraft::testing::StoreBuilder<
            crate::types::TypeConfig,
            LogStore,
            StateMachine,
            tempfile::TempDir,
        > for Builder
    {
        async fn build(
            &self,
        ) -> Result<(tempfile::TempDir, LogStore, StateMachine), openraft::StorageError<u64>>
        {
            let dir = tempfile::tempdir().map_err(|e| openraft::StorageIOError::read(&e))?;
            let log = LogStore::open(dir.path()).map_err(|e| {
                openraft::StorageIOError::read(&std::io::Error::other(e.to_string()))
            })?;
            let (tx, _rx) = watch::channel(Arc::new(MetadataImage::default()));
            let sm = StateMachine::open(dir.path(), Arc::new(tx)).map_err(|e| {
                openraft::StorageIOError::read(&std::io::Error::other(e.to_string()))
            })?;
            Ok((dir, log, sm))
        }
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("openraft::testing=info"))
        .with_test_writer()
        .try_init();
    openraft::testing::Suite::test_all(Builder).unwrap();
}

/// A leader whose followers are gone cannot commit; a request made on it must still end at its
/// timeout (Unavailable), not wait for the quorum forever. The controller's controlled shutdown
/// while the other voters stopped too hung here (found by tests/jepsen's teardown).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_without_its_quorum_answers_at_the_timeout() {
    let mut c = Cluster::new(3);
    for id in 1..=3 {
        c.start(id).await;
    }
    let leader = c.leader().await;
    c.nodes[&leader]
        .wait_for(T, |i| i.cluster_id.is_some())
        .await
        .expect("cluster id");
    for id in 1..=3u64 {
        if id != leader {
            c.stop(id).await;
        }
    }
    let started = Instant::now();
    let r = c.nodes[&leader]
        .request(
            ControllerRequest::AllocateProducerIds,
            Duration::from_millis(800),
        )
        .await;
    let took = started.elapsed();
    assert!(
        matches!(r, Err(ControllerError::Unavailable(_))),
        "want Unavailable, got {r:?} (leader {leader}, now {:?})",
        c.nodes[&leader].status()
    );
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    c.stop(leader).await;
}

/// A test transport: a connection authenticates by sending [`NODE_KEY`] first (any other 8
/// bytes make a stranger); only `User:node` may send quorum requests.
#[derive(Debug)]
struct KeyTransport;

const NODE_KEY: &[u8; 8] = b"node-key";

impl QuorumTransport for KeyTransport {
    fn protocol(&self) -> &'static str {
        "TEST"
    }

    fn accept<'a>(
        &'a self,
        mut stream: tokio::net::TcpStream,
        peer: std::net::SocketAddr,
    ) -> BoxFuture<'a, std::io::Result<(Box<dyn QuorumStream>, PeerIdentity)>> {
        Box::pin(async move {
            use tokio::io::AsyncReadExt;
            let mut key = [0u8; 8];
            stream.read_exact(&mut key).await?;
            let principal = if &key == NODE_KEY {
                "User:node"
            } else {
                "User:stranger"
            };
            let id = PeerIdentity {
                principal: principal.into(),
                addr: peer,
            };
            Ok((Box::new(stream) as Box<dyn QuorumStream>, id))
        })
    }

    fn connect<'a>(
        &'a self,
        addr: &'a str,
        _timeout: Duration,
    ) -> BoxFuture<'a, std::io::Result<Box<dyn QuorumStream>>> {
        Box::pin(async move {
            use tokio::io::AsyncWriteExt;
            let mut s = tokio::net::TcpStream::connect(addr).await?;
            s.write_all(NODE_KEY).await?;
            Ok(Box::new(s) as Box<dyn QuorumStream>)
        })
    }

    fn authorize(&self, peer: &PeerIdentity) -> bool {
        peer.principal == "User:node"
    }

    fn authentication_timeout(&self) -> Duration {
        Duration::from_millis(300)
    }
}

/// A stranger's connection to `addr`: authenticated as `User:stranger`.
async fn stranger(addr: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"stranger").await.unwrap();
    s
}

/// Whether the other side closed `s` (EOF or reset) within 2 s.
async fn closed(s: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut b = [0u8; 1];
    matches!(
        tokio::time::timeout(Duration::from_secs(2), s.read(&mut b)).await,
        Ok(Ok(0) | Err(_))
    )
}

/// On a secured listener the nodes (authorized by the transport) form the quorum and decide as
/// usual, while an unauthorized peer's AlterAcls, a heartbeat fencing a live broker, a Vote and
/// an AppendEntries are each answered `Refused`, the connection closed, and nothing changes; a
/// peer that never authenticates is dropped at the authentication timeout, and an unauthorized
/// one may not send a large frame.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_peers_are_refused_and_change_nothing() {
    use network::{read_frame, write_frame, Request, Response};
    use tokio::io::AsyncWriteExt;
    let mut c = Cluster::with_transport(3, Arc::new(KeyTransport));
    for id in 1..=3 {
        c.start(id).await;
    }
    let leader = c.leader().await;
    let via = c.nodes[&leader].clone();
    via.wait_for(T, |i| i.cluster_id.is_some())
        .await
        .expect("cluster id");
    // Brokers 1 and 2 register through a follower (forwarded over the transport).
    let follower = c.nodes.keys().copied().find(|&n| n != leader).unwrap();
    for b in 1..=2 {
        let r = c.nodes[&follower].request(heartbeat(b, b as u128), T).await;
        assert!(
            matches!(r, Ok(ControllerReply::Heartbeat { fenced: false, .. })),
            "{r:?}"
        );
    }
    let term = via.status().term;
    let acl = AclEntry {
        resource_type: 4,
        resource_name: "kafka-cluster".into(),
        pattern_type: 3,
        principal: "User:stranger".into(),
        host: "*".into(),
        operation: 2,
        permission: 3,
    };
    let mut fence = heartbeat(1, 1);
    if let ControllerRequest::Heartbeat(h) = &mut fence {
        h.shutting_down = true;
    }
    let vote = openraft::raft::VoteRequest::new(openraft::Vote::new(term + 5, 99), None);
    let append = openraft::raft::AppendEntriesRequest::<crate::types::TypeConfig> {
        vote: openraft::Vote::new_committed(term + 5, 99),
        prev_log_id: None,
        entries: vec![],
        leader_commit: None,
    };
    let attempts = vec![
        Request::Controller(ControllerRequest::AlterSecurity(MetaCommand::AlterAcls {
            create: vec![acl],
            delete: vec![],
        })),
        Request::Controller(fence),
        Request::Vote(vote),
        Request::AppendEntries(append),
    ];
    for req in &attempts {
        for addr in c.voters.values() {
            let mut s = stranger(addr).await;
            write_frame(&mut s, req).await.unwrap();
            let resp: Response = read_frame(&mut s, MAX_FRAME_BYTES).await.unwrap();
            assert!(
                matches!(&resp, Response::Refused(why) if why.contains("User:stranger")),
                "{resp:?}"
            );
            assert!(closed(&mut s).await, "connection left open after a refusal");
        }
    }
    // A silent peer is dropped at the authentication timeout; an unauthorized one announcing a
    // frame over the limit is closed without it being read.
    let addr = c.voters[&leader].clone();
    let mut silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    assert!(
        closed(&mut silent).await,
        "unauthenticated connection not timed out"
    );
    let mut big = stranger(&addr).await;
    big.write_all(&((UNAUTHORIZED_MAX_FRAME_BYTES as u32 + 1).to_be_bytes()))
        .await
        .unwrap();
    assert!(
        closed(&mut big).await,
        "oversized unauthorized frame not refused"
    );

    // Nothing changed: no ACL, broker 1 not fenced, the same leader and term.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for n in c.nodes.values() {
        let img = n.image();
        assert!(img.acls.is_empty(), "an ACL appeared: {:?}", img.acls);
        assert!(img.brokers.get(&1).is_some_and(|b| !b.fenced));
    }
    assert_eq!(via.status().term, term);
    assert!(via.is_leader());
    // The nodes' own requests still pass.
    via.request(heartbeat(1, 1), T).await.unwrap();
    for id in 1..=3 {
        c.stop(id).await;
    }
}

/// A quorum connection that reaches the wrong node (a Hello meant for another node id, or from
/// another cluster) or does not begin with a Hello is refused and closed, and its Raft request
/// never reaches Raft: the term stays. Stop 90's CI: a port of a stopped node reused by another
/// test's cluster let two quorums talk to each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_meant_for_another_node_or_cluster_are_refused() {
    use network::{read_frame, write_frame, Hello, Request, Response};
    let mut c = Cluster::new(3);
    for id in 1..=3 {
        c.start(id).await;
    }
    let leader = c.leader().await;
    let via = c.nodes[&leader].clone();
    via.wait_for(T, |i| i.cluster_id.is_some())
        .await
        .expect("cluster id");
    let cluster_id = via.image().cluster_id.clone().unwrap();
    let term = via.status().term;
    let vote = Request::Vote(openraft::raft::VoteRequest::new(
        openraft::Vote::new(term + 5, 99),
        None,
    ));
    let other = (1..=3).find(|&n| n != leader).unwrap();
    let hellos = [
        Some(Hello {
            from: 99,
            to: Some(other),
            cluster_id: Some(cluster_id.clone()),
        }),
        Some(Hello {
            from: 99,
            to: Some(leader),
            cluster_id: Some("another-cluster".into()),
        }),
        None,
    ];
    for hello in hellos {
        let mut s = tokio::net::TcpStream::connect(&c.voters[&leader])
            .await
            .unwrap();
        if let Some(h) = &hello {
            write_frame(&mut s, &Request::Hello(h.clone()))
                .await
                .unwrap();
        } else {
            write_frame(&mut s, &vote).await.unwrap();
        }
        let resp: Response = read_frame(&mut s, MAX_FRAME_BYTES).await.unwrap();
        let expected = match &hello {
            Some(h) if h.to == Some(other) => format!("this is node {leader}, not node {other}"),
            Some(_) => "of cluster another-cluster".into(),
            None => "must begin with Hello".into(),
        };
        assert!(
            matches!(&resp, Response::Refused(why) if why.contains(&expected)),
            "{hello:?}: {resp:?}"
        );
        assert!(closed(&mut s).await, "connection left open after a refusal");
    }
    // A Hello meant for this node of this cluster (or from a node not knowing its cluster yet)
    // is admitted.
    for cluster in [Some(cluster_id.clone()), None] {
        let mut s = tokio::net::TcpStream::connect(&c.voters[&leader])
            .await
            .unwrap();
        let hello = Hello {
            from: 99,
            to: Some(leader),
            cluster_id: cluster,
        };
        write_frame(&mut s, &Request::Hello(hello)).await.unwrap();
        let resp: Response = read_frame(&mut s, MAX_FRAME_BYTES).await.unwrap();
        assert!(matches!(resp, Response::Hello), "{resp:?}");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(via.status().term, term, "a refused Vote reached Raft");
    assert!(via.is_leader());
    via.request(heartbeat(1, 1), T).await.unwrap();
    for id in 1..=3 {
        c.stop(id).await;
    }
}

/// Kafka's `Uuid.randomUuid` rule: a new id's text never starts with `-` (tools would read it as
/// an option) and is never the zero id. About 1 in 64 plain random ids starts with `-`, so
/// 20,000 draws would hit one with overwhelming likelihood without the rule.
#[test]
fn random_ids_never_start_with_a_dash() {
    for _ in 0..20_000 {
        let id = controller::random_uuid();
        let text = controller::base64_url(id.as_bytes());
        assert_eq!(text.len(), 22, "{text}");
        assert!(!text.starts_with('-'), "{text}");
        assert!(!id.is_nil());
    }
}

/// Issue 59: a node removed and stopped drops out of DescribeQuorum's observers once it has not
/// acknowledged the leader's entries for Kafka's observer session (5 minutes).
#[test]
fn an_observer_not_heard_from_for_a_session_is_not_listed() {
    let now = 10_000_000;
    assert!(crate::observer_listed(now - 1_000, now));
    assert!(crate::observer_listed(
        now - crate::OBSERVER_SESSION_MS,
        now
    ));
    assert!(!crate::observer_listed(
        now - crate::OBSERVER_SESSION_MS - 1,
        now
    ));
    assert!(
        !crate::observer_listed(-1, now),
        "never heard from since this node leads"
    );
}
