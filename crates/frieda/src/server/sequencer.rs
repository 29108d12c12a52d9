//! The response sequencer's write side: responses leave in request order, each as soon as it and
//! all before it are complete (dynamic eager flush), several per vectored write (batched
//! confirmation).
//!
//! Ordering itself is kept by the connection's in-flight queue (a `FuturesOrdered` of handler
//! futures: the first contiguous run of finished responses is released in order). Released
//! responses are pushed here and written by the connection's own task with non-blocking
//! `writev` calls the moment they are released: no size threshold, no timer (thesis §4.2.2,
//! "Dynamic Eager Flush"), and no hand-off to another task or thread. What the socket does not
//! take at once stays queued until the socket is writable again.

use crate::handlers::Response;
use crate::storage::zero_copy::SplicedResponse;
use bytes::Bytes;
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::sync::Arc;

/// Responses written per vectored write at most (IOV_MAX is 1024 on Linux).
pub const MAX_IOVECS: usize = 64;

/// A socket that can be written without waiting (`tokio::net::tcp::OwnedWriteHalf`).
pub trait TryWrite {
    /// Writes from several buffers at once; `WouldBlock` when the socket buffer is full.
    fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize>;
    /// Writes from one buffer; `WouldBlock` when the socket buffer is full.
    fn try_write(&self, buf: &[u8]) -> io::Result<usize>;
}

impl TryWrite for tokio::net::tcp::OwnedWriteHalf {
    fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        tokio::net::tcp::OwnedWriteHalf::try_write_vectored(self, bufs)
    }
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        tokio::net::tcp::OwnedWriteHalf::try_write(self, buf)
    }
}

/// Where [`ResponseQueue::write_until_backlog`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrote {
    /// Everything released was handed to the socket.
    Empty,
    /// The socket is full: wait until it is writable.
    Full,
    /// The oldest response carries backlog data (write it from the backlog lane).
    Backlog,
}

/// The unwritten rest of the oldest response, for the backlog lane to write.
pub enum BacklogFront {
    /// Bytes in memory.
    Bytes(Bytes),
    /// A response with file ranges ([`SplicedResponse`]), from this byte on.
    Spliced(Arc<SplicedResponse>, usize),
}

/// Released responses not yet taken by the socket, oldest first. A response with file ranges
/// ([`Response::Spliced`]) is written by the backlog lane with `sendfile`; written from here
/// (TLS, or the one small write after the lane found the socket full), its ranges are read.
pub struct ResponseQueue {
    pending: VecDeque<Response>,
    /// Per response in `pending`: whether it carries backlog data (written from the backlog
    /// lane when the connection can, see [`write_until_backlog`](Self::write_until_backlog)).
    backlog: VecDeque<bool>,
    /// Bytes of `pending[0]` already written.
    skip: usize,
    /// `response.vectored.writes`: several responses per `writev` (true) or one `write` each.
    vectored: bool,
    /// System calls that wrote something (for tests and counters).
    writes: u64,
}

impl ResponseQueue {
    /// An empty queue; `vectored` as `response.vectored.writes`.
    pub fn new(vectored: bool) -> Self {
        ResponseQueue {
            pending: VecDeque::new(),
            backlog: VecDeque::new(),
            skip: 0,
            vectored,
            writes: 0,
        }
    }

    /// Appends a released response (its request's turn has come).
    pub fn push(&mut self, response: Bytes) {
        self.push_classed(Response::Bytes(response), false);
    }

    /// Appends a released response; `backlog`: it carries backlog data (a response with file
    /// ranges always does).
    pub fn push_classed(&mut self, response: Response, backlog: bool) {
        if !response.is_empty() {
            let backlog = backlog || matches!(response, Response::Spliced(_));
            self.pending.push_back(response);
            self.backlog.push_back(backlog);
        }
    }

    /// The unwritten rest of the oldest response if it carries backlog data.
    pub fn backlog_front(&self) -> Option<BacklogFront> {
        match (self.pending.front(), self.backlog.front()) {
            (Some(Response::Bytes(b)), Some(true)) => {
                Some(BacklogFront::Bytes(b.slice(self.skip..)))
            }
            (Some(Response::Spliced(s)), Some(true)) => {
                Some(BacklogFront::Spliced(s.clone(), self.skip))
            }
            _ => None,
        }
    }

    /// Reads the file ranges of the first `n` responses into memory (for writes from here).
    ///
    /// Errors: a file's read (a segment shorter than its range: the connection must close).
    fn copy_spliced(&mut self, n: usize) -> io::Result<()> {
        for r in self.pending.iter_mut().take(n) {
            if let Response::Spliced(s) = r {
                *r = Response::Bytes(s.copy_range(0, s.len())?);
            }
        }
        Ok(())
    }

