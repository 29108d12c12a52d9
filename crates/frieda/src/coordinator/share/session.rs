//! Share sessions (KIP-932, like KIP-227's fetch sessions): a member's ShareFetch and
//! ShareAcknowledge requests carry `ShareSessionEpoch`; 0 opens a session holding the request's
//! partitions, each later request must carry the session's current epoch (which then moves on),
//! -1 closes it. One session per (group, member), at most `group.share.max.share.sessions` per
//! broker. Semantics of Kafka 4.4's `SharePartitionManager.newContext` and
//! `acknowledgeSessionUpdate`.

use kafka_protocol::error::ResponseError as E;
use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::time::Duration;
use uuid::Uuid;

/// The session epoch that opens a session.
pub const INITIAL_EPOCH: i32 = 0;
/// The session epoch that closes it.
pub const FINAL_EPOCH: i32 = -1;

/// A partition of a session: (topic id, partition).
pub type SessionPartition = (Uuid, i32);

/// The longest wait [`ShareSessions::held_wait`] gives: 512 ms (above the Java consumer's
/// `fetch.max.wait.ms` default of 500, so a fetch's own `MaxWaitMs` bounds it).
pub const HELD_WAIT_MAX: Duration = Duration::from_millis(512);

/// The epoch after `e` (Kafka's `ShareRequestMetadata.nextEpoch`).
pub fn next_epoch(e: i32) -> i32 {
    if e < 0 {
        FINAL_EPOCH
    } else if e == i32::MAX {
        1
    } else {
        e + 1
    }
}

#[derive(Debug)]
struct Session {
    epoch: i32,
    partitions: BTreeSet<SessionPartition>,
    /// The connection that opened it: closing it closes the session.
    conn: SocketAddr,
    /// ShareFetches in a row that could acquire nothing while this member held acquired
    /// records of its own, with no acknowledgement of it in between (see
    /// [`ShareSessions::held_wait`]).
    held_streak: u32,
}

/// What a ShareFetch's epoch means for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchContext {
    /// A session (new or continued): fetch these partitions.
    Fetch(Vec<SessionPartition>),
    /// The final request (epoch -1): acknowledge only, then the session is closed.
    Final,
}

/// The share sessions of this broker.
#[derive(Debug)]
pub struct ShareSessions {
    sessions: HashMap<(String, String), Session>,
    /// `group.share.max.share.sessions` (default 2000).
    capacity: usize,
}

