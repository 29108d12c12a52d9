//! The backlog lane: reads that miss the tail cache (a consumer catching up, a lagging replica)
//! run on a few threads of their own at the lowest CPU priority (`SCHED_IDLE`), so that on a
//! busy machine they take only the CPU that produce, replication and tail reads leave
//! unused: a bulk read never delays an acknowledgement (issue 34's priority lanes; the LNS seed,
//! `000_00b2c58f2a1e5093.txt` §12: the priority travels with the request through every queue).
//!
//! What a read does while holding the log's locks (bounds, segment list, offset index) is done
//! on the caller's thread ([`frieda_log::LogReader::plan_disk_read`]); the lane only `pread`s
//! ([`frieda_log::DiskRead::run`]), so a starved backlog thread never holds a lock that the
//! appender or a tail read waits for.
//!
//! The socket writes of backlog responses (a consumer fetch answered from the segment files)
//! run here too ([`write_now`]): on loopback and on a busy machine the kernel's send work costs
//! more CPU than the read.
//!
//! Bounds: `backlog.read.threads` threads (default 2); at most [`MAX_QUEUED_PER_THREAD`] jobs
//! (reads, writes) per thread queued or running, further ones wait (asynchronously) for a slot.
//!
//! A priority alone gives the backlog whatever CPU is idle, and on a machine whose cores are all
//! busy the kernel's receive and page-cache work for those bytes still lands on others' time.
//! `backlog.read.max.bytes.per.second` gives consumers' backlog reads a budget of their own
//! ([`ByteBudget`]): a read over it waits (its fetch is answered later; nothing else waits),
//! so the readers are slowed and never the producers (issue 58, goal 4). Replicas' reads are
//! not budgeted: an `acks=all` acknowledgement may wait for them.

use std::sync::{mpsc, Arc, Mutex, OnceLock};

use frieda_log::{DiskRead, FetchData, FileFetch, LogError};

/// Reads queued or running per backlog thread; a read beyond `threads` times this waits for a
/// slot (its fetch waits; nothing else does).
pub const MAX_QUEUED_PER_THREAD: usize = 16;

/// CPU priority of a lane's threads (`backlog.read.priority`, `bulk.append.priority`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanePriority {
    /// `SCHED_IDLE` (default): runs only when no normal thread of the machine wants the CPU.
    Idle,
    /// `nice 19`: the lowest normal priority (about 1.5% of a CPU against one busy nice-0 thread).
    Low,
    /// The same priority as every other thread (the lane still bounds the threads and queue).
    Normal,
}

impl std::str::FromStr for LanePriority {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Self> {
        match s {
            "idle" => Ok(LanePriority::Idle),
            "low" => Ok(LanePriority::Low),
            "normal" => Ok(LanePriority::Normal),
            _ => anyhow::bail!("expected \"idle\", \"low\" or \"normal\""),
        }
    }
}

/// Settings of the backlog lane (`backlog.read.threads`, `backlog.read.priority`,
/// `backlog.read.max.bytes.per.second`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BacklogConfig {
    /// Threads (at least 1).
    pub threads: usize,
    /// Their CPU priority.
    pub priority: LanePriority,
    /// Bytes per second consumers' backlog reads may take together (0: no budget, the default).
    pub max_bytes_per_second: u64,
}

impl Default for BacklogConfig {
    fn default() -> Self {
        BacklogConfig {
            threads: 2,
            priority: LanePriority::Idle,
            max_bytes_per_second: 0,
        }
    }
}

/// Who a read of the segment files is for: only consumers' reads are charged to the lane's
/// byte budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFor {
    /// A consumer's (or share consumer's) fetch.
    Consumer,
    /// A follower's fetch, or the broker's own reads (coordinators, tests).
    Replica,
}

/// A token bucket of bytes: `rate` bytes per second flow in, up to [`BUDGET_BURST_SECS`] of them
/// banked; a read spends what it read, into debt if need be (its size is known only once read),
/// and the next read waits until the debt is paid. The debt is capped at
/// [`BUDGET_MAX_DEBT_SECS`] of the rate, so no read waits longer than that (a fetch must be
/// answered within the client's request timeout): with more readers than the rate feeds one
/// large read each per second, each still gets one read per that long. Sans-IO: time comes in
/// as an argument.
#[derive(Debug)]
pub struct ByteBudget {
    rate: f64,
    /// Bytes available (negative: owed) at `at`.
    state: Mutex<(f64, std::time::Instant)>,
}

