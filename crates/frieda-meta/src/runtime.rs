//! The async runtime openraft runs the quorum on: tokio, with the randomness of Raft's election
//! timeouts drawn from a generator the simulator can seed (`frieda-sim quorum`), so a seeded
//! run of the quorum's own code replays exactly. In a broker it is `rand::thread_rng()`, as
//! openraft's `TokioRuntime`.

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use openraft::async_runtime::TokioOneShotSender;
use openraft::{AsyncRuntime, OptionalSend};
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

thread_local! {
    /// The seeded generator of this thread, if the simulator set one.
    static SEEDED: RefCell<Option<StdRng>> = const { RefCell::new(None) };
}

/// Makes every random draw of the quorum on this thread (Raft's election timeouts) come from a
/// generator seeded with `seed`, until the thread ends or [`unseed_thread_rng`] is called. For
/// the simulator, which runs a whole quorum on one thread.
pub fn seed_thread_rng(seed: u64) {
    SEEDED.with(|s| *s.borrow_mut() = Some(StdRng::seed_from_u64(seed)));
}

/// Returns this thread to `rand::thread_rng()` (what a broker uses).
pub fn unseed_thread_rng() {
    SEEDED.with(|s| *s.borrow_mut() = None);
}

/// The quorum's random generator: this thread's seeded one, else `rand::thread_rng()`.
#[derive(Debug, Default, Clone, Copy)]
pub struct QuorumRng;

impl QuorumRng {
    fn with<T>(f: impl FnOnce(&mut dyn RngCore) -> T) -> T {
        SEEDED.with(|s| match s.borrow_mut().as_mut() {
            Some(r) => f(r),
            None => f(&mut rand::thread_rng()),
        })
    }
}

impl RngCore for QuorumRng {
    fn next_u32(&mut self) -> u32 {
        Self::with(|r| r.next_u32())
    }

    fn next_u64(&mut self) -> u64 {
        Self::with(|r| r.next_u64())
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        Self::with(|r| r.fill_bytes(dest))
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        Self::with(|r| r.try_fill_bytes(dest))
    }
}

/// openraft's `TokioRuntime` with [`QuorumRng`] as its random generator.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct QuorumRuntime;

impl AsyncRuntime for QuorumRuntime {
    type JoinError = tokio::task::JoinError;
    type JoinHandle<T: OptionalSend + 'static> = tokio::task::JoinHandle<T>;
    type Sleep = tokio::time::Sleep;
    type Instant = tokio::time::Instant;
    type TimeoutError = tokio::time::error::Elapsed;
    type Timeout<R, T: Future<Output = R> + OptionalSend> = tokio::time::Timeout<T>;
    type ThreadLocalRng = QuorumRng;
    type OneshotSender<T: OptionalSend> = TokioOneShotSender<T>;
    type OneshotReceiver<T: OptionalSend> = tokio::sync::oneshot::Receiver<T>;
    type OneshotReceiverError = tokio::sync::oneshot::error::RecvError;

    fn spawn<T>(future: T) -> Self::JoinHandle<T::Output>
    where
        T: Future + OptionalSend + 'static,
        T::Output: OptionalSend + 'static,
    {
        tokio::task::spawn(future)
    }

    fn sleep(duration: Duration) -> Self::Sleep {
        tokio::time::sleep(duration)
    }

    fn sleep_until(deadline: Self::Instant) -> Self::Sleep {
        tokio::time::sleep_until(deadline)
    }

    fn timeout<R, F: Future<Output = R> + OptionalSend>(
        duration: Duration,
        future: F,
    ) -> Self::Timeout<R, F> {
        tokio::time::timeout(duration, future)
    }

    fn timeout_at<R, F: Future<Output = R> + OptionalSend>(
        deadline: Self::Instant,
        future: F,
    ) -> Self::Timeout<R, F> {
        tokio::time::timeout_at(deadline, future)
    }

    fn is_panic(join_error: &Self::JoinError) -> bool {
        join_error.is_panic()
    }

    fn thread_rng() -> Self::ThreadLocalRng {
        QuorumRng
    }

    fn oneshot<T>() -> (Self::OneshotSender<T>, Self::OneshotReceiver<T>)
    where
        T: OptionalSend,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (TokioOneShotSender(tx), rx)
    }
}
