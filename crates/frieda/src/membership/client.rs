//! A minimal Kafka client for broker-to-broker requests (a follower's Fetch and
//! OffsetForLeaderEpoch to its leader, a coordinator's markers): one connection, one request at
//! a time, `kafka-protocol` for the messages; TLS and SASL as the inter-broker listener asks
//! ([`crate::security::client`]).

use std::time::Duration;

use crate::security::client::ClientSecurity;
use crate::security::sasl::Mechanism;
use crate::security::scram::ScramMechanism;
use bytes::{Buf, BufMut, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

// A byte stream to another broker: TCP, or TLS over TCP (the quorum's stream trait, so a
// logged-in connection can carry the controller listener's frames).
use frieda_meta::QuorumStream as Io;

/// Largest response accepted, bytes (a follower fetch is bounded by `replica.fetch.max.bytes`
/// per partition and the response limit; this only guards against garbage lengths).
const MAX_RESPONSE_BYTES: usize = 256 << 20;

/// A connection to another broker.
pub struct BrokerClient {
    stream: Box<dyn Io>,
    correlation_id: i32,
    client_id: StrBytes,
}

fn err(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

impl BrokerClient {
    /// Connects to `addr` (`host:port`) within `timeout`, as `client_id`, with the TLS
    /// handshake and SASL login `security` asks for.
    ///
    /// Errors: the connection, the handshake or the login failed or timed out.
    pub async fn connect(
        addr: &str,
        client_id: &str,
        timeout: Duration,
        security: &ClientSecurity,
    ) -> std::io::Result<BrokerClient> {
        let timed_out = || std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out");
        let tcp = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| timed_out())??;
        tcp.set_nodelay(true)?;
        let stream: Box<dyn Io> = match &security.tls {
            None => Box::new(tcp),
            Some(config) => {
                let name = ClientSecurity::server_name(addr)?;
                let tls = tokio_rustls::TlsConnector::from(config.clone());
                Box::new(
                    tokio::time::timeout(timeout, tls.connect(name, tcp))
                        .await
                        .map_err(|_| timed_out())??,
                )
            }
        };
        let mut client = BrokerClient {
            stream,
            correlation_id: 0,
            client_id: StrBytes::from_string(client_id.to_string()),
        };
        if let Some(sasl) = &security.sasl {
            client
                .login(sasl.mechanism, &sasl.username, &sasl.password, timeout)
                .await?;
        }
        Ok(client)
    }

    /// The connection's byte stream, handshakes and login done (the controller listener's
    /// frames follow them on it).
    pub fn into_stream(self) -> Box<dyn Io> {
        self.stream
    }

    /// SaslHandshake v1 and SaslAuthenticate v2 exchanges as `user` (PLAIN or SCRAM).
    ///
    /// Errors: the mechanism is refused, the credentials are wrong, or the server's SCRAM
    /// signature does not match.
    async fn login(
        &mut self,
        mechanism: Mechanism,
        user: &str,
        password: &str,
        timeout: Duration,
    ) -> std::io::Result<()> {
        let hs = SaslHandshakeRequest::default()
            .with_mechanism(StrBytes::from_string(mechanism.name().to_string()));
        let r = self.call(1, &hs, timeout).await?;
        if r.error_code != 0 {
            return Err(err(format!(
                "SASL mechanism {} refused (error {}; the broker offers {:?})",
                mechanism.name(),
                r.error_code,
                r.mechanisms
            )));
        }
        let step = |bytes: Vec<u8>| {
            SaslAuthenticateRequest::default().with_auth_bytes(bytes::Bytes::from(bytes))
        };
        let check = |r: &SaslAuthenticateResponse| -> std::io::Result<()> {
            if r.error_code == 0 {
                Ok(())
            } else {
                Err(err(format!(
                    "SASL login as {user} failed: {}",
                    r.error_message.as_deref().unwrap_or("(no message)")
                )))
            }
        };
        match mechanism {
            Mechanism::Plain => {
                let token = format!("\0{user}\0{password}").into_bytes();
                let r = self.call(2, &step(token), timeout).await?;
                check(&r)
            }
            Mechanism::Scram(m) => {
                let m: ScramMechanism = m;
                let mut scram = crate::security::sasl::scram::ScramClient::new(m, user, password);
                let r = self.call(2, &step(scram.client_first()), timeout).await?;
                check(&r)?;
                let fin = scram.client_final(&r.auth_bytes).map_err(|e| err(e.0))?;
                let r = self.call(2, &step(fin), timeout).await?;
                check(&r)?;
                scram.verify(&r.auth_bytes).map_err(|e| err(e.0))
            }
            Mechanism::OAuthBearer => Err(err("OAUTHBEARER is not used between brokers")),
        }
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
                return Err(err(oversized_response(len as u32)));
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

/// Why a response whose size field reads `len` (over [`MAX_RESPONSE_BYTES`]) is refused. A
/// TLS listener answers a plaintext request with a TLS record (content type 21, an alert, or
/// 22, a handshake; then version 3.x), whose first four bytes read as such a size: say so
/// (issue 59: `frieda admin` against an SSL port without `--command-config`).
pub fn oversized_response(len: u32) -> String {
    let [kind, major, _, _] = len.to_be_bytes();
    if (kind == 21 || kind == 22) && major == 3 {
        return "the broker answered with TLS: this listener needs security.protocol=SSL or \
                SASL_SSL (frieda admin: --command-config with the client's settings)"
            .to_string();
    }
    format!("response of {len} bytes refused")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TLS alert read as a Kafka response size (the bytes 0x15 0x03 0x03 0x00: 352,518,912)
    /// is named as TLS; any other oversized answer by its size.
    #[test]
    fn a_tls_answer_to_a_plaintext_request_is_named() {
        assert!(oversized_response(352_518_912).contains("answered with TLS"));
        assert!(oversized_response(0x1603_0100).contains("answered with TLS"));
        assert_eq!(
            oversized_response(400_000_000),
            "response of 400000000 bytes refused"
        );
    }
}
