//! A partition's write-ahead log of prepares and its durable publish frontier.
//!
//! A partition replica acknowledges a `replicated` write once its WAL has *queued* the
//! prepare, without waiting for the disk. So what a crash leaves past the last sync is
//! untrusted: boot trusts only what the WAL has *published*. Publishing syncs the WAL
//! through the handle that wrote it, then records the frontier (how many WAL bytes are
//! durable, the last op in them, and the segment end the caller has already synced)
//! in a small file, synced too. Boot discards every WAL byte past the frontier, however
//! valid it looks, and validates the bytes below it.
//!
//! Files, in the group's directory:
//!
//! ```text
//! wal        records (magic PWAL), key = op, strictly increasing; the record kinds and
//!            the rewrite rules of the metadata WAL (`super::wal`)
//! wal.redo   a rewrite's new bytes while it is in flight (see `super::wal`)
//! frontier   two slots of FRONTIER_SLOT_BYTES; publication n goes to slot n % 2, so a
//!            torn write leaves the previous publication intact. Each slot: a record
//!            (magic FRNT, kind 1, key = sequence), payload little-endian:
//!              0 group              u64
//!              8 log_view           u64  the log_view current at publication
//!             16 wal_bytes          u64  WAL bytes durable and trusted at boot
//!             24 last_op            u64  the highest op in those bytes (0 if none)
//!             32 segment_end_offset u64  segment bytes the caller had synced
//!             40 durability         u64  0 replicated, 1 persisted: how every append
//!                                        after this publication is acknowledged
//! ```
//!
//! The durability mode is published before an append of the other mode returns, so a
//! frontier that says `persisted` proves nothing was acknowledged after it unpublished:
//! a restart of such a WAL lost no acknowledged op ([`Frontier::durability`]).
//!
//! When it publishes: on a new log_view ([`PartitionWal::on_log_view`]), on every
//! [`Durability::Persisted`] append (which returns only after it), once
//! [`PUBLISH_BYTES_INTERVAL`] bytes are unpublished, before a rewrite that moves
//! published records and after it, at a truncation below the frontier, before and after
//! a prefix drop, and at a clean shutdown ([`PartitionWal::close`]).
//!
//! Forgetting the ops a durable checkpoint covers ([`PartitionWal::discard_through`])
//! is the metadata WAL's prefix drop (`super::wal`: copy the kept records to `wal.next`,
//! sync, rename over `wal`, sync the directory) between two publications:
//!
//! 1. publish, so every byte of the old file is published and the new file, a suffix of
//!    it, holds only published records;
//! 2. the prefix drop; the record of the last op is always kept, whatever op the
//!    checkpoint covers;
//! 3. publish the new file's length to *both* frontier slots in turn, so no slot names
//!    the old file's length once appends resume (a later torn publication falling back
//!    to it would trust unpublished bytes of the shorter file).
//!
//! A crash between 2 and 3 leaves the new file with a frontier naming the old, longer
//! one. Boot recognises it: the file ends before the frontier, with no damaged tail,
//! and its last record is the frontier's last op, whole (a file that lost bytes at its
//! end would have lost that record, which ends exactly at the frontier). Every record
//! in it was published, so boot keeps them all, reports no damage, and publishes the
//! new length to both slots ([`PartitionWalRecovery::interrupted_prefix_drop`]). A crash
//! before the rename leaves the old file and the old frontier, as if nothing happened.

use std::fmt;

use super::record::{self, Checksums, RecordError};
use super::wal::{
    DamagedRange, InterruptedRewrite, PrefixDrop, RecordLog, WalError, join_path, scan_with, sync_ancestors,
};
use crate::seam::{DurableFile, DurableStorage, OpenMode};
use crate::vsr::store::StoredRecord;

/// File name of the partition WAL inside the group's directory.
pub const PARTITION_WAL_FILE: &str = "wal";

/// File name of the publish frontier inside the group's directory.
pub const FRONTIER_FILE: &str = "frontier";

/// Magic of partition WAL records ("PWAL").
const PARTITION_WAL_MAGIC: u32 = 0x5057_414C;

/// Magic of frontier records ("FRNT").
const FRONTIER_MAGIC: u32 = 0x4652_4E54;

const FRONTIER_KIND: u8 = 1;

