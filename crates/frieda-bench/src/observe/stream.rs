//! One TCP connection to a broker, rebuilt from captured segments: each direction's byte stream
//! in sequence order, cut into Kafka frames (4-byte size, then the message), requests matched to
//! responses by correlation id (Kafka protocol guide, "Common Request and Response Structure").
//!
//! A connection seen from its SYN is in step from its first byte. One already open when the
//! capture started, or one that lost a segment to a capture drop, waits for a segment that
//! starts with a plausible request (size, API key, version) and resumes there; its responses
//! resume with the first whose correlation id is outstanding.

use std::collections::HashMap;

/// Largest frame believed (bytes): Kafka's default `socket.request.max.bytes` is 100 MiB.
const MAX_FRAME: usize = 100 << 20;
/// Highest API key believed when resynchronising (Kafka 4.3 ends at 92).
const MAX_API_KEY: i16 = 127;
/// Requests kept waiting for a response per connection; older ones are dropped (counted).
pub const MAX_OUTSTANDING: usize = 4096;

/// A request as read from the wire.
#[derive(Debug, Clone)]
pub struct Request {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: String,
    /// Frame size (bytes, with the 4-byte size).
    pub bytes: usize,
    /// Timestamp of the segment carrying the first byte (ns).
    pub start_ns: u64,
    /// Produce with acks=0: no response will come.
    pub no_response: bool,
}

/// A request and its response.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub request: Request,
    /// Response frame size (bytes, with the 4-byte size).
    pub response_bytes: usize,
    /// Timestamp of the segment carrying the response's last byte (ns).
    pub response_end_ns: u64,
}

impl Exchange {
    /// Request's first byte on the wire to the response's last byte (µs): what the client
    /// waits, without its own stack.
    pub fn latency_us(&self) -> u64 {
        self.response_end_ns.saturating_sub(self.request.start_ns) / 1000
    }
}

/// One direction's bytes.
#[derive(Default)]
struct Direction {
    next_seq: Option<u32>,
    buf: Vec<u8>,
    /// `buf` starts at a frame boundary.
    synced: bool,
    /// Timestamp of the segment that brought `buf`'s first byte.
    head_ns: u64,
}

impl Direction {
    /// Adds a segment in sequence order; returns false when bytes were missed (the buffer is
    /// dropped and the direction must resynchronise).
    fn push(&mut self, seq: u32, syn: bool, payload: &[u8], ts_ns: u64) -> bool {
        if syn {
            *self = Direction {
                next_seq: Some(seq.wrapping_add(1)),
                synced: true,
                ..Default::default()
            };
            return true;
        }
        if payload.is_empty() {
            return true;
        }
        let expected = *self.next_seq.get_or_insert(seq);
        let ahead = seq.wrapping_sub(expected) as i32;
        let mut data = payload;
        let mut in_step = true;
        if ahead < 0 {
            // A retransmission of bytes already taken (or part of them).
            let skip = (-(ahead as i64)) as usize;
            if skip >= data.len() {
                return true;
            }
            data = &data[skip..];
        } else if ahead > 0 {
            self.buf.clear();
            self.synced = false;
            in_step = false;
        }
        if self.buf.is_empty() {
            self.head_ns = ts_ns;
        }
        self.buf.extend_from_slice(data);
        self.next_seq = Some(seq.wrapping_add(payload.len() as u32));
        in_step
    }

    /// The next whole frame (with its first-byte timestamp), if `buf` holds one.
    fn frame(&mut self, ts_ns: u64) -> Option<(Vec<u8>, u64)> {
        if !self.synced || self.buf.len() < 4 {
            return None;
        }
        let size = i32::from_be_bytes(self.buf[..4].try_into().ok()?);
        if size < 4 || size as usize > MAX_FRAME {
            self.buf.clear();
            self.synced = false;
            return None;
        }
        let total = 4 + size as usize;
        if self.buf.len() < total {
            return None;
        }
        let frame: Vec<u8> = self.buf.drain(..total).collect();
        let start = self.head_ns;
        self.head_ns = ts_ns; // what remains arrived with this segment
        Some((frame, start))
    }
}

/// A connection between a client and a broker port.
#[derive(Default)]
pub struct Connection {
    to_broker: Direction,
    from_broker: Direction,
    outstanding: HashMap<i32, Request>,
    /// Times a direction lost bytes and had to resynchronise.
    pub resyncs: u64,
    /// Requests dropped unanswered (outstanding bound, or acks=0 produce).
    pub unanswered: u64,
}

