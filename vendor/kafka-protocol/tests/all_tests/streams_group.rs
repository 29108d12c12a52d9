//! Frieda patch: round trips of Kafka 4.4's streams-group messages (KIP-1071), generated from
//! kafka-clients 4.4.0's schemas, and their wire bytes compared with Kafka's own serializer
//! (the `JAVA_*` constants are the hex of `*Data.write` of kafka-clients 4.4.0 for the same
//! messages).

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::streams_group_describe_response as sdr;
use kafka_protocol::messages::streams_group_heartbeat_request as hbq;
use kafka_protocol::messages::streams_group_heartbeat_response as hbr;
use kafka_protocol::messages::streams_group_topology_description_update_request as tdu;
use kafka_protocol::messages::{
    ApiKey, GroupId, StreamsGroupDescribeRequest, StreamsGroupDescribeResponse,
    StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
    StreamsGroupTopologyDescriptionUpdateRequest, StreamsGroupTopologyDescriptionUpdateResponse,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, Request, StrBytes};

const JAVA_HB_REQUEST_V0: &str = "066170702d31046d2d31000000000000000307696e73742d31000000753001000000010202300308696e7075742d6108696e7075742d620206696e2d2e2a02166170702d312d73746f72652d6368616e67656c6f67000000000003020f636c65616e75702e706f6c69637908636f6d706163740000020d6170702d312d726570617274020e6170702d312d72657061727432000000040000010002030000000101020000000000020230040000000000000001000000020001000d70726f636573732d37663363010a6c6f63616c686f7374ffff0002057a6f6e6502610002023000000001000000000000002a00000000";
const JAVA_HB_REQUEST_V1: &str = "066170702d31046d2d31000000000000000307696e73742d31000000753001000000010202300308696e7075742d6108696e7075742d620206696e2d2e2a02166170702d312d73746f72652d6368616e67656c6f67000000000003020f636c65616e75702e706f6c69637908636f6d706163740000020d6170702d312d726570617274020e6170702d312d72657061727432000000040000010002030000000101020000000000020230040000000000000001000000020001000d70726f636573732d37663363010a6c6f63616c686f7374ffff0002057a6f6e6502610002023000000001000000000000002a00000000";
const JAVA_HB_RESPONSE_V0: &str = "00000000000000046d2d310000000500001388000027100000ea6002010f6d697373696e6720746f7069637300020230030000000000000001000001000000020202681f90000208696e7075742d6103000000000000000100010000";
const JAVA_HB_RESPONSE_V1: &str = "00000000000000046d2d3100000005000013880000ea60000000000000271002010f6d697373696e6720746f706963730002023003000000000000000100000101000000020202681f90000208696e7075742d6103000000000000000100010000";
const JAVA_DESCRIBE_RESPONSE_V1: &str = "0000000002000000066170702d3107537461626c65000000070000000701000000010202300208696e7075742d610102166170702d312d73746f72652d6368616e67656c6f67000000000003020f636c65616e75702e706f6c69637908636f6d70616374000001000002046d2d3100000007000372310363310b2f3132372e302e302e3100000001037031010a6c6f63616c686f7374270f0001020230000000000000000000000064000102023002000000000001010002023002000000000001010000008000000001020230031a4b53545245414d2d534f555243452d30303030303030303030010208696e7075742d61000102184b53545245414d2d53494e4b2d3030303030303030303100184b53545245414d2d53494e4b2d303030303030303030310301076f757470757401010000021a4b53545245414d2d534f555243452d3030303030303030303201020a676c6f62616c2d696e000102194b5441424c452d534f555243452d3030303030303030303300194b5441424c452d534f555243452d30303030303030303033020100020d676c6f62616c2d73746f7265010000000307737469636b790000";

fn s(x: &'static str) -> StrBytes {
    StrBytes::from_static_str(x)
}