/// Bytes per frontier slot, in bytes: one 4 KiB page, so a torn write of one slot
/// never reaches the other.
pub const FRONTIER_SLOT_BYTES: u64 = 4096;

/// Frontier slots: two, written alternately, so the previous publication survives a
/// torn write of the next one.
const FRONTIER_SLOTS: u64 = 2;

const FRONTIER_PAYLOAD_BYTES: usize = 48;

/// Unpublished WAL bytes that force a publication, in bytes (128 MiB). Bounds what a
/// crash can make boot discard, and repair refetch from peers, per partition, while a
/// `replicated` topic still pays only one sync per 128 MiB written.
pub const PUBLISH_BYTES_INTERVAL: u64 = 128 * 1024 * 1024;

/// How durable an append must be before it returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Queued in the WAL: other replicas cover a crash of this one.
    #[default]
    Replicated,
    /// Published (synced and recorded in the frontier) before the append returns.
    Persisted,
}

/// One publication: what boot trusts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frontier {
    /// Publication number (slot = sequence % 2).
    pub sequence: u64,
    /// The partition's VSR group.
    pub group: u64,
    /// The log_view current at publication.
    pub log_view: u64,
    /// WAL bytes durable and trusted at boot.
    pub wal_bytes: u64,
    /// The highest op in those bytes (0 if none).
    pub last_op: u64,
    /// Segment bytes the caller had synced before publishing.
    pub segment_end_offset: u64,
    /// How every append after this publication was acknowledged: with `Persisted`,
    /// nothing acknowledged lies beyond the frontier.
    pub durability: Durability,
}

fn encode_frontier(frontier: &Frontier) -> Vec<u8> {
    let mut payload = Vec::with_capacity(FRONTIER_PAYLOAD_BYTES);
    for value in [
        frontier.group,
        frontier.log_view,
        frontier.wal_bytes,
        frontier.last_op,
        frontier.segment_end_offset,
        durability_code(frontier.durability),
    ] {
        payload.extend_from_slice(&value.to_le_bytes());
    }
    let mut slot = record::encode(FRONTIER_MAGIC, FRONTIER_KIND, frontier.sequence, &payload);
    slot.resize(FRONTIER_SLOT_BYTES as usize, 0);
    slot
}

fn durability_code(durability: Durability) -> u64 {
    match durability {
        Durability::Replicated => 0,
        Durability::Persisted => 1,
    }
}

fn decode_frontier(slot_index: u64, bytes: &[u8]) -> Result<Option<Frontier>, String> {
    let record = match record::decode(FRONTIER_MAGIC, bytes) {
        Err(RecordError::End) => return Ok(None),
        Err(error) => return Err(error.to_string()),
        Ok(record) => record,
    };
    if record.kind != FRONTIER_KIND || record.payload.len() != FRONTIER_PAYLOAD_BYTES {
        return Err(format!(
            "record kind {} with {} bytes is not a frontier",
            record.kind,
            record.payload.len()
        ));
    }
    if record.key % FRONTIER_SLOTS != slot_index {
        return Err(format!(
            "publication {} belongs in slot {} (a misdirected write)",
            record.key,
            record.key % 2
        ));
    }
    let field = |index: usize| {
        let mut raw = [0; 8];
        raw.copy_from_slice(&record.payload[index * 8..index * 8 + 8]);
        u64::from_le_bytes(raw)
    };
    let durability = match field(5) {
        0 => Durability::Replicated,
        1 => Durability::Persisted,
        other => {
            return Err(format!(
                "durability {other} is neither 0 (replicated) nor 1 (persisted)"
            ));
        }
    };
    Ok(Some(Frontier {
        sequence: record.key,
        group: field(0),
        log_view: field(1),
        wal_bytes: field(2),
        last_op: field(3),
        segment_end_offset: field(4),
        durability,
    }))
}

