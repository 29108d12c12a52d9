//! A broker's append path for diskless partitions (docs/diskless.md, "The write path", build
//! plan step 4), sans-IO: produced batches of many partitions are buffered, closed into one
//! object at the commit interval or the byte bound, uploaded, and committed to the batch
//! coordinator one object at a time in the order the objects were closed; a produce is answered
//! only once every batch of it has the coordinator's answer.
//!
//! Events come in as calls ([`AppendTask::produce`], [`AppendTask::tick`],
//! [`AppendTask::uploaded`], [`AppendTask::committed`], [`AppendTask::commit_failed`]); what to
//! do comes out as [`Action`]s (PUT an object, send a commit, answer a produce). Time is an
//! argument (ms); object ids are made here from the broker id, a counter and the close time, so
//! a seeded simulation replays exactly.
//!
//! Invariants (asserted): commits leave in close order, at most one at a time; a produce is
//! answered once, after the commits of all its batches; at most `max_uploads` PUTs in flight;
//! buffered plus uploading bytes stay within `max_buffered_bytes` (a produce beyond is refused
//! for its connection to wait).

use super::coordinator::{BatchAnswer, CommitBatches, CommittedBatch, DisklessPartition, ObjectId};
use bytes::{Bytes, BytesMut};
use frieda_log::BatchHeader;
use kafka_protocol::error::ResponseError as E;
use std::collections::{HashMap, VecDeque};
use uuid::Uuid;

/// Settings (docs/diskless.md, "What a user gets").
#[derive(Debug, Clone)]
pub struct AppendConfig {
    /// This broker's id (in object ids and commits).
    pub broker_id: i32,
    /// `diskless.append.commit.interval.ms`: the longest a batch waits in the open buffer (ms).
    pub commit_interval_ms: i64,
    /// `diskless.append.buffer.max.bytes`: an open buffer this full is closed at once (bytes).
    pub buffer_max_bytes: usize,
    /// PUTs in flight at most; closed objects beyond wait for one to finish.
    pub max_uploads: usize,
    /// `diskless.append.upload.max.attempts`: PUT attempts before the object's batches are
    /// refused KAFKA_STORAGE_ERROR.
    pub upload_max_attempts: u32,
    /// Bytes buffered and uploading at most; a produce beyond is refused until some go.
    pub max_buffered_bytes: usize,
}

impl Default for AppendConfig {
    fn default() -> Self {
        AppendConfig {
            broker_id: 0,
            commit_interval_ms: 250,
            buffer_max_bytes: 8 << 20,
            max_uploads: 4,
            upload_max_attempts: 3,
            max_buffered_bytes: 5 * (8 << 20),
        }
    }
}

/// A produce request's id, the caller's (unique while it waits).
pub type RequestId = u64;

/// One batch of a produce: its partition, its bytes (a whole validated v2 batch) and header.
#[derive(Debug, Clone)]
pub struct ProducedBatch {
    /// Its partition.
    pub partition: DisklessPartition,
    /// The whole batch as validated.
    pub bytes: Bytes,
    /// Its header.
    pub header: BatchHeader,
    /// Its verification token from the batch coordinator (transactional batches; see
    /// [`CommittedBatch::verification`]).
    pub verification: Option<u64>,
}

/// What the broker does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// PUT `body` as `object` (then call [`AppendTask::uploaded`]).
    Upload {
        /// The object.
        object: ObjectId,
        /// Its bytes.
        body: Bytes,
    },
    /// Send this commit to the batch coordinator (then [`AppendTask::committed`] or
    /// [`AppendTask::commit_failed`]).
    Commit(CommitBatches),
    /// Answer produce `request`: one answer per batch, in the order it gave them.
    Answer {
        /// The request.
        request: RequestId,
        /// Per batch.
        answers: Vec<BatchAnswer>,
    },
}

/// Why a produce is not taken now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AppendError {
    /// The buffers are full: the connection waits and tries again.
    #[error("diskless append buffers are full")]
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Closed, waiting for a PUT slot.
    Waiting,
    /// PUT in flight (attempt number, from 1).
    Uploading(u32),
    /// Stored; waiting for its turn to commit.
    Uploaded,
    /// Its commit is in flight.
    Committing,
}

#[derive(Debug)]
struct Slot {
    request: RequestId,
    index: usize,
}

#[derive(Debug)]
struct Closed {
    commit: CommitBatches,
    body: Bytes,
    slots: Vec<Slot>,
    stage: Stage,
}

#[derive(Debug, Default)]
struct Open {
    first_at_ms: i64,
    batches: Vec<(Slot, ProducedBatch)>,
    bytes: usize,
}

#[derive(Debug)]
struct Waiting {
    answers: Vec<Option<BatchAnswer>>,
    left: usize,
}