    /// Notes `n` bytes of the oldest responses as written by someone else (the backlog lane).
    pub fn written(&mut self, n: usize) {
        if n > 0 {
            self.writes += 1;
            self.advance(n);
        }
    }

    /// True when everything released has been handed to the socket.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Responses (whole or partly written) still queued.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Write system calls that made progress so far.
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// Writes as much as the socket takes now, without waiting. Returns true when the queue is
    /// empty, false when the socket is full (wait for it to be writable and call again).
    ///
    /// Errors: the socket's (the peer reset the connection), or `WriteZero`.
    pub fn write_now<W: TryWrite>(&mut self, sock: &W) -> io::Result<bool> {
        self.write_until_backlog(sock, false)
            .map(|w| w == Wrote::Empty)
    }

    /// [`write_now`](Self::write_now), but with `stop_at_backlog` it writes no response that
    /// carries backlog data: it stops with [`Wrote::Backlog`] when the oldest one does (the
    /// caller writes that one from the backlog lane).
    ///
    /// Errors: the socket's (the peer reset the connection), or `WriteZero`.
    pub fn write_until_backlog<W: TryWrite>(
        &mut self,
        sock: &W,
        stop_at_backlog: bool,
    ) -> io::Result<Wrote> {
        while !self.pending.is_empty() {
            // Responses before the first backlog one (all of them without `stop_at_backlog`).
            let n_ready = if stop_at_backlog {
                self.backlog.iter().take_while(|b| !**b).count()
            } else {
                self.pending.len()
            };
            if n_ready == 0 {
                return Ok(Wrote::Backlog);
            }
            self.copy_spliced(n_ready.min(MAX_IOVECS))?;
            let result = if self.vectored && n_ready > 1 {
                let mut iov = [IoSlice::new(&[]); MAX_IOVECS];
                let mut n = 0;
                for (i, b) in self
                    .pending
                    .iter()
                    .take(n_ready.min(MAX_IOVECS))
                    .enumerate()
                {
                    let b = bytes_of(b);
                    iov[i] = IoSlice::new(if i == 0 { &b[self.skip..] } else { b });
                    n = i + 1;
                }
                sock.try_write_vectored(&iov[..n])
            } else {
                sock.try_write(&bytes_of(&self.pending[0])[self.skip..])
            };
            match result {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.writes += 1;
                    self.advance(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Wrote::Full),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Wrote::Empty)
    }

    /// One write of at most `max` bytes of the oldest response, whatever its class (a
    /// connection that wrote through the backlog lane and found the socket full lets the socket's
    /// owner see that). [`Wrote::Full`] when the socket took nothing, [`Wrote::Empty`] when the
    /// queue is empty after it, else [`Wrote::Backlog`]: more is queued (of either class; the
    /// caller goes back to [`write_until_backlog`](Self::write_until_backlog)).
    ///
    /// Errors: the socket's, or `WriteZero`.
    pub fn write_one<W: TryWrite>(&mut self, sock: &W, max: usize) -> io::Result<Wrote> {
        let Some(front) = self.pending.front() else {
            return Ok(Wrote::Empty);
        };
        let end = front.len().min(self.skip.saturating_add(max.max(1)));
        let copied;
        let data = match front {
            Response::Bytes(b) => &b[self.skip..end],
            Response::Spliced(s) => {
                copied = s.copy_range(self.skip, end - self.skip)?;
                &copied[..]
            }
        };
        match sock.try_write(data) {
            Ok(0) => Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                self.writes += 1;
                self.advance(n);
                Ok(if self.pending.is_empty() {
                    Wrote::Empty
                } else {
                    Wrote::Backlog
                })
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Wrote::Full),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(Wrote::Backlog),
            Err(e) => Err(e),
        }
    }

    fn advance(&mut self, mut n: usize) {
        debug_assert!(n <= self.pending.iter().map(Response::len).sum::<usize>() - self.skip);
        while n > 0 {
            let Some(front) = self.pending.front() else {
                return;
            };
            let left = front.len() - self.skip;
            if n >= left {
                n -= left;
                self.pending.pop_front();
                self.backlog.pop_front();
                self.skip = 0;
            } else {
                self.skip += n;
                n = 0;
            }
        }
    }
}