/// What [`PartitionWal::open`] recovered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionWalRecovery {
    /// Every valid record below the frontier, by op (removed ops left out).
    pub records: Vec<(u64, StoredRecord)>,
    /// The publication boot trusted (`None`: nothing was ever published, or every
    /// frontier slot is damaged, and the whole WAL was discarded).
    pub frontier: Option<Frontier>,
    /// Unpublished WAL bytes past the frontier, discarded.
    pub discarded_bytes: u64,
    /// Damage below the frontier (including a file that ends before it): reported,
    /// never applied; the ops there must be repaired from peers.
    pub damaged: Vec<DamagedRange>,
    /// Frontier slots that failed to decode (a torn or corrupted publication).
    pub frontier_damage: Vec<String>,
    /// A rewrite a crash interrupted, if any.
    pub interrupted_rewrite: Option<InterruptedRewrite>,
    /// A prefix drop a crash stopped after its rename and before its publication: the
    /// file was shorter than the frontier and ended with the frontier's last op; its
    /// records were kept and the new length published.
    pub interrupted_prefix_drop: bool,
    /// A prefix drop a crash stopped before its rename left its new file, which boot
    /// removed (the WAL is the old one, whole).
    pub removed_prefix_drop_leftover: bool,
}

/// What an append did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    /// Whether it published (persisted, or the unpublished bytes reached the interval).
    pub published: bool,
}

/// A partition's WAL and frontier, written through one handle each.
pub struct PartitionWal<S: DurableStorage> {
    group: u64,
    log: RecordLog<S>,
    frontier_path: String,
    frontier_file: S::File,
    published: Option<Frontier>,
    log_view: u64,
    /// The durability of the latest append: what the next publication records.
    durability: Durability,
}

impl<S: DurableStorage> fmt::Debug for PartitionWal<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionWal")
            .field("group", &self.group)
            .field("path", &self.log.path())
            .field("end", &self.log.end())
            .field("published", &self.published)
            .finish()
    }
}

async fn read_frontier<F: DurableFile>(
    file: &F,
    path: &str,
    group: u64,
) -> Result<(Option<Frontier>, Vec<String>), WalError> {
    let mut newest: Option<Frontier> = None;
    let mut damage = Vec::new();
    let mut bytes = vec![0; FRONTIER_SLOT_BYTES as usize];
    for slot in 0..FRONTIER_SLOTS {
        let offset = slot * FRONTIER_SLOT_BYTES;
        // An unreadable slot is a damaged slot (the other may still be whole).
        let read = match file.read_at(offset, &mut bytes).await {
            Ok(read) => read,
            Err(error) => {
                damage.push(format!("{path}: slot {slot} at offset {offset}: unreadable: {error}"));
                continue;
            }
        };
        match decode_frontier(slot, &bytes[..read]) {
            Ok(Some(found)) if newest.is_none_or(|newest| found.sequence > newest.sequence) => newest = Some(found),
            Ok(_) => {}
            Err(reason) => damage.push(format!("{path}: slot {slot} at offset {offset}: {reason}")),
        }
    }
    if let Some(found) = newest
        && found.group != group
    {
        return Err(WalError::WrongGroup {
            path: path.to_owned(),
            expected: group,
            found: found.group,
        });
    }
    Ok((newest, damage))
}

impl<S: DurableStorage> PartitionWal<S> {
    /// Open (creating on first boot) the WAL of `group` in `dir`: roll an interrupted
    /// rewrite forward, discard every byte past the published frontier, validate the
    /// bytes below it, and report what was discarded and damaged.
    pub async fn open(storage: &S, dir: &str, group: u64) -> Result<(Self, PartitionWalRecovery), WalError> {
        Self::open_with(storage, dir, group, Checksums::Verify).await
    }