/// Reads a request header (v1 or v2: key, version, correlation id, client id), and for Produce
/// whether acks is 0.
fn parse_request(frame: &[u8], start_ns: u64) -> Option<Request> {
    if frame.len() < 14 {
        return None;
    }
    let api_key = i16::from_be_bytes([frame[4], frame[5]]);
    let api_version = i16::from_be_bytes([frame[6], frame[7]]);
    let correlation_id = i32::from_be_bytes(frame[8..12].try_into().ok()?);
    if !(0..=MAX_API_KEY).contains(&api_key) || !(0..=30).contains(&api_version) {
        return None;
    }
    let id_len = i16::from_be_bytes([frame[12], frame[13]]);
    let mut at = 14usize;
    let client_id = if id_len >= 0 {
        let end = at.checked_add(id_len as usize)?;
        let s = String::from_utf8_lossy(frame.get(at..end)?).into_owned();
        at = end;
        s
    } else {
        String::new()
    };
    let no_response = api_key == 0 && produce_acks(frame, at, api_version) == Some(0);
    Some(Request {
        api_key,
        api_version,
        correlation_id,
        client_id,
        bytes: frame.len(),
        start_ns,
        no_response,
    })
}

fn uvarint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..63).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Produce's `acks` (after the header's tagged fields from v9, and the transactional id from v3).
fn produce_acks(frame: &[u8], mut at: usize, version: i16) -> Option<i16> {
    if version >= 9 {
        for _ in 0..uvarint(frame, &mut at)? {
            uvarint(frame, &mut at)?;
            let len = uvarint(frame, &mut at)? as usize;
            at += len;
        }
    }
    if version >= 3 {
        if version >= 9 {
            let n = uvarint(frame, &mut at)? as usize;
            at += n.saturating_sub(1);
        } else {
            let n = i16::from_be_bytes(frame.get(at..at + 2)?.try_into().ok()?);
            at += 2 + n.max(0) as usize;
        }
    }
    Some(i16::from_be_bytes(frame.get(at..at + 2)?.try_into().ok()?))
}

impl Connection {
    /// A client→broker segment: the requests it completes.
    pub fn client_segment(
        &mut self,
        seq: u32,
        syn: bool,
        payload: &[u8],
        ts_ns: u64,
    ) -> Vec<Request> {
        let d = &mut self.to_broker;
        if !d.push(seq, syn, payload, ts_ns) {
            self.resyncs += 1;
        }
        if !d.synced && !d.buf.is_empty() {
            // Resume only at a segment that starts with a plausible request.
            let plausible = d.buf.len() >= 14
                && d.buf.len() == payload.len()
                && parse_request(&d.buf, 0).is_some()
                && i32::from_be_bytes(d.buf[..4].try_into().unwrap_or_default()) as usize
                    <= MAX_FRAME;
            if plausible {
                d.synced = true;
            } else {
                d.buf.clear();
            }
        }
        let mut out = Vec::new();
        while let Some((frame, start)) = self.to_broker.frame(ts_ns) {
            match parse_request(&frame, start) {
                Some(r) => {
                    if r.no_response {
                        self.unanswered += 1;
                    } else {
                        if self.outstanding.len() >= MAX_OUTSTANDING {
                            let oldest = self
                                .outstanding
                                .values()
                                .min_by_key(|r| r.start_ns)
                                .map(|r| r.correlation_id);
                            if let Some(c) = oldest {
                                self.outstanding.remove(&c);
                                self.unanswered += 1;
                            }
                        }
                        self.outstanding.insert(r.correlation_id, r.clone());
                    }
                    out.push(r);
                }
                None => {
                    self.to_broker.buf.clear();
                    self.to_broker.synced = false;
                    self.resyncs += 1;
                }
            }
        }
        out
    }

