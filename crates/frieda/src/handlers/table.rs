//! The one table of every API Frieda serves: per API its request type, the versions served, where
//! it stands with SASL authentication, and its handler. Everything that needs the list of APIs
//! reads it from here:
//!
//! - ApiVersions advertises [`APIS`] in its order ([`super::api_versions`]);
//! - [`super::parse_request`] admits a request by [`lookup`] and [`ApiSpec::serves`];
//! - [`super::handle`] runs the handler through [`dispatch`];
//! - the connection's SASL gate ([`crate::server::authentication`]) and the request quota
//!   exemption read [`ApiSpec::auth`];
//! - the fuzz targets ([`crate::server::fuzzing`]) decode with [`decode_body`] and build a seed
//!   request for every version of every API with [`default_request`].
//!
//! Adding an API is one row of the `api_table!` invocation below. Version ranges are what the
//! handlers serve, within what the `kafka-protocol` crate (Kafka 4.1 schemas) can decode.

use super::{
    acls, admin, api_versions, cluster, config_resources, configs, consumer_groups,
    delegation_tokens, delete_records, envelope, features, fetch, groups, leader_epoch, leadership,
    list_offsets, log_dirs, metadata, offsets, produce, producer_id, quorum, quotas, scram,
    share_fetch, share_groups, share_state, streams_groups, topic_partitions, transactions,
};
use super::{decode, encode, CloseConnection, RequestContext};
use crate::broker::Broker;
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, Request};
use std::sync::Arc;

/// Where an API stands with SASL authentication on a listener with SASL (KIP-43, KIP-152).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// Served only once the connection authenticated; before that the connection closes.
    Required,
    /// Served before authentication too: ApiVersions, so that a client can pick its versions
    /// first (KIP-511).
    Open,
    /// The SASL exchange itself (SaslHandshake, SaslAuthenticate): on a listener with SASL the
    /// connection's authenticator answers it
    /// ([`sasl_request`](crate::server::authentication::sasl_request)); on one without, the
    /// table's handler answers ILLEGAL_SASL_STATE (34).
    Exchange,
}

/// One API of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiSpec {
    /// The API.
    pub key: ApiKey,
    /// Lowest version served.
    pub min: i16,
    /// Highest version served.
    pub max: i16,
    /// Lowest version ApiVersions advertises: `min`, except for Produce, advertised from v0
    /// although v0-2 are refused, as Kafka 4 does: librdkafka before 2.10 only enables message
    /// format v2 when the advertised range starts at 0 (KAFKA-18659).
    pub advertised_min: i16,
    /// Where it stands with SASL authentication.
    pub auth: Auth,
}

impl ApiSpec {
    /// Whether `version` is served (within `min..=max`).
    pub fn serves(&self, version: i16) -> bool {
        (self.min..=self.max).contains(&version)
    }

    /// Whether ApiVersions advertises it: every API but Envelope, which Frieda's brokers send
    /// only to each other (diskless coordinator requests); Kafka 4.4's brokers do not advertise
    /// it either.
    pub fn advertised(&self) -> bool {
        self.key != ApiKey::Envelope
    }

    /// Whether the request quota leaves it out (KIP-124): ApiVersions and the SASL requests,
    /// as in Kafka; these are the APIs not requiring authentication.
    pub fn quota_exempt(&self) -> bool {
        self.auth != Auth::Required
    }
}

/// Answers `$resp`, or (`Option`: a handler that may owe no response, acks=0 Produce) nothing.
macro_rules! reply {
    ($ctx:ident, $resp:expr) => {
        encode($ctx, &$resp).map(Some)
    };
    ($ctx:ident, $resp:expr, Option) => {
        match $resp {
            Some(resp) => encode($ctx, &resp).map(Some),
            None => Ok(None),
        }
    };
}