fn topic(x: &'static str) -> TopicName {
    TopicName(s(x))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Encodes `msg` at `version`, checks `compute_size`, decodes it back (all bytes consumed,
/// equal) and returns the bytes.
fn round_trip<T: Encodable + Decodable + PartialEq + std::fmt::Debug>(
    msg: &T,
    version: i16,
) -> Vec<u8> {
    let mut buf = BytesMut::new();
    msg.encode(&mut buf, version).unwrap();
    assert_eq!(
        msg.compute_size(version).unwrap(),
        buf.len(),
        "compute_size v{version}"
    );
    let mut bytes: Bytes = buf.clone().freeze();
    let back = T::decode(&mut bytes, version).unwrap();
    assert_eq!(bytes.len(), 0, "trailing bytes v{version}");
    assert_eq!(&back, msg, "round trip v{version}");
    buf.to_vec()
}

fn heartbeat_request() -> StreamsGroupHeartbeatRequest {
    let subtopology = hbq::Subtopology::default()
        .with_subtopology_id(s("0"))
        .with_source_topics(vec![topic("input-a"), topic("input-b")])
        .with_source_topic_regex(vec![s("in-.*")])
        .with_state_changelog_topics(vec![hbq::TopicInfo::default()
            .with_name(topic("app-1-store-changelog"))
            .with_partitions(0)
            .with_replication_factor(3)
            .with_topic_configs(vec![hbq::KeyValue::default()
                .with_key(s("cleanup.policy"))
                .with_value(s("compact"))])])
        .with_repartition_sink_topics(vec![topic("app-1-repart")])
        .with_repartition_source_topics(vec![hbq::TopicInfo::default()
            .with_name(topic("app-1-repart2"))
            .with_partitions(4)
            .with_replication_factor(0)])
        .with_copartition_groups(vec![hbq::CopartitionGroup::default()
            .with_source_topics(vec![0, 1])
            .with_source_topic_regex(vec![])
            .with_repartition_source_topics(vec![0])]);
    StreamsGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s("app-1")))
        .with_member_id(s("m-1"))
        .with_member_epoch(0)
        .with_endpoint_information_epoch(3)
        .with_instance_id(Some(s("inst-1")))
        .with_rack_id(None)
        .with_rebalance_timeout_ms(30000)
        .with_topology(Some(
            hbq::Topology::default()
                .with_epoch(1)
                .with_subtopologies(vec![subtopology]),
        ))
        .with_active_tasks(Some(vec![hbq::TaskIds::default()
            .with_subtopology_id(s("0"))
            .with_partitions(vec![0, 1, 2])]))
        .with_standby_tasks(Some(vec![]))
        .with_warmup_tasks(None)
        .with_process_id(Some(s("process-7f3c")))
        .with_user_endpoint(Some(
            hbq::Endpoint::default()
                .with_host(s("localhost"))
                .with_port(65535u16),
        ))
        .with_client_tags(Some(vec![hbq::KeyValue::default()
            .with_key(s("zone"))
            .with_value(s("a"))]))
        .with_task_offsets(Some(vec![hbq::TaskOffset::default()
            .with_subtopology_id(s("0"))
            .with_partition(1)
            .with_offset(42)]))
        .with_task_end_offsets(None)
        .with_shutdown_application(false)
}

fn heartbeat_response(v1: bool) -> StreamsGroupHeartbeatResponse {
    let r = StreamsGroupHeartbeatResponse::default()
        .with_throttle_time_ms(0)
        .with_error_code(0)
        .with_error_message(None)
        .with_member_id(s("m-1"))
        .with_member_epoch(5)
        .with_heartbeat_interval_ms(5000)
        .with_task_offset_interval_ms(60000)
        .with_status(Some(vec![hbr::Status::default()
            .with_status_code(1)
            .with_status_detail(s("missing topics"))]))
        .with_active_tasks(Some(vec![hbr::TaskIds::default()
            .with_subtopology_id(s("0"))
            .with_partitions(vec![0, 1])]))
        .with_standby_tasks(None)
        .with_warmup_tasks(Some(vec![]))
        .with_endpoint_information_epoch(2)
        .with_partitions_by_user_endpoint(Some(vec![hbr::EndpointToPartitions::default()
            .with_user_endpoint(hbr::Endpoint::default().with_host(s("h")).with_port(8080))
            .with_active_partitions(vec![hbr::TopicPartition::default()
                .with_topic(topic("input-a"))
                .with_partitions(vec![0, 1])])
            .with_standby_partitions(vec![])]));
    if v1 {
        r.with_acceptable_recovery_lag_legacy(0)
            .with_acceptable_recovery_lag(10000)
            .with_topology_description_required(true)
    } else {
        r.with_acceptable_recovery_lag_legacy(10000)
            .with_acceptable_recovery_lag(-1)
            .with_topology_description_required(false)
    }
}

