//! A connection's byte streams: plain TCP, or TLS over TCP (rustls). The read side feeds the
//! frame reader; the write side takes responses without waiting ([`TryWrite`]), as the
//! sequencer needs, and says when it can take more.
//!
//! For TLS the write side encrypts into the session's buffer and sends what the socket takes;
//! records the socket did not take yet stay buffered ([`Writer::has_buffered`]) and go out when
//! it is writable again ([`Writer::ready`]). Plain TCP keeps its non-blocking `writev` path
//! unchanged.

use super::sequencer::TryWrite;
use futures::task::noop_waker_ref;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

/// The read side of a connection.
pub enum Reader {
    /// Plain TCP.
    Tcp(OwnedReadHalf),
    /// TLS (shares the session with its [`Writer`]).
    Tls(ReadHalf<TlsStream<TcpStream>>),
}

impl AsyncRead for Reader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Reader::Tcp(r) => Pin::new(r).poll_read(cx, buf),
            Reader::Tls(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

/// The TLS write side: the session's write half, and whether encrypted records wait for the
/// socket.
pub struct TlsWriter {
    half: parking_lot::Mutex<WriteHalf<TlsStream<TcpStream>>>,
    buffered: AtomicBool,
}

/// The write side of a connection.
pub enum Writer {
    /// Plain TCP.
    Tcp(OwnedWriteHalf),
    /// TLS.
    Tls(TlsWriter),
}

/// Splits a plain TCP connection.
pub fn plain(stream: TcpStream) -> (Reader, Writer) {
    let (r, w) = stream.into_split();
    (Reader::Tcp(r), Writer::Tcp(w))
}

/// Splits a TLS connection whose handshake is done.
pub fn tls(stream: TlsStream<TcpStream>) -> (Reader, Writer) {
    let (r, w) = tokio::io::split(stream);
    (
        Reader::Tls(r),
        Writer::Tls(TlsWriter {
            half: parking_lot::Mutex::new(w),
            buffered: AtomicBool::new(false),
        }),
    )
}

impl TlsWriter {
    /// Polls the session once without registering for wake-ups (the connection loop waits on
    /// [`Writer::ready`] whenever this reports `WouldBlock`).
    fn try_write_with(
        &self,
        f: impl FnOnce(
            Pin<&mut WriteHalf<TlsStream<TcpStream>>>,
            &mut Context<'_>,
        ) -> Poll<io::Result<usize>>,
    ) -> io::Result<usize> {
        let mut cx = Context::from_waker(noop_waker_ref());
        let mut half = self.half.lock();
        match f(Pin::new(&mut *half), &mut cx) {
            Poll::Ready(Ok(n)) => {
                // Push the records out now if the socket takes them; otherwise they wait.
                let flushed = matches!(
                    Pin::new(&mut *half).poll_flush(&mut cx),
                    Poll::Ready(Ok(()))
                );
                self.buffered.store(!flushed, Ordering::Relaxed);
                Ok(n)
            }
            Poll::Ready(Err(e)) => Err(e),
            Poll::Pending => {
                self.buffered.store(true, Ordering::Relaxed);
                Err(io::ErrorKind::WouldBlock.into())
            }
        }
    }
}

impl TryWrite for Writer {
    fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Writer::Tcp(w) => w.try_write_vectored(bufs),
            Writer::Tls(t) => t.try_write_with(|h, cx| h.poll_write_vectored(cx, bufs)),
        }
    }

    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Writer::Tcp(w) => w.try_write(buf),
            Writer::Tls(t) => t.try_write_with(|h, cx| h.poll_write(cx, buf)),
        }
    }
}

impl Writer {
    /// Waits until the socket can take more (TLS: until the buffered records are sent).
    pub async fn ready(&self) -> io::Result<()> {
        match self {
            Writer::Tcp(w) => w.writable().await,
            Writer::Tls(t) => {
                futures::future::poll_fn(|cx| {
                    let mut half = t.half.lock();
                    let r = Pin::new(&mut *half).poll_flush(cx);
                    if matches!(r, Poll::Ready(Ok(()))) {
                        t.buffered.store(false, Ordering::Relaxed);
                    }
                    r
                })
                .await
            }
        }
    }

    /// The socket's descriptor for writes made elsewhere (the backlog lane): plain TCP only
    /// (TLS records are written through the session).
    pub fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        match self {
            Writer::Tcp(w) => Some(w.as_ref().as_raw_fd()),
            Writer::Tls(_) => None,
        }
    }

    /// Whether bytes were accepted that the socket has not taken yet (TLS records).
    pub fn has_buffered(&self) -> bool {
        match self {
            Writer::Tcp(_) => false,
            Writer::Tls(t) => t.buffered.load(Ordering::Relaxed),
        }
    }

    /// Closes the sending side (TLS: `close_notify` first).
    pub async fn shutdown(self) {
        match self {
            Writer::Tcp(mut w) => {
                let _ = w.shutdown().await;
            }
            Writer::Tls(t) => {
                let mut half = t.half.into_inner();
                let _ = half.shutdown().await;
            }
        }
    }
}