/// Generates [`APIS`], [`dispatch`], [`decode_body`] and [`default_request`] from one list of
/// rows: `Key(RequestType) min..=max [(advertised from v)], Auth, handler [-> Option];`
/// where the handler is `async fn(&Arc<Broker>, &RequestContext, RequestType) -> Response`
/// (`-> Option`: `Option<Response>`, `None` when no response is due).
macro_rules! api_table {
    ($(
        $key:ident($req:ident) $min:literal..=$max:literal $((advertised from $adv:literal))?,
        $auth:ident, $($handler:ident)::+ $(-> $opt:ident)?;
    )*) => {
        /// Every API served, in the order ApiVersions lists them.
        pub const APIS: &[ApiSpec] = &[$(
            ApiSpec {
                key: ApiKey::$key,
                min: $min,
                max: $max,
                advertised_min: [$($adv,)? $min][0],
                auth: Auth::$auth,
            },
        )*];

        // Each row's request type is its API's (a row pasted with the wrong type does not build).
        const _: () = {$(
            assert!(
                <$req as Request>::KEY == ApiKey::$key as i16,
                concat!("api_table: ", stringify!($req), " is not the request of ", stringify!($key)),
            );
        )*};

        /// Decodes the request body, runs its API's handler and encodes the response with its
        /// header: `Ok(None)` when none is due (acks=0 Produce), `Err` when the connection must
        /// close (a malformed body, INVALID_REQUEST; a response that cannot be encoded; an API
        /// outside the table, which [`super::parse_request`] never lets through). Reasons are
        /// logged.
        pub async fn dispatch(
            broker: Arc<Broker>,
            ctx: &RequestContext,
            body: Bytes,
        ) -> Result<Option<Bytes>, CloseConnection> {
            match ctx.api_key {
                $(ApiKey::$key => {
                    let req: $req = decode(ctx, body)?;
                    let resp = $($handler)::+(&broker, ctx, req).await;
                    reply!(ctx, resp $(, $opt)?)
                })*
                other => {
                    tracing::error!(api = ?other, "no handler for an API outside the table; closing connection");
                    Err(CloseConnection)
                }
            }
        }

        /// Decodes the request body as [`dispatch`] would, without handling it (the fuzz
        /// targets). `Err`: a malformed body (logged, INVALID_REQUEST) or an API outside the
        /// table.
        pub fn decode_body(ctx: &RequestContext, body: Bytes) -> Result<(), CloseConnection> {
            match ctx.api_key {
                $(ApiKey::$key => decode::<$req>(ctx, body).map(|_| ()),)*
                _ => Err(CloseConnection),
            }
        }

        /// Kafka's name of an API in the table (`ApiKeys.name`: `Produce`, `CreateTopics`);
        /// `Unknown` for one outside it.
        pub fn api_name(key: ApiKey) -> &'static str {
            match key {
                $(ApiKey::$key => stringify!($key),)*
                _ => "Unknown",
            }
        }

        /// The body of `key`'s request with every field at its default, encoded at `version`:
        /// a seed for the fuzz targets and a request the tests dispatch. `None` for an API
        /// outside the table or a version its schema cannot encode.
        pub fn default_request(key: ApiKey, version: i16) -> Option<Bytes> {
            let mut buf = BytesMut::new();
            let encoded = match key {
                $(ApiKey::$key => $req::default().encode(&mut buf, version),)*
                _ => return None,
            };
            encoded.ok().map(|()| buf.freeze())
        }
    };
}