fn node(
    name: &'static str,
    node_type: i8,
    source_topics: Vec<TopicName>,
    sink_topic: Option<TopicName>,
    stores: Vec<StrBytes>,
    successors: Vec<StrBytes>,
) -> sdr::TopologyDescriptionNode {
    sdr::TopologyDescriptionNode::default()
        .with_name(s(name))
        .with_node_type(node_type)
        .with_source_topics(source_topics)
        .with_sink_topic(sink_topic)
        .with_stores(stores)
        .with_successors(successors)
}

fn describe_response() -> StreamsGroupDescribeResponse {
    let assignment = sdr::Assignment::default()
        .with_active_tasks(vec![sdr::TaskIds::default()
            .with_subtopology_id(s("0"))
            .with_partitions(vec![0])])
        .with_standby_tasks(vec![])
        .with_warmup_tasks(vec![]);
    let member = sdr::Member::default()
        .with_member_id(s("m-1"))
        .with_member_epoch(7)
        .with_instance_id(None)
        .with_rack_id(Some(s("r1")))
        .with_client_id(s("c1"))
        .with_client_host(s("/127.0.0.1"))
        .with_topology_epoch(1)
        .with_process_id(s("p1"))
        .with_user_endpoint(Some(
            sdr::Endpoint::default()
                .with_host(s("localhost"))
                .with_port(9999),
        ))
        .with_client_tags(vec![])
        .with_task_offsets(vec![sdr::TaskOffset::default()
            .with_subtopology_id(s("0"))
            .with_partition(0)
            .with_offset(100)])
        .with_task_end_offsets(vec![])
        .with_assignment(assignment.clone())
        .with_target_assignment(assignment)
        .with_is_classic(false);
    let description = sdr::TopologyDescription::default()
        .with_subtopologies(vec![sdr::TopologyDescriptionSubtopology::default()
            .with_subtopology_id(s("0"))
            .with_nodes(vec![
                node(
                    "KSTREAM-SOURCE-0000000000",
                    1,
                    vec![topic("input-a")],
                    None,
                    vec![],
                    vec![s("KSTREAM-SINK-0000000001")],
                ),
                node(
                    "KSTREAM-SINK-0000000001",
                    3,
                    vec![],
                    Some(topic("output")),
                    vec![],
                    vec![],
                ),
            ])])
        .with_global_stores(vec![sdr::TopologyDescriptionGlobalStore::default()
            .with_source(node(
                "KSTREAM-SOURCE-0000000002",
                1,
                vec![topic("global-in")],
                None,
                vec![],
                vec![s("KTABLE-SOURCE-0000000003")],
            ))
            .with_processor(node(
                "KTABLE-SOURCE-0000000003",
                2,
                vec![],
                None,
                vec![s("global-store")],
                vec![],
            ))]);
    let group = sdr::DescribedGroup::default()
        .with_error_code(0)
        .with_error_message(None)
        .with_group_id(GroupId(s("app-1")))
        .with_group_state(s("Stable"))
        .with_group_epoch(7)
        .with_assignment_epoch(7)
        .with_topology(Some(
            sdr::Topology::default()
                .with_epoch(1)
                .with_subtopologies(Some(vec![sdr::Subtopology::default()
                    .with_subtopology_id(s("0"))
                    .with_source_topics(vec![topic("input-a")])
                    .with_repartition_sink_topics(vec![])
                    .with_state_changelog_topics(vec![sdr::TopicInfo::default()
                        .with_name(topic("app-1-store-changelog"))
                        .with_partitions(0)
                        .with_replication_factor(3)
                        .with_topic_configs(vec![sdr::KeyValue::default()
                            .with_key(s("cleanup.policy"))
                            .with_value(s("compact"))])])
                    .with_repartition_source_topics(vec![])])),
        ))
        .with_members(vec![member])
        .with_authorized_operations(i32::MIN)
        .with_topology_description(Some(description))
        .with_topology_description_status(3)
        .with_assignor_name(Some(s("sticky")));
    StreamsGroupDescribeResponse::default()
        .with_throttle_time_ms(0)
        .with_groups(vec![group])
}

