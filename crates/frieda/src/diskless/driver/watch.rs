//! Long polls of the batch coordinator for the fetches waiting on this broker (docs/diskless.md,
//! "The read path", step 2's wait). A fetch of diskless partitions that finds fewer than its
//! `min_bytes` waits for the coordinator to change instead of asking it again every few
//! milliseconds: on the coordinator's broker it waits on the hosted coordinator's change count
//! ([`super::coordinator::HostedCoordinator::changes`]); elsewhere on this broker's mirror of
//! it, which one task keeps by long-polling the coordinator (`wire::Call::Changed`, held there
//! up to [`LONG_POLL`]) while any fetch waits. One held request per broker however many
//! fetches wait, on the broker connections the commits use, so a waiting fetch does not hold
//! a connection of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::{watch, Notify};

use super::route::CoordinatorRef;
use super::{coordinator_partition_for, Diskless};
use crate::diskless::coordinator::DisklessPartition;

/// How long the coordinator holds one long poll.
pub const LONG_POLL: Duration = Duration::from_secs(1);

/// After a failed long poll (the coordinator's broker down, an older build refusing it), the
/// waiting fetches are woken and the next poll waits this long: they look again about as
/// often as before long polls.
pub const RETRY: Duration = Duration::from_millis(25);

/// How long the poller sleeps between looks while no fetch waits (it wakes at once when one
/// starts) or the coordinator is not on another broker.
const IDLE: Duration = Duration::from_millis(500);

/// This broker's mirror of a coordinator on another broker.
pub struct CoordinatorWatch {
    /// Moves whenever the long poll learns of a change, or fails.
    mirror: watch::Sender<u64>,
    /// Wakes the poller when a fetch starts waiting.
    interest: Notify,
    /// Whether the poller task runs.
    started: AtomicBool,
}

impl Default for CoordinatorWatch {
    fn default() -> Self {
        CoordinatorWatch {
            mirror: watch::channel(0).0,
            interest: Notify::new(),
            started: AtomicBool::new(false),
        }
    }
}

impl CoordinatorWatch {
    /// A receiver that sees a new value once the coordinator of `service` (on another broker)
    /// changed, or a long poll failed; starts the poller on first use.
    pub fn subscribe(self: &Arc<Self>, service: &Arc<Diskless>) -> watch::Receiver<u64> {
        let rx = self.mirror.subscribe();
        if !self.started.swap(true, Ordering::AcqRel) {
            tokio::spawn(poll(self.clone(), Arc::downgrade(service)));
        }
        self.interest.notify_one();
        rx
    }
}

/// What a waiting fetch of diskless partitions waits on: the coordinator's changes, loaded
/// here or mirrored from another broker (`None`: no coordinator serves now; it looks again
/// after a short sleep).
pub fn changes(service: &Arc<Diskless>) -> Option<watch::Receiver<u64>> {
    match coordinator(service) {
        Ok(CoordinatorRef::Local(host)) => Some(host.changes()),
        Ok(CoordinatorRef::Remote { .. }) => Some(service.watch.subscribe(service)),
        Err(_) => None,
    }
}

/// The coordinator of every diskless partition (one `__diskless_coordinator` partition for
/// now), here or on another broker.
fn coordinator(service: &Diskless) -> Result<CoordinatorRef, kafka_protocol::error::ResponseError> {
    let any = DisklessPartition {
        topic_id: uuid::Uuid::nil(),
        partition: 0,
    };
    debug_assert_eq!(
        coordinator_partition_for(any),
        0,
        "one coordinator partition"
    );
    service.coordinator(any)
}

/// While the service lives: while a fetch waits on the mirror and the coordinator is on
/// another broker, long-polls it and moves the mirror on each change.
async fn poll(watch: Arc<CoordinatorWatch>, service: Weak<Diskless>) {
    let mut since = 0u64;
    loop {
        if watch.mirror.receiver_count() == 0 {
            tokio::select! {
                _ = watch.interest.notified() => {}
                _ = tokio::time::sleep(IDLE) => {}
            }
            if service.strong_count() == 0 {
                return;
            }
            continue;
        }
        let Some(d) = service.upgrade() else {
            return;
        };
        let found = coordinator(&d);
        drop(d); // not held through the long poll
        match found {
            Ok(remote @ CoordinatorRef::Remote { .. }) => {
                match remote.changed_since(since, LONG_POLL).await {
                    Ok(count) if count == since => {}
                    Ok(count) => {
                        since = count;
                        watch.mirror.send_modify(|v| *v = v.wrapping_add(1));
                    }
                    Err(e) => {
                        tracing::debug!(error = ?e, "a long poll of the diskless coordinator failed");
                        watch.mirror.send_modify(|v| *v = v.wrapping_add(1));
                        tokio::time::sleep(RETRY).await;
                    }
                }
            }
            // loaded here now, or nowhere: the waiting fetches look again themselves
            _ => {
                watch.mirror.send_modify(|v| *v = v.wrapping_add(1));
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}
