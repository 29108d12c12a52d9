//! Which coordinator a broker asks, here or on another broker (docs/diskless.md, "Leaderless
//! produce"): any broker takes produces and fetches of every diskless partition; it commits and
//! looks up batches at the coordinator loaded on the leader of the `__diskless_coordinator`
//! partition, directly when that is itself, else with a [`wire`](crate::diskless::wire)
//! request in a Kafka Envelope through a [`CoordinatorLink`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use frieda_log::ProducerInfo;
use kafka_protocol::error::ResponseError as E;

use crate::diskless::coordinator::{
    BatchAnswer, CommitBatches, DisklessPartition, Found, Offsets, TxnMarker,
};
use crate::diskless::wire::{self, Answer, Call, CoordinatorRequest};

use super::coordinator::{DisklessCoordinators, HostedCoordinator};

/// How long a remote commit may take: the coordinator's own bound on a write stuck below its
/// high watermark is 5 s.
pub const COMMIT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a remote lookup (FindBatches, Offsets, DeleteRecords) may take.
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest a coordinator holds another broker's long poll ([`Call::Changed`]).
pub const MAX_LONG_POLL: Duration = Duration::from_secs(5);

/// An encoded answer on its way back from another broker.
pub type Reply = Pin<Box<dyn Future<Output = std::io::Result<Bytes>> + Send>>;

/// The broker's way to the other brokers, as the diskless drivers need it: to coordinators, and
/// to the brokers of its rack for blocks of objects (implemented over the cluster's metadata
/// image and broker connections, a layer above).
pub trait CoordinatorLink: Send + Sync {
    /// The broker the latest metadata names leader of `__diskless_coordinator` partition
    /// `index` (`None`: no leader now).
    fn leader_of(&self, index: i32) -> Option<i32>;
    /// This broker's id.
    fn me(&self) -> i32;
    /// The live brokers of this broker's rack, this one among them when it is live (all live
    /// brokers when it names no rack): the ones that share their fetch caches
    /// ([`super::objects`]).
    fn rack_peers(&self) -> Vec<i32>;
    /// Sends an encoded [`CoordinatorRequest`] to broker `to`; the encoded answer, within
    /// `timeout`.
    fn call(&self, to: i32, request: Vec<u8>, timeout: Duration) -> Reply;
}

/// The coordinator a request goes to.
#[derive(Clone)]
pub enum CoordinatorRef {
    /// Loaded on this broker.
    Local(Arc<HostedCoordinator>),
    /// Loaded on broker `broker`, partition `index`.
    Remote {
        /// The way there.
        link: Arc<dyn CoordinatorLink>,
        /// The broker leading the coordinator partition.
        broker: i32,
        /// The coordinator partition.
        index: i32,
    },
}

/// The coordinator of `__diskless_coordinator` partition `index`: the one loaded here, else the
/// partition leader's through `link`.
///
/// Errors: COORDINATOR_LOAD_IN_PROGRESS (14) while this broker leads it but has not loaded it,
/// or no broker leads it; NOT_COORDINATOR (16) without a link (a broker outside a cluster).
pub fn resolve(
    coordinators: &DisklessCoordinators,
    link: Option<&Arc<dyn CoordinatorLink>>,
    index: i32,
) -> Result<CoordinatorRef, E> {
    if let Some(host) = coordinators.get(index) {
        return Ok(CoordinatorRef::Local(host));
    }
    let link = link.ok_or(E::NotCoordinator)?;
    match link.leader_of(index) {
        Some(broker) if broker != link.me() => Ok(CoordinatorRef::Remote {
            link: link.clone(),
            broker,
            index,
        }),
        _ => Err(E::CoordinatorLoadInProgress),
    }
}

/// A coordinator's "not serving it here (yet)" as the partition error clients act on:
/// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and REQUEST_TIMED_OUT (another broker's
/// coordinator not reached) become NOT_LEADER_OR_FOLLOWER (6: they refresh their metadata and
/// retry; a transaction coordinator writes the marker again); other errors stay.
pub fn not_served(e: E) -> E {
    match e {
        E::NotCoordinator | E::CoordinatorLoadInProgress | E::RequestTimedOut => {
            E::NotLeaderOrFollower
        }
        e => e,
    }
}

impl CoordinatorRef {
    /// Whether the coordinator is on another broker.
    pub fn is_remote(&self) -> bool {
        matches!(self, CoordinatorRef::Remote { .. })
    }