    /// [`PartitionWal::open`], verifying the records' checksums or not (skipping is the
    /// test-only storage break that applies damaged records).
    pub async fn open_with(
        storage: &S,
        dir: &str,
        group: u64,
        checksums: Checksums,
    ) -> Result<(Self, PartitionWalRecovery), WalError> {
        let wal_path = join_path(dir, PARTITION_WAL_FILE);
        let frontier_path = join_path(dir, FRONTIER_FILE);
        let (mut log, interrupted_rewrite) = RecordLog::open(storage, &wal_path, PARTITION_WAL_MAGIC).await?;
        let io_error = |action| {
            let path = frontier_path.clone();
            move |source| WalError::Io { path, action, source }
        };
        let frontier_file = storage
            .open(&frontier_path, OpenMode::CreateOrOpen)
            .await
            .map_err(io_error("opening"))?;
        sync_ancestors(storage, &frontier_path)
            .await
            .map_err(io_error("syncing the directory"))?;
        let (mut frontier, frontier_damage) = read_frontier(&frontier_file, &frontier_path, group).await?;
        let stored = frontier;
        let mut republish = false;
        if let Some(InterruptedRewrite::Replayed { old_len, new_len, .. }) = interrupted_rewrite
            && let Some(published) = frontier.as_mut()
            && published.wal_bytes == old_len
            && old_len != new_len
        {
            // The rewrite published everything before it began; it finished, so the
            // whole rewritten file is what was published.
            published.wal_bytes = new_len;
            republish = true;
        }
        let trusted = frontier.map_or(0, |published| published.wal_bytes);
        let len = log.end();
        let discarded_bytes = len.saturating_sub(trusted);
        if discarded_bytes > 0 {
            tracing::warn!(
                group,
                path = %wal_path,
                durable_bytes = trusted,
                discarded_bytes,
                "discarding unpublished WAL bytes beyond the durable frontier"
            );
            log.cut(trusted).await?;
        }
        let bytes = log.read_all().await?;
        log.set_checksums(checksums);
        let scanned = scan_with(PARTITION_WAL_MAGIC, &bytes, checksums);
        let mut damaged = scanned.damaged;
        let mut interrupted_prefix_drop = false;
        let last_valid = scanned.slots.keys().next_back().copied();
        let before_op = frontier.map(|published| published.last_op.saturating_add(1));
        log.adopt(scanned.slots);
        // Damage from `offset` up to the published frontier.
        let damage_to_frontier = |offset: u64, reason: String| DamagedRange {
            offset,
            bytes: trusted - offset,
            after_op: last_valid,
            before_op,
            reason,
        };
        if let Some((offset, reason)) = scanned.tail {
            damaged.push(damage_to_frontier(offset, reason));
            log.cut(offset).await?;
            republish = true;
        } else if (bytes.len() as u64) < trusted {
            let offset = bytes.len() as u64;
            if frontier.is_some_and(|published| last_valid == Some(published.last_op)) {
                // A prefix drop renamed its shorter file into place and stopped before
                // publishing its length: every record here was published (see the
                // module docs), ending with the frontier's last op.
                tracing::info!(
                    group,
                    path = %wal_path,
                    file_bytes = offset,
                    frontier_bytes = trusted,
                    "finishing a prefix drop a crash interrupted before its publication"
                );
                interrupted_prefix_drop = true;
            } else {
                let reason = format!("the file ends {} bytes before the published frontier", trusted - offset);
                damaged.push(damage_to_frontier(offset, reason));
            }
            republish = true;
        }
        log.sync().await?;
        for damage in &damaged {
            tracing::warn!(
                group,
                path = %wal_path,
                offset = damage.offset,
                bytes = damage.bytes,
                ops = ?damage.ops(),
                reason = %damage.reason,
                "partition WAL damaged below its published frontier; the ops there must be repaired from peers"
            );
        }
        for damage in &frontier_damage {
            tracing::warn!(group, %damage, "damaged publish frontier slot");
        }
        let mut wal = Self {
            group,
            log,
            frontier_path,
            frontier_file,
            published: stored,
            log_view: frontier.map_or(0, |published| published.log_view),
            durability: frontier.map_or(Durability::Replicated, |published| published.durability),
        };
        if republish && let Some(published) = frontier {
            if interrupted_prefix_drop {
                wal.publish_both_slots(published.segment_end_offset).await?;
            } else {
                wal.publish(published.segment_end_offset).await?;
            }
        }
        if interrupted_rewrite.is_some() {
            wal.log.clear_redo().await?;
        }
        let recovery = PartitionWalRecovery {
            records: scanned.records,
            frontier,
            discarded_bytes,
            damaged,
            frontier_damage,
            interrupted_rewrite,
            interrupted_prefix_drop,
            removed_prefix_drop_leftover: wal.log.removed_leftover_next(),
        };
        Ok((wal, recovery))
    }

    /// Append records in op order, each op above every op in the log. `Replicated`
    /// returns once they are queued (written, not synced); `Persisted` returns once they
    /// are published. Either publishes when [`PUBLISH_BYTES_INTERVAL`] unpublished bytes
    /// have built up. `segment_end_offset` is the segment end the caller has already
    /// synced: it is what a publication records.
    pub async fn append(
        &mut self,
        records: &[(u64, &StoredRecord)],
        durability: Durability,
        segment_end_offset: u64,
    ) -> Result<Appended, WalError> {
        // A change of mode is published before the append returns: a frontier that says
        // `persisted` must never have a `replicated` acknowledgement after it.
        let mode_changed = durability != self.durability;
        self.durability = durability;
        self.log.append(records).await?;
        let published =
            durability == Durability::Persisted || mode_changed || self.unpublished_bytes() >= PUBLISH_BYTES_INTERVAL;
        if published {
            self.publish(segment_end_offset).await?;
        }
        Ok(Appended { published })
    }