/// Seconds of the rate a budget banks while idle.
pub const BUDGET_BURST_SECS: f64 = 0.1;
/// Seconds of the rate a budget may owe: the longest a read waits.
pub const BUDGET_MAX_DEBT_SECS: f64 = 1.0;

impl ByteBudget {
    /// A budget of `bytes_per_second` (> 0), full at `now`.
    pub fn new(bytes_per_second: u64, now: std::time::Instant) -> Self {
        let rate = bytes_per_second.max(1) as f64;
        ByteBudget {
            rate,
            state: Mutex::new((rate * BUDGET_BURST_SECS, now)),
        }
    }

    fn refill(
        &self,
        now: std::time::Instant,
    ) -> std::sync::MutexGuard<'_, (f64, std::time::Instant)> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let elapsed = now.saturating_duration_since(st.1).as_secs_f64();
        st.0 = (st.0 + elapsed * self.rate).min(self.rate * BUDGET_BURST_SECS);
        st.1 = st.1.max(now);
        st
    }

    /// How long a read starting at `now` waits: zero unless the budget is in debt.
    pub fn wait(&self, now: std::time::Instant) -> std::time::Duration {
        let st = self.refill(now);
        if st.0 >= 0.0 {
            return std::time::Duration::ZERO;
        }
        std::time::Duration::from_secs_f64(-st.0 / self.rate)
    }

    /// Charges `bytes` read at `now`.
    pub fn spend(&self, bytes: usize, now: std::time::Instant) {
        let mut st = self.refill(now);
        st.0 = (st.0 - bytes as f64).max(-self.rate * BUDGET_MAX_DEBT_SECS);
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// The backlog threads and their bounded queue.
pub struct BacklogLane {
    jobs: mpsc::Sender<Job>,
    slots: Arc<tokio::sync::Semaphore>,
    /// Consumers' byte budget (`None`: unlimited).
    budget: Option<ByteBudget>,
}

static LANE: OnceLock<BacklogLane> = OnceLock::new();

/// Starts the process's backlog lane with `config` (the first call wins: brokers of one process
/// share it); later calls and [`read`] without a call use what was started first.
pub fn start(config: BacklogConfig) -> &'static BacklogLane {
    LANE.get_or_init(|| BacklogLane::spawn(config))
}

/// Runs `plan` on the backlog lane for `reader`; waits for a queue slot when the lane is full.
/// A consumer's read first waits while the lane's byte budget is in debt (at most
/// [`BUDGET_MAX_DEBT_SECS`]), then is charged what it read.
///
/// Errors: those of [`DiskRead::run`]; `LogError::Corrupt` if the lane's thread died with the
/// read (a panic in it, which is logged).
pub async fn read(plan: DiskRead, reader: ReadFor) -> Result<FetchData, LogError> {
    budgeted(reader, move || plan.run(), |d| d.bytes).await
}

/// [`read`] without reading the batches: the file ranges that hold them
/// ([`DiskRead::run_unread`]), for a zero-copy send ([`write_spliced_now`]). The byte budget
/// counts the bytes to be sent.
///
/// Errors: those of [`DiskRead::run_unread`]; as [`read`] for the lane.
pub async fn read_unread(plan: DiskRead, reader: ReadFor) -> Result<FileFetch, LogError> {
    budgeted(
        reader,
        move || plan.run_unread(super::zero_copy::uncached_bytes),
        |d| d.bytes,
    )
    .await
}

