//! The prefix drop: forgetting the records a checkpoint covers. The records kept are
//! copied to `<path>.next`, synced, and renamed over the log, then the directory is
//! synced; a plan says first what the drop would cost (bytes copied per byte dropped,
//! bounded by `PREFIX_DROP_COPIED_PER_DROPPED_BYTE_MAX`), so a drop that would copy
//! too much waits. A crash at any step leaves the old log or the new one whole.

use super::*;

/// The bytes of the slots above `through` when a prefix plan summed them, plus what
/// appends added since: exact as long as nothing but appends changed the slots (every
/// other change forgets it).
#[derive(Clone, Copy, Debug)]
pub(super) struct SuffixMemo {
    /// The op through which the plan dropped.
    through: u64,
    /// The bytes of the slots above `through` (appends add to it).
    pub(super) kept_bytes: u64,
    /// Plans answered from this memo's line (for the periodic check).
    plans: u64,
}

/// Plans answered from a [`SuffixMemo`] between two checks of it against a fresh sum
/// (debug builds): often enough that a memo gone wrong fails a short run, rarely
/// enough that the check costs a sixty-fourth of the sums it saves.
const SUFFIX_MEMO_CHECK_INTERVAL_PLANS: u64 = 64;

/// What dropping a prefix would do, before it is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PrefixPlan {
    /// Bytes the file would shrink by (the dropped records and any damage between them).
    pub(crate) dropped_bytes: u64,
    /// Bytes of the records kept, which the drop copies.
    pub(crate) kept_bytes: u64,
}

impl PrefixPlan {
    /// Whether the drop frees enough to pay for its copy
    /// ([`PREFIX_DROP_COPIED_PER_DROPPED_BYTE_MAX`]).
    pub(crate) fn worth_doing(&self) -> bool {
        self.dropped_bytes > 0
            && self.kept_bytes
                <= self
                    .dropped_bytes
                    .saturating_mul(PREFIX_DROP_COPIED_PER_DROPPED_BYTE_MAX)
    }
}

/// What a prefix drop did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrefixDrop {
    /// Records dropped (removed ops included).
    pub dropped_records: u64,
    /// Bytes the file shrank by.
    pub dropped_bytes: u64,
    /// Records copied into the new file.
    pub kept_records: u64,
    /// Bytes copied into the new file.
    pub kept_bytes: u64,
    /// Records above the dropped prefix that no longer verified when read back for the
    /// copy (damage since they were written), left out of the new file: they were
    /// unreadable already, and repair refetches them.
    pub damaged_records: u64,
}

impl<S: DurableStorage> RecordLog<S> {
    /// What dropping every record at or below `through` would do; `None` if no record
    /// lies at or below it.
    ///
    /// A replica asks after every op its ring evicts, with the op rising by one each
    /// time, while the answer stays "not worth it" until half the file could go. Summed
    /// afresh, each answer walked every slot kept (about a thousand in the metadata
    /// WAL): 7% of a 100,000-tick run's instructions. So the sum is remembered
    /// ([`SuffixMemo`]) and a later plan subtracts only the slots between the two ops.
    pub(crate) fn prefix_plan(&mut self, through: u64) -> Option<PrefixPlan> {
        self.slots.range(..=through).next()?;
        let sum_above =
            |slots: &BTreeMap<u64, Slot>| -> u64 { slots.range(above_op(through)).map(|(_, slot)| slot.bytes).sum() };
        let (kept_bytes, plans) = match self.suffix_memo {
            Some(memo) if memo.through <= through => {
                let between: u64 = self
                    .slots
                    .range((Bound::Excluded(memo.through), Bound::Included(through)))
                    .map(|(_, slot)| slot.bytes)
                    .sum();
                let kept_bytes = memo.kept_bytes - between;
                // The memo is an optimisation of a sum: check it against the sum now
                // and then (debug builds, which the simulator runs).
                if cfg!(debug_assertions) && memo.plans % SUFFIX_MEMO_CHECK_INTERVAL_PLANS == 0 {
                    assert_eq!(
                        kept_bytes,
                        sum_above(&self.slots),
                        "{}: the remembered suffix sum",
                        self.path
                    );
                }
                (kept_bytes, memo.plans + 1)
            }
            _ => (sum_above(&self.slots), 1),
        };
        self.suffix_memo = Some(SuffixMemo {
            through,
            kept_bytes,
            plans,
        });
        Some(PrefixPlan {
            dropped_bytes: self.end.saturating_sub(kept_bytes),
            kept_bytes,
        })
    }

