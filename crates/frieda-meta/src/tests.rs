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
}

impl Cluster {
    fn new(n: u64) -> Cluster {
        let voters = (1..=n)
            .map(|id| (id, format!("127.0.0.1:{}", free_port())))
            .collect();
        Cluster {
            dirs: (0..n).map(|_| tempfile::tempdir().unwrap()).collect(),
            voters,
            nodes: BTreeMap::new(),
        }
    }

    async fn start(&mut self, id: u64) {
        let addr = self.voters[&id].clone();
        let cfg = QuorumConfig {
            node_id: id,
            voters: self.voters.clone(),
            listen: addr.parse().unwrap(),
            advertised: addr,
            dir: self.dirs[(id - 1) as usize].path().join("meta"),
            election_timeout_ms: 300,
            heartbeat_interval_ms: 100,
            broker_session_timeout_ms: 1500,
            leader_rebalance_interval_ms: None,
            leader_imbalance_percentage: 10,
            unclean_leader_election: false,
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
