//! Request framing: a 4-byte big-endian size followed by that many bytes (Kafka protocol guide,
//! "Protocol Primitives" / "Requests and Responses").

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

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
    /// Socket error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads frames from a socket into one growing buffer; frames are split off it without copying.
pub struct FrameReader<R> {
    inner: R,
    buf: BytesMut,
    max_frame: usize,
}

/// Initial read buffer capacity, bytes.
const READ_BUFFER: usize = 64 * 1024;

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// Wraps a reader; `max_frame` is the largest accepted frame size in bytes.
    pub fn new(inner: R, max_frame: usize) -> Self {
        FrameReader {
            inner,
            buf: BytesMut::with_capacity(READ_BUFFER),
            max_frame,
        }
    }

    /// The next frame's payload (without the size prefix).
    pub async fn next(&mut self) -> Result<Bytes, FrameError> {
        loop {
            if self.buf.len() >= 4 {
                let size = i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                if size < 0 || size as usize > self.max_frame {
                    return Err(FrameError::BadSize {
                        size: size as i64,
                        max: self.max_frame,
                    });
                }
                let want = 4 + size as usize;
                if self.buf.len() >= want {
                    self.buf.advance(4);
                    return Ok(self.buf.split_to(size as usize).freeze());
                }
                // Make room for the whole frame in one go (bounded by max_frame above).
                self.buf.reserve(want - self.buf.len());
            } else if self.buf.capacity() - self.buf.len() < 4096 {
                self.buf.reserve(READ_BUFFER);
            }
            let n = self.inner.read_buf(&mut self.buf).await?;
            if n == 0 {
                return Err(if self.buf.is_empty() {
                    FrameError::Closed
                } else {
                    let want = if self.buf.len() >= 4 {
                        4 + i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]])
                            as usize
                    } else {
                        4
                    };
                    FrameError::Truncated {
                        have: self.buf.len(),
                        want,
                    }
                });
            }
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
        assert_eq!(&r.next().await.unwrap()[..], b"abc");
        assert_eq!(r.next().await.unwrap().len(), 0);
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
}