    /// Drop every record at or below `through`, crash safe: the records above it are
    /// copied into `<path>.next` (verified as they are read), which is synced through
    /// the handle that wrote it, renamed over `path`, and the directory synced. A crash
    /// before the rename leaves the old file (and a `.next` that boot removes); after
    /// it, the new one, whole. That handle becomes the log's: appends go on through it.
    ///
    /// A failure before the rename leaves the log untouched and usable. A failed rename
    /// or directory sync poisons the log: which file a crash would leave is unknown, so
    /// nothing written after could be trusted durable.
    pub(crate) async fn drop_prefix(&mut self, through: u64) -> Result<PrefixDrop, WalError> {
        self.check_poisoned()?;
        if self.redo_pending {
            return Err(WalError::Io {
                path: format!("{}.redo", self.path),
                action: "dropping a prefix",
                source: io::Error::other("a rewrite's redo is not cleared; its offsets name the current file"),
            });
        }
        // What is copied must be what is durable: a writeback error on the old file
        // surfaces (and poisons) here, not after its bytes were copied as good.
        self.sync().await?;
        let next_path = format!("{}{NEXT_SUFFIX}", self.path);
        let next_error = |action: &'static str| {
            let path = next_path.clone();
            move |source| WalError::Io { path, action, source }
        };
        match self.storage.remove(&next_path).await {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(next_error("removing a leftover")(source)),
        }
        let next = self
            .storage
            .open(&next_path, OpenMode::CreateNew)
            .await
            .map_err(next_error("creating"))?;
        let copied = self.copy_suffix(through, &next, &next_path).await;
        let (slots, report) = match copied {
            Ok(copied) => copied,
            Err(error) => {
                drop(next);
                // Best effort: a `.next` left behind is removed by the next drop or boot.
                let _ = self.storage.remove(&next_path).await;
                return Err(error);
            }
        };
        // The commit point: from here the old file may be gone.
        let renamed = self
            .storage
            .rename(&next_path, &self.path)
            .await
            .map_err(next_error("renaming over the log"));
        self.mutate(renamed)?;
        let new_len = report.kept_bytes;
        self.file = next;
        self.suffix_memo = None;
        self.slots = slots;
        self.end = new_len;
        self.synced = new_len;
        let dir = self.path.rsplit_once('/').map_or("", |(dir, _)| dir);
        let synced = self.storage.sync_dir(dir).await.map_err(|source| WalError::Io {
            path: dir.to_owned(),
            action: "syncing the directory after a prefix drop's rename",
            source,
        });
        self.mutate(synced)?;
        Ok(report)
    }

    /// Copy every record above `through` into `next` (synced), verifying each as it is
    /// read; returns the new file's slots and what the copy did.
    pub(super) async fn copy_suffix(
        &self,
        through: u64,
        next: &S::File,
        next_path: &str,
    ) -> Result<(BTreeMap<u64, Slot>, PrefixDrop), WalError> {
        let next_error = |action: &'static str| {
            let path = next_path.to_owned();
            move |source| WalError::Io { path, action, source }
        };
        let mut report = PrefixDrop {
            dropped_records: self.slots.range(..=through).count() as u64,
            ..PrefixDrop::default()
        };
        let mut slots = BTreeMap::new();
        let mut buffer: Vec<u8> = Vec::new();
        let mut written: u64 = 0;
        for (&op, slot) in self.slots.range(above_op(through)) {
            let at = buffer.len();
            buffer.resize(at + slot.bytes as usize, 0);
            let read = self
                .file
                .read_at(slot.offset, &mut buffer[at..])
                .await
                .map_err(self.io_error("reading a record to keep"))?;
            let verified = if read as u64 == slot.bytes {
                match record::decode(self.magic, &buffer[at..]) {
                    Ok(found) if found.key == op && found.encoded_bytes() as u64 == slot.bytes => Ok(()),
                    Ok(found) => Err(format!("holds op {} in {} bytes", found.key, found.encoded_bytes())),
                    Err(error) => Err(error.to_string()),
                }
            } else {
                Err(format!("read {read} of {} bytes", slot.bytes))
            };
            if let Err(reason) = verified {
                tracing::warn!(
                    path = %self.path,
                    op,
                    offset = slot.offset,
                    %reason,
                    "a record no longer verifies; the prefix drop leaves it out"
                );
                buffer.truncate(at);
                report.damaged_records += 1;
                continue;
            }
            slots.insert(
                op,
                Slot {
                    offset: written + at as u64,
                    bytes: slot.bytes,
                    vacant: slot.vacant,
                },
            );
            report.kept_records += 1;
            if buffer.len() >= WAL_WRITE_BYTES_MAX {
                next.write_at(written, &buffer).await.map_err(next_error("writing"))?;
                written += buffer.len() as u64;
                buffer.clear();
            }
        }
        if !buffer.is_empty() {
            next.write_at(written, &buffer).await.map_err(next_error("writing"))?;
            written += buffer.len() as u64;
        }
        next.sync().await.map_err(next_error("syncing"))?;
        report.kept_bytes = written;
        report.dropped_bytes = self.end.saturating_sub(written);
        Ok((slots, report))
    }
}
