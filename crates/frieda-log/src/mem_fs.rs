//! [`MemFs`]: an in-memory [`FileSystem`] that a seeded test crashes.
//!
//! It remembers, for every file, the bytes that are durable (as of its last `fdatasync`) and
//! the writes and truncations made since, in order; and for the namespace, the entries that
//! are durable (as of the last directory `fsync`) and the creations, removals and renames made
//! since, in order. [`MemFs::crash`] is a power cut: each file keeps its durable bytes plus a
//! seeded prefix of its later writes, the last of them possibly torn (a prefix of its bytes),
//! and the namespace keeps a seeded prefix of its later operations (a journaling file system
//! commits them in order). So a crash never keeps what a sync made durable and never keeps a
//! later operation without every earlier one; anything else may go.
//!
//! Two choices are stricter than Linux's ext4 (so code proven here is right on it too): an
//! `fdatasync` of a file makes only its bytes durable, never its directory entry (ext4's
//! journal commit usually carries it); and a directory `fsync` commits every namespace
//! operation made so far (a journal commit), not only those of that directory. Times are not
//! kept: [`LogFile::modified_ms`] and [`LogFile::created_ms`] answer `None`.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::fs::{FileRef, FileSystem, LogFile};

/// What a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    File(u64),
    Dir,
}

/// A namespace operation not yet made durable.
#[derive(Debug, Clone)]
enum NameOp {
    Insert(PathBuf, Entry),
    Remove(PathBuf),
    /// Everything at or under the path.
    RemoveTree(PathBuf),
    Rename(PathBuf, PathBuf),
}

/// A data operation on a file not yet made durable.
#[derive(Debug, Clone)]
enum DataOp {
    Write(u64, Vec<u8>),
    SetLen(u64),
}

#[derive(Debug, Default)]
struct Inode {
    data: Vec<u8>,
    durable: Vec<u8>,
    pending: Vec<DataOp>,
}

#[derive(Debug, Default)]
struct State {
    /// Bumped by every crash: handles opened before it answer `EIO`.
    generation: u64,
    next_inode: u64,
    names: BTreeMap<PathBuf, Entry>,
    durable_names: BTreeMap<PathBuf, Entry>,
    pending_names: Vec<NameOp>,
    inodes: HashMap<u64, Inode>,
    /// Crashes so far, and bytes and operations they dropped (for tests to show they bit).
    stats: CrashStats,
    /// Changes (writes, truncations, syncs, creations, removals, renames) allowed before the
    /// process "stops": every later change fails, as if it died there ([`MemFs::stop_after`]).
    stop_after: Option<u64>,
    /// The next fdatasync fails with EIO (a disk fault; [`MemFs::fail_next_sync`]).
    fail_next_sync: bool,
}

/// What crashes dropped so far ([`MemFs::stats`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CrashStats {
    /// Crashes.
    pub crashes: u64,
    /// Unsynced file operations (writes, truncations) dropped, whole or torn.
    pub data_ops_dropped: u64,
    /// Unsynced namespace operations (creations, removals, renames) dropped.
    pub name_ops_dropped: u64,
}

fn apply_data(data: &mut Vec<u8>, op: &DataOp) {
    match op {
        DataOp::Write(pos, bytes) => {
            let pos = *pos as usize;
            if data.len() < pos + bytes.len() {
                data.resize(pos + bytes.len(), 0);
            }
            data[pos..pos + bytes.len()].copy_from_slice(bytes);
        }
        DataOp::SetLen(len) => data.resize(*len as usize, 0),
    }
}

fn under(p: &Path, root: &Path) -> bool {
    p.starts_with(root)
}

fn apply_name(names: &mut BTreeMap<PathBuf, Entry>, op: &NameOp) {
    match op {
        NameOp::Insert(p, e) => {
            names.insert(p.clone(), *e);
        }
        NameOp::Remove(p) => {
            names.remove(p);
        }
        NameOp::RemoveTree(root) => names.retain(|p, _| !under(p, root)),
        NameOp::Rename(from, to) => {
            let moved: Vec<(PathBuf, Entry)> = names
                .iter()
                .filter(|(p, _)| under(p, from))
                .map(|(p, e)| (p.clone(), *e))
                .collect();
            names.retain(|p, _| !under(p, from) && !under(p, to));
            for (p, e) in moved {
                let rest = p.strip_prefix(from).unwrap_or(Path::new(""));
                let target = if rest.as_os_str().is_empty() {
                    to.clone()
                } else {
                    to.join(rest)
                };
                names.insert(target, e);
            }
        }
    }
}