    async fn remote(
        link: &Arc<dyn CoordinatorLink>,
        broker: i32,
        index: i32,
        call: Call,
        timeout: Duration,
    ) -> Result<Answer, E> {
        let request = wire::encode_request(&CoordinatorRequest {
            index,
            call: call.clone(),
        });
        let bytes = match link.call(broker, request, timeout).await {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::debug!(broker, error = %e, "a diskless coordinator request failed");
                return Err(E::RequestTimedOut);
            }
        };
        wire::decode_response(&call, &bytes).unwrap_or_else(|e| {
            tracing::warn!(broker, error = %e, "a diskless coordinator answer does not decode");
            Err(E::UnknownServerError)
        })
    }

    /// Commits an uploaded object: one answer per batch.
    ///
    /// Errors: the coordinator's ([`HostedCoordinator::commit`]); REQUEST_TIMED_OUT (7) when the
    /// other broker did not answer (a resend of the commit is answered as the first was).
    pub async fn commit(&self, commit: &CommitBatches) -> Result<Vec<BatchAnswer>, E> {
        match self {
            CoordinatorRef::Local(host) => host.commit(commit).await,
            CoordinatorRef::Remote {
                link,
                broker,
                index,
            } => {
                let call = Call::Commit(commit.clone());
                match Self::remote(link, *broker, *index, call, COMMIT_TIMEOUT).await? {
                    Answer::Committed(a) if a.len() == commit.batches.len() => Ok(a),
                    _ => Err(E::UnknownServerError),
                }
            }
        }
    }

    /// Where the batches of `partition` at `offset` are.
    ///
    /// Errors: [`HostedCoordinator::find_batches`]'s; REQUEST_TIMED_OUT (7) as
    /// [`commit`](Self::commit).
    pub async fn find_batches(
        &self,
        partition: DisklessPartition,
        offset: i64,
        max_bytes: u64,
    ) -> Result<Found, E> {
        match self {
            CoordinatorRef::Local(host) => host.find_batches(partition, offset, max_bytes),
            CoordinatorRef::Remote {
                link,
                broker,
                index,
            } => {
                let call = Call::FindBatches {
                    partition,
                    offset,
                    max_bytes,
                };
                match Self::remote(link, *broker, *index, call, LOOKUP_TIMEOUT).await? {
                    Answer::Found(found) => Ok(found),
                    _ => Err(E::UnknownServerError),
                }
            }
        }
    }

    /// The log start, high watermark and last stable offset of `partition` (all 0 before its
    /// first commit).
    ///
    /// Errors: [`HostedCoordinator::offsets`]'s; REQUEST_TIMED_OUT (7).
    pub async fn offsets(&self, partition: DisklessPartition) -> Result<Offsets, E> {
        match self {
            CoordinatorRef::Local(host) => host.offsets(partition),
            CoordinatorRef::Remote {
                link,
                broker,
                index,
            } => {
                let call = Call::Offsets(partition);
                match Self::remote(link, *broker, *index, call, LOOKUP_TIMEOUT).await? {
                    Answer::Offsets(offsets) => Ok(offsets),
                    _ => Err(E::UnknownServerError),
                }
            }
        }
    }

    /// DeleteRecords of `partition` below `offset` (-1: the high watermark): the new log start.
    ///
    /// Errors: [`HostedCoordinator::delete_records`]'s; REQUEST_TIMED_OUT (7).
    pub async fn delete_records(
        &self,
        partition: DisklessPartition,
        offset: i64,
    ) -> Result<i64, E> {
        match self {
            CoordinatorRef::Local(host) => host.delete_records(partition, offset).await,
            CoordinatorRef::Remote {
                link,
                broker,
                index,
            } => {
                let call = Call::DeleteRecords { partition, offset };
                match Self::remote(link, *broker, *index, call, COMMIT_TIMEOUT).await? {
                    Answer::LogStart(log_start) => Ok(log_start),
                    _ => Err(E::UnknownServerError),
                }
            }
        }
    }

    /// Writes transaction marker `marker` on `partition`: its offset.
    ///
    /// Errors: [`HostedCoordinator::marker`]'s; REQUEST_TIMED_OUT (7) as
    /// [`commit`](Self::commit).
    pub async fn marker(
        &self,
        partition: DisklessPartition,
        marker: TxnMarker,
        bumps_epoch: bool,
    ) -> Result<i64, E> {
        match self {
            CoordinatorRef::Local(host) => host.marker(partition, marker, bumps_epoch).await,
            CoordinatorRef::Remote {
                link,
                broker,
                index,
            } => {
                let call = Call::Marker {
                    partition,
                    marker,
                    bumps_epoch,
                };
                match Self::remote(link, *broker, *index, call, COMMIT_TIMEOUT).await? {
                    Answer::MarkerAt(offset) => Ok(offset),
                    _ => Err(E::UnknownServerError),
                }
            }
        }
    }

    /// A verification token for `producer_id`'s transactional batch at `epoch` on `partition`
    /// (KIP-890).
    ///
    /// Errors: [`HostedCoordinator::begin_verification`]'s; REQUEST_TIMED_OUT (7).
    pub async fn begin_verification(
        &self,
        partition: DisklessPartition,
        producer_id: i64,
        epoch: i16,
        supports_epoch_bump: bool,
    ) -> Result<u64, E> {
        match self {
            CoordinatorRef::Local(host) => {
                host.begin_verification(partition, producer_id, epoch, supports_epoch_bump)
                    .await
            }
            CoordinatorRef::Remote {
                link,
                broker,
                index,
            } => {
                let call = Call::Verify {
                    partition,
                    producer_id,
                    producer_epoch: epoch,
                    supports_epoch_bump,
                };
                match Self::remote(link, *broker, *index, call, COMMIT_TIMEOUT).await? {
                    Answer::Token(token) => Ok(token),
                    _ => Err(E::UnknownServerError),
                }
            }
        }
    }

    /// The coordinator's change count once it differs from `since`, or after `max_wait` (at
    /// most [`MAX_LONG_POLL`]): a long poll for the fetches waiting on this broker.
    ///
    /// Errors: REQUEST_TIMED_OUT (7) when the other broker did not answer in time; its own.
    pub async fn changed_since(&self, since: u64, max_wait: Duration) -> Result<u64, E> {
        let max_wait = max_wait.min(MAX_LONG_POLL);
        match self {
            CoordinatorRef::Local(host) => Ok(host.changed_since(since, max_wait).await),
            CoordinatorRef::Remote {
                link,
                broker,
                index,
            } => {
                let call = Call::Changed {
                    since,
                    max_wait_ms: max_wait.as_millis() as u32,
                };
                let timeout = max_wait + LOOKUP_TIMEOUT;
                match Self::remote(link, *broker, *index, call, timeout).await? {
                    Answer::Changes(count) => Ok(count),
                    _ => Err(E::UnknownServerError),
                }
            }
        }
    }

    /// The producers `partition` remembers (DescribeProducers, KIP-664); none before its first
    /// commit.
    ///
    /// Errors: [`HostedCoordinator::producers`]'s; REQUEST_TIMED_OUT (7).
    pub async fn producers(&self, partition: DisklessPartition) -> Result<Vec<ProducerInfo>, E> {
        match self {
            CoordinatorRef::Local(host) => host.producers(partition),
            CoordinatorRef::Remote {
                link,
                broker,
                index,
            } => {
                let call = Call::Producers(partition);
                match Self::remote(link, *broker, *index, call, LOOKUP_TIMEOUT).await? {
                    Answer::Producers(producers) => Ok(producers),
                    _ => Err(E::UnknownServerError),
                }
            }
        }
    }
}

