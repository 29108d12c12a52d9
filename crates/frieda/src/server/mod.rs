//! The network side: accepting connections, framing requests, dispatching them at once
//! (overlapped processing), and writing responses in request order (the sequencer).
//!
//! ```text
//! listener ── accept ──> connection: read loop ── frame ──> handlers (many in flight)
//!                                       │                         │
//!                                       └── response slots in request order (sequencer)
//!                                                 └── first contiguous run written at once,
//!                                                     several in one vectored write
//! ```

pub mod authentication;
pub mod connection;
pub mod frame;
pub mod fuzzing;
pub mod listener;
pub mod quorum_transport;
pub mod sequencer;
pub mod transport;

pub use listener::serve;
