//! The metadata quorum's own code, for a deterministic simulation (`frieda-sim quorum`): a
//! node is the broker's Raft configuration, metadata log (`LogStore`), state machine and
//! [`Controller`] (which answers AddRaftVoter and RemoveRaftVoter, KIP-853), started by the same
//! `open_raft` and `propose_initial_voters` as
//! [`MetadataQuorum::start`](crate::MetadataQuorum::start), over a network the simulator
//! supplies instead of the controller listener. Run it on a current-thread tokio runtime with paused time and
//! [`seed_thread_rng`](crate::seed_thread_rng) called on that thread, and a seed replays.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::controller::{Controller, ControllerConfig};
use crate::image::MetadataImage;
use crate::leadership::PlacementConfig;
use crate::{ControllerError, ControllerReply, ControllerRequest};

pub use crate::types::{Raft, TypeConfig};
/// The openraft the quorum is built on, for the simulator's `RaftNetworkFactory`.
pub use openraft;

/// Timing of a simulated node's Raft, ms.
#[derive(Debug, Clone, Copy)]
pub struct SimTiming {
    /// `controller.quorum.election.timeout.ms` (the maximum is twice it).
    pub election_timeout_ms: u64,
    /// Raft heartbeat interval.
    pub heartbeat_interval_ms: u64,
    /// Log entries between two snapshots (the broker: 5,000).
    pub snapshot_every: u64,
    /// Log entries kept behind a snapshot (the broker: 1,000); a member further behind
    /// catches up from the snapshot.
    pub logs_kept_behind_snapshot: u64,
}

/// One node of a simulated quorum.
pub struct SimNode {
    /// Its Raft node.
    pub raft: Raft,
    /// The controller duties it answers requests with while it leads.
    pub controller: Arc<Controller>,
    /// The images its state machine applies.
    pub image: watch::Receiver<Arc<MetadataImage>>,
}

impl SimNode {
    /// Starts node `node_id` on the data in `dir` (empty on its first start) over `network`.
    /// A node of `voters` on its first start proposes them as the initial membership, as
    /// [`MetadataQuorum::start`](crate::MetadataQuorum::start) does (`controller.quorum.voters`);
    /// any other starts as an observer, which a voter change may add.
    ///
    /// Errors: the data cannot be opened.
    pub async fn start<N: openraft::network::RaftNetworkFactory<TypeConfig>>(
        node_id: u64,
        dir: &Path,
        voters: &BTreeMap<u64, String>,
        network: N,
        timing: SimTiming,
    ) -> anyhow::Result<SimNode> {
        let config = crate::raft_config(
            timing.election_timeout_ms,
            timing.heartbeat_interval_ms,
            timing.snapshot_every,
            timing.logs_kept_behind_snapshot,
        )?;
        let (raft, image, fresh) = crate::open_raft(node_id, dir, config, network).await?;
        let controller = Arc::new(Controller::new(
            raft.clone(),
            node_id,
            image.clone(),
            Arc::default(),
            ControllerConfig {
                session_timeout: Duration::from_secs(9),
                leader_rebalance_interval: None,
                leader_imbalance_percentage: 10,
                placement: PlacementConfig::default(),
                unclean_leader_election: false,
                min_insync_replicas: 1,
                quorum_acks: false,
            },
        ));
        crate::propose_initial_voters(&raft, node_id, voters, fresh);
        Ok(SimNode {
            raft,
            controller,
            image,
        })
    }

    /// Answers `req` as the active controller would (NotController elsewhere).
    ///
    /// Errors: see [`Controller::handle`].
    pub async fn handle(&self, req: ControllerRequest) -> Result<ControllerReply, ControllerError> {
        self.controller.handle(req).await
    }
}
