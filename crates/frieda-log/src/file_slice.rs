//! Fetch data left in the segment files: byte ranges of `.log` files that the broker sends to
//! the socket with `sendfile(2)` (zero copy, as Kafka's `FileRecords.writeTo` with
//! `FileChannel.transferTo`) instead of reading them into memory first (issue 58, goal 4).
//! Found by [`DiskRead::run_unread`](crate::DiskRead::run_unread).

use std::sync::Arc;

use crate::segment::SegmentShared;

/// `len` bytes of whole batches at byte `pos` of one segment's `.log`. Holds the segment, so
/// the file stays open (and its bytes readable) even if retention deletes the segment
/// meanwhile. A segment truncated under it (a replica's log truncated below what a consumer
/// was shown: unclean leader election) makes [`read_at`](Self::read_at) fail and a `sendfile`
/// of it come up short: the connection must then close, as Kafka's does.
#[derive(Clone)]
pub struct FileSlice {
    segment: Arc<SegmentShared>,
    pos: u64,
    len: usize,
}

impl std::fmt::Debug for FileSlice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSlice")
            .field("segment", &self.segment.base_offset)
            .field("pos", &self.pos)
            .field("len", &self.len)
            .finish()
    }
}

impl FileSlice {
    pub(crate) fn new(segment: Arc<SegmentShared>, pos: u64, len: usize) -> Self {
        FileSlice { segment, pos, len }
    }

    /// Bytes in the slice.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the slice starts in the `.log` file, bytes.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The operating system's file (for `sendfile`); `None` on an in-memory file system.
    pub fn os_file(&self) -> Option<&std::fs::File> {
        self.segment.log.os_file()
    }

    /// Reads `buf.len()` bytes from `at` bytes into the slice (a copy, where `sendfile` cannot
    /// be used: TLS, an in-memory file system, a write of part of a response).
    ///
    /// Errors: the file's; `UnexpectedEof` if the range leaves the slice or the file is shorter
    /// now (truncated).
    pub fn read_at(&self, buf: &mut [u8], at: usize) -> std::io::Result<()> {
        if at.saturating_add(buf.len()) > self.len {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.segment.log.read_exact_at(buf, self.pos + at as u64)
    }
}

/// What a zero-copy read found: [`crate::FetchData`]'s shape, with file ranges for chunks.
#[derive(Debug, Clone)]
pub struct FileFetch {
    /// Whole batches, one slice per segment, to be sent back to back.
    pub slices: Vec<FileSlice>,
    /// Sum of the slices' lengths.
    pub bytes: usize,
    /// Base offset of the first batch (the requested offset when empty).
    pub first_offset: i64,
    /// One past the last offset sent (the requested offset when empty; where batches were
    /// jumped over by the offset index, the base offset of the batch after them).
    pub next_offset: i64,
}
