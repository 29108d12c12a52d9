//! Entry points for the fuzz targets (`fuzz/`, run by `scripts/fuzz`): the broker's own request
//! path, with nothing mocked. Each must never panic, whatever the input; each returns what it made
//! of the input so a target can check invariants.

use super::frame::{FrameError, FrameReader};
use crate::handlers;
use bytes::Bytes;
use kafka_protocol::messages::RequestHeader;
use kafka_protocol::protocol::Encodable;
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
            // the request type `handlers::handle` decodes this API with (the API table's)
            match handlers::table::decode_body(&ctx, body) {
                Ok(()) => FrameOutcome::Decoded,
                Err(_) => FrameOutcome::BadBody,
            }
        }
    }
}

/// A request of the API table's: see [`table_requests`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRequest {
    /// Its API key.
    pub api_key: i16,
    /// Its version.
    pub version: i16,
    /// The frame payload (request header and body, without the size prefix) that
    /// [`request_frame`] takes.
    pub payload: Vec<u8>,
}

/// A request for every version of every API of the table ([`handlers::table::APIS`]), in table
/// order, versions ascending: the header (correlation id counting from 1, client id `fuzz`) and
/// a body with every field at its default ([`handlers::table::default_request`]). The fuzz
/// targets' seeds, so that mutation starts from a request every decoder takes; a version the
/// schema cannot encode a default body for is left out (none today: a unit test of the table
/// encodes them all).
pub fn table_requests() -> Vec<TableRequest> {
    let mut out = Vec::new();
    for spec in handlers::table::APIS {
        for version in spec.min..=spec.max {
            let Some(body) = handlers::table::default_request(spec.key, version) else {
                continue;
            };
            let header = RequestHeader::default()
                .with_request_api_key(spec.key as i16)
                .with_request_api_version(version)
                .with_correlation_id(out.len() as i32 + 1)
                .with_client_id(Some(handlers::str_bytes("fuzz")));
            let mut payload = bytes::BytesMut::new();
            if header
                .encode(&mut payload, spec.key.request_header_version(version))
                .is_err()
            {
                continue;
            }
            payload.extend_from_slice(&body);
            out.push(TableRequest {
                api_key: spec.key as i16,
                version,
                payload: payload.to_vec(),
            });
        }
    }
    out
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
    fn table_requests_decode() {
        let requests = table_requests();
        let versions: usize = handlers::table::APIS
            .iter()
            .map(|s| (s.max - s.min + 1) as usize)
            .sum();
        assert_eq!(requests.len(), versions);
        for r in &requests {
            assert_eq!(
                request_frame(&r.payload),
                FrameOutcome::Decoded,
                "api {} v{}",
                r.api_key,
                r.version
            );
        }
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
