//! Request framing: a 4-byte big-endian size followed by that many bytes (Kafka protocol guide,
//! "Protocol Primitives" / "Requests and Responses").

use bytes::{Buf, Bytes, BytesMut};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Why a connection's byte stream cannot be framed; the connection is closed.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the connection between frames.
    #[error("connection closed")]
    Closed,
    /// The peer closed the connection in the middle of a frame.
    #[error("connection closed mid-frame ({have} of {want} bytes)")]
    Truncated { have: usize, want: usize },
    /// Negative size or larger than `socket.request.max.bytes`.
    #[error("frame size {size} outside 0..={max} bytes")]
    BadSize { size: i64, max: usize },
    /// The rest of a started request did not arrive within `request.read.timeout.ms`.
    #[error(
        "request not complete within {timeout_ms} ms of its first byte ({have} of {want} bytes)"
    )]
    ReadTimeout {
        have: usize,
        want: usize,
        timeout_ms: u128,
    },
    /// Socket error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Requests up to this size are small: they draw from their own share of the
/// [`RequestBudget`], so a flood of large requests holding the rest never delays a heartbeat, a
/// metadata request or a small produce.
pub const SMALL_REQUEST_BYTES: usize = 64 * 1024;

/// The broker-wide budget of bytes of requests being read or processed
/// (`queued.max.request.bytes`): every request's size is taken from it before its bytes are
/// buffered and given back when its handler finishes (as Kafka's request memory pool does for
/// every data-plane request). One eighth (at least 64 KiB) is kept for small requests
/// ([`SMALL_REQUEST_BYTES`]), the rest serves large ones; the two never exceed the total.
#[derive(Clone, Debug)]
pub struct RequestBudget {
    small: Arc<Semaphore>,
    large: Arc<Semaphore>,
    small_total: usize,
    large_total: usize,
}

impl RequestBudget {
    /// A budget of `total` bytes (clamped to what semaphores can count).
    pub fn new(total: usize) -> Self {
        let total = total.clamp(2 * SMALL_REQUEST_BYTES, Semaphore::MAX_PERMITS);
        let small_total = (total / 8).max(SMALL_REQUEST_BYTES);
        let large_total = total - small_total;
        RequestBudget {
            small: Arc::new(Semaphore::new(small_total)),
            large: Arc::new(Semaphore::new(large_total)),
            small_total,
            large_total,
        }
    }

    /// Bytes not taken at the moment (both shares).
    pub fn available(&self) -> usize {
        self.small.available_permits() + self.large.available_permits()
    }

    /// Waits until `bytes` (at most the whole share) are free in the share its size belongs to
    /// and takes them.
    async fn take(&self, bytes: usize) -> OwnedSemaphorePermit {
        let (sem, total) = if bytes <= SMALL_REQUEST_BYTES {
            (&self.small, self.small_total)
        } else {
            (&self.large, self.large_total)
        };
        let n = u32::try_from(bytes.min(total)).unwrap_or(u32::MAX);
        sem.clone()
            .acquire_many_owned(n)
            .await
            .expect("the request budget semaphores are never closed")
    }
}

/// One request frame and its share of the request budget; the share returns to the budget when
/// this is dropped (after the request was handled).
#[derive(Debug)]
pub struct Frame {
    /// The frame's payload (without the size prefix).
    pub payload: Bytes,
    /// Budget held for the payload.
    pub permit: Option<OwnedSemaphorePermit>,
}

/// Reads frames from a socket into one growing buffer; frames are split off it without copying.
pub struct FrameReader<R> {
    inner: R,
    buf: BytesMut,
    max_frame: usize,
    read_timeout: Option<Duration>,
    budget: Option<RequestBudget>,
    /// Budget taken for the frame at the head of the buffer (kept if `next` is cancelled).
    held: Option<OwnedSemaphorePermit>,
    /// `buf` was allocated for the frame at its head alone, exactly its size.
    own: bool,
}

/// A frame of at least this many bytes (with its size prefix) that is not complete in the read
/// buffer continues in a buffer of exactly its size, bytes (8 KiB): the bytes of it already read
/// (at most one read) are copied once, and its record batch need not be copied later.
const OWN_ALLOCATION_BYTES: usize = 8 * 1024;