/// The append path of one broker.
#[derive(Debug)]
pub struct AppendTask {
    config: AppendConfig,
    open: Open,
    /// Closed objects, in close order (= commit order).
    closed: VecDeque<Closed>,
    requests: HashMap<RequestId, Waiting>,
    next_object: u64,
    /// Bytes in `open` and `closed`.
    held_bytes: usize,
}

impl AppendTask {
    /// An idle task.
    pub fn new(config: AppendConfig) -> AppendTask {
        AppendTask {
            config,
            open: Open::default(),
            closed: VecDeque::new(),
            requests: HashMap::new(),
            next_object: 0,
            held_bytes: 0,
        }
    }

    /// Takes produce `request`'s batches into the open buffer (all of them, or none); closes
    /// the buffer if it reached its byte bound. An empty produce is answered at once.
    ///
    /// Errors: [`AppendError::Full`] (nothing taken) when the held bytes would pass
    /// `max_buffered_bytes` (a produce larger than that alone is taken when nothing is held).
    pub fn produce(
        &mut self,
        now_ms: i64,
        request: RequestId,
        batches: Vec<ProducedBatch>,
    ) -> Result<Vec<Action>, AppendError> {
        assert!(
            !self.requests.contains_key(&request),
            "request id reused while waiting"
        );
        if batches.is_empty() {
            return Ok(vec![Action::Answer {
                request,
                answers: Vec::new(),
            }]);
        }
        let bytes: usize = batches.iter().map(|b| b.bytes.len()).sum();
        if self.held_bytes > 0 && self.held_bytes + bytes > self.config.max_buffered_bytes {
            return Err(AppendError::Full);
        }
        if self.open.batches.is_empty() {
            self.open.first_at_ms = now_ms;
        }
        self.requests.insert(
            request,
            Waiting {
                answers: vec![None; batches.len()],
                left: batches.len(),
            },
        );
        for (index, b) in batches.into_iter().enumerate() {
            self.open.batches.push((Slot { request, index }, b));
        }
        self.open.bytes += bytes;
        self.held_bytes += bytes;
        let mut out = Vec::new();
        if self.open.bytes >= self.config.buffer_max_bytes {
            self.close(now_ms, &mut out);
        }
        Ok(out)
    }

    /// Time passes: an open buffer older than the commit interval is closed.
    pub fn tick(&mut self, now_ms: i64) -> Vec<Action> {
        let mut out = Vec::new();
        if !self.open.batches.is_empty()
            && now_ms - self.open.first_at_ms >= self.config.commit_interval_ms
        {
            self.close(now_ms, &mut out);
        }
        out
    }

    /// The ms until the open buffer is due to close (None: nothing open).
    pub fn next_deadline(&self) -> Option<i64> {
        (!self.open.batches.is_empty())
            .then(|| self.open.first_at_ms + self.config.commit_interval_ms)
    }