impl ShareSessions {
    /// At most `capacity` sessions.
    pub fn new(capacity: usize) -> Self {
        ShareSessions {
            sessions: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// Sessions open.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// No session open.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// A ShareFetch of `member` in `group` with `epoch`, naming `added` partitions and
    /// `forgotten` ones.
    ///
    /// Errors: INVALID_REQUEST (42) for acknowledgements in an epoch-0 request;
    /// SHARE_SESSION_LIMIT_REACHED (133) when a new session finds the cache full;
    /// SHARE_SESSION_NOT_FOUND (122) for a continued session that is not open;
    /// INVALID_SHARE_SESSION_EPOCH (123) for an epoch other than the session's.
    #[allow(clippy::too_many_arguments)]
    pub fn fetch(
        &mut self,
        conn: SocketAddr,
        group: &str,
        member: &str,
        epoch: i32,
        added: &[SessionPartition],
        forgotten: &[SessionPartition],
        has_acks: bool,
    ) -> Result<FetchContext, E> {
        let key = (group.to_string(), member.to_string());
        match epoch {
            INITIAL_EPOCH => {
                if has_acks {
                    return Err(E::InvalidRequest);
                }
                if !self.sessions.contains_key(&key) && self.sessions.len() >= self.capacity {
                    return Err(E::ShareSessionLimitReached);
                }
                let partitions: BTreeSet<SessionPartition> = added.iter().copied().collect();
                let list = partitions.iter().copied().collect();
                self.sessions.insert(
                    key,
                    Session {
                        epoch: next_epoch(INITIAL_EPOCH),
                        partitions,
                        conn,
                        held_streak: 0,
                    },
                );
                Ok(FetchContext::Fetch(list))
            }
            FINAL_EPOCH => {
                if self.sessions.contains_key(&key) {
                    Ok(FetchContext::Final)
                } else {
                    Err(E::ShareSessionNotFound)
                }
            }
            n => {
                let s = self.sessions.get_mut(&key).ok_or(E::ShareSessionNotFound)?;
                if s.epoch != n {
                    return Err(E::InvalidShareSessionEpoch);
                }
                s.partitions.extend(added.iter().copied());
                for f in forgotten {
                    s.partitions.remove(f);
                }
                s.epoch = next_epoch(n);
                if has_acks {
                    s.held_streak = 0;
                }
                Ok(FetchContext::Fetch(s.partitions.iter().copied().collect()))
            }
        }
    }

    /// A ShareAcknowledge's epoch.
    ///
    /// Errors: INVALID_SHARE_SESSION_EPOCH (123) for epoch 0 or another epoch than the
    /// session's; SHARE_SESSION_NOT_FOUND (122) without a session.
    pub fn acknowledge(&mut self, group: &str, member: &str, epoch: i32) -> Result<(), E> {
        if epoch == INITIAL_EPOCH {
            return Err(E::InvalidShareSessionEpoch);
        }
        let key = (group.to_string(), member.to_string());
        let s = self.sessions.get_mut(&key).ok_or(E::ShareSessionNotFound)?;
        if epoch == FINAL_EPOCH {
            return Ok(());
        }
        if s.epoch != epoch {
            return Err(E::InvalidShareSessionEpoch);
        }
        s.epoch = next_epoch(epoch);
        s.held_streak = 0;
        Ok(())
    }

    /// How long a ShareFetch of `member` may wait (at most) that could acquire nothing (its
    /// share-partitions' windows, `group.share.partition.max.record.locks`, are full, or no new
    /// record is there) while `member` itself holds acquired records in them. No wait the first
    /// time in a row, then 1, 2, 4 ... ms up to [`HELD_WAIT_MAX`]; the member's next
    /// acknowledgement (on a ShareFetch or a ShareAcknowledge) starts the row again.
    ///
    /// Why: a client that sends its next ShareFetch while the application still works on the
    /// last records, and piggybacks their acknowledgements on the fetch after it (franz-go does,
    /// also for `FlushAcks`), cannot acknowledge while that fetch waits: with every member doing
    /// so the window only frees when fetches time out (`MaxWaitMs`), and a record's
    /// acknowledgement waits until its member's next record arrives. Answering at once lets the
    /// acknowledgements go; doubling the wait keeps an application that takes long over its
    /// records from making the client ask again and again. Kafka 4.4.0 waits the full
    /// `MaxWaitMs`: 4 franz-go consumers with a 30 s FetchMaxWait took 66 s for 30,000 records,
    /// 23,515 of them delivered twice after their locks expired
    /// (tests/integration/tools/share_prefetch; Frieda: 0.2 s, none). Measured, 16 franz-go
    /// consumers draining 1,000,000 records: 41k rec/s waiting `MaxWaitMs` (500 ms), 408k with
    /// this; 8 consumers taking 300 ms per poll sent 667k ShareFetches in 20 s answered at once
    /// every time, 1,499 with the doubling (408 waiting `MaxWaitMs`).
    pub fn held_wait(&mut self, group: &str, member: &str) -> Duration {
        let Some(s) = self
            .sessions
            .get_mut(&(group.to_string(), member.to_string()))
        else {
            return Duration::ZERO;
        };
        let streak = s.held_streak;
        s.held_streak = s.held_streak.saturating_add(1).min(16);
        if streak == 0 {
            Duration::ZERO
        } else {
            Duration::from_millis(1u64 << (streak - 1).min(9)).min(HELD_WAIT_MAX)
        }
    }

    /// Whether `member` of `group` has a session here.
    pub fn has_member(&self, group: &str, member: &str) -> bool {
        self.sessions
            .contains_key(&(group.to_string(), member.to_string()))
    }

    /// Whether any member of `group` has a session here.
    pub fn has_group(&self, group: &str) -> bool {
        self.sessions.keys().any(|(g, _)| g == group)
    }

    /// Closes the sessions opened on connection `conn`: (group, member, partitions) of each.
    pub fn close_connection(
        &mut self,
        conn: SocketAddr,
    ) -> Vec<(String, String, Vec<SessionPartition>)> {
        let keys: Vec<(String, String)> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.conn == conn)
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|k| {
                let s = self.sessions.remove(&k)?;
                Some((k.0, k.1, s.partitions.into_iter().collect()))
            })
            .collect()
    }

