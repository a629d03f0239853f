//! What the simulated disk's state shows to its inspectors (the storage sweeps, the
//! harness's checks, tests): the inode a path names now and after a power loss, the
//! bytes a file would hold, and the invariants of the state checked whole. Reads only.

use super::*;

impl State {
    pub(super) fn buffered_inode(&self, path: &str) -> Option<&Inode> {
        self.names.get(path).and_then(|id| self.inodes.get(id))
    }

    /// The inode a power loss now would leave at `path`.
    pub fn stable_inode(&self, path: &str) -> Option<&Inode> {
        if !ancestors(path).all(|dir| self.stable_dirs.contains(dir)) {
            return None;
        }
        self.stable_names.get(path).and_then(|id| self.inodes.get(id))
    }

    pub fn buffered_bytes(&self, path: &str) -> Option<Vec<u8>> {
        self.buffered_inode(path).map(Inode::buffered)
    }

    pub fn stable_bytes(&self, path: &str) -> Option<Vec<u8>> {
        self.stable_inode(path).map(|inode| inode.stable.to_vec())
    }

    pub fn dirty_pages(&self, path: &str) -> Vec<u64> {
        self.buffered_inode(path)
            .map(|inode| inode.dirty_pages().map(|page| page as u64).collect())
            .unwrap_or_default()
    }

    pub fn bytes(&self) -> usize {
        self.inodes.values().map(|inode| inode.len() + inode.stable.len()).sum()
    }

    /// FNV-1a over everything that decides future behaviour except the random stream.
    pub fn hash(&self) -> u64 {
        let mut hash = Fnv1a64::default();
        for (tag, names) in [(1, &self.names), (2, &self.stable_names)] {
            for (path, &id) in names {
                hash.event(tag, id);
                hash.write(path.as_bytes());
            }
        }
        for (tag, dirs) in [(3, &self.dirs), (4, &self.stable_dirs)] {
            for dir in dirs {
                hash.event(tag, dir.len() as u64);
                hash.write(dir.as_bytes());
            }
        }
        for dir in self.dirty_dirs.keys() {
            hash.event(5, dir.len() as u64);
            hash.write(dir.as_bytes());
        }
        for (&id, inode) in &self.inodes {
            hash.event(6, id);
            hash.event(7, inode.len() as u64);
            inode.for_each_buffered(|bytes| hash.write(bytes));
            hash.event(7, inode.stable.len() as u64);
            for bytes in inode.stable.slices() {
                hash.write(bytes);
            }
            for page in inode.dirty_pages() {
                hash.event(8, page as u64);
            }
            hash.event(9, inode.writeback_errors);
        }
        hash.event(10, self.operations);
        hash.event(11, self.crashes);
        hash.finish()
    }

    /// Check every inode's invariant and the link counts.
    #[cfg(test)]
    pub fn check(&self) -> Result<(), String> {
        for (id, inode) in &self.inodes {
            inode.check().map_err(|why| format!("inode {id}: {why}"))?;
            let links = self
                .names
                .values()
                .chain(self.stable_names.values())
                .filter(|&&named| named == *id)
                .count();
            if links != inode.links as usize {
                return Err(format!(
                    "inode {id}: {} links counted, {links} entries name it",
                    inode.links
                ));
            }
            if links == 0 && inode.handles == 0 {
                return Err(format!("inode {id} is an orphan nobody freed"));
            }
        }
        Ok(())
    }
}