/// Serves a [`CoordinatorRequest`] from another broker with the coordinator loaded here.
///
/// Errors: NOT_COORDINATOR (16) when partition `index` is not loaded here (the asker looks up
/// the leader again); the coordinator's.
pub async fn serve(
    coordinators: &DisklessCoordinators,
    request: CoordinatorRequest,
) -> Result<Answer, E> {
    let host = coordinators.get(request.index).ok_or(E::NotCoordinator)?;
    match request.call {
        Call::Commit(commit) => host.commit(&commit).await.map(Answer::Committed),
        Call::FindBatches {
            partition,
            offset,
            max_bytes,
        } => host
            .find_batches(partition, offset, max_bytes)
            .map(Answer::Found),
        Call::Offsets(partition) => host.offsets(partition).map(Answer::Offsets),
        Call::DeleteRecords { partition, offset } => host
            .delete_records(partition, offset)
            .await
            .map(Answer::LogStart),
        Call::Marker {
            partition,
            marker,
            bumps_epoch,
        } => host
            .marker(partition, marker, bumps_epoch)
            .await
            .map(Answer::MarkerAt),
        Call::Producers(partition) => host.producers(partition).map(Answer::Producers),
        Call::Verify {
            partition,
            producer_id,
            producer_epoch,
            supports_epoch_bump,
        } => host
            .begin_verification(partition, producer_id, producer_epoch, supports_epoch_bump)
            .await
            .map(Answer::Token),
        Call::Changed { since, max_wait_ms } => Ok(Answer::Changes(
            host.changed_since(
                since,
                Duration::from_millis(u64::from(max_wait_ms)).min(MAX_LONG_POLL),
            )
            .await,
        )),
        // not a coordinator's: `Diskless::serve` answers it before coming here
        Call::Block { .. } => Err(E::InvalidRequest),
    }
}