/// Read buffer capacity added when it runs low, bytes. Small, so that thousands of idle
/// connections cost little; a large frame reserves its whole size at once.
const READ_BUFFER: usize = 16 * 1024;

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// Wraps a reader; `max_frame` is the largest accepted frame size in bytes. No read timeout,
    /// no budget (see [`with_limits`](Self::with_limits)).
    pub fn new(inner: R, max_frame: usize) -> Self {
        FrameReader {
            inner,
            buf: BytesMut::new(),
            max_frame,
            read_timeout: None,
            budget: None,
            held: None,
            own: false,
        }
    }

    /// Sets the time a started frame may take to arrive (counted from the first of its bytes
    /// seen by this call of [`next`](Self::next), and again after waiting for budget) and the
    /// request budget each frame's size is taken from before its bytes are buffered.
    pub fn with_limits(mut self, read_timeout: Duration, budget: Option<RequestBudget>) -> Self {
        self.read_timeout = Some(read_timeout);
        self.budget = budget;
        self
    }

    /// Changes the largest accepted frame size, bytes (a SASL connection's limit rises once it
    /// has authenticated).
    pub fn set_max_frame(&mut self, max_frame: usize) {
        self.max_frame = max_frame;
    }

    /// True while part of a frame is buffered.
    pub fn has_partial(&self) -> bool {
        !self.buf.is_empty()
    }

    /// Splits the first frame (`want` bytes with its size prefix) off the buffer: the whole
    /// buffer when it was allocated for this frame alone (see [`OWN_ALLOCATION_BYTES`]), else a
    /// part sharing its allocation with the bytes after it.
    fn split_frame(&mut self, want: usize) -> Bytes {
        if std::mem::take(&mut self.own) {
            let mut frame = std::mem::take(&mut self.buf);
            if frame.len() > want {
                // Reads stop at the frame's end while the buffer is exactly its size; should
                // the allocation have been larger, the bytes after it move to a new buffer.
                self.buf = BytesMut::from(&frame[want..]);
                frame.truncate(want);
            }
            frame.advance(4);
            return frame.freeze();
        }
        self.buf.advance(4);
        self.buf.split_to(want - 4).freeze()
    }

    fn wanted(&self) -> usize {
        if self.buf.len() >= 4 {
            4usize.saturating_add(
                i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]).max(0)
                    as usize,
            )
        } else {
            4
        }
    }

    /// The next frame. Cancel-safe: bytes read and budget taken are kept for the next call.
    pub async fn next(&mut self) -> Result<Frame, FrameError> {
        let mut started = (!self.buf.is_empty()).then(Instant::now);
        loop {
            if self.buf.len() >= 4 {
                let size = i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                if size < 0 || size as usize > self.max_frame {
                    return Err(FrameError::BadSize {
                        size: size as i64,
                        max: self.max_frame,
                    });
                }
                let size = size as usize;
                if self.held.is_none() {
                    if let Some(budget) = &self.budget {
                        // Waiting here stops reading this socket (backpressure); it is not the
                        // peer's fault, so the read clock restarts afterwards.
                        self.held = Some(budget.take(size).await);
                        started = Some(Instant::now());
                    }
                }
                let want = 4 + size;
                if self.buf.len() >= want {
                    let payload = self.split_frame(want);
                    return Ok(Frame {
                        payload,
                        permit: self.held.take(),
                    });
                }
                if want >= OWN_ALLOCATION_BYTES && !self.own {
                    // A large frame gets a buffer of exactly its size: reads stop at its end,
                    // and once the request's other parts are dropped its record batch can be
                    // taken over without a copy (`Bytes::try_into_mut` in the produce path).
                    let mut own = BytesMut::with_capacity(want);
                    own.extend_from_slice(&self.buf);
                    self.buf = own;
                    self.own = true;
                } else {
                    // Make room for the whole frame in one go (bounded by max_frame above, and
                    // by the budget just taken).
                    self.buf.reserve(want - self.buf.len());
                }
            } else if self.buf.capacity() - self.buf.len() < 1024 {
                self.buf.reserve(READ_BUFFER);
            }
            let n = match (started, self.read_timeout) {
                (Some(t0), Some(limit)) => {
                    match tokio::time::timeout_at(t0 + limit, self.inner.read_buf(&mut self.buf))
                        .await
                    {
                        Ok(r) => r?,
                        Err(_) => {
                            return Err(FrameError::ReadTimeout {
                                have: self.buf.len(),
                                want: self.wanted(),
                                timeout_ms: limit.as_millis(),
                            })
                        }
                    }
                }
                _ => self.inner.read_buf(&mut self.buf).await?,
            };
            if n == 0 {
                return Err(if self.buf.is_empty() {
                    FrameError::Closed
                } else {
                    FrameError::Truncated {
                        have: self.buf.len(),
                        want: self.wanted(),
                    }
                });
            }
            started.get_or_insert_with(Instant::now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_split_and_limits() {
        let mut data = Vec::new();
        data.extend_from_slice(&3i32.to_be_bytes());
        data.extend_from_slice(b"abc");
        data.extend_from_slice(&0i32.to_be_bytes());
        data.extend_from_slice(&2i32.to_be_bytes());
        data.extend_from_slice(b"x");
        let mut r = FrameReader::new(&data[..], 100);
        assert_eq!(&r.next().await.unwrap().payload[..], b"abc");
        assert_eq!(r.next().await.unwrap().payload.len(), 0);
        assert!(matches!(
            r.next().await,
            Err(FrameError::Truncated { have: 5, want: 6 })
        ));

        let big = 0x7fff_ffffi32.to_be_bytes();
        let mut r = FrameReader::new(&big[..], 100);
        assert!(matches!(r.next().await, Err(FrameError::BadSize { .. })));
        let neg = (-5i32).to_be_bytes();
        let mut r = FrameReader::new(&neg[..], 100);
        assert!(matches!(r.next().await, Err(FrameError::BadSize { .. })));
        let mut r = FrameReader::new(&[][..], 100);
        assert!(matches!(r.next().await, Err(FrameError::Closed)));
    }

    #[tokio::test]
    async fn a_large_frame_read_in_parts_owns_its_allocation() {
        use tokio::io::AsyncWriteExt;
        let (mut client, server) = tokio::io::duplex(1024);
        let mut r = FrameReader::new(server, 1 << 20);
        let big = vec![7u8; 4 * OWN_ALLOCATION_BYTES];
        let writer = tokio::spawn(async move {
            for frame in [&big[..], b"abc"] {
                client
                    .write_all(&(frame.len() as i32).to_be_bytes())
                    .await
                    .unwrap();
                client.write_all(frame).await.unwrap();
            }
            client
        });
        let first = r.next().await.unwrap().payload;
        assert_eq!(first.len(), 4 * OWN_ALLOCATION_BYTES);
        assert!(first.iter().all(|&b| b == 7));
        // nothing else refers to its allocation: the produce path can take it over
        let owned = first
            .try_into_mut()
            .expect("a large frame read in parts is the only owner of its buffer");
        assert_eq!(owned.len(), 4 * OWN_ALLOCATION_BYTES);
        let second = r.next().await.unwrap().payload;
        assert_eq!(&second[..], b"abc");
        drop(writer.await.unwrap());
        assert!(matches!(r.next().await, Err(FrameError::Closed)));
    }

    #[tokio::test]
    async fn partial_frame_times_out_but_idle_does_not() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut r = FrameReader::new(server, 100).with_limits(Duration::from_millis(200), None);
        // idle between frames: no timeout
        let idle = tokio::time::timeout(Duration::from_millis(600), r.next()).await;
        assert!(idle.is_err(), "an idle reader must not time out by itself");
        use tokio::io::AsyncWriteExt;
        client.write_all(&[0, 0, 0, 10, 1]).await.unwrap();
        let got = r.next().await;
        assert!(
            matches!(
                got,
                Err(FrameError::ReadTimeout {
                    have: 5,
                    want: 14,
                    ..
                })
            ),
            "{got:?}"
        );
    }

    #[tokio::test]
    async fn budget_is_taken_per_frame_and_returned() {
        const N: usize = SMALL_REQUEST_BYTES + 6;
        // 2 MiB: 256 KiB for small requests, the rest for large ones.
        let total = 2 << 20;
        let budget = RequestBudget::new(total);
        let large = total - total / 8;
        let k = large / N; // large frames that fit at once
        let mut data = Vec::new();
        for _ in 0..k + 1 {
            data.extend_from_slice(&(N as i32).to_be_bytes());
            data.extend_from_slice(&[1u8; N]);
        }
        data.extend_from_slice(&3i32.to_be_bytes());
        data.extend_from_slice(b"abc");
        let max = 4 << 20;
        let mut r = FrameReader::new(&data[..], max)
            .with_limits(Duration::from_secs(5), Some(budget.clone()));
        let mut held = Vec::new();
        for _ in 0..k {
            held.push(r.next().await.unwrap());
        }
        assert_eq!(budget.available(), total - k * N);
        // the next large frame does not fit until one is released
        assert!(tokio::time::timeout(Duration::from_millis(50), r.next())
            .await
            .is_err());
        held.pop();
        let f = r.next().await.unwrap();
        assert_eq!(f.payload.len(), N);
        // a small frame is counted too, from its own share, however full the large one is
        let small = r.next().await.unwrap();
        assert_eq!(&small.payload[..], b"abc");
        assert_eq!(budget.available(), total - k * N - 3);
        drop((small, f, held));
        assert_eq!(budget.available(), total);
        // a frame larger than the whole large share takes all of it
        let big_n = large + 100;
        let big = [&(big_n as i32).to_be_bytes()[..], &vec![7u8; big_n][..]].concat();
        let mut r = FrameReader::new(&big[..], max)
            .with_limits(Duration::from_secs(5), Some(budget.clone()));
        let f = r.next().await.unwrap();
        assert_eq!(budget.available(), total / 8);
        drop(f);
        assert_eq!(budget.available(), total);
    }
}
