//! The file system under the log, as a trait: [`OsFs`] is the operating system's (what the
//! broker runs on), [`MemFs`](crate::MemFs) an in-memory one that a seeded test or simulation
//! crashes, losing exactly what was never made durable (TigerBeetle's and FoundationDB's way of
//! proving storage code: time, network and storage come in through traits).
//!
//! What the log needs from a file system is small: positional reads and writes of open files,
//! their length, `fdatasync`, and a few directory operations (create, list, remove, rename, and
//! `fsync` of a directory so that creations, removals and renames in it survive a power cut).
//! Every path is absolute or relative to the process's working directory, as `std::fs` takes it.

use std::fmt::Debug;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An open file of the log (a segment's `.log`, an index, a checkpoint), readable and writable
/// at positions. Shared by reference count: a file removed while open stays readable through
/// its handles (POSIX unlink semantics).
pub trait LogFile: Send + Sync + Debug {
    /// Reads up to `buf.len()` bytes at byte position `pos`; 0 at or past the end.
    ///
    /// Errors: the file system's (`EIO`).
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize>;

    /// Writes all of `data` at byte position `pos`, extending the file if needed (not durable
    /// until [`sync_data`](Self::sync_data)).
    ///
    /// Errors: the file system's (`ENOSPC` as `StorageFull`, `EIO`); part of `data` may have
    /// been written.
    fn write_all_at(&self, data: &[u8], pos: u64) -> io::Result<()>;

    /// The file's length in bytes.
    fn size(&self) -> io::Result<u64>;

    /// Cuts or extends (with zeros) the file to `len` bytes (not durable until synced).
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// `fdatasync`: the file's bytes and length are durable when it returns.
    fn sync_data(&self) -> io::Result<()>;

    /// Last modification time (ms since the Unix epoch), if the file system keeps one.
    fn modified_ms(&self) -> Option<i64>;

    /// Creation time (ms since the Unix epoch), if the file system keeps one.
    fn created_ms(&self) -> Option<i64>;

    /// The operating system's file, for what only a kernel can do with it (`preadv2` with
    /// `RWF_NOWAIT`, `sync_file_range`); `None` for a file of an in-memory file system.
    fn os_file(&self) -> Option<&std::fs::File> {
        None
    }

    /// Reads exactly `buf.len()` bytes at `pos`.
    ///
    /// Errors: `UnexpectedEof` if the file ends first, else the file system's.
    fn read_exact_at(&self, mut buf: &mut [u8], mut pos: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, pos) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    buf = &mut buf[n..];
                    pos += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// A shared handle on an open [`LogFile`].
pub type FileRef = Arc<dyn LogFile>;

/// A shared handle is a file too (so `&FileRef` passes where `&dyn LogFile` is taken).
impl<T: LogFile + ?Sized> LogFile for Arc<T> {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        (**self).read_at(buf, pos)
    }
    fn write_all_at(&self, data: &[u8], pos: u64) -> io::Result<()> {
        (**self).write_all_at(data, pos)
    }
    fn size(&self) -> io::Result<u64> {
        (**self).size()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        (**self).set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        (**self).sync_data()
    }
    fn modified_ms(&self) -> Option<i64> {
        (**self).modified_ms()
    }
    fn created_ms(&self) -> Option<i64> {
        (**self).created_ms()
    }
    fn os_file(&self) -> Option<&std::fs::File> {
        (**self).os_file()
    }
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, pos)
    }
}

/// The directory operations the log makes, and opening files.
pub trait FileSystem: Send + Sync + Debug {
    /// Opens `path` for reading and writing; `create` creates it if missing (the creation is
    /// durable only after [`sync_dir`](Self::sync_dir) of its directory), `truncate` empties it.
    ///
    /// Errors: `NotFound` when missing and not `create`, else the file system's.
    fn open(&self, path: &Path, create: bool, truncate: bool) -> io::Result<FileRef>;

    /// True if `path` names a file or directory.
    fn exists(&self, path: &Path) -> bool;

    /// The whole content of the file at `path`. Errors: `NotFound`, the file system's.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;