    /// Publish: sync the WAL through its writing handle, then write the next frontier
    /// slot (every WAL byte written, the last op, `segment_end_offset`, which the caller
    /// must have synced first) and sync it. Nothing to do if nothing changed.
    pub async fn publish(&mut self, segment_end_offset: u64) -> Result<(), WalError> {
        self.log.sync().await?;
        let unchanged = self.published.is_some_and(|published| {
            published.wal_bytes == self.log.end()
                && published.last_op == self.log.last_op()
                && published.log_view == self.log_view
                && published.segment_end_offset == segment_end_offset
                && published.durability == self.durability
        });
        if unchanged {
            return Ok(());
        }
        self.write_frontier(self.log.end(), self.log.last_op(), segment_end_offset)
            .await
    }

    async fn write_frontier(&mut self, wal_bytes: u64, last_op: u64, segment_end_offset: u64) -> Result<(), WalError> {
        self.log.check_poisoned()?;
        let frontier = Frontier {
            sequence: self.published.map_or(1, |published| published.sequence + 1),
            group: self.group,
            log_view: self.log_view,
            wal_bytes,
            last_op,
            segment_end_offset,
            durability: self.durability,
        };
        let offset = (frontier.sequence % FRONTIER_SLOTS) * FRONTIER_SLOT_BYTES;
        let bytes = encode_frontier(&frontier);
        let result = async {
            self.frontier_file.write_at(offset, &bytes).await?;
            self.frontier_file.sync().await
        }
        .await;
        if let Err(source) = result {
            let error = WalError::Io {
                path: self.frontier_path.clone(),
                action: "publishing the frontier",
                source,
            };
            return Err(self.log.poison(error));
        }
        self.published = Some(frontier);
        Ok(())
    }

    /// Sync the WAL and write the frontier of every byte in it to both slots in turn
    /// (after a prefix drop: no slot may go on naming the old, longer file).
    async fn publish_both_slots(&mut self, segment_end_offset: u64) -> Result<(), WalError> {
        self.log.sync().await?;
        for _ in 0..FRONTIER_SLOTS {
            self.write_frontier(self.log.end(), self.log.last_op(), segment_end_offset)
                .await?;
        }
        Ok(())
    }

    /// A durable checkpoint covers `op` and every op below it: no gap placeholder
    /// reserves room for them from now on (see `RecordLog::raise_gap_floor`).
    pub fn raise_gap_floor(&mut self, op: u64) {
        self.log.raise_gap_floor(op);
    }

    /// Forget the records at or below `op` (a durable checkpoint covers them) with a
    /// crash-safe prefix drop published on both sides (see the module docs). The
    /// record of the last op is always kept. Does nothing (`Ok(None)`) unless the drop
    /// would free at least as many bytes as it must copy
    /// ([`super::wal::PREFIX_DROP_COPIED_PER_DROPPED_BYTE_MAX`]). On an error before the
    /// rename the WAL is unchanged and usable; after it, poisoned.
    pub async fn discard_through(&mut self, op: u64) -> Result<Option<PrefixDrop>, WalError> {
        self.log.check_poisoned()?;
        let Some(&last_op) = self.log.slots().keys().next_back() else {
            return Ok(None);
        };
        // Boot recognises a drop interrupted before its publication by this record.
        let Some(through) = last_op.checked_sub(1).map(|below_last| below_last.min(op)) else {
            return Ok(None);
        };
        match self.log.prefix_plan(through) {
            Some(plan) if plan.worth_doing() => {}
            _ => return Ok(None),
        }
        let segment_end_offset = self.published.map_or(0, |frontier| frontier.segment_end_offset);
        self.publish(segment_end_offset).await?;
        let dropped = self.log.drop_prefix(through).await?;
        self.publish_both_slots(segment_end_offset).await?;
        Ok(Some(dropped))
    }

