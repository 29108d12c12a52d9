//! The active controller's broker sessions and quorum-partition claims (Kafka's
//! `BrokerHeartbeatManager`), sans-IO: times are ms on the caller's monotonic clock, and the
//! caller commits the commands these decide. The controller ([`crate::controller`]) and the
//! cluster simulator (crate `frieda-sim`) keep their sessions in this one type, so a heartbeat,
//! a new term and an expiry are decided by the same code in both (issue 57: the simulator runs
//! the broker's own glue).
//!
//! Bounds: one session per broker that heartbeats or is registered in the image, and one claim
//! per replica of a leaderless `quorum` partition ([`crate::quorum::Claims`]).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::image::{BrokerId, BrokerRegistration, Endpoint, MetaCommand, MetadataImage};
use crate::quorum::{self, Claims};

/// A broker's periodic heartbeat (Kafka's BrokerHeartbeat, with the registration folded in).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// `node.id`.
    pub id: BrokerId,
    /// The broker process's run.
    pub incarnation: Uuid,
    /// Its client listeners.
    pub endpoints: Vec<Endpoint>,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// Its controller-listener address (a broker-only node joins the quorum as a learner).
    pub raft_addr: String,
    /// Set when shutting down: the controller fences it at once (controlled shutdown).
    pub shutting_down: bool,
    /// `(topic, partition)` of its replicas whose log went offline (a failed fsync): Kafka's
    /// `OfflineLogDirs` of BrokerHeartbeat (KIP-858).
    #[serde(default)]
    pub offline_replicas: Vec<(String, i32)>,
    /// Its previous run stopped cleanly (Kafka's `PreviousBrokerEpoch` in
    /// BrokerRegistration): without it, it leaves every ELR when it registers (KIP-966).
    #[serde(default)]
    pub clean_shutdown: bool,
    /// Its measured leader cost, µs (issue 33; `None` until it has measured a window): what
    /// measured leader placement compares ([`crate::leadership`]).
    #[serde(default)]
    pub leader_cost_us: Option<u64>,
    /// Claims of its replicas of leaderless `quorum` partitions, `(topic, partition, claim)`
    /// (issue 34, [`crate::quorum`]): what the controller elects their leaders from.
    #[serde(default)]
    pub claims: Vec<(String, i32, crate::quorum::Claim)>,
}

/// The commands a broker's heartbeat calls for (Kafka's `ClusterControlManager` and
/// `ReplicationControlManager`: registration, unfencing, controlled shutdown, offline log
/// directories): a broker shutting down is fenced if live; a broker whose registration the
/// image does not have as it is (a new run, new endpoints or rack) registers (again); a fenced
/// one is unfenced; replicas it reports offline that the image does not know as offline yet
/// leave their ISRs and leaderships. Pure, so the cluster simulator decides exactly as the
/// controller does.
pub fn heartbeat_commands(image: &MetadataImage, hb: &Heartbeat) -> Vec<MetaCommand> {
    if hb.shutting_down {
        return image
            .is_live(hb.id)
            .then_some(MetaCommand::FenceBroker {
                id: hb.id,
                incarnation: hb.incarnation,
            })
            .into_iter()
            .collect();
    }
    let mut out = Vec::new();
    let registered = image.brokers.get(&hb.id);
    let current = registered.is_some_and(|b| {
        b.incarnation == hb.incarnation && b.endpoints == hb.endpoints && b.rack == hb.rack
    });
    if !current {
        out.push(MetaCommand::RegisterBroker {
            registration: BrokerRegistration {
                id: hb.id,
                incarnation: hb.incarnation,
                endpoints: hb.endpoints.clone(),
                rack: hb.rack.clone(),
                fenced: false,
                epoch: 0,
                offline_replicas: Default::default(),
                clean_shutdown: hb.clean_shutdown,
            },
        });
    } else if registered.is_some_and(|b| b.fenced) {
        out.push(MetaCommand::UnfenceBroker {
            id: hb.id,
            incarnation: hb.incarnation,
        });
    }
    let new_offline: Vec<(String, i32)> = hb
        .offline_replicas
        .iter()
        .filter(|(t, p)| !current || !image.replica_offline(hb.id, t, *p))
        // A replica the image no longer assigns it (a reassignment moved it away) is not
        // recorded (the image would forget it at once), so a heartbeat sent before the broker
        // deleted that log commits nothing.
        .filter(|(t, p)| {
            image
                .partition(t, *p)
                .is_some_and(|x| x.replicas.contains(&hb.id))
        })
        .cloned()
        .collect();
    if !new_offline.is_empty() {
        out.push(MetaCommand::ReplicasOffline {
            id: hb.id,
            incarnation: hb.incarnation,
            replicas: new_offline,
        });
    }
    out
}

