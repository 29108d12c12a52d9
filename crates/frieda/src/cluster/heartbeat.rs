//! Broker heartbeats (Kafka's `BrokerLifecycleManager`): every `broker.heartbeat.interval.ms`
//! the broker tells the active controller it is alive, registering (again) when the controller
//! does not know this run of it. The answer says whether it is fenced.
//!
//! - **Ready**: after the first answered heartbeat the broker waits until its own metadata image
//!   has reached the controller's offset at that moment, so it never acts on a stale image (a
//!   restarted broker must not recreate a topic deleted while it was down).
//! - **Self-fencing**: a broker that gets no answer for a whole `broker.session.timeout.ms`
//!   assumes the controller fenced it and gives up its leaderships (its partitions go offline
//!   here) until heartbeats are answered again. The controller elects new leaders after the
//!   same timeout, so two brokers do not both take writes for long; `acks=all` writes are safe
//!   regardless, since a leader cut off from its followers cannot advance its high watermark.
//! - **Offline replicas**: each heartbeat names the replicas whose log a failed fsync took
//!   offline (Kafka's offline log directories, KIP-858); the controller moves their
//!   leaderships and takes them out of their ISRs until the broker restarts.
//! - **Leader cost**: each heartbeat carries what it costs this broker to lead
//!   ([`super::leader_cost`]), for measured leader placement.
//! - **Claims**: each heartbeat carries the claims of this broker's replicas of leaderless
//!   `quorum` partitions (`frieda_meta::quorum`); one is sent at once when such a partition
//!   goes leaderless ([`CLAIMS`]), so a leader is elected within a round trip.
//! - **Controlled shutdown**: on stop the broker asks to be fenced; the controller moves its
//!   leaderships first, so clients fail over before the connections close.

use std::sync::Arc;
use std::time::{Duration, Instant};

use frieda_meta::{ControllerReply, ControllerRequest, Endpoint, Heartbeat};
use tokio::sync::{watch, Notify};

use crate::broker::Broker;
use crate::membership::ClusterNode;

/// What the broker registers with.
#[derive(Debug, Clone)]
pub struct Registration {
    /// Client listeners as clients reach them.
    pub endpoints: Vec<Endpoint>,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// This node's controller-listener address (`host:port`).
    pub raft_addr: String,
    /// The previous run stopped cleanly (see [`Broker::previous_run_clean`]).
    pub clean_shutdown: bool,
}

/// Wakes the heartbeat loop early: a `quorum` partition went leaderless here and the
/// controller waits for this replica's claim.
pub(crate) static CLAIMS: Notify = Notify::const_new();

fn heartbeat(
    node: &ClusterNode,
    reg: &Registration,
    broker: &Broker,
    shutting_down: bool,
) -> ControllerRequest {
    ControllerRequest::Heartbeat(Heartbeat {
        id: node.me,
        incarnation: node.incarnation,
        endpoints: reg.endpoints.clone(),
        rack: reg.rack.clone(),
        raft_addr: reg.raft_addr.clone(),
        shutting_down,
        offline_replicas: broker.offline_replicas(),
        clean_shutdown: reg.clean_shutdown,
        leader_cost_us: super::leader_cost::LEADER_COST.cost_us(),
        claims: broker.claims(),
    })
}