    /// A new log_view started: record it and publish (the log this view starts from
    /// must survive a restart).
    pub async fn on_log_view(&mut self, log_view: u64, segment_end_offset: u64) -> Result<(), WalError> {
        self.log_view = self.log_view.max(log_view);
        self.publish(segment_end_offset).await
    }

    /// Put `record` at `op`: replacing, inserting below the head, or appending. A
    /// change to published bytes is protected by the redo file and durable on return
    /// (a rewrite that moves published records publishes before and after it); a change
    /// to unpublished bytes is buffered like an append.
    pub async fn replace(&mut self, op: u64, record: &StoredRecord) -> Result<(), WalError> {
        self.put(op, Some(record)).await
    }

    /// Forget `op` (its slot is kept, marked removed); nothing if absent. Durable on
    /// return if `op` was published.
    pub async fn remove(&mut self, op: u64) -> Result<(), WalError> {
        self.put(op, None).await
    }

    async fn put(&mut self, op: u64, record: Option<&StoredRecord>) -> Result<(), WalError> {
        self.log.check_poisoned()?;
        let Some((start, in_place)) = self.log.rewrite_start(op, record)? else {
            return Ok(());
        };
        let published = self.published_bytes();
        if start >= published {
            self.log.rewrite(op, record, false).await?;
            return Ok(());
        }
        let segment_end_offset = self.published.map_or(0, |frontier| frontier.segment_end_offset);
        if !in_place {
            // Everything published before the records move, so boot can tell the
            // finished rewrite's length from the frontier (see `open`).
            self.publish(segment_end_offset).await?;
        }
        self.log.rewrite(op, record, true).await?;
        if !in_place {
            self.publish(segment_end_offset).await?;
        }
        self.log.clear_redo().await
    }

    /// Forget every op above `op` (a view change truncated them). If that cuts into
    /// published bytes, the frontier moves down first, so boot never trusts the cut
    /// part again.
    pub async fn truncate_after(&mut self, op: u64) -> Result<(), WalError> {
        let cut = self.log.cut_after(op);
        if cut < self.published_bytes() {
            self.log.sync().await?;
            let last_op = self.log.slots().range(..=op).next_back().map_or(0, |(&key, _)| key);
            let segment_end_offset = self.published.map_or(0, |frontier| frontier.segment_end_offset);
            self.write_frontier(cut, last_op, segment_end_offset).await?;
        }
        self.log.truncate_after(op).await
    }

    /// **Test-only: production must never call it.** The `wal-drop-last-record` test
    /// break (`node::TestBreak::WalDropLastRecord`), called right after
    /// [`PartitionWal::open`], when every record in the file is published: forget the
    /// last published record that holds an op (removed ops after it go with it). The
    /// frontier moves back first, to the record's start and the op before it (as a
    /// truncation below the frontier does, so a crash in between leaves bytes boot
    /// discards), then the file is cut there and the cut synced, the way boot cuts a
    /// torn tail. Nothing is reported: the op leaves `recovery.records`, no damage is
    /// recorded, and the frontier keeps its durability mode, so the node believes the
    /// op never existed. It exists so a fault harness on real nodes can show it catches
    /// a node that forgets an acknowledged, published record while claiming its log is
    /// whole. Returns the op dropped (`None` if no published record holds one).
    pub(crate) async fn drop_last_record(
        &mut self,
        recovery: &mut PartitionWalRecovery,
    ) -> Result<Option<u64>, WalError> {
        let Some(op) = recovery.records.last().map(|(op, _)| *op) else {
            return Ok(None);
        };
        let Some(slot) = self.log.slots().get(&op).copied() else {
            return Ok(None);
        };
        if slot.offset + slot.bytes > self.published_bytes() {
            return Ok(None);
        }
        let last_op_kept = self.log.slots().range(..op).next_back().map_or(0, |(&key, _)| key);
        let segment_end_offset = self.published.map_or(0, |frontier| frontier.segment_end_offset);
        self.log.sync().await?;
        self.write_frontier(slot.offset, last_op_kept, segment_end_offset)
            .await?;
        self.log.cut(slot.offset).await?;
        recovery.records.pop();
        Ok(Some(op))
    }

    /// Clean shutdown: publish everything and close.
    pub async fn close(mut self, segment_end_offset: u64) -> Result<(), WalError> {
        self.publish(segment_end_offset).await
    }

    /// Read the record at `op` back from the file (`None` if absent or removed).
    pub async fn read(&self, op: u64) -> Result<Option<StoredRecord>, WalError> {
        self.log.read(op).await
    }