/// splitmix64: a seeded, platform-independent sequence for [`MemFs::crash`] (and the crash
/// tests' runs).
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..=n`.
    pub(crate) fn upto(&mut self, n: usize) -> usize {
        (self.next() % (n as u64 + 1)) as usize
    }
}

/// An in-memory file system that loses what was never synced when [`crash`](Self::crash)ed
/// (see the module docs). Clones share the same files.
#[derive(Debug, Clone, Default)]
pub struct MemFs {
    state: Arc<Mutex<State>>,
}

fn eio(what: &str) -> io::Error {
    io::Error::other(format!("{what}: file handle from before a crash"))
}

fn not_found(p: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", p.display()),
    )
}

impl MemFs {
    /// An empty file system (the root directory `/` exists).
    pub fn new() -> MemFs {
        let fs = MemFs::default();
        {
            let mut st = fs.state.lock();
            st.names.insert(PathBuf::from("/"), Entry::Dir);
            st.durable_names = st.names.clone();
        }
        fs
    }

    /// A power cut, decided by `seed`: what survives is the durable state plus a seeded prefix
    /// of each file's later operations (the last one possibly torn) and of the later namespace
    /// operations. Every handle opened before answers `EIO` from now on.
    pub fn crash(&self, seed: u64) {
        self.crash_with(Some(seed));
    }

    /// A power cut that keeps exactly what was synced: nothing unsynced survives (the cluster
    /// simulator's disk model). Handles from before answer `EIO`.
    pub fn crash_to_synced(&self) {
        self.crash_with(None);
    }

    /// Arms a disk fault: the next fdatasync fails with EIO (the log then goes offline).
    pub fn fail_next_sync(&self) {
        self.state.lock().fail_next_sync = true;
    }

    /// Disarms [`fail_next_sync`](Self::fail_next_sync).
    pub fn heal(&self) {
        self.state.lock().fail_next_sync = false;
    }

    /// `crash` with `None`: every random choice keeps nothing unsynced.
    fn crash_with(&self, seed: Option<u64>) {
        let mut rng = SplitMix(seed.unwrap_or(0));
        let random = seed.is_some();
        let mut st = self.state.lock();
        let st = &mut *st;
        st.stats.crashes += 1;
        let keep = if random {
            rng.upto(st.pending_names.len())
        } else {
            0
        };
        st.stats.name_ops_dropped += (st.pending_names.len() - keep) as u64;
        let mut names = std::mem::take(&mut st.durable_names);
        for op in &st.pending_names[..keep] {
            apply_name(&mut names, op);
        }
        st.pending_names.clear();
        st.names = names.clone();
        st.durable_names = names;
        let live: std::collections::HashSet<u64> = st
            .names
            .values()
            .filter_map(|e| match e {
                Entry::File(i) => Some(*i),
                Entry::Dir => None,
            })
            .collect();
        st.inodes.retain(|id, _| live.contains(id));
        let mut ids: Vec<u64> = st.inodes.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let inode = st.inodes.get_mut(&id).expect("listed");
            let n = inode.pending.len();
            let keep = if random { rng.upto(n) } else { 0 };
            let mut data = std::mem::take(&mut inode.durable);
            for op in &inode.pending[..keep] {
                apply_data(&mut data, op);
            }
            let mut dropped = n - keep;
            if random && keep < n && rng.next().is_multiple_of(2) {
                // The next write torn: a prefix of its bytes reached the disk.
                if let DataOp::Write(pos, bytes) = &inode.pending[keep] {
                    let cut = rng.upto(bytes.len());
                    apply_data(&mut data, &DataOp::Write(*pos, bytes[..cut].to_vec()));
                    dropped -= 1;
                }
            }
            st.stats.data_ops_dropped += dropped as u64;
            inode.pending.clear();
            inode.data = data.clone();
            inode.durable = data;
        }
        st.generation += 1;
        st.stop_after = None;
        st.fail_next_sync = false;
    }

    /// A crash point: after `changes` more changes (writes, truncations, syncs, creations,
    /// removals, renames) every change fails with an I/O error, as if the process died there;
    /// [`crash`](Self::crash) then decides what reached the disk. `None` disarms it.
    pub fn stop_after(&self, changes: Option<u64>) {
        self.state.lock().stop_after = changes;
    }

    /// Whether a [`stop_after`](Self::stop_after) crash point was reached.
    pub fn stopped(&self) -> bool {
        self.state.lock().stop_after == Some(0)
    }

    /// What crashes dropped so far.
    pub fn stats(&self) -> CrashStats {
        self.state.lock().stats
    }
}

impl State {
    /// Counts one change; `Err` once the process stopped ([`MemFs::stop_after`]).
    fn change(&mut self) -> io::Result<()> {
        match &mut self.stop_after {
            Some(0) => Err(io::Error::other(
                "memfs: the process stopped here (a test's crash point)",
            )),
            Some(n) => {
                *n -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn name_op(&mut self, op: NameOp) {
        apply_name(&mut self.names, &op);
        self.pending_names.push(op);
    }

    fn file(&self, path: &Path) -> io::Result<u64> {
        match self.names.get(path) {
            Some(Entry::File(i)) => Ok(*i),
            Some(Entry::Dir) => Err(io::Error::other(format!(
                "{}: is a directory",
                path.display()
            ))),
            None => Err(not_found(path)),
        }
    }

    fn parent_is_dir(&self, path: &Path) -> bool {
        path.parent()
            .is_none_or(|p| p.as_os_str().is_empty() || self.names.get(p) == Some(&Entry::Dir))
    }

    fn create(&mut self, path: &Path) -> io::Result<u64> {
        if !self.parent_is_dir(path) {
            return Err(not_found(path));
        }
        let id = self.next_inode;
        self.next_inode += 1;
        self.inodes.insert(id, Inode::default());
        self.name_op(NameOp::Insert(path.to_path_buf(), Entry::File(id)));
        Ok(id)
    }

    fn data_op(&mut self, id: u64, op: DataOp) {
        let inode = self.inodes.entry(id).or_default();
        apply_data(&mut inode.data, &op);
        inode.pending.push(op);
    }
}

/// An open file of a [`MemFs`].
#[derive(Debug)]
struct MemFile {
    state: Arc<Mutex<State>>,
    inode: u64,
    generation: u64,
}

impl MemFile {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> io::Result<T>) -> io::Result<T> {
        let mut st = self.state.lock();
        if st.generation != self.generation {
            return Err(eio("memfs"));
        }
        f(&mut st)
    }
}

impl LogFile for MemFile {
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        self.with(|st| {
            let data = st.inodes.get(&self.inode).map_or(&[][..], |i| &i.data[..]);
            let pos = usize::try_from(pos).unwrap_or(usize::MAX);
            if pos >= data.len() {
                return Ok(0);
            }
            let n = buf.len().min(data.len() - pos);
            buf[..n].copy_from_slice(&data[pos..pos + n]);
            Ok(n)
        })
    }
    fn write_all_at(&self, data: &[u8], pos: u64) -> io::Result<()> {
        self.with(|st| {
            st.change()?;
            st.data_op(self.inode, DataOp::Write(pos, data.to_vec()));
            Ok(())
        })
    }
    fn size(&self) -> io::Result<u64> {
        self.with(|st| {
            Ok(st
                .inodes
                .get(&self.inode)
                .map_or(0, |i| i.data.len() as u64))
        })
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.with(|st| {
            st.change()?;
            st.data_op(self.inode, DataOp::SetLen(len));
            Ok(())
        })
    }
    fn sync_data(&self) -> io::Result<()> {
        self.with(|st| {
            st.change()?;
            if std::mem::take(&mut st.fail_next_sync) {
                return Err(io::Error::other("memfs: an injected fdatasync failure"));
            }
            if let Some(i) = st.inodes.get_mut(&self.inode) {
                i.durable = i.data.clone();
                i.pending.clear();
            }
            Ok(())
        })
    }
    fn modified_ms(&self) -> Option<i64> {
        None
    }
    fn created_ms(&self) -> Option<i64> {
        None
    }
}

impl FileSystem for MemFs {
    fn open(&self, path: &Path, create: bool, truncate: bool) -> io::Result<FileRef> {
        let mut st = self.state.lock();
        let id = match st.file(path) {
            Ok(id) => id,
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                st.change()?;
                st.create(path)?
            }
            Err(e) => return Err(e),
        };
        if truncate {
            st.change()?;
            st.data_op(id, DataOp::SetLen(0));
        }
        Ok(Arc::new(MemFile {
            state: self.state.clone(),
            inode: id,
            generation: st.generation,
        }))
    }
    fn exists(&self, path: &Path) -> bool {
        self.state.lock().names.contains_key(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let st = self.state.lock();
        let id = st.file(path)?;
        Ok(st.inodes.get(&id).map_or_else(Vec::new, |i| i.data.clone()))
    }
    fn write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut st = self.state.lock();
        st.change()?;
        let id = match st.file(path) {
            Ok(id) => id,
            Err(e) if e.kind() == io::ErrorKind::NotFound => st.create(path)?,
            Err(e) => return Err(e),
        };
        st.data_op(id, DataOp::SetLen(0));
        st.data_op(id, DataOp::Write(0, data.to_vec()));
        Ok(())
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        let st = self.state.lock();
        let id = st.file(path)?;
        Ok(st.inodes.get(&id).map_or(0, |i| i.data.len() as u64))
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        st.file(path)?;
        st.change()?;
        st.name_op(NameOp::Remove(path.to_path_buf()));
        Ok(())
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        if !st.names.contains_key(from) {
            return Err(not_found(from));
        }
        if !st.parent_is_dir(to) {
            return Err(not_found(to));
        }
        st.change()?;
        st.name_op(NameOp::Rename(from.to_path_buf(), to.to_path_buf()));
        Ok(())
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let st = self.state.lock();
        if st.names.get(dir) != Some(&Entry::Dir) {
            return Err(not_found(dir));
        }
        Ok(st
            .names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect())
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        let mut missing = Vec::new();
        let mut at = Some(dir);
        while let Some(d) = at {
            if d.as_os_str().is_empty() {
                break;
            }
            match st.names.get(d) {
                Some(Entry::Dir) => break,
                Some(Entry::File(_)) => {
                    return Err(io::Error::other(format!("{}: a file", d.display())))
                }
                None => missing.push(d.to_path_buf()),
            }
            at = d.parent();
        }
        if !missing.is_empty() {
            st.change()?;
        }
        for d in missing.into_iter().rev() {
            st.name_op(NameOp::Insert(d, Entry::Dir));
        }
        Ok(())
    }
    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        if st.names.get(dir) != Some(&Entry::Dir) {
            return Err(not_found(dir));
        }
        st.change()?;
        st.name_op(NameOp::RemoveTree(dir.to_path_buf()));
        Ok(())
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        if st.names.get(dir) != Some(&Entry::Dir) {
            return Err(not_found(dir));
        }
        st.change()?;
        st.durable_names = st.names.clone();
        st.pending_names.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synced_file_survives_every_crash_and_unsynced_bytes_may_not() {
        let mut lost = 0;
        for seed in 0..64 {
            let fs = MemFs::new();
            let d = Path::new("/d");
            fs.create_dir_all(d).unwrap();
            fs.sync_dir(Path::new("/")).unwrap();
            let f = fs.open(&d.join("a"), true, false).unwrap();
            f.write_all_at(b"hello", 0).unwrap();
            f.sync_data().unwrap();
            fs.sync_dir(d).unwrap();
            f.write_all_at(b" world", 5).unwrap();
            fs.crash(seed);
            assert!(
                f.size().is_err(),
                "a handle from before the crash answers EIO"
            );
            let after = fs.read(&d.join("a")).unwrap();
            assert!(after.starts_with(b"hello"), "{after:?}");
            assert!(b"hello world".starts_with(&after), "{after:?}");
            lost += usize::from(after.len() < 11);
        }
        assert!(
            lost > 0 && lost < 64,
            "the unsynced write was kept sometimes: {lost}"
        );
    }

    #[test]
    fn a_creation_without_a_directory_sync_may_vanish_and_renames_keep_their_order() {
        let mut vanished = 0;
        for seed in 0..64 {
            let fs = MemFs::new();
            let d = Path::new("/d");
            fs.create_dir_all(d).unwrap();
            fs.sync_dir(Path::new("/")).unwrap();
            fs.write(&d.join("tmp"), b"new").unwrap();
            fs.open(&d.join("tmp"), false, false)
                .unwrap()
                .sync_data()
                .unwrap();
            fs.rename(&d.join("tmp"), &d.join("final")).unwrap();
            fs.crash(seed);
            let names = fs.list(d).unwrap();
            match names.as_slice() {
                [] => vanished += 1,
                [n] if n == "tmp" => assert_eq!(fs.read(&d.join("tmp")).unwrap(), b"new"),
                [n] if n == "final" => assert_eq!(fs.read(&d.join("final")).unwrap(), b"new"),
                other => panic!("{other:?}"),
            }
        }
        assert!(vanished > 0);
    }

    #[test]
    fn a_removed_file_stays_readable_through_its_handle_and_a_tree_goes_at_once() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/a/b")).unwrap();
        let f = fs.open(Path::new("/a/b/x"), true, false).unwrap();
        f.write_all_at(b"abc", 0).unwrap();
        fs.remove_file(Path::new("/a/b/x")).unwrap();
        let mut buf = [0u8; 3];
        f.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"abc");
        assert!(!fs.exists(Path::new("/a/b/x")));
        fs.write(Path::new("/a/b/y"), b"1").unwrap();
        fs.remove_dir_all(Path::new("/a")).unwrap();
        assert!(!fs.exists(Path::new("/a/b/y")) && !fs.exists(Path::new("/a")));
        assert!(fs.exists(Path::new("/")));
    }
}
