//! The quorum's replicated state machine: the [`MetadataImage`], updated by applying committed
//! commands in log order and published to the broker through a watch channel after each applied
//! batch. Snapshots are the image as JSON (`snapshot.json`, written durably), so a restarted node
//! or a new one starts from the snapshot and replays only the log after it.

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::Arc;

use openraft::storage::{RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{
    BasicNode, EntryPayload, LogId, RaftSnapshotBuilder, StorageError, StorageIOError,
    StoredMembership,
};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::image::{MetaOutcome, MetadataImage};
use crate::types::{Entry, MetaResponse, TypeConfig};
use crate::{durable_write, read_json};

type NodeId = u64;

/// What a snapshot holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta<NodeId, BasicNode>,
    image: MetadataImage,
}

struct State {
    image: MetadataImage,
    last_applied: Option<LogId<NodeId>>,
    membership: StoredMembership<NodeId, BasicNode>,
    snapshot: Option<StoredSnapshot>,
    snapshots_built: u64,
}

/// The state machine (openraft's `RaftStateMachine`); cheap to clone.
#[derive(Clone)]
pub struct StateMachine {
    state: Arc<Mutex<State>>,
    path: PathBuf,
    /// The last log id of the snapshot in `snapshot.json`; held while the file is written, so a
    /// snapshot built from an older image (openraft builds in a task of its own) never replaces
    /// a newer one installed meanwhile.
    stored: Arc<Mutex<Option<LogId<NodeId>>>>,
    published: Arc<watch::Sender<Arc<MetadataImage>>>,
}

impl StateMachine {
    /// Opens the state machine of `dir`, starting from its snapshot if there is one, and
    /// publishing images on `published`.
    ///
    /// Errors: the snapshot file exists but cannot be read.
    pub fn open(
        dir: &std::path::Path,
        published: Arc<watch::Sender<Arc<MetadataImage>>>,
    ) -> anyhow::Result<StateMachine> {
        let path = dir.join("snapshot.json");
        let snapshot: Option<StoredSnapshot> = read_json(&path)?;
        let state = match &snapshot {
            Some(s) => State {
                image: s.image.clone(),
                last_applied: s.meta.last_log_id,
                membership: s.meta.last_membership.clone(),
                snapshot: snapshot.clone(),
                snapshots_built: 0,
            },
            None => State {
                image: MetadataImage::default(),
                last_applied: None,
                membership: StoredMembership::default(),
                snapshot: None,
                snapshots_built: 0,
            },
        };
        published.send_replace(Arc::new(state.image.clone()));
        Ok(StateMachine {
            stored: Arc::new(Mutex::new(state.last_applied)),
            state: Arc::new(Mutex::new(state)),
            path,
            published,
        })
    }

    /// Writes `snap` to `snapshot.json` unless the file holds a newer one.
    fn store(&self, snap: &StoredSnapshot) -> std::io::Result<()> {
        let mut stored = self.stored.lock();
        if *stored > snap.meta.last_log_id {
            return Ok(());
        }
        durable_write(&self.path, snap)?;
        *stored = snap.meta.last_log_id;
        Ok(())
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let snap = {
            let mut st = self.state.lock();
            st.snapshots_built += 1;
            let id = match st.last_applied {
                Some(l) => format!("{}-{}-{}", l.leader_id, l.index, st.snapshots_built),
                None => format!("none-{}", st.snapshots_built),
            };
            let snap = StoredSnapshot {
                meta: SnapshotMeta {
                    last_log_id: st.last_applied,
                    last_membership: st.membership.clone(),
                    snapshot_id: id,
                },
                image: st.image.clone(),
            };
            let older = st
                .snapshot
                .as_ref()
                .is_some_and(|s| s.meta.last_log_id > snap.meta.last_log_id);
            if !older {
                st.snapshot = Some(snap.clone());
            }
            snap
        };
        self.store(&snap)
            .map_err(|e| StorageIOError::write_snapshot(Some(snap.meta.signature()), &e))?;
        let data = serde_json::to_vec(&snap.image)
            .map_err(|e| StorageIOError::write_snapshot(Some(snap.meta.signature()), &e))?;
        Ok(Snapshot {
            meta: snap.meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>), StorageError<NodeId>>
    {
        let st = self.state.lock();
        Ok((st.last_applied, st.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<MetaResponse>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + openraft::OptionalSend,
        I::IntoIter: openraft::OptionalSend,
    {
        let mut out = Vec::new();
        let image = {
            let mut st = self.state.lock();
            for e in entries {
                st.last_applied = Some(e.log_id);
                st.image
                    .note_leader(e.log_id.leader_id.term, e.log_id.leader_id.node_id);
                out.push(match e.payload {
                    EntryPayload::Blank => Ok(MetaOutcome::Done),
                    EntryPayload::Normal(cmd) => {
                        let r = st.image.apply(&cmd, e.log_id.index);
                        if let Err(err) = &r {
                            tracing::debug!(index = e.log_id.index, ?cmd, error = %err, "metadata command refused");
                        }
                        r
                    }
                    EntryPayload::Membership(m) => {
                        st.membership = StoredMembership::new(Some(e.log_id), m);
                        Ok(MetaOutcome::Done)
                    }
                });
            }
            Arc::new(st.image.clone())
        };
        self.published.send_replace(image);
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<NodeId>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<NodeId>> {
        let image: MetadataImage = serde_json::from_slice(snapshot.get_ref())
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &e))?;
        let snap = StoredSnapshot {
            meta: meta.clone(),
            image: image.clone(),
        };
        self.store(&snap)
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &e))?;
        {
            let mut st = self.state.lock();
            st.image = image.clone();
            st.last_applied = meta.last_log_id;
            st.membership = meta.last_membership.clone();
            st.snapshot = Some(snap);
        }
        self.published.send_replace(Arc::new(image));
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let snap = self.state.lock().snapshot.clone();
        match snap {
            None => Ok(None),
            Some(s) => {
                let data = serde_json::to_vec(&s.image)
                    .map_err(|e| StorageIOError::read_snapshot(Some(s.meta.signature()), &e))?;
                Ok(Some(Snapshot {
                    meta: s.meta,
                    snapshot: Box::new(Cursor::new(data)),
                }))
            }
        }
    }
}