    /// The last publication.
    pub fn published(&self) -> Option<Frontier> {
        self.published
    }

    /// WAL bytes the last publication covers.
    pub fn published_bytes(&self) -> u64 {
        self.published.map_or(0, |frontier| frontier.wal_bytes)
    }

    /// WAL bytes written but not yet published.
    pub fn unpublished_bytes(&self) -> u64 {
        self.log.end().saturating_sub(self.published_bytes())
    }

    super::wal::record_log_views!();

    /// The group this WAL belongs to.
    pub fn group(&self) -> u64 {
        self.group
    }
}

#[cfg(test)]
mod tests {
    use super::super::wal::tests::{prepare, ready};
    use super::*;
    use crate::runtime::DiskStorage;

    #[test]
    fn a_frontier_decodes_from_its_own_slot_only() {
        let frontier = Frontier {
            sequence: 3,
            group: 9,
            log_view: 2,
            wal_bytes: 1000,
            last_op: 7,
            segment_end_offset: 55,
            durability: Durability::Persisted,
        };
        let bytes = encode_frontier(&frontier);
        assert_eq!(bytes.len() as u64, FRONTIER_SLOT_BYTES);
        assert_eq!(decode_frontier(1, &bytes), Ok(Some(frontier)));
        assert!(
            decode_frontier(0, &bytes)
                .expect_err("misdirected")
                .contains("misdirected")
        );
        assert_eq!(decode_frontier(0, &[0; 64]), Ok(None));
    }

