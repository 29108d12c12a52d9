//! The cluster's brokers: DescribeCluster (key 60, KIP-700: the cluster id and the live brokers,
//! this one alone on a single broker), UnregisterBroker (key 64, KIP-631: `kafka-cluster
//! unregister --id N` removes a broker's registration) and UnregisterController (key 94,
//! KIP-1312: `kafka-cluster unregister-controller --id N` removes an observer of the metadata
//! quorum).

use super::{authorized_cluster, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::membership::{CONTROLLER_ID_NOT_REGISTERED, CONTROLLER_TIMEOUT};
use crate::security::acl::{op, resource, CLUSTER_NAME};
use frieda_meta::ControllerRequest;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{
    BrokerId, DescribeClusterRequest, DescribeClusterResponse, UnregisterBrokerRequest,
    UnregisterBrokerResponse, UnregisterControllerRequest, UnregisterControllerResponse,
};
use std::sync::Arc;

/// The registered brokers that are not fenced (with `include_fenced_brokers`, v2, KIP-1073:
/// the fenced ones too, `is_fenced` set), or on a single broker this one, which is also the
/// controller. Endpoint type 1 (brokers) is the only one served;
/// a request for controllers (type 2, v1+) gets UNSUPPORTED_ENDPOINT_TYPE (120).
/// With `include_cluster_authorized_operations`, the principal's operations on the cluster
/// (when it may DESCRIBE it, as Kafka reports them).
pub async fn handle(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let with_ops = req.include_cluster_authorized_operations;
    let mut resp = answer(broker, ctx, req);
    if with_ops && authorized_cluster(broker, ctx, op::DESCRIBE) {
        resp.cluster_authorized_operations =
            broker
                .security
                .authorized_operations(&ctx.session, resource::CLUSTER, CLUSTER_NAME);
    }
    resp
}

fn answer(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let node = broker.config.node_id;
    let (host, port) = broker.config.advertised_on(&ctx.session.listener);
    if req.endpoint_type != 1 {
        return DescribeClusterResponse::default()
            .with_error_code(120)
            .with_error_message(Some(str_bytes("only broker endpoints are served")))
            .with_endpoint_type(req.endpoint_type)
            .with_cluster_id(str_bytes(&broker.current_cluster_id()));
    }
    if let Some(node) = broker.cluster() {
        let image = node.image();
        // v2 (KIP-1073): fenced brokers too when asked, marked as such.
        let include_fenced = req.include_fenced_brokers;
        let brokers = image
            .brokers
            .values()
            .filter(|b| include_fenced || !b.fenced)
            .filter_map(|b| {
                let e = crate::membership::endpoint_on(b, &ctx.session.listener)?;
                Some(
                    DescribeClusterBroker::default()
                        .with_broker_id(BrokerId(b.id))
                        .with_host(str_bytes(&e.host))
                        .with_port(i32::from(e.port))
                        .with_rack(b.rack.as_deref().map(str_bytes))
                        .with_is_fenced(b.fenced),
                )
            })
            .collect();
        return DescribeClusterResponse::default()
            .with_endpoint_type(1)
            .with_cluster_id(str_bytes(&broker.current_cluster_id()))
            .with_controller_id(BrokerId(node.controller_id()))
            .with_brokers(brokers);
    }
    DescribeClusterResponse::default()
        .with_endpoint_type(1)
        .with_cluster_id(str_bytes(&broker.cluster_id))
        .with_controller_id(BrokerId(node))
        .with_brokers(vec![DescribeClusterBroker::default()
            .with_broker_id(BrokerId(node))
            .with_host(str_bytes(&host))
            .with_port(port)])
}

/// UnregisterBroker v0: the controller removes broker `broker_id`'s registration; it leaves
/// every ISR and ELR (see `MetaCommand::UnregisterBroker`). A broker that still runs registers
/// again at its next heartbeat, as in Kafka; the use is a broker gone for good. On a single
/// broker only its own id is registered, and it stays.
///
/// Errors: CLUSTER_AUTHORIZATION_FAILED (31) without ALTER on the cluster;
/// BROKER_ID_NOT_REGISTERED (102) for an id the cluster does not have; REQUEST_TIMED_OUT (7) /
/// NOT_CONTROLLER when the quorum does not commit it in time.
pub async fn unregister_broker(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: UnregisterBrokerRequest,
) -> UnregisterBrokerResponse {
    let fail = |code: ResponseError, message: String| {
        UnregisterBrokerResponse::default()
            .with_error_code(code.code())
            .with_error_message(Some(str_bytes(&message)))
    };
    if !authorized_cluster(broker, ctx, op::ALTER) {
        return fail(
            ResponseError::ClusterAuthorizationFailed,
            "Cluster authorization failed.".into(),
        );
    }
    let id = req.broker_id.0;
    let not_registered = || {
        fail(
            ResponseError::BrokerIdNotRegistered,
            format!("Broker ID {id} is not currently registered"),
        )
    };
    let Some(node) = broker.cluster() else {
        return if id == broker.config.node_id {
            UnregisterBrokerResponse::default()
        } else {
            not_registered()
        };
    };
    match node
        .controller(
            ControllerRequest::UnregisterBroker { id },
            CONTROLLER_TIMEOUT,
        )
        .await
    {
        Ok(_) => {
            tracing::info!(broker = id, principal = %ctx.session.principal, "broker unregistered");
            UnregisterBrokerResponse::default()
        }
        Err(e) if e.code == ResponseError::BrokerIdNotRegistered => not_registered(),
        Err(e) => fail(e.code, e.message),
    }
}

/// UnregisterController v0 (KIP-1312, Kafka 4.4): in Frieda every node of a cluster holds the
/// metadata log, as a voter or as an observer (a Raft learner: a broker-only node, or a
/// controller removed from the voter set with `kafka-metadata-quorum remove-controller`); an
/// observer's registration is its membership of the quorum. Unregistering one removes it
/// (forwarded to the active controller, committed before the answer): the log is no longer
/// sent to it and `kafka-metadata-quorum describe` no longer lists it. A node that still runs
/// joins again at its next heartbeat, as Kafka's controller registers itself again; the use is
/// a node gone for good.
///
/// Errors: CLUSTER_AUTHORIZATION_FAILED (31) without ALTER on the cluster; UNSUPPORTED_VERSION
/// (35) below `metadata.version` 4.4-IV2 (33); INVALID_REQUEST (42) for the active controller
/// itself (Kafka's message) or a voter (remove it from the voter set first), and on a broker
/// without a metadata quorum; CONTROLLER_ID_NOT_REGISTERED (136) for a node the quorum does
/// not have; REQUEST_TIMED_OUT (7) when the change does not commit in time.
pub async fn unregister_controller(
    broker: &Arc<Broker>,
    ctx: &RequestContext,
    req: UnregisterControllerRequest,
) -> UnregisterControllerResponse {
    let id = req.controller_id.0;
    let result = async {
        if !authorized_cluster(broker, ctx, op::ALTER) {
            return Err((
                ResponseError::ClusterAuthorizationFailed,
                "Cluster authorization failed.".to_string(),
            ));
        }
        let level = broker
            .features
            .get()
            .level(crate::features::METADATA_VERSION);
        if level < crate::features::METADATA_VERSION_CONTROLLER_UNREGISTRATION {
            return Err((
                ResponseError::UnsupportedVersion,
                "The current MetadataVersion is too old to support controller unregistration."
                    .to_string(),
            ));
        }
        let Some(node) = broker.cluster() else {
            return Err((
                ResponseError::InvalidRequest,
                "this broker runs without a metadata quorum (no controller.quorum.voters)".into(),
            ));
        };
        let Ok(node_id) = u64::try_from(id) else {
            return Err((
                ResponseError::Unknown(CONTROLLER_ID_NOT_REGISTERED),
                format!("Controller ID {id} is not currently registered."),
            ));
        };
        node.controller(
            ControllerRequest::UnregisterController { node: node_id },
            CONTROLLER_TIMEOUT,
        )
        .await
        .map(|_| ())
        .map_err(|e| (e.code, e.message))
    }
    .await;
    match result {
        Ok(()) => {
            tracing::info!(controller = id, principal = %ctx.session.principal, "controller unregistered");
            UnregisterControllerResponse::default()
        }
        Err((code, message)) => {
            tracing::info!(controller = id, error = ?code, %message, "UnregisterController refused");
            UnregisterControllerResponse::default()
                .with_error_code(code.code())
                .with_error_message(Some(str_bytes(&message)))
        }
    }
}