/// The bytes of a response in memory (one with file ranges is read by `copy_spliced` first).
fn bytes_of(r: &Response) -> &[u8] {
    match r {
        Response::Bytes(b) => b,
        // Never here: `copy_spliced` reads them first. Nothing written is a closed connection
        // (`WriteZero`), not a panic.
        Response::Spliced(_) => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    /// Takes at most `room` bytes per call, then reports a full buffer every other call.
    struct TinySocket {
        room: usize,
        got: RefCell<Vec<u8>>,
        calls: Cell<u32>,
    }

    impl TinySocket {
        fn take(&self, bufs: &[&[u8]]) -> io::Result<usize> {
            self.calls.set(self.calls.get() + 1);
            if self.calls.get().is_multiple_of(2) {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let mut n = 0;
            for b in bufs {
                let k = b.len().min(self.room - n);
                self.got.borrow_mut().extend_from_slice(&b[..k]);
                n += k;
                if n == self.room {
                    break;
                }
            }
            Ok(n)
        }
    }

    impl TryWrite for TinySocket {
        fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            let v: Vec<&[u8]> = bufs.iter().map(|b| &b[..]).collect();
            self.take(&v)
        }
        fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
            self.take(&[buf])
        }
    }

    fn check(vectored: bool) -> u64 {
        let sock = TinySocket {
            room: 7, // forces partial writes inside and across responses
            got: RefCell::new(Vec::new()),
            calls: Cell::new(0),
        };
        let mut q = ResponseQueue::new(vectored);
        let mut expect = Vec::new();
        for i in 0..20u8 {
            let b = Bytes::from(vec![i; (i as usize % 5) + 1]);
            expect.extend_from_slice(&b);
            q.push(b);
        }
        let mut rounds = 0;
        while !q.write_now(&sock).unwrap() {
            rounds += 1;
            assert!(rounds < 1000);
        }
        assert!(q.is_empty());
        assert_eq!(*sock.got.borrow(), expect);
        q.writes()
    }

    /// The unwritten rest of the oldest backlog response, read whole.
    fn front(q: &ResponseQueue) -> Option<Vec<u8>> {
        match q.backlog_front()? {
            BacklogFront::Bytes(b) => Some(b.to_vec()),
            BacklogFront::Spliced(s, skip) => {
                Some(s.copy_range(skip, usize::MAX).unwrap().to_vec())
            }
        }
    }

    #[test]
    fn writes_everything_in_order() {
        let vectored = check(true);
        let single = check(false);
        // 60 bytes in 7-byte writes: vectored needs 9 calls; one response per call needs more.
        assert_eq!(vectored, 9);
        assert!(single > vectored, "{single} vs {vectored}");
    }

    /// A backlog response is never written by `write_until_backlog(.., true)`: the responses
    /// before it go out, then it stops; what another writer (the lane) takes is noted with
    /// `written`, and `write_one` writes at most its limit. Order is kept throughout.
    #[test]
    fn backlog_responses_are_left_to_the_lane_in_order() {
        let sock = TinySocket {
            room: 1000,
            got: RefCell::new(Vec::new()),
            calls: Cell::new(0),
        };
        let mut q = ResponseQueue::new(true);
        q.push(Bytes::from_static(b"aa"));
        q.push_classed(Response::Bytes(Bytes::from_static(b"BACKLOG")), true);
        q.push(Bytes::from_static(b"cc"));
        assert_eq!(q.write_until_backlog(&sock, true).unwrap(), Wrote::Backlog);
        assert_eq!(*sock.got.borrow(), b"aa");
        assert_eq!(front(&q).as_deref(), Some(&b"BACKLOG"[..]));
        // The lane took 3 bytes; the rest of the response is what it is asked for next.
        sock.got.borrow_mut().extend_from_slice(b"BAC");
        q.written(3);
        assert_eq!(front(&q).as_deref(), Some(&b"KLOG"[..]));
        sock.calls.set(0); // the next call of the socket takes bytes
        assert_eq!(q.write_one(&sock, 2).unwrap(), Wrote::Backlog);
        assert_eq!(front(&q).as_deref(), Some(&b"OG"[..]));
        sock.got.borrow_mut().extend_from_slice(b"OG");
        q.written(2);
        assert!(q.backlog_front().is_none());
        sock.calls.set(0);
        assert_eq!(q.write_until_backlog(&sock, true).unwrap(), Wrote::Empty);
        assert_eq!(*sock.got.borrow(), b"aaBACKLOGcc");
        // Without the lane (TLS), a backlog response is written like any other.
        let mut q = ResponseQueue::new(true);
        q.push_classed(Response::Bytes(Bytes::from_static(b"xy")), true);
        sock.calls.set(0);
        assert_eq!(q.write_until_backlog(&sock, false).unwrap(), Wrote::Empty);
    }
}
