//! openraft's type configuration for the metadata quorum: commands are [`MetaCommand`]s, answers
//! [`MetaResponse`]s, nodes are `u64` ids with the address of their controller listener.

use std::io::Cursor;

use crate::image::{MetaCommand, MetaError, MetaOutcome};

/// What applying one command gave: its outcome, or why the image refused it.
pub type MetaResponse = Result<MetaOutcome, MetaError>;

openraft::declare_raft_types!(
    /// The quorum's Raft types.
    pub TypeConfig:
        D = MetaCommand,
        R = MetaResponse,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = crate::runtime::QuorumRuntime,
);

/// A Raft log entry of the quorum.
pub type Entry = openraft::Entry<TypeConfig>;
/// The Raft handle of the quorum.
pub type Raft = openraft::Raft<TypeConfig>;