api_table! {
    // API(request type) versions served [(advertised from)],  SASL (Auth),  handler [-> Option]
    Produce(ProduceRequest) 3..=13 (advertised from 0),    Required, produce::handle -> Option;
    Fetch(FetchRequest) 4..=18,                             Required, fetch::handle;
    ListOffsets(ListOffsetsRequest) 1..=11,                 Required, list_offsets::handle;
    Metadata(MetadataRequest) 0..=13,                       Required, metadata::handle;
    ApiVersions(ApiVersionsRequest) 0..=5,                  Open, api_versions::handle;
    CreateTopics(CreateTopicsRequest) 2..=7,                Required, admin::create_topics;
    DeleteTopics(DeleteTopicsRequest) 1..=6,                Required, admin::delete_topics;
    InitProducerId(InitProducerIdRequest) 0..=5,            Required, producer_id::handle;
    DescribeConfigs(DescribeConfigsRequest) 1..=4,          Required, configs::describe;
    AlterConfigs(AlterConfigsRequest) 0..=2,                Required, configs::alter;
    CreatePartitions(CreatePartitionsRequest) 0..=3,        Required, admin::create_partitions;
    IncrementalAlterConfigs(IncrementalAlterConfigsRequest) 0..=1,
                                                            Required, configs::incremental_alter;
    DescribeCluster(DescribeClusterRequest) 0..=2,          Required, cluster::handle;
    UnregisterBroker(UnregisterBrokerRequest) 0..=0,        Required, cluster::unregister_broker;
    UnregisterController(UnregisterControllerRequest) 0..=0,
                                                            Required, cluster::unregister_controller;
    FindCoordinator(FindCoordinatorRequest) 0..=6,          Required, groups::find_coordinator;
    JoinGroup(JoinGroupRequest) 0..=9,                      Required, groups::join_group;
    SyncGroup(SyncGroupRequest) 0..=5,                      Required, groups::sync_group;
    Heartbeat(HeartbeatRequest) 0..=4,                      Required, groups::heartbeat;
    LeaveGroup(LeaveGroupRequest) 0..=5,                    Required, groups::leave_group;
    OffsetCommit(OffsetCommitRequest) 2..=10,               Required, offsets::commit;
    OffsetFetch(OffsetFetchRequest) 1..=10,                 Required, offsets::fetch;
    OffsetDelete(OffsetDeleteRequest) 0..=0,                Required, offsets::delete;
    ListGroups(ListGroupsRequest) 0..=5,                    Required, groups::list_groups;
    DescribeGroups(DescribeGroupsRequest) 0..=6,            Required, groups::describe_groups;
    DeleteGroups(DeleteGroupsRequest) 0..=3,                Required, groups::delete_groups;
    ConsumerGroupHeartbeat(ConsumerGroupHeartbeatRequest) 0..=1,
                                                            Required, consumer_groups::heartbeat;
    ConsumerGroupDescribe(ConsumerGroupDescribeRequest) 0..=1,
                                                            Required, consumer_groups::describe;
    // KIP-1071 streams groups (Kafka Streams' `group.protocol=streams`)
    StreamsGroupHeartbeat(StreamsGroupHeartbeatRequest) 0..=1,
                                                            Required, streams_groups::heartbeat;
    StreamsGroupDescribe(StreamsGroupDescribeRequest) 0..=1,
                                                            Required, streams_groups::describe;
    StreamsGroupTopologyDescriptionUpdate(StreamsGroupTopologyDescriptionUpdateRequest) 0..=0,
                                                            Required, streams_groups::topology_description_update;
    // KIP-932 share groups (Kafka's `KafkaShareConsumer`; v0 was 4.0's early access)
    ShareGroupHeartbeat(ShareGroupHeartbeatRequest) 1..=1,  Required, share_groups::heartbeat;
    ShareGroupDescribe(ShareGroupDescribeRequest) 1..=1,    Required, share_groups::describe;
    ShareFetch(ShareFetchRequest) 1..=2,                    Required, share_fetch::handle;
    ShareAcknowledge(ShareAcknowledgeRequest) 1..=2,        Required, share_fetch::acknowledge_handle;
    DescribeShareGroupOffsets(DescribeShareGroupOffsetsRequest) 0..=1,
                                                            Required, share_groups::describe_offsets;
    AlterShareGroupOffsets(AlterShareGroupOffsetsRequest) 0..=0,
                                                            Required, share_groups::alter_offsets;
    DeleteShareGroupOffsets(DeleteShareGroupOffsetsRequest) 0..=0,
                                                            Required, share_groups::delete_offsets;
    // Inter-broker: a partition leader's share-partition state, to the share group's coordinator
    ReadShareGroupState(ReadShareGroupStateRequest) 0..=0,  Required, share_state::handle_read;
    WriteShareGroupState(WriteShareGroupStateRequest) 0..=1, Required, share_state::handle_write;
    // Inter-broker, not advertised (Kafka's brokers do not): a diskless coordinator request
    Envelope(EnvelopeRequest) 0..=0,                        Required, envelope::handle;
    OffsetForLeaderEpoch(OffsetForLeaderEpochRequest) 2..=4, Required, leader_epoch::handle;
    ElectLeaders(ElectLeadersRequest) 0..=2,                Required, leadership::elect_leaders;
    AlterPartitionReassignments(AlterPartitionReassignmentsRequest) 0..=1,
                                                            Required, leadership::alter_reassignments;
    ListPartitionReassignments(ListPartitionReassignmentsRequest) 0..=0,
                                                            Required, leadership::list_reassignments;
    DescribeQuorum(DescribeQuorumRequest) 0..=2,            Required, quorum::handle;
    AddRaftVoter(AddRaftVoterRequest) 0..=1,                Required, quorum::add_raft_voter;
    RemoveRaftVoter(RemoveRaftVoterRequest) 0..=0,          Required, quorum::remove_raft_voter;
    UpdateFeatures(UpdateFeaturesRequest) 0..=2,            Required, features::handle;
    DescribeLogDirs(DescribeLogDirsRequest) 1..=5,          Required, log_dirs::handle;
    AlterReplicaLogDirs(AlterReplicaLogDirsRequest) 1..=2,  Required, log_dirs::alter_replica_log_dirs;
    ListConfigResources(ListConfigResourcesRequest) 0..=1,  Required, config_resources::handle;
    DescribeTopicPartitions(DescribeTopicPartitionsRequest) 0..=0,
                                                            Required, topic_partitions::handle;
    DeleteRecords(DeleteRecordsRequest) 0..=2,              Required, delete_records::handle;
    // security (KIP-43, KIP-152, KIP-368, KIP-554)
    SaslHandshake(SaslHandshakeRequest) 0..=1,              Exchange, scram::sasl_handshake;
    SaslAuthenticate(SaslAuthenticateRequest) 0..=2,        Exchange, scram::sasl_authenticate;
    DescribeUserScramCredentials(DescribeUserScramCredentialsRequest) 0..=0,
                                                            Required, scram::describe;
    AlterUserScramCredentials(AlterUserScramCredentialsRequest) 0..=0,
                                                            Required, scram::alter;
    DescribeClientQuotas(DescribeClientQuotasRequest) 0..=1, Required, quotas::describe;
    AlterClientQuotas(AlterClientQuotasRequest) 0..=1,      Required, quotas::alter;
    // v0 removed in Kafka 4 (KIP-896); without an authorizer: SECURITY_DISABLED, as Kafka
    DescribeAcls(DescribeAclsRequest) 1..=3,                Required, acls::describe;
    CreateAcls(CreateAclsRequest) 1..=3,                    Required, acls::create;
    DeleteAcls(DeleteAclsRequest) 1..=3,                    Required, acls::delete;
    // delegation tokens (KIP-48, KIP-373; v0 removed in Kafka 4, KIP-896)
    CreateDelegationToken(CreateDelegationTokenRequest) 1..=3,
                                                            Required, delegation_tokens::create;
    RenewDelegationToken(RenewDelegationTokenRequest) 1..=2,
                                                            Required, delegation_tokens::renew;
    ExpireDelegationToken(ExpireDelegationTokenRequest) 1..=2,
                                                            Required, delegation_tokens::expire;
    DescribeDelegationToken(DescribeDelegationTokenRequest) 1..=3,
                                                            Required, delegation_tokens::describe;
    // transactions (KIP-98, KIP-664, KIP-890)
    AddPartitionsToTxn(AddPartitionsToTxnRequest) 0..=5,    Required, transactions::add_partitions;
    AddOffsetsToTxn(AddOffsetsToTxnRequest) 0..=4,          Required, transactions::add_offsets;
    EndTxn(EndTxnRequest) 0..=5,                            Required, transactions::end_txn;
    WriteTxnMarkers(WriteTxnMarkersRequest) 1..=2,          Required, transactions::write_txn_markers;
    TxnOffsetCommit(TxnOffsetCommitRequest) 0..=6,          Required, transactions::txn_offset_commit;
    DescribeTransactions(DescribeTransactionsRequest) 0..=0,
                                                            Required, transactions::describe_transactions;
    ListTransactions(ListTransactionsRequest) 0..=2,        Required, transactions::list_transactions;
    DescribeProducers(DescribeProducersRequest) 0..=0,      Required, transactions::describe_producers;
}