/// Heartbeats until `stop` turns true, then shuts down in a controlled way (see the module
/// docs), waiting at most `broker.session.timeout.ms` for the controller.
pub async fn run(
    node: Arc<ClusterNode>,
    broker: Arc<Broker>,
    reg: Registration,
    mut stop: watch::Receiver<bool>,
) {
    let interval = Duration::from_millis(node.config.broker_heartbeat_interval_ms.max(10));
    let session = Duration::from_millis(node.config.broker_session_timeout_ms);
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_answer = Instant::now();
    tokio::spawn(super::leader_cost::run(stop.clone()));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = CLAIMS.notified() => {}
            _ = stop.changed() => break,
        }
        let sent = crate::clock::lease_ms();
        match node
            .controller(heartbeat(&node, &reg, &broker, false), interval * 2)
            .await
        {
            Ok(ControllerReply::Heartbeat { .. })
                if !crate::membership::lease::answer_is_fresh(
                    sent,
                    crate::clock::lease_ms(),
                    session.as_millis() as u64,
                ) =>
            {
                tracing::warn!(
                    session_ms = session.as_millis() as u64,
                    "a heartbeat answer came more than a session after its request (was this process paused?); ignoring it"
                );
                fence_if_unanswered(&node, last_answer, session);
            }
            Ok(ControllerReply::Heartbeat { fenced, offset }) => {
                last_answer = Instant::now();
                // The lease is renewed only once this broker's roles follow everything the
                // controller had decided when it answered: a broker resumed after a pause is
                // unfenced by its first heartbeat, but until its image shows, and the
                // reconciler has applied, that its leaderships moved meanwhile, it must not act
                // on them.
                if !fenced && node.wait_applied(offset, interval).await {
                    node.renew_lease(sent);
                }
                if !node.is_ready() && node.wait_for(interval, |img| img.offset >= offset).await {
                    tracing::info!(offset, "metadata caught up with the controller; serving");
                    node.set_ready();
                }
                if fenced != node.is_fenced() {
                    tracing::info!(fenced, "fencing changed");
                }
                node.set_fenced(fenced);
            }
            Ok(other) => tracing::warn!(reply = ?other, "unexpected heartbeat answer"),
            Err(e) => {
                tracing::debug!(error = %e.message, "heartbeat not answered");
                fence_if_unanswered(&node, last_answer, session);
            }
        }
    }
    controlled_shutdown(&node, &reg, &broker, session).await;
}

/// Self-fencing: with no heartbeat answered for a whole `session` since `last_answer`, the
/// broker assumes the controller fenced it and gives up its leaderships.
fn fence_if_unanswered(node: &ClusterNode, last_answer: Instant, session: Duration) {
    if last_answer.elapsed() > session && !node.is_fenced() {
        tracing::warn!(
            session_ms = session.as_millis() as u64,
            "no heartbeat answered for a whole session: fencing this broker (it leads nothing until the controller answers)"
        );
        node.set_fenced(true);
    }
}

/// Asks the controller to fence this broker and waits until the image shows its leaderships
/// moved (or `timeout`). A leadership with no other unfenced in-sync replica cannot move (the
/// other brokers are stopping too, or out of sync): it is not waited for; once every other
/// broker is fenced, neither is the controller.
async fn controlled_shutdown(
    node: &ClusterNode,
    reg: &Registration,
    broker: &Broker,
    timeout: Duration,
) {
    let started = Instant::now();
    let me = node.me;
    // Every other broker fenced (stopping too, e.g. the whole cluster is): no leadership can
    // move, and the quorum may be going away with them, so the controller is not waited for.
    let alone = |img: &frieda_meta::image::MetadataImage| {
        img.brokers.iter().all(|(id, b)| *id == me || b.fenced)
    };
    let all_others_fenced = async {
        if !node.wait_for(timeout, alone).await {
            std::future::pending::<()>().await;
        }
    };
    let asked = node.controller(heartbeat(node, reg, broker, true), timeout);
    tokio::select! {
        answer = asked => match answer {
            Ok(_) => {
                let moved = node
                    .wait_for(timeout.saturating_sub(started.elapsed()), |img| {
                        let could_lead =
                            |r: &i32| *r != me && img.brokers.get(r).is_some_and(|b| !b.fenced);
                        img.brokers.get(&me).is_none_or(|b| b.fenced)
                            && img.topics.values().all(|t| {
                                t.partitions
                                    .iter()
                                    .all(|p| p.leader != me || !p.isr.iter().any(could_lead))
                            })
                    })
                    .await;
                tracing::info!(
                    moved,
                    ms = started.elapsed().as_millis() as u64,
                    "controlled shutdown: leaderships moved"
                );
            }
            Err(e) => {
                tracing::warn!(error = %e.message, "controlled shutdown not acknowledged; stopping anyway")
            }
        },
        () = all_others_fenced => {
            tracing::info!(
                ms = started.elapsed().as_millis() as u64,
                "controlled shutdown: every other broker is fenced, no leadership can move; stopping"
            );
        }
    }
    node.set_fenced(true);
}
