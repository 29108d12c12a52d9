//! A broker's append path for diskless partitions, driven (build plan step 4's driver): the
//! sans-IO [`AppendTask`] with its PUTs going to the bucket and its commits to the batch
//! coordinator, loaded here or on another broker ([`super::route`]). Produces wait on a channel
//! for their batches' answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::error::ResponseError as E;
use parking_lot::Mutex;
use tokio::sync::{oneshot, Notify};

use crate::clock::now_ms;
use crate::diskless::append::{
    Action, AppendConfig, AppendError, AppendTask, ProducedBatch, RequestId,
};
use crate::diskless::coordinator::{BatchAnswer, CommitBatches, ObjectId};

use super::coordinator::DisklessCoordinators;
use super::objects::ObjectReader;
use super::route::{resolve, CoordinatorLink};

/// How long a commit waits before it is sent again after the coordinator answered that it is
/// loading or busy.
const COMMIT_RETRY: Duration = Duration::from_millis(50);

/// The broker's diskless append path.
pub struct Appender {
    task: Mutex<AppendTask>,
    waiters: Mutex<HashMap<RequestId, oneshot::Sender<Vec<BatchAnswer>>>>,
    next_request: AtomicU64,
    /// Wakes the timer loop when a produce opened a buffer.
    wake: Notify,
    /// The bucket (its `store()`) and the fetch cache, which takes each object uploaded.
    objects: Arc<ObjectReader>,
    coordinators: Arc<DisklessCoordinators>,
    link: Option<Arc<dyn CoordinatorLink>>,
    /// `diskless.commit.max.age.ms`: a commit still unanswered (its coordinator loading or
    /// busy) when its object is this old is given up: its batches are answered
    /// REQUEST_TIMED_OUT and their producers resend (the coordinator refuses it from then on).
    commit_max_age_ms: i64,
}

impl Appender {
    /// An append path uploading to the bucket of `objects` (and into its fetch cache) and
    /// committing to `coordinators` (or, through `link`, to the coordinator on another
    /// broker); call [`run`](Self::run) on a task.
    pub fn new(
        config: AppendConfig,
        objects: Arc<ObjectReader>,
        coordinators: Arc<DisklessCoordinators>,
        link: Option<Arc<dyn CoordinatorLink>>,
        commit_max_age_ms: i64,
    ) -> Arc<Appender> {
        Arc::new(Appender {
            task: Mutex::new(AppendTask::new(config)),
            waiters: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            wake: Notify::new(),
            objects,
            coordinators,
            link,
            commit_max_age_ms,
        })
    }

    /// Takes a produce's batches; the receiver gets one answer per batch, in order.
    ///
    /// Errors: [`AppendError::Full`] while the buffers are full (nothing taken).
    pub fn produce(
        self: &Arc<Self>,
        batches: Vec<ProducedBatch>,
    ) -> Result<oneshot::Receiver<Vec<BatchAnswer>>, AppendError> {
        let request = self.next_request.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiters.lock().insert(request, tx);
        let actions = match self.task.lock().produce(now_ms(), request, batches) {
            Ok(actions) => actions,
            Err(e) => {
                self.waiters.lock().remove(&request);
                return Err(e);
            }
        };
        self.execute(actions);
        self.wake.notify_one();
        Ok(rx)
    }

    /// Runs the commit-interval timer until the runtime stops.
    pub async fn run(self: Arc<Self>) {
        loop {
            let deadline = self.task.lock().next_deadline();
            match deadline {
                Some(at) => {
                    let wait = (at - now_ms()).max(0) as u64;
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(wait)) => {}
                        _ = self.wake.notified() => {}
                    }
                }
                None => self.wake.notified().await,
            }
            let actions = self.task.lock().tick(now_ms());
            self.execute(actions);
        }
    }

    fn execute(self: &Arc<Self>, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Upload { object, body } => {
                    let me = self.clone();
                    tokio::spawn(async move {
                        let store = me.objects.store();
                        let key = store.wal_key(object.0);
                        let ok = match store.put(&key, body.clone()).await {
                            Ok(()) => {
                                me.objects.cache_uploaded(object, &body);
                                true
                            }
                            Err(e) => {
                                tracing::warn!(object = %object.0, error = %e,
                                    "uploading a diskless object failed");
                                false
                            }
                        };
                        let next = me.task.lock().uploaded(object, ok);
                        me.execute(next);
                    });
                }
                Action::Commit(commit) => {
                    let me = self.clone();
                    tokio::spawn(async move { me.commit(commit).await });
                }
                Action::Answer { request, answers } => {
                    if let Some(tx) = self.waiters.lock().remove(&request) {
                        let _ = tx.send(answers);
                    }
                }
            }
        }
    }

    async fn commit(self: Arc<Self>, commit: CommitBatches) {
        let object: ObjectId = commit.object;
        let result = match resolve(&self.coordinators, self.link.as_ref(), 0) {
            Ok(coordinator) => coordinator.commit(&commit).await,
            Err(e) => Err(e),
        };
        let next = match result {
            Ok(answers) => self.task.lock().committed(object, &answers),
            // Not loaded (yet), moved, or not reached: the commit is sent again (to the leader
            // the metadata names then) until the commit-age bound; a commit the coordinator did
            // decide is answered again as it was.
            Err(E::CoordinatorLoadInProgress | E::RequestTimedOut | E::NotCoordinator)
                if now_ms() - object.created_ms() > self.commit_max_age_ms =>
            {
                tracing::warn!(object = %object.0,
                    "a diskless commit found no serving coordinator within the commit-age bound");
                self.task.lock().commit_refused(object, E::RequestTimedOut)
            }
            Err(E::CoordinatorLoadInProgress | E::RequestTimedOut | E::NotCoordinator) => {
                tokio::time::sleep(COMMIT_RETRY).await;
                self.task.lock().commit_failed(object)
            }
            Err(e) => self.task.lock().commit_refused(object, e),
        };
        self.execute(next);
    }
}
