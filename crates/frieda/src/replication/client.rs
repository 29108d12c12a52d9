//! A minimal Kafka client for broker-to-broker requests (a follower's Fetch and
//! OffsetForLeaderEpoch to its leader): one connection, one request at a time, `kafka-protocol`
//! for the messages.

use std::time::Duration;

use bytes::{Buf, BufMut, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest response accepted, bytes (a follower fetch is bounded by `replica.fetch.max.bytes`
/// per partition and the response limit; this only guards against garbage lengths).
const MAX_RESPONSE_BYTES: usize = 256 << 20;

/// A connection to another broker.
pub struct BrokerClient {
    stream: TcpStream,
    correlation_id: i32,
    client_id: StrBytes,
}

fn err(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

impl BrokerClient {
    /// Connects to `addr` (`host:port`) within `timeout`, as `client_id`.
    ///
    /// Errors: the connection failed or timed out.
    pub async fn connect(
        addr: &str,
        client_id: &str,
        timeout: Duration,
    ) -> std::io::Result<BrokerClient> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out")
            })??;
        stream.set_nodelay(true)?;
        Ok(BrokerClient {
            stream,
            correlation_id: 0,
            client_id: StrBytes::from_string(client_id.to_string()),
        })
    }

    /// Sends `req` as version `version` and waits for its response, at most `timeout`.
    ///
    /// Errors: I/O, timeout, or a response that does not decode (the connection should then
    /// be dropped).
    pub async fn call<R>(
        &mut self,
        version: i16,
        req: &R,
        timeout: Duration,
    ) -> std::io::Result<R::Response>
    where
        R: Request + Encodable + HeaderVersion,
        R::Response: Decodable + HeaderVersion,
    {
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(self.client_id.clone()));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, R::header_version(version))
            .map_err(err)?;
        req.encode(&mut body, version).map_err(err)?;
        let mut frame = BytesMut::with_capacity(4 + body.len());
        frame.put_u32(body.len() as u32);
        frame.extend_from_slice(&body);
        let expected = self.correlation_id;
        let stream = &mut self.stream;
        tokio::time::timeout(timeout, async move {
            stream.write_all(&frame).await?;
            let len = stream.read_u32().await? as usize;
            if len > MAX_RESPONSE_BYTES {
                return Err(err(format!("response of {len} bytes refused")));
            }
            let mut buf = vec![0u8; len];
            stream.read_exact(&mut buf).await?;
            let mut bytes = bytes::Bytes::from(buf);
            let h = ResponseHeader::decode(&mut bytes, R::Response::header_version(version))
                .map_err(err)?;
            if h.correlation_id != expected {
                return Err(err(format!(
                    "correlation id {} for request {expected}",
                    h.correlation_id
                )));
            }
            let resp = R::Response::decode(&mut bytes, version).map_err(err)?;
            if bytes.has_remaining() {
                tracing::debug!(left = bytes.remaining(), "bytes left after a response");
            }
            Ok(resp)
        })
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "request timed out"))?
    }
}