/// Runs `job` on the backlog lane, for a consumer within the byte budget (`bytes` of its
/// result are charged).
async fn budgeted<T: Send + 'static>(
    reader: ReadFor,
    job: impl FnOnce() -> Result<T, LogError> + Send + 'static,
    bytes: impl Fn(&T) -> usize,
) -> Result<T, LogError> {
    let lane = start(BacklogConfig::default());
    let budget = match (&lane.budget, reader) {
        (Some(b), ReadFor::Consumer) => Some(b),
        _ => None,
    };
    if let Some(budget) = budget {
        let wait = budget.wait(std::time::Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
    let read = lane
        .call(job)
        .await
        .unwrap_or_else(|| Err(LogError::Corrupt("backlog lane closed".into())));
    if let (Some(budget), Ok(d)) = (budget, &read) {
        budget.spend(bytes(d), std::time::Instant::now());
    }
    read
}

/// Writes as much of `data` as the socket `fd` takes now (non-blocking, never waiting for
/// room) from the backlog lane, at its CPU priority: the kernel's send work for a backlog
/// response (on loopback also the receiver's side of TCP) is then done at that priority too.
/// Returns the bytes written, 0 when the socket is full. The lane writes through a duplicate
/// of `fd`, so a connection dropped meanwhile never has its descriptor number reused under it.
///
/// Errors: the socket's (`EPIPE`, `ECONNRESET`), or `dup`'s.
pub async fn write_now(fd: std::os::fd::RawFd, data: bytes::Bytes) -> std::io::Result<usize> {
    let dup = dup_socket(fd)?;
    start(BacklogConfig::default())
        .call(move || send_now(&dup, &data, false).map(|(n, _)| n))
        .await
        .unwrap_or_else(|| Err(std::io::Error::other("backlog lane closed")))
}

/// A duplicate of the socket `fd` for the lane to write through (see [`write_now`]).
///
/// Errors: `dup`'s.
pub(crate) fn dup_socket(fd: std::os::fd::RawFd) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: duplicates a descriptor the caller holds open for the duration of this call.
    let dup = unsafe { libc::dup(fd) };
    if dup < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `dup` is a fresh descriptor owned only here.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(dup) })
}

/// Sends `data` on `sock` without waiting until done or the socket is full: (bytes sent,
/// whether all of them). `more`: more of the response follows (`MSG_MORE`).
///
/// Errors: the socket's, or `WriteZero`.
pub(crate) fn send_now(
    sock: &std::os::fd::OwnedFd,
    data: &[u8],
    more: bool,
) -> std::io::Result<(usize, bool)> {
    use std::os::fd::AsRawFd;
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    let mut done = 0usize;
    while done < data.len() {
        let rest = &data[done..];
        // SAFETY: sends from a live buffer on a descriptor the caller owns.
        let n = unsafe { libc::send(sock.as_raw_fd(), rest.as_ptr().cast(), rest.len(), flags) };
        if n > 0 {
            done += n as usize;
            continue;
        }
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        // n < 0: errno says why.
        let e = std::io::Error::last_os_error();
        match e.kind() {
            std::io::ErrorKind::WouldBlock => return Ok((done, false)),
            std::io::ErrorKind::Interrupted => {}
            _ => return Err(e),
        }
    }
    Ok((done, true))
}

impl BacklogLane {
    fn spawn(config: BacklogConfig) -> Self {
        let threads = config.threads.max(1);
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("backlog-{i}"))
                .spawn(move || {
                    lower_priority(config.priority);
                    loop {
                        // One thread at a time waits for the next job holding the receiver's
                        // lock; the lock is released before the job runs. Only backlog threads
                        // ever take it, so a starved holder delays only them.
                        let job = match rx.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                });
            if let Err(e) = spawned {
                tracing::error!(error = %e, "could not start a backlog read thread");
            }
        }
        tracing::info!(threads, priority = ?config.priority,
            max_bytes_per_second = config.max_bytes_per_second, "backlog read lane started");
        BacklogLane {
            jobs: tx,
            slots: Arc::new(tokio::sync::Semaphore::new(threads * MAX_QUEUED_PER_THREAD)),
            budget: (config.max_bytes_per_second > 0)
                .then(|| ByteBudget::new(config.max_bytes_per_second, std::time::Instant::now())),
        }
    }

    /// Runs `f` on one of the lane's threads once a queue slot is free; `None` if the lane is
    /// gone or `f` panicked (logged).
    pub(crate) async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let slot = self.slots.clone().acquire_owned().await.ok()?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            drop(slot);
            match r {
                Ok(v) => {
                    let _ = tx.send(v);
                }
                Err(_) => tracing::error!("a backlog lane job panicked"),
            }
        });
        self.jobs.send(job).ok()?;
        rx.await.ok()
    }
}

