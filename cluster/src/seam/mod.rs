//! The seam: the one place cluster code meets the world.
//!
//! A shard is handed a [`Bus`] and a [`DurableStorage`]. Under the simulator both are
//! deterministic (virtual time, seeded task order, simulated packets and disk); in
//! production they are tokio, TCP and real files. Cluster code is generic over both
//! and must not reach around them. [`MemStorage`] is the simplest storage behind it: every
//! write durable at once, no faults (the simulator's fault-free disk, and the decoder
//! tests' boot medium).

mod bus;
mod inbox;
mod memory;
mod storage;
mod time;

pub use bus::{Bus, ProcessId};
pub use inbox::{CLOSED_NOTICES_MAX, Closed, INBOX_FRAMES_MAX, Inbox, InboxEvent, InboxPush, Recv};
pub use memory::{MemFile, MemStorage};
pub use storage::{DurableFile, DurableStorage, OpenMode, validate_relative_path};
pub use time::{TICK, TICK_MICROS, duration_to_ticks};
