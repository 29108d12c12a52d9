//! DescribeCluster (key 60, KIP-700): the cluster id and the live brokers (this one alone on a
//! single broker).

use super::{authorized_cluster, str_bytes, RequestContext};
use crate::broker::Broker;
use crate::security::acl::{op, resource, CLUSTER_NAME};
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use std::sync::Arc;

/// One broker, which is also the controller. Endpoint type 1 (brokers) is the only one served;
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
            .with_cluster_id(str_bytes(&broker.cluster_id));
    }
    if let Some(node) = broker.cluster() {
        let image = node.image();
        let brokers = image
            .live_brokers()
            .filter_map(|b| {
                let e = crate::membership::endpoint_on(b, &ctx.session.listener)?;
                Some(
                    DescribeClusterBroker::default()
                        .with_broker_id(BrokerId(b.id))
                        .with_host(str_bytes(&e.host))
                        .with_port(i32::from(e.port))
                        .with_rack(b.rack.as_deref().map(str_bytes)),
                )
            })
            .collect();
        let cluster_id = image
            .cluster_id
            .clone()
            .unwrap_or_else(|| broker.cluster_id.clone());
        return DescribeClusterResponse::default()
            .with_endpoint_type(1)
            .with_cluster_id(str_bytes(&cluster_id))
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