#[test]
fn streams_group_api_keys() {
    assert_eq!(ApiKey::try_from(88), Ok(ApiKey::StreamsGroupHeartbeat));
    assert_eq!(ApiKey::try_from(89), Ok(ApiKey::StreamsGroupDescribe));
    assert_eq!(
        ApiKey::try_from(93),
        Ok(ApiKey::StreamsGroupTopologyDescriptionUpdate)
    );
    assert_eq!(<StreamsGroupHeartbeatRequest as Request>::KEY, 88);
    assert_eq!(<StreamsGroupDescribeRequest as Request>::KEY, 89);
    assert_eq!(
        <StreamsGroupTopologyDescriptionUpdateRequest as Request>::KEY,
        93
    );
    let hb = ApiKey::StreamsGroupHeartbeat.valid_versions();
    assert_eq!((hb.min, hb.max), (0, 1));
    let d = ApiKey::StreamsGroupDescribe.valid_versions();
    assert_eq!((d.min, d.max), (0, 1));
    let t = ApiKey::StreamsGroupTopologyDescriptionUpdate.valid_versions();
    assert_eq!((t.min, t.max), (0, 0));
    for key in [
        ApiKey::StreamsGroupHeartbeat,
        ApiKey::StreamsGroupDescribe,
        ApiKey::StreamsGroupTopologyDescriptionUpdate,
    ] {
        // flexible from v0: request header v2, response header v1
        assert_eq!(key.request_header_version(0), 2);
        assert_eq!(key.response_header_version(0), 1);
    }
}

#[test]
fn streams_group_heartbeat_request_matches_java() {
    let req = heartbeat_request();
    assert_eq!(hex(&round_trip(&req, 0)), JAVA_HB_REQUEST_V0);
    assert_eq!(hex(&round_trip(&req, 1)), JAVA_HB_REQUEST_V1);
    // and a request without any of the nullable parts
    round_trip(&StreamsGroupHeartbeatRequest::default(), 1);
}

#[test]
fn streams_group_heartbeat_response_matches_java() {
    assert_eq!(
        hex(&round_trip(&heartbeat_response(false), 0)),
        JAVA_HB_RESPONSE_V0
    );
    assert_eq!(
        hex(&round_trip(&heartbeat_response(true), 1)),
        JAVA_HB_RESPONSE_V1
    );
    // v1 fields cannot be sent at v0 and the legacy v0 field not at v1
    let mut buf = BytesMut::new();
    assert!(heartbeat_response(true).encode(&mut buf, 0).is_err());
    let mut buf = BytesMut::new();
    assert!(heartbeat_response(false).encode(&mut buf, 1).is_err());
}

#[test]
fn streams_group_describe_matches_java() {
    assert_eq!(
        hex(&round_trip(&describe_response(), 1)),
        JAVA_DESCRIBE_RESPONSE_V1
    );
    let req = StreamsGroupDescribeRequest::default()
        .with_group_ids(vec![GroupId(s("app-1")), GroupId(s("app-2"))])
        .with_include_authorized_operations(true);
    round_trip(&req, 0);
    round_trip(&req.clone().with_include_topology_description(true), 1);
    // a v0 response: no topology description
    let mut v0 = describe_response();
    v0.groups[0].topology_description = None;
    v0.groups[0].topology_description_status = 0;
    v0.groups[0].assignor_name = None;
    round_trip(&v0, 0);
}

#[test]
fn streams_group_topology_description_update_round_trip() {
    let req = StreamsGroupTopologyDescriptionUpdateRequest::default()
        .with_group_id(GroupId(s("app-1")))
        .with_member_id(s("m-1"))
        .with_topology_epoch(1)
        .with_topology_description(tdu::TopologyDescription::default().with_subtopologies(vec![
                tdu::TopologyDescriptionSubtopology::default()
                    .with_subtopology_id(s("0"))
                    .with_nodes(vec![tdu::TopologyDescriptionNode::default()
                        .with_name(s("KSTREAM-SINK-0000000001"))
                        .with_node_type(3)
                        .with_sink_topic(Some(topic("output")))]),
            ]));
    round_trip(&req, 0);
    let resp = StreamsGroupTopologyDescriptionUpdateResponse::default()
        .with_error_code(25)
        .with_error_message(Some(s("unknown member")));
    round_trip(&resp, 0);
}

#[test]
fn streams_group_tagged_field_count_is_bounded() {
    // the last byte of a default v1 request is its tagged-field count (0); a count of 2^32-1
    // must fail before anything is allocated (Kafka 4.4's MAX_TAGGED_FIELD_COUNT)
    let mut buf = BytesMut::new();
    StreamsGroupHeartbeatRequest::default()
        .encode(&mut buf, 1)
        .unwrap();
    let mut bytes = buf.to_vec();
    assert_eq!(bytes.pop(), Some(0));
    bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    let err = StreamsGroupHeartbeatRequest::decode(&mut Bytes::from(bytes), 1).unwrap_err();
    assert!(err.to_string().contains("tagged fields"), "{err}");
}