/// The live brokers to fence because their session expired: `session(id)` gives the
/// incarnation that last heartbeated and how long ago; a broker with no session, a session of
/// another incarnation, or one silent longer than `timeout` (`broker.session.timeout.ms`) is
/// fenced. Pure (see [`heartbeat_commands`]).
pub fn expired_sessions(
    image: &MetadataImage,
    session: impl Fn(BrokerId) -> Option<(Uuid, Duration)>,
    timeout: Duration,
) -> Vec<(BrokerId, Uuid)> {
    image
        .live_brokers()
        .filter(|b| match session(b.id) {
            Some((incarnation, silent)) => incarnation != b.incarnation || silent > timeout,
            None => true,
        })
        .map(|b| (b.id, b.incarnation))
        .collect()
}

/// One broker's session: the run (incarnation) that last heartbeated, and when (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Session {
    incarnation: Uuid,
    last_ms: u64,
}

/// What a heartbeat calls for ([`BrokerSessions::heartbeat`]).
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatDecision {
    /// To commit, in order, before answering ([`heartbeat_commands`]: register, unfence,
    /// replicas offline, or the fence of a controlled shutdown).
    pub commands: Vec<MetaCommand>,
    /// The answer says "fenced": the broker is shutting down (its session ended).
    pub fenced: bool,
}

/// The sessions of the brokers heartbeating to the active controller, and the claims their
/// replicas of leaderless `quorum` partitions sent (issue 34).
#[derive(Debug, Clone, Default)]
pub struct BrokerSessions {
    sessions: BTreeMap<BrokerId, Session>,
    claims: Claims,
}

impl BrokerSessions {
    /// This node starts leading a new term at `now_ms`: every broker registered in `image` gets
    /// a whole session from now (a new controller cannot know who heartbeated its predecessor),
    /// and the claims sent to an earlier term's controller are forgotten (the next heartbeats
    /// bring them again).
    pub fn new_term(&mut self, image: &MetadataImage, now_ms: u64) {
        self.claims.clear();
        self.sessions = image
            .brokers
            .values()
            .map(|b| {
                (
                    b.id,
                    Session {
                        incarnation: b.incarnation,
                        last_ms: now_ms,
                    },
                )
            })
            .collect();
    }

    /// Heartbeat `hb` reached the active controller at `now_ms`, whose image is `image`: a
    /// broker shutting down ends its session (the answer fences it); any other starts or renews
    /// its session for the incarnation it names. Returns what to commit and how to answer.
    pub fn heartbeat(
        &mut self,
        image: &MetadataImage,
        hb: &Heartbeat,
        now_ms: u64,
    ) -> HeartbeatDecision {
        let commands = heartbeat_commands(image, hb);
        if hb.shutting_down {
            self.sessions.remove(&hb.id);
            return HeartbeatDecision {
                commands,
                fenced: true,
            };
        }
        self.sessions.insert(
            hb.id,
            Session {
                incarnation: hb.incarnation,
                last_ms: now_ms,
            },
        );
        HeartbeatDecision {
            commands,
            fenced: false,
        }
    }

