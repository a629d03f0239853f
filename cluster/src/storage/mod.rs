//! The production on-disk formats, written against the [`crate::seam::DurableStorage`]
//! traits so the node (on real files) and the simulator (on `SimStorage`, with crashes,
//! power loss and torn writes) run the same bytes through the same recovery code.
//!
//! Every structure here has two halves: the code that writes it, and the recovery code
//! that boot runs on whatever a crash left behind. Recovery never trusts a byte it has
//! not checksummed, never panics on what it reads, and reports what it discarded.
//!
//! - [`record`]: the checksummed frame every log-shaped file is made of.
//! - [`read_retry`]: reads retried through a transient disk error.
//! - [`superblock`]: a replica's durable identity and view state, in several copies.
//! - [`wal`]: the metadata write-ahead log of prepares.
//! - [`partition_wal`]: a partition's log of prepares and its durable publish frontier.
//! - [`segment`]: message segments and their 24-byte-entry indexes.
//! - [`snapshot_file`]: a metadata snapshot written atomically.
//! - [`tombstone_log`]: the node's deleted groups, one appended record each.
//! - [`install`]: the state-transfer install protocol (staging, backup, retire).

pub mod install;
pub mod partition_wal;
pub mod read_retry;
pub mod record;
pub mod segment;
pub mod snapshot_file;
pub mod superblock;
pub mod tombstone_log;
pub mod tombstone_set;
pub mod wal;
