//! Entry points for the fuzz targets (`fuzz/`, run by `scripts/fuzz`): the broker's own request
//! path, with nothing mocked. Each must never panic, whatever the input; each returns what it made
//! of the input so a target can check invariants.

use super::frame::{FrameError, FrameReader};
use crate::handlers;
use bytes::Bytes;
use kafka_protocol::messages::*;
use std::net::SocketAddr;

/// What the broker makes of one request frame.
#[derive(Debug, PartialEq, Eq)]
pub enum FrameOutcome {
    /// Header or API/version refused: the connection closes.
    Closed,
    /// Answered before decoding (ApiVersions of an unsupported version, KIP-511).
    EarlyAnswer,
    /// The body did not decode: the connection closes (INVALID_REQUEST).
    BadBody,
    /// A request the handlers would run.
    Decoded,
}

fn peer() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9))
}

/// One frame payload (without its size prefix) through [`handlers::parse_request`] and the body
/// decoder of its API, as the connection's read loop and [`handlers::handle`] do.
pub fn request_frame(payload: &[u8]) -> FrameOutcome {
    let session = std::sync::Arc::new(crate::security::Session::anonymous(
        "PLAINTEXT".into(),
        crate::security::SecurityProtocol::Plaintext,
        peer().ip(),
    ));
    match handlers::parse_request(Bytes::copy_from_slice(payload), peer(), &session) {
        Err(None) => FrameOutcome::Closed,
        Err(Some(answer)) => {
            assert!(answer.len() >= 8, "early answer without a header");
            FrameOutcome::EarlyAnswer
        }
        Ok((ctx, body)) => {
            macro_rules! decode {
                ($($key:ident => $ty:ty),* $(,)?) => {
                    match ctx.api_key {
                        $(ApiKey::$key => handlers::decode::<$ty>(&ctx, body).map(|_| ()),)*
                        // an API advertised later than this list: its header was still parsed
                        _ => Ok(()),
                    }
                };
            }
            // `handlers::handle` decodes with these same types (and `handlers::decode`)
            let r = decode!(
                Produce => ProduceRequest,
                Fetch => FetchRequest,
                ListOffsets => ListOffsetsRequest,
                Metadata => MetadataRequest,
                ApiVersions => ApiVersionsRequest,
                CreateTopics => CreateTopicsRequest,
                DeleteTopics => DeleteTopicsRequest,
                InitProducerId => InitProducerIdRequest,
                DescribeConfigs => DescribeConfigsRequest,
                AlterConfigs => AlterConfigsRequest,
                CreatePartitions => CreatePartitionsRequest,
                IncrementalAlterConfigs => IncrementalAlterConfigsRequest,
                DescribeCluster => DescribeClusterRequest,
                DescribeAcls => DescribeAclsRequest,
                CreateAcls => CreateAclsRequest,
                DeleteAcls => DeleteAclsRequest,
                OffsetCommit => OffsetCommitRequest,
                OffsetFetch => OffsetFetchRequest,
                FindCoordinator => FindCoordinatorRequest,
                JoinGroup => JoinGroupRequest,
                Heartbeat => HeartbeatRequest,
                LeaveGroup => LeaveGroupRequest,
                SyncGroup => SyncGroupRequest,
                DescribeGroups => DescribeGroupsRequest,
                ListGroups => ListGroupsRequest,
                DeleteGroups => DeleteGroupsRequest,
                OffsetDelete => OffsetDeleteRequest,
                ConsumerGroupHeartbeat => ConsumerGroupHeartbeatRequest,
                ConsumerGroupDescribe => ConsumerGroupDescribeRequest,
                SaslHandshake => SaslHandshakeRequest,
                SaslAuthenticate => SaslAuthenticateRequest,
                DescribeUserScramCredentials => DescribeUserScramCredentialsRequest,
                AlterUserScramCredentials => AlterUserScramCredentialsRequest,
                DescribeClientQuotas => DescribeClientQuotasRequest,
                AlterClientQuotas => AlterClientQuotasRequest,
                UpdateFeatures => UpdateFeaturesRequest,
            );
            match r {
                Ok(()) => FrameOutcome::Decoded,
                Err(_) => FrameOutcome::BadBody,
            }
        }
    }
}

/// A raw byte stream through the frame reader (sizes, limits, truncation), every complete
/// frame then through [`request_frame`]. Returns the number of complete frames.
pub fn request_stream(data: &[u8], max_frame: usize) -> usize {
    thread_local! {
        static RT: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("fuzz runtime");
    }
    RT.with(|rt| {
        rt.block_on(async {
            let mut reader = FrameReader::new(data, max_frame);
            let mut frames = 0;
            loop {
                match reader.next().await {
                    Ok(frame) => {
                        assert!(frame.payload.len() <= max_frame);
                        frames += 1;
                        request_frame(&frame.payload);
                    }
                    Err(FrameError::Closed)
                    | Err(FrameError::Truncated { .. })
                    | Err(FrameError::BadSize { .. }) => return frames,
                    Err(e) => panic!("unexpected frame error on an in-memory stream: {e}"),
                }
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes() {
        assert_eq!(request_frame(b""), FrameOutcome::Closed);
        // ApiVersions v0, correlation 1, client id "x"
        let ok = [0, 18, 0, 0, 0, 0, 0, 1, 0, 1, b'x'];
        assert_eq!(request_frame(&ok), FrameOutcome::Decoded);
        let v99 = [0, 18, 0, 99, 0, 0, 0, 1, 0, 1, b'x'];
        assert_eq!(request_frame(&v99), FrameOutcome::EarlyAnswer);
        let mut stream = vec![0, 0, 0, ok.len() as u8];
        stream.extend_from_slice(&ok);
        stream.extend_from_slice(&[0, 0, 0, 5, 1]);
        assert_eq!(request_stream(&stream, 1000), 1);
    }

    #[test]
    fn hostile_array_lengths_do_not_allocate() {
        // Metadata v1 claiming 2^31-1 topics in 27 bytes: kafka-protocol 0.18 reserved 154 GB
        // for them and the allocation failure aborted the broker (vendor/kafka-protocol/PATCHED.md)
        let mut m = vec![0, 3, 0, 1, 0, 0, 0, 7, 0, 1, b'x'];
        m.extend_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(request_frame(&m), FrameOutcome::BadBody);
        // Metadata v12 (flexible): a compact array length of 2^32-1
        let mut m = vec![0, 3, 0, 12, 0, 0, 0, 7, 0, 1, b'x', 0];
        m.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(request_frame(&m), FrameOutcome::BadBody);
    }
}