    /// Creates or replaces the file at `path` with `data` (neither durable until synced).
    fn write(&self, path: &Path, data: &[u8]) -> io::Result<()>;

    /// The length in bytes of the file at `path`. Errors: `NotFound`, the file system's.
    fn file_len(&self, path: &Path) -> io::Result<u64>;

    /// Removes the file at `path`. Errors: `NotFound`, the file system's.
    fn remove_file(&self, path: &Path) -> io::Result<()>;

    /// Renames `from` to `to`, replacing `to` atomically. Errors: `NotFound`, the file system's.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// The names of the entries of directory `dir` (files and directories), in no set order.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;

    /// Creates `dir` and every missing parent (not durable until their parents are synced).
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Removes `dir` and everything in it.
    fn remove_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// `fsync` of directory `dir`: creations, removals and renames in it are durable after it.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The operating system's file system (`std::fs`, `pread`/`pwrite`, `fdatasync`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OsFs;

/// An open file of [`OsFs`].
#[derive(Debug)]
struct OsFile(std::fs::File);

fn system_ms(t: std::io::Result<std::time::SystemTime>) -> Option<i64> {
    let d = t.ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_millis()).ok()
}

impl LogFile for OsFile {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        self.0.read_at(buf, pos)
    }
    fn write_all_at(&self, data: &[u8], pos: u64) -> io::Result<()> {
        self.0.write_all_at(data, pos)
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn modified_ms(&self) -> Option<i64> {
        system_ms(self.0.metadata().ok()?.modified())
    }
    fn created_ms(&self) -> Option<i64> {
        system_ms(self.0.metadata().ok()?.created())
    }
    fn os_file(&self) -> Option<&std::fs::File> {
        Some(&self.0)
    }
    fn read_exact_at(&self, buf: &mut [u8], pos: u64) -> io::Result<()> {
        self.0.read_exact_at(buf, pos)
    }
}

impl FileSystem for OsFs {
    fn open(&self, path: &Path, create: bool, truncate: bool) -> io::Result<FileRef> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(truncate)
            .open(path)?;
        Ok(Arc::new(OsFile(f)))
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        std::fs::write(path, data)
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            if let Some(name) = entry?.file_name().to_str() {
                out.push(name.to_string());
            }
        }
        Ok(out)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }
    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }
}

/// A directory of the log (a partition's) on a [`FileSystem`]: dereferences to its path, so
/// file names are built as on a `Path`, and carries the file system its files are opened on.
#[derive(Debug, Clone)]
pub struct LogDir {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
}

impl LogDir {
    /// `path` on `fs`.
    pub fn new(fs: Arc<dyn FileSystem>, path: impl Into<PathBuf>) -> LogDir {
        LogDir {
            fs,
            path: path.into(),
        }
    }

    /// `path` on the operating system's file system.
    pub fn os(path: impl Into<PathBuf>) -> LogDir {
        LogDir::new(Arc::new(OsFs), path)
    }

    /// The file system.
    pub fn fs(&self) -> &dyn FileSystem {
        &*self.fs
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file at `path` (in this directory); a missing file is fine.
    ///
    /// Errors: the file system's, other than `NotFound`.
    pub fn remove_if_exists(&self, path: &Path) -> io::Result<()> {
        match self.fs.remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `fsync` of this directory.
    pub fn sync(&self) -> io::Result<()> {
        self.fs.sync_dir(&self.path)
    }

    /// Replaces the file at `path` (in this directory) with `bytes`, at once and durably: a
    /// temporary `<path>.tmp` (one a crash left is removed first, never reused) written and
    /// fsynced, renamed over `path`, the directory fsynced. Returns the new file, open.
    ///
    /// Errors: the file system's; before the rename the old content stays in place.
    pub fn replace_durably(&self, path: &Path, bytes: &[u8]) -> io::Result<FileRef> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        self.remove_if_exists(&tmp)?;
        let f = self.fs.open(&tmp, true, true)?;
        f.write_all_at(bytes, 0)?;
        f.sync_data()?;
        self.fs.rename(&tmp, path)?;
        self.sync()?;
        Ok(f)
    }
}

impl std::ops::Deref for LogDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for LogDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}