    #[test]
    fn on_real_files_boot_keeps_the_persisted_prefix_and_discards_the_rest() {
        let root = std::env::temp_dir().join(format!("cluster-partition-wal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let storage = DiskStorage::new(&root).expect("temp dir");
        let (mut wal, _) = ready(PartitionWal::open(&storage, "p/7", 7)).expect("open");
        let appended = ready(wal.append(&[(1, &prepare(1))], Durability::Persisted, 10)).expect("persisted");
        assert!(appended.published);
        // The first replicated append publishes the change of mode; the second does not.
        ready(wal.append(&[(2, &prepare(2))], Durability::Replicated, 10)).expect("replicated");
        ready(wal.append(&[(3, &prepare(3))], Durability::Replicated, 10)).expect("replicated");
        let unpublished = wal.unpublished_bytes();
        assert!(unpublished > 0);
        drop(wal); // a crash: no close
        let (wal, recovery) = ready(PartitionWal::open(&storage, "p/7", 7)).expect("reopen");
        assert_eq!(
            recovery.records.iter().map(|(op, _)| *op).collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert_eq!(recovery.discarded_bytes, unpublished);
        assert_eq!(recovery.frontier.map(|frontier| frontier.segment_end_offset), Some(10));
        ready(wal.close(10)).expect("close");
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    fn recovered_ops(recovery: &PartitionWalRecovery) -> Vec<u64> {
        recovery.records.iter().map(|(op, _)| *op).collect()
    }

    /// Ops 1..=10, every one published.
    fn ten_published(storage: &DiskStorage, dir: &str, group: u64) -> PartitionWal<DiskStorage> {
        let (mut wal, _) = ready(PartitionWal::open(storage, dir, group)).expect("open");
        let records: Vec<(u64, StoredRecord)> = (1..=10).map(|op| (op, prepare(op))).collect();
        let borrowed: Vec<(u64, &StoredRecord)> = records.iter().map(|(op, record)| (*op, record)).collect();
        ready(wal.append(&borrowed, Durability::Persisted, 5)).expect("append");
        wal
    }

    #[test]
    fn discard_through_keeps_the_last_record_and_publishes_the_new_length_to_both_slots() {
        let root = super::super::wal::tests::temp_root("partition-discard");
        let storage = DiskStorage::new(&root).expect("temp dir");
        let mut wal = ten_published(&storage, "p/3", 3);
        let dropped = ready(wal.discard_through(6)).expect("discard").expect("worth doing");
        assert_eq!((dropped.dropped_records, dropped.kept_records), (6, 4));
        assert_eq!(wal.ops().collect::<Vec<_>>(), vec![7, 8, 9, 10]);
        let published = wal.published().expect("published");
        assert_eq!((published.wal_bytes, published.last_op), (wal.len_bytes(), 10));
        assert_eq!(
            published.segment_end_offset, 5,
            "the last published segment end is kept"
        );
        let frontier = std::fs::read(root.join("p/3").join(FRONTIER_FILE)).expect("frontier");
        for slot in 0..FRONTIER_SLOTS {
            let bytes = &frontier[(slot * FRONTIER_SLOT_BYTES) as usize..((slot + 1) * FRONTIER_SLOT_BYTES) as usize];
            let found = decode_frontier(slot, bytes).expect("valid").expect("present");
            assert_eq!(found.wal_bytes, wal.len_bytes(), "slot {slot} names the new file");
        }
        // Whatever op the checkpoint covers, the last record stays.
        let dropped = ready(wal.discard_through(100)).expect("discard").expect("worth doing");
        assert_eq!((dropped.dropped_records, dropped.kept_records), (3, 1));
        assert_eq!(wal.ops().collect::<Vec<_>>(), vec![10]);
        assert_eq!(ready(wal.discard_through(100)).expect("nothing left to drop"), None);
        ready(wal.append(&[(11, &prepare(11))], Durability::Persisted, 6)).expect("append after");
        drop(wal);
        let (wal, recovery) = ready(PartitionWal::open(&storage, "p/3", 3)).expect("reopen");
        assert_eq!(recovered_ops(&recovery), vec![10, 11]);
        assert!(recovery.damaged.is_empty(), "{recovery:?}");
        assert!(!recovery.interrupted_prefix_drop && !recovery.removed_prefix_drop_leftover);
        assert_eq!(recovery.discarded_bytes, 0);
        ready(wal.close(6)).expect("close");
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    #[test]
    fn a_drop_interrupted_before_its_publication_keeps_every_record_and_reports_no_damage() {
        let root = super::super::wal::tests::temp_root("partition-discard-interrupted");
        let storage = DiskStorage::new(&root).expect("temp dir");
        let mut wal = ten_published(&storage, "p/4", 4);
        let old = wal.published().expect("published");
        // The drop's rename is done; a crash comes before the frontier names it.
        let dropped = ready(wal.log.drop_prefix(6)).expect("drop");
        drop(wal);
        let (wal, recovery) = ready(PartitionWal::open(&storage, "p/4", 4)).expect("reopen");
        assert!(recovery.interrupted_prefix_drop, "{recovery:?}");
        assert!(recovery.damaged.is_empty(), "{recovery:?}");
        assert_eq!(recovered_ops(&recovery), vec![7, 8, 9, 10]);
        assert_eq!(recovery.frontier, Some(old), "boot trusted the stored frontier");
        let published = wal.published().expect("republished");
        assert_eq!(published.wal_bytes, dropped.kept_bytes);
        assert_eq!(
            published.sequence,
            old.sequence + FRONTIER_SLOTS,
            "both slots rewritten"
        );
        drop(wal);
        let (_, again) = ready(PartitionWal::open(&storage, "p/4", 4)).expect("reopen again");
        assert!(!again.interrupted_prefix_drop && again.damaged.is_empty(), "{again:?}");
        assert_eq!(recovered_ops(&again), vec![7, 8, 9, 10]);
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    #[test]
    fn a_file_that_lost_its_last_record_is_still_damage_not_a_drop() {
        let root = super::super::wal::tests::temp_root("partition-lost-tail");
        let storage = DiskStorage::new(&root).expect("temp dir");
        let wal = ten_published(&storage, "p/5", 5);
        // Exactly at a record boundary, so no torn tail shows: only the frontier says
        // bytes are missing.
        let last_at = wal.log.slots()[&10].offset;
        drop(wal);
        let path = root.join("p/5").join(PARTITION_WAL_FILE);
        let file = std::fs::OpenOptions::new().write(true).open(&path).expect("open");
        file.set_len(last_at).expect("cut");
        drop(file);
        let (_, recovery) = ready(PartitionWal::open(&storage, "p/5", 5)).expect("reopen");
        assert!(!recovery.interrupted_prefix_drop);
        assert_eq!(recovery.damaged.len(), 1, "{recovery:?}");
        assert_eq!(recovery.damaged[0].ops(), Some(10..=10));
        assert_eq!(recovered_ops(&recovery), (1..=9).collect::<Vec<_>>());
        std::fs::remove_dir_all(root).expect("cleanup");
    }
}