/// Index of each API key's row in [`APIS`] (`u8::MAX`: not served), so that a request's lookup
/// is one array access.
const INDEX: [u8; 128] = {
    let mut index = [u8::MAX; 128];
    assert!(APIS.len() < u8::MAX as usize, "api_table: too many rows");
    let mut i = 0;
    while i < APIS.len() {
        let key = APIS[i].key as usize;
        assert!(key < index.len(), "api_table: an API key past the index");
        assert!(index[key] == u8::MAX, "api_table: an API listed twice");
        index[key] = i as u8;
        i += 1;
    }
    index
};

/// The row of the API with wire key `key` (a request header's first field), if Frieda serves it.
pub fn lookup(key: i16) -> Option<&'static ApiSpec> {
    let i = *INDEX.get(usize::try_from(key).ok()?)?;
    APIS.get(usize::from(i))
}

/// The row of `api`, if Frieda serves it.
pub fn spec(api: ApiKey) -> Option<&'static ApiSpec> {
    lookup(api as i16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handlers::{handle, RequestTiming, Throttle};
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

    #[test]
    fn table_is_within_the_crate_ranges() {
        for s in APIS {
            let r = s.key.valid_versions();
            assert!(
                s.min >= r.min && s.max <= r.max && s.min <= s.max,
                "{:?} {}..{} outside {r}",
                s.key,
                s.min,
                s.max
            );
            // Produce's advertised v0-2 are below what the crate decodes: refused, never decoded
            assert!((0..=s.min).contains(&s.advertised_min), "{:?}", s.key);
        }
    }

    #[test]
    fn lookups() {
        assert_eq!(lookup(0).map(|s| s.key), Some(ApiKey::Produce));
        assert_eq!(lookup(9999), None);
        assert_eq!(lookup(-1), None);
        assert_eq!(lookup(127), None);
        for (i, s) in APIS.iter().enumerate() {
            assert_eq!(lookup(s.key as i16), Some(&APIS[i]));
            assert_eq!(spec(s.key), Some(&APIS[i]));
        }
        let produce = spec(ApiKey::Produce).unwrap();
        assert!(produce.serves(9) && !produce.serves(2));
        assert_eq!(produce.advertised_min, 0);
        assert!(!spec(ApiKey::ApiVersions).unwrap().serves(99));
        assert_eq!(spec(ApiKey::ApiVersions).unwrap().auth, Auth::Open);
        assert!(spec(ApiKey::SaslAuthenticate).unwrap().quota_exempt());
        assert!(!spec(ApiKey::Fetch).unwrap().quota_exempt());
    }

    fn context(key: ApiKey, version: i16) -> RequestContext {
        RequestContext {
            api_key: key,
            api_version: version,
            correlation_id: 7,
            client_id: Some("table-test".into()),
            peer: "127.0.0.1:5555".parse().unwrap(),
            session: Arc::new(crate::security::Session::anonymous(
                "PLAINTEXT".into(),
                crate::security::SecurityProtocol::Plaintext,
                "127.0.0.1".parse().unwrap(),
            )),
            request_bytes: 0,
            throttle: Throttle::default(),
            backlog: Default::default(),
            produce_ticket: Default::default(),
            splice: Default::default(),
            timing: RequestTiming::default(),
        }
    }

    /// Every version of every row reaches its handler and is answered: a default request
    /// decodes, the handler runs, the response encodes with the request's correlation id (none
    /// falls through to the closing arm of `dispatch`, none hangs, none panics).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_row_dispatches() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = crate::config::BrokerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        };
        let broker = Broker::open(cfg).unwrap();
        for s in APIS {
            for v in s.min..=s.max {
                let body = default_request(s.key, v)
                    .unwrap_or_else(|| panic!("{:?} v{v}: default request does not encode", s.key));
                let handled = tokio::time::timeout(
                    std::time::Duration::from_secs(30),
                    handle(broker.clone(), context(s.key, v), body),
                )
                .await
                .unwrap_or_else(|_| panic!("{:?} v{v}: no answer within 30 s", s.key));
                match handled.response {
                    Ok(Some(resp)) => {
                        let resp = resp.to_bytes().unwrap();
                        assert_eq!(&resp[4..8], &7i32.to_be_bytes(), "{:?} v{v}", s.key);
                    }
                    // a default Produce has acks=0: no response is due
                    Ok(None) => assert_eq!(s.key, ApiKey::Produce, "v{v}: no response"),
                    Err(CloseConnection) => panic!("{:?} v{v}: connection closed", s.key),
                }
            }
        }
    }

    /// ApiVersions, asked at each of its versions, lists exactly the table: its keys in order,
    /// the advertised ranges.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn api_versions_lists_exactly_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = crate::config::BrokerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        };
        let broker = Broker::open(cfg).unwrap();
        let expected: Vec<ApiVersion> = APIS
            .iter()
            .filter(|s| s.advertised())
            .map(|s| {
                ApiVersion::default()
                    .with_api_key(s.key as i16)
                    .with_min_version(s.advertised_min)
                    .with_max_version(s.max)
            })
            .collect();
        let api_versions = spec(ApiKey::ApiVersions).unwrap();
        for v in api_versions.min..=api_versions.max {
            let ctx = context(ApiKey::ApiVersions, v);
            // v3+ carry the client's software name and version (checked, as Kafka does).
            let mut buf = bytes::BytesMut::new();
            ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str("frieda-test"))
                .with_client_software_version(StrBytes::from_static_str("1.0"))
                .encode(&mut buf, v)
                .unwrap();
            let body = buf.freeze();
            let resp = handle(broker.clone(), ctx, body).await.response.unwrap();
            let mut resp = resp.unwrap().to_bytes().unwrap().slice(8..);
            // the response header of ApiVersions is v0 at every version (KIP-511)
            let decoded = ApiVersionsResponse::decode(&mut resp, v).unwrap();
            assert_eq!(decoded.error_code, 0);
            assert_eq!(decoded.api_keys, expected, "v{v}");
        }
        let early = api_versions::unsupported_version_response(3).slice(8..);
        let decoded = ApiVersionsResponse::decode(&mut early.clone(), 0).unwrap();
        assert_eq!(decoded.api_keys, expected);
    }

    /// Envelope carries only a diskless coordinator request: a Kafka request forwarded in one
    /// (here a Metadata header) is refused INVALID_REQUEST; a coordinator request on a broker
    /// that loads no coordinator is answered NOT_COORDINATOR inside the envelope.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn envelope_takes_only_diskless_coordinator_requests() {
        use crate::diskless::wire;
        let dir = tempfile::tempdir().unwrap();
        let cfg = crate::config::BrokerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        };
        let broker = Broker::open(cfg).unwrap();
        let call = wire::Call::Offsets(crate::diskless::coordinator::DisklessPartition {
            topic_id: uuid::Uuid::from_u128(1),
            partition: 0,
        });
        let request = wire::encode_request(&wire::CoordinatorRequest {
            index: 0,
            call: call.clone(),
        });
        for (data, code) in [
            (Bytes::from_static(&[0, 3, 0, 12, 0, 0, 0, 1, 0, 0]), 42),
            (Bytes::from(request), 0),
        ] {
            let mut buf = bytes::BytesMut::new();
            EnvelopeRequest::default()
                .with_request_data(data)
                .encode(&mut buf, 0)
                .unwrap();
            let ctx = context(ApiKey::Envelope, 0);
            let resp = handle(broker.clone(), ctx, buf.freeze())
                .await
                .response
                .unwrap();
            let mut resp = resp.unwrap().to_bytes().unwrap().slice(4..);
            use kafka_protocol::protocol::HeaderVersion;
            ResponseHeader::decode(&mut resp, EnvelopeResponse::header_version(0)).unwrap();
            let decoded = EnvelopeResponse::decode(&mut resp, 0).unwrap();
            assert_eq!(decoded.error_code, code);
            if code == 0 {
                let answer = wire::decode_response(&call, &decoded.response_data.unwrap());
                assert_eq!(
                    answer,
                    Ok(Err(kafka_protocol::error::ResponseError::NotCoordinator))
                );
            }
        }
    }

    /// The fuzz targets' decoder agrees with dispatch on every default request.
    #[test]
    fn decode_body_takes_every_default_request() {
        for s in APIS {
            for v in s.min..=s.max {
                let body = default_request(s.key, v).unwrap();
                assert_eq!(
                    decode_body(&context(s.key, v), body),
                    Ok(()),
                    "{:?} v{v}",
                    s.key
                );
            }
        }
        assert_eq!(default_request(ApiKey::Vote, 0), None);
    }
}
