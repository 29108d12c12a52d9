//! Zero-copy sends of segment data (issue 58, goal 4): a consumer's Fetch answered from the
//! segment files over plain TCP leaves the batches in the page cache and hands the socket file
//! ranges with `sendfile(2)`, as Kafka's `FileRecords.writeTo` does with
//! `FileChannel.transferTo`. Without it the backlog lane copies each byte twice in the broker:
//! `pread` into a buffer, then `send` from it into the socket.
//!
//! A [`SplicedResponse`] is an encoded response with file ranges inserted at byte positions
//! (the records fields of its partitions); the connection writes it from the backlog lane with
//! [`write_now`]. Where `sendfile` cannot be used (TLS, an in-memory file system, the small
//! write a connection makes to see its socket full) the ranges are read with
//! [`SplicedResponse::copy_range`].

use std::io;
use std::os::fd::{AsFd, OwnedFd, RawFd};

use super::backlog::send_now;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Bytes, BytesMut};
use frieda_log::FileSlice;

/// Bytes this process sent with `sendfile` (metric `frieda_fetch_zero_copy_bytes`).
pub static SENT_BYTES: AtomicU64 = AtomicU64::new(0);

/// An encoded response (size prefix included) whose records live partly in segment files:
/// `head` is every encoded byte but those, and each of `files` goes in at a position of `head`
/// (ascending; several may share one).
#[derive(Debug, Clone)]
pub struct SplicedResponse {
    head: Bytes,
    files: Vec<(usize, FileSlice)>,
    len: usize,
}

/// One piece of a [`SplicedResponse`] from some byte on.
enum Part<'a> {
    Mem(&'a [u8]),
    /// `len` bytes from `from` bytes into the slice.
    File(&'a FileSlice, usize, usize),
}

impl SplicedResponse {
    /// `head` with `files` inserted at their positions (ascending, each `<= head.len()`).
    pub fn new(head: Bytes, files: Vec<(usize, FileSlice)>) -> Self {
        debug_assert!(files.windows(2).all(|w| w[0].0 <= w[1].0));
        debug_assert!(files.last().is_none_or(|(at, _)| *at <= head.len()));
        let len = head.len() + files.iter().map(|(_, f)| f.len()).sum::<usize>();
        SplicedResponse { head, files, len }
    }

    /// Bytes of the whole response.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of it that stay in files (sent by `sendfile`).
    pub fn file_bytes(&self) -> usize {
        self.len - self.head.len()
    }

    /// The pieces from byte `skip` of the response on, in order.
    fn parts_from(&self, skip: usize) -> Vec<Part<'_>> {
        let mut parts = Vec::with_capacity(2 * self.files.len() + 1);
        let mut at = 0usize; // response bytes before the current piece
        let mut head_at = 0usize;
        for (pos, file) in &self.files {
            let mem = &self.head[head_at..*pos];
            if at + mem.len() > skip {
                parts.push(Part::Mem(&mem[skip.saturating_sub(at)..]));
            }
            at += mem.len();
            head_at = *pos;
            if at + file.len() > skip {
                let from = skip.saturating_sub(at);
                parts.push(Part::File(file, from, file.len() - from));
            }
            at += file.len();
        }
        let mem = &self.head[head_at..];
        if at + mem.len() > skip {
            parts.push(Part::Mem(&mem[skip.saturating_sub(at)..]));
        }
        parts.retain(|p| match p {
            Part::Mem(m) => !m.is_empty(),
            Part::File(_, _, n) => *n > 0,
        });
        parts
    }

    /// At most `max` bytes of the response from byte `skip`, copied (the file ranges read).
    ///
    /// Errors: a file's read; `UnexpectedEof` when a segment is shorter than its range now.
    pub fn copy_range(&self, skip: usize, max: usize) -> io::Result<Bytes> {
        let want = max.min(self.len.saturating_sub(skip));
        let mut out = BytesMut::with_capacity(want);
        for part in self.parts_from(skip) {
            let room = want - out.len();
            if room == 0 {
                break;
            }
            match part {
                Part::Mem(m) => out.extend_from_slice(&m[..m.len().min(room)]),
                Part::File(f, from, n) => {
                    let n = n.min(room);
                    let at = out.len();
                    out.resize(at + n, 0);
                    f.read_at(&mut out[at..], from)?;
                }
            }
        }
        Ok(out.freeze())
    }
}