    /// Records the claims heartbeat `hb` carries ([`quorum::record`]), after its commands were
    /// committed (`image` is the image they left). Returns whether it carried any: then the
    /// caller asks for the [`Self::elections`] they allow.
    pub fn record_claims(&mut self, image: &MetadataImage, hb: &Heartbeat) -> bool {
        if hb.claims.is_empty() {
            return false;
        }
        quorum::record(&mut self.claims, image, hb.id, &hb.claims);
        true
    }

    /// The elections the recorded claims allow in `image` ([`quorum::elections`]).
    pub fn elections(&self, image: &MetadataImage) -> Vec<MetaCommand> {
        quorum::elections(image, &self.claims)
    }

    /// Broker `id` was unregistered: its session goes with it (a broker that still runs
    /// registers anew).
    pub fn unregistered(&mut self, id: BrokerId) {
        self.sessions.remove(&id);
    }

    /// The live brokers of `image` to fence at `now_ms` ([`expired_sessions`]): no session, a
    /// session of another incarnation, or one silent longer than `timeout_ms`
    /// (`broker.session.timeout.ms`).
    pub fn expired(
        &self,
        image: &MetadataImage,
        now_ms: u64,
        timeout_ms: u64,
    ) -> Vec<(BrokerId, Uuid)> {
        expired_sessions(
            image,
            |id| {
                self.sessions.get(&id).map(|s| {
                    (
                        s.incarnation,
                        Duration::from_millis(now_ms.saturating_sub(s.last_ms)),
                    )
                })
            },
            Duration::from_millis(timeout_ms),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_images::registered;

    fn heartbeat(id: BrokerId, incarnation: u128, shutting_down: bool) -> Heartbeat {
        Heartbeat {
            id,
            incarnation: Uuid::from_u128(incarnation),
            endpoints: vec![],
            rack: None,
            raft_addr: String::new(),
            shutting_down,
            offline_replicas: vec![],
            clean_shutdown: true,
            leader_cost_us: None,
            claims: vec![],
        }
    }

    #[test]
    fn sessions_start_with_a_term_renew_with_heartbeats_and_expire() {
        let mut image = MetadataImage::default();
        for (i, id) in [1, 2].into_iter().enumerate() {
            image.apply(&registered(id), i as u64 + 1).unwrap();
        }
        let mut s = BrokerSessions::default();
        // No session yet: every live broker is overdue.
        assert_eq!(s.expired(&image, 0, 3_000).len(), 2);
        // A new term gives each a whole session from now.
        s.new_term(&image, 1_000);
        assert!(s.expired(&image, 4_000, 3_000).is_empty());
        // Broker 1 heartbeats as it is registered: nothing to commit, renewed.
        let d = s.heartbeat(&image, &heartbeat(1, 1, false), 3_500);
        assert_eq!((d.commands.len(), d.fenced), (0, false));
        let overdue = s.expired(&image, 4_001, 3_000);
        assert_eq!(
            overdue,
            vec![(2, Uuid::from_u128(2))],
            "silent longer than 3 s"
        );
        // A new run of broker 1 registers again; until then its old run's session is not it.
        let d = s.heartbeat(&image, &heartbeat(1, 7, false), 4_100);
        assert!(matches!(
            d.commands[..],
            [MetaCommand::RegisterBroker { .. }]
        ));
        assert_eq!(
            s.expired(&image, 4_100, 3_000)[0].0,
            1,
            "another incarnation"
        );
        // A controlled shutdown ends the session and is answered fenced.
        let d = s.heartbeat(&image, &heartbeat(2, 2, true), 4_200);
        assert!(d.fenced);
        assert!(matches!(
            d.commands[..],
            [MetaCommand::FenceBroker { id: 2, .. }]
        ));
        // An unregistered broker's session goes.
        s.heartbeat(&image, &heartbeat(2, 2, false), 4_300);
        s.unregistered(2);
        assert!(s
            .expired(&image, 4_300, 3_000)
            .iter()
            .any(|(id, _)| *id == 2));
        // No claims carried: nothing recorded.
        assert!(!s.record_claims(&image, &heartbeat(1, 1, false)));
        assert!(s.elections(&image).is_empty());
    }
}