    /// A broker→client segment: the exchanges it completes.
    pub fn broker_segment(
        &mut self,
        seq: u32,
        syn: bool,
        payload: &[u8],
        ts_ns: u64,
    ) -> Vec<Exchange> {
        let d = &mut self.from_broker;
        if !d.push(seq, syn, payload, ts_ns) {
            self.resyncs += 1;
        }
        if !d.synced && d.buf.len() >= 8 && d.buf.len() == payload.len() {
            let corr = i32::from_be_bytes(d.buf[4..8].try_into().unwrap_or_default());
            d.synced = self.outstanding.contains_key(&corr);
        }
        if !self.from_broker.synced {
            self.from_broker.buf.clear();
        }
        let mut out = Vec::new();
        while let Some((frame, _start)) = self.from_broker.frame(ts_ns) {
            let corr = i32::from_be_bytes(frame[4..8].try_into().unwrap_or_default());
            if let Some(request) = self.outstanding.remove(&corr) {
                out.push(Exchange {
                    request,
                    response_bytes: frame.len(),
                    response_end_ns: ts_ns,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(corr: i32, api_key: i16, version: i16) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&api_key.to_be_bytes());
        body.extend_from_slice(&version.to_be_bytes());
        body.extend_from_slice(&corr.to_be_bytes());
        body.extend_from_slice(&3i16.to_be_bytes());
        body.extend_from_slice(b"cli");
        body.extend_from_slice(&[0u8; 10]);
        let mut f = (body.len() as i32).to_be_bytes().to_vec();
        f.extend(body);
        f
    }

    fn response(corr: i32, extra: usize) -> Vec<u8> {
        let mut f = ((4 + extra) as i32).to_be_bytes().to_vec();
        f.extend_from_slice(&corr.to_be_bytes());
        f.extend(std::iter::repeat_n(7u8, extra));
        f
    }

    #[test]
    fn matches_pipelined_requests_split_across_segments() {
        let mut c = Connection::default();
        assert!(c.client_segment(99, true, &[], 1).is_empty());
        assert!(c.broker_segment(499, true, &[], 1).is_empty());
        let mut bytes = request(7, 3, 12);
        bytes.extend(request(8, 18, 3));
        let (a, b) = bytes.split_at(10);
        assert!(c.client_segment(100, false, a, 1_000).is_empty());
        let reqs = c.client_segment(110, false, b, 2_000);
        assert_eq!(reqs.len(), 2);
        assert_eq!((reqs[0].api_key, reqs[0].client_id.as_str()), (3, "cli"));
        assert_eq!(reqs[0].start_ns, 1_000);
        assert_eq!(reqs[1].start_ns, 2_000);
        // Responses out of order, the second split in two.
        let r8 = response(8, 30);
        let mut seg = response(7, 5);
        seg.extend_from_slice(&r8[..6]);
        let ex = c.broker_segment(500, false, &seg, 51_000);
        assert_eq!(ex.len(), 1);
        assert_eq!(ex[0].request.correlation_id, 7);
        assert_eq!(ex[0].latency_us(), 50);
        let ex = c.broker_segment(500 + seg.len() as u32, false, &r8[6..], 81_000);
        assert_eq!(ex[0].request.correlation_id, 8);
        assert_eq!(ex[0].latency_us(), 79);
        // A retransmission of the last segment changes nothing.
        assert!(c
            .broker_segment(500 + seg.len() as u32, false, &r8[6..], 90_000)
            .is_empty());
        assert_eq!(c.resyncs, 0);
    }

    #[test]
    fn joins_a_connection_mid_stream_at_a_request_boundary() {
        let mut c = Connection::default();
        // The tail of an earlier request: not plausible, dropped.
        assert!(c.client_segment(5000, false, &[1, 2, 3], 1).is_empty());
        let r = request(42, 1, 17);
        assert_eq!(c.client_segment(5003, false, &r, 10_000).len(), 1);
        // The tail of an earlier response, then the response to 42.
        assert!(c
            .broker_segment(9000, false, &[0, 0, 0, 9, 0, 0], 1)
            .is_empty());
        let ex = c.broker_segment(9006, false, &response(42, 3), 20_000);
        assert_eq!(ex.len(), 1);
        assert_eq!(ex[0].latency_us(), 10);
    }

    #[test]
    fn a_gap_resynchronises() {
        let mut c = Connection::default();
        c.client_segment(0, true, &[], 0);
        let r = request(1, 0, 9);
        c.client_segment(1, false, &r[..8], 1);
        // The rest of request 1 was not captured; request 2 arrives further on.
        let r2 = request(2, 19, 7);
        let got = c.client_segment(1 + r.len() as u32, false, &r2, 2);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].correlation_id, 2);
        assert_eq!(c.resyncs, 1);
    }

    #[test]
    fn produce_with_acks_zero_expects_no_response() {
        // Produce v9: header v2 (client id, tagged fields), compact transactional id (null), acks 0.
        let mut body = Vec::new();
        body.extend_from_slice(&0i16.to_be_bytes());
        body.extend_from_slice(&9i16.to_be_bytes());
        body.extend_from_slice(&5i32.to_be_bytes());
        body.extend_from_slice(&1i16.to_be_bytes());
        body.push(b'p');
        body.push(0); // no tagged fields
        body.push(0); // null transactional id
        body.extend_from_slice(&0i16.to_be_bytes());
        body.extend_from_slice(&[0u8; 8]);
        let mut f = (body.len() as i32).to_be_bytes().to_vec();
        f.extend(body);
        let r = parse_request(&f, 0).unwrap();
        assert!(r.no_response);
    }
}