/// Puts the calling thread at `priority` (Linux: `sched_setscheduler(SCHED_IDLE)` or
/// `setpriority(19)` on the thread); logs and keeps the normal priority if refused.
pub(crate) fn lower_priority(priority: LanePriority) {
    let rc = match priority {
        LanePriority::Normal => return,
        LanePriority::Idle => {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: sets the calling thread's (0) scheduling policy; `param` outlives the call.
            unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) }
        }
        LanePriority::Low => {
            // SAFETY: gettid has no arguments; on Linux the nice value is per thread, named by
            // its tid with PRIO_PROCESS.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
            // SAFETY: plain syscall on the calling thread.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, 19) }
        }
    };
    if rc != 0 {
        tracing::warn!(?priority, error = %std::io::Error::last_os_error(),
            "backlog read thread keeps the normal CPU priority");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_parse_by_name() {
        assert_eq!("idle".parse::<LanePriority>().unwrap(), LanePriority::Idle);
        assert_eq!("low".parse::<LanePriority>().unwrap(), LanePriority::Low);
        assert_eq!(
            "normal".parse::<LanePriority>().unwrap(),
            LanePriority::Normal
        );
        assert!("high".parse::<LanePriority>().is_err());
    }

    #[test]
    fn a_budget_lets_its_rate_through_and_makes_the_next_read_wait_for_the_debt() {
        let t0 = std::time::Instant::now();
        let ms = std::time::Duration::from_millis;
        // 10 MB/s: 1 MB banked (0.1 s), at most 10 MB owed (1 s).
        let b = ByteBudget::new(10_000_000, t0);
        assert_eq!(b.wait(t0), std::time::Duration::ZERO);
        b.spend(1_000_000, t0);
        assert_eq!(
            b.wait(t0),
            std::time::Duration::ZERO,
            "the banked burst is free"
        );
        b.spend(2_000_000, t0);
        assert_eq!(b.wait(t0), ms(200), "2 MB owed at 10 MB/s");
        assert_eq!(b.wait(t0 + ms(150)), ms(50));
        assert_eq!(b.wait(t0 + ms(200)), std::time::Duration::ZERO);
        // Idle for long banks only the burst.
        let t1 = t0 + ms(10_000);
        b.spend(1_000_000, t1);
        assert_eq!(b.wait(t1), std::time::Duration::ZERO);
        b.spend(1, t1);
        assert!(b.wait(t1) > std::time::Duration::ZERO);
        // A huge read owes at most one second of the rate.
        b.spend(500_000_000, t1);
        assert_eq!(b.wait(t1), ms(1000));
    }

    #[test]
    fn a_budget_holds_readers_to_its_rate_over_time() {
        // Four readers of 1 MB each, each reading again as soon as the budget lets it: over
        // 10 simulated seconds at 5 MB/s they get about 50 MB (plus the banked burst).
        let t0 = std::time::Instant::now();
        let b = ByteBudget::new(5_000_000, t0);
        let mut next = [t0; 4];
        let mut clock = t0;
        let mut total = 0usize;
        loop {
            let (i, at) = next
                .iter()
                .copied()
                .enumerate()
                .min_by_key(|(_, t)| *t)
                .unwrap();
            // Time only moves forward: a reader ready earlier asks now.
            let now = at.max(clock);
            let start = now + b.wait(now);
            clock = start;
            if start > t0 + std::time::Duration::from_secs(10) {
                break;
            }
            b.spend(1_000_000, start);
            total += 1_000_000;
            next[i] = start + std::time::Duration::from_millis(1);
        }
        assert!((50_000_000..=52_000_000).contains(&total), "{total}");
    }

    #[test]
    fn an_idle_thread_runs_at_sched_idle() {
        let policy = std::thread::spawn(|| {
            lower_priority(LanePriority::Idle);
            // SAFETY: reads the calling thread's policy.
            unsafe { libc::sched_getscheduler(0) }
        })
        .join()
        .unwrap();
        assert_eq!(policy, libc::SCHED_IDLE);
    }
}