/// Bytes of the pages of `[pos, pos + len)` of `file` that the page cache does not hold
/// (page-rounded), from `cachestat(2)` (Linux 6.5+); `None` where the kernel lacks it. The
/// [`frieda_log::CacheProbe`] of zero-copy reads.
pub fn uncached_bytes(file: &std::fs::File, pos: u64, len: usize) -> Option<usize> {
    use std::os::fd::AsRawFd;
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    // The same number on every architecture (added in Linux 6.5).
    const SYS_CACHESTAT: libc::c_long = 451;
    const PAGE: u64 = 4096;
    if len == 0 {
        return Some(0);
    }
    let first = pos / PAGE;
    let last = (pos + len as u64 - 1) / PAGE;
    let range = Range {
        off: first * PAGE,
        len: (last - first + 1) * PAGE,
    };
    let mut stat = Stat::default();
    // SAFETY: both pointers are to live, properly laid out structs for the call's duration,
    // and the descriptor is open (borrowed from `file`).
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const Range,
            &mut stat as *mut Stat,
            0u32,
        )
    };
    if r != 0 {
        return None;
    }
    let pages = last - first + 1;
    Some((pages.saturating_sub(stat.nr_cache) * PAGE) as usize)
}

/// Writes as much of `resp` from byte `skip` as the socket `fd` takes now (non-blocking,
/// never waiting for room) from the backlog lane at its CPU priority: memory with `send`, file
/// ranges with `sendfile` (copied with `pread` first on a file system without a descriptor).
/// Returns the bytes written, 0 when the socket is full. Writes through a duplicate of `fd`, as
/// [`super::backlog::write_now`].
///
/// Errors: the socket's (`EPIPE`, `ECONNRESET`), `dup`'s, a file's; `UnexpectedEof` when a
/// segment is shorter than its range now (truncated: the response cannot be completed, the
/// connection must close).
pub async fn write_now(
    fd: RawFd,
    resp: std::sync::Arc<SplicedResponse>,
    skip: usize,
) -> io::Result<usize> {
    let dup = super::backlog::dup_socket(fd)?;
    super::backlog::start(super::backlog::BacklogConfig::default())
        .call(move || write_parts(&dup, &resp, skip))
        .await
        .unwrap_or_else(|| Err(io::Error::other("backlog lane closed")))
}

/// The lane's side of [`write_now`]; a segment found shorter than its range is logged (the
/// connection closes).
fn write_parts(sock: &OwnedFd, resp: &SplicedResponse, skip: usize) -> io::Result<usize> {
    write_parts_now(sock, resp, skip).inspect_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            tracing::warn!(error = %e, "closing connection: a segment file was truncated under a fetch response being sent");
        }
    })
}

fn write_parts_now(sock: &OwnedFd, resp: &SplicedResponse, skip: usize) -> io::Result<usize> {
    let parts = resp.parts_from(skip);
    let mut done = 0usize;
    let last = parts.len().saturating_sub(1);
    for (i, part) in parts.iter().enumerate() {
        let (wrote, whole) = match *part {
            Part::Mem(m) => send_now(sock, m, i < last)?,
            Part::File(f, from, n) => match f.os_file() {
                Some(file) => sendfile_now(sock, file, f.position() + from as u64, n)?,
                None => {
                    let mut buf = vec![0u8; n];
                    f.read_at(&mut buf, from)?;
                    send_now(sock, &buf, i < last)?
                }
            },
        };
        done += wrote;
        if !whole {
            break;
        }
    }
    Ok(done)
}

/// `sendfile`s `len` bytes at `pos` of `file` until done or the socket is full: (bytes sent,
/// whether all of them). A file that ends early is `UnexpectedEof`.
fn sendfile_now(
    sock: &OwnedFd,
    file: &std::fs::File,
    pos: u64,
    len: usize,
) -> io::Result<(usize, bool)> {
    let mut done = 0usize;
    while done < len {
        let mut off = pos + done as u64;
        match rustix::fs::sendfile(sock.as_fd(), file.as_fd(), Some(&mut off), len - done) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "segment file ends before byte {} of a fetch response's range",
                        pos + done as u64
                    ),
                ))
            }
            Ok(n) => {
                done += n;
                SENT_BYTES.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(rustix::io::Errno::AGAIN) => return Ok((done, false)),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok((done, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `copy_range` of every start and length equals the same range of the response laid out
    /// whole; covered with an in-memory file system's slices in the fetch tests. Here: the
    /// pieces of a response without files.
    #[test]
    fn a_response_without_files_is_its_head() {
        let r = SplicedResponse::new(Bytes::from_static(b"0123456789"), Vec::new());
        assert_eq!(r.len(), 10);
        assert_eq!(r.file_bytes(), 0);
        for skip in 0..=10 {
            for max in 0..12 {
                let got = r.copy_range(skip, max).unwrap();
                let end = (skip + max).min(10);
                assert_eq!(&got[..], &b"0123456789"[skip..end]);
            }
        }
    }
}