    /// Closes `member`'s session in `group`; returns its partitions.
    pub fn close(&mut self, group: &str, member: &str) -> Vec<SessionPartition> {
        self.sessions
            .remove(&(group.to_string(), member.to_string()))
            .map(|s| s.partitions.into_iter().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c() -> SocketAddr {
        "127.0.0.1:1".parse().unwrap()
    }

    fn tp(p: i32) -> SessionPartition {
        (Uuid::from_u128(7), p)
    }

    #[test]
    fn epochs_open_continue_and_close_a_session() {
        let mut s = ShareSessions::new(2);
        assert_eq!(
            s.fetch(c(), "g", "m", 0, &[tp(0)], &[], false),
            Ok(FetchContext::Fetch(vec![tp(0)]))
        );
        assert_eq!(
            s.fetch(c(), "g", "m", 2, &[], &[], false),
            Err(E::InvalidShareSessionEpoch)
        );
        assert_eq!(
            s.fetch(c(), "g", "m", 1, &[tp(1)], &[], false),
            Ok(FetchContext::Fetch(vec![tp(0), tp(1)]))
        );
        assert_eq!(
            s.fetch(c(), "g", "m", 2, &[], &[tp(0)], false),
            Ok(FetchContext::Fetch(vec![tp(1)]))
        );
        assert_eq!(s.acknowledge("g", "m", 0), Err(E::InvalidShareSessionEpoch));
        assert_eq!(s.acknowledge("g", "m", 3), Ok(()));
        assert_eq!(
            s.fetch(c(), "g", "m", 3, &[], &[], false),
            Err(E::InvalidShareSessionEpoch)
        );
        assert_eq!(
            s.fetch(c(), "g", "m", 4, &[], &[], false),
            Ok(FetchContext::Fetch(vec![tp(1)]))
        );
        assert_eq!(
            s.fetch(c(), "g", "m", -1, &[], &[], true),
            Ok(FetchContext::Final)
        );
        assert_eq!(s.close("g", "m"), vec![tp(1)]);
        assert_eq!(
            s.fetch(c(), "g", "m", 5, &[], &[], false),
            Err(E::ShareSessionNotFound)
        );
        assert_eq!(s.acknowledge("g", "m", -1), Err(E::ShareSessionNotFound));
    }

    #[test]
    fn a_member_holding_records_waits_longer_each_time_until_it_acknowledges() {
        let mut s = ShareSessions::new(2);
        let ms = Duration::from_millis;
        // No session: no wait.
        assert_eq!(s.held_wait("g", "m"), Duration::ZERO);
        s.fetch(c(), "g", "m", 0, &[tp(0)], &[], false).unwrap();
        let waits: Vec<Duration> = (0..12).map(|_| s.held_wait("g", "m")).collect();
        assert_eq!(
            waits,
            [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 512].map(ms)
        );
        // A fetch without acknowledgements continues the row; one with them starts it again.
        s.fetch(c(), "g", "m", 1, &[], &[], false).unwrap();
        assert_eq!(s.held_wait("g", "m"), HELD_WAIT_MAX);
        s.fetch(c(), "g", "m", 2, &[], &[], true).unwrap();
        assert_eq!(s.held_wait("g", "m"), Duration::ZERO);
        assert_eq!(s.held_wait("g", "m"), ms(1));
        // So does a ShareAcknowledge; other members keep their own rows.
        s.fetch(c(), "g", "n", 0, &[tp(0)], &[], false).unwrap();
        assert_eq!(s.held_wait("g", "n"), Duration::ZERO);
        assert_eq!(s.acknowledge("g", "m", 3), Ok(()));
        assert_eq!(s.held_wait("g", "m"), Duration::ZERO);
        assert_eq!(s.held_wait("g", "n"), ms(1));
    }

    #[test]
    fn a_new_session_with_acknowledgements_or_beyond_capacity_is_refused() {
        let mut s = ShareSessions::new(1);
        assert_eq!(
            s.fetch(c(), "g", "m", 0, &[tp(0)], &[], true),
            Err(E::InvalidRequest)
        );
        s.fetch(c(), "g", "m", 0, &[tp(0)], &[], false).unwrap();
        assert_eq!(
            s.fetch(c(), "g", "n", 0, &[tp(0)], &[], false),
            Err(E::ShareSessionLimitReached)
        );
        // The same member opening again replaces its session.
        assert!(s.fetch(c(), "g", "m", 0, &[tp(1)], &[], false).is_ok());
        assert_eq!(s.len(), 1);
        assert_eq!(next_epoch(i32::MAX), 1);
    }
}