    fn new_object_id(&mut self, now_ms: i64) -> ObjectId {
        // UUIDv7's layout: the close time (ms) in the top 48 bits, version 7, variant 0b10;
        // the broker id and this task's counter in the rest, so ids are unique per broker.
        self.next_object += 1;
        let ms = (now_ms.max(0) as u128) & ((1 << 48) - 1);
        let rand_a = u128::from(self.next_object >> 50) & 0xfff;
        let rand_b = (u128::from(self.config.broker_id as u32) << 30)
            | u128::from(self.next_object & ((1 << 30) - 1));
        let v =
            (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | (rand_b & ((1 << 62) - 1));
        ObjectId(Uuid::from_u128(v))
    }

    fn close(&mut self, now_ms: i64, out: &mut Vec<Action>) {
        let mut batches = std::mem::take(&mut self.open.batches);
        let bytes = std::mem::take(&mut self.open.bytes);
        // a partition's batches byte-contiguous and in the order they came (a stable sort)
        batches.sort_by_key(|(_, b)| b.partition);
        let object = self.new_object_id(now_ms);
        let mut body = BytesMut::with_capacity(bytes);
        let mut committed = Vec::with_capacity(batches.len());
        let mut slots = Vec::with_capacity(batches.len());
        for (slot, b) in batches {
            committed.push(CommittedBatch {
                partition: b.partition,
                byte_offset: body.len() as u32,
                byte_len: b.bytes.len() as u32,
                header: b.header,
                verification: b.verification,
            });
            body.extend_from_slice(&b.bytes);
            slots.push(slot);
        }
        self.closed.push_back(Closed {
            commit: CommitBatches {
                object,
                object_size: body.len() as u64,
                uploader: self.config.broker_id,
                batches: committed,
            },
            body: body.freeze(),
            slots,
            stage: Stage::Waiting,
        });
        self.start_uploads(out);
    }

    fn start_uploads(&mut self, out: &mut Vec<Action>) {
        let mut in_flight = self
            .closed
            .iter()
            .filter(|c| matches!(c.stage, Stage::Uploading(_)))
            .count();
        for c in self.closed.iter_mut() {
            if in_flight >= self.config.max_uploads {
                break;
            }
            if c.stage == Stage::Waiting {
                c.stage = Stage::Uploading(1);
                in_flight += 1;
                out.push(Action::Upload {
                    object: c.commit.object,
                    body: c.body.clone(),
                });
            }
        }
    }

    /// A PUT finished (`ok`: stored). A failed one is tried again up to
    /// `upload_max_attempts`, then the object's batches are refused KAFKA_STORAGE_ERROR.
    pub fn uploaded(&mut self, object: ObjectId, ok: bool) -> Vec<Action> {
        let mut out = Vec::new();
        let Some(at) = self.closed.iter().position(|c| c.commit.object == object) else {
            return out;
        };
        let Stage::Uploading(attempt) = self.closed[at].stage else {
            return out;
        };
        if ok {
            self.closed[at].stage = Stage::Uploaded;
        } else if attempt < self.config.upload_max_attempts {
            self.closed[at].stage = Stage::Uploading(attempt + 1);
            out.push(Action::Upload {
                object,
                body: self.closed[at].body.clone(),
            });
        } else if let Some(c) = self.closed.remove(at) {
            self.held_bytes -= c.body.len();
            let refused = vec![BatchAnswer::Refused(E::KafkaStorageError); c.slots.len()];
            self.settle(&c.slots, &refused, &mut out);
        }
        self.start_uploads(&mut out);
        self.next_commit(&mut out);
        out
    }

    fn next_commit(&mut self, out: &mut Vec<Action>) {
        if let Some(front) = self.closed.front_mut() {
            if front.stage == Stage::Uploaded {
                front.stage = Stage::Committing;
                out.push(Action::Commit(front.commit.clone()));
            }
        }
    }

    /// The coordinator answered the commit of `object` (one answer per batch, as committed).
    pub fn committed(&mut self, object: ObjectId, answers: &[BatchAnswer]) -> Vec<Action> {
        let mut out = Vec::new();
        let front = self.closed.front();
        if front.is_none_or(|c| c.commit.object != object || c.stage != Stage::Committing) {
            tracing::warn!(?object, "an answer for a commit not in flight: ignored");
            return out;
        }
        let c = self.closed.pop_front().expect("front checked");
        let answers: Vec<BatchAnswer> = if answers.len() == c.slots.len() {
            answers.to_vec()
        } else {
            tracing::error!(
                ?object,
                "a commit answered with the wrong number of answers"
            );
            vec![BatchAnswer::Refused(E::UnknownServerError); c.slots.len()]
        };
        self.held_bytes -= c.body.len();
        self.settle(&c.slots, &answers, &mut out);
        self.start_uploads(&mut out);
        self.next_commit(&mut out);
        out
    }

    /// The commit of `object` got no answer (the coordinator moved or failed): sent again, the
    /// same commit (the coordinator answers a resent one as it did the first time).
    pub fn commit_failed(&mut self, object: ObjectId) -> Vec<Action> {
        match self.closed.front() {
            Some(c) if c.commit.object == object && c.stage == Stage::Committing => {
                vec![Action::Commit(c.commit.clone())]
            }
            _ => Vec::new(),
        }
    }

    /// The coordinator refused the commit of `object` for good (too old, or committed before
    /// with its answers forgotten): every batch of it is answered `error` (its producer resends
    /// it in a new object; a batch that was stored is then answered with its offsets), and the
    /// next object commits.
    pub fn commit_refused(&mut self, object: ObjectId, error: E) -> Vec<Action> {
        match self.closed.front() {
            Some(c) if c.commit.object == object && c.stage == Stage::Committing => {
                let refused = vec![BatchAnswer::Refused(error); c.slots.len()];
                self.committed(object, &refused)
            }
            _ => Vec::new(),
        }
    }

    fn settle(&mut self, slots: &[Slot], answers: &[BatchAnswer], out: &mut Vec<Action>) {
        for (slot, answer) in slots.iter().zip(answers) {
            let Some(w) = self.requests.get_mut(&slot.request) else {
                continue;
            };
            assert!(w.answers[slot.index].is_none(), "a batch answered twice");
            w.answers[slot.index] = Some(*answer);
            w.left -= 1;
            if w.left == 0 {
                let w = self.requests.remove(&slot.request).expect("present");
                out.push(Action::Answer {
                    request: slot.request,
                    answers: w
                        .answers
                        .into_iter()
                        .map(|a| a.expect("all answered"))
                        .collect(),
                });
            }
        }
    }

    /// Produces waiting for answers.
    pub fn waiting(&self) -> usize {
        self.requests.len()
    }

    /// Bytes buffered and uploading.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }
}

#[cfg(test)]
mod tests;
