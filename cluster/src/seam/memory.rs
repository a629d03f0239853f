//! `MemStorage`: an in-memory `DurableStorage` whose every write is immediately durable.
//!
//! What it models: a disk that never fails and a process crash that keeps every byte
//! written. The simulator runs replicas on it when disk faults are off (its
//! fault-injecting `SimStorage` models buffered vs stable bytes, power loss, torn writes
//! and writeback errors), and the cluster's decoder tests boot the storage formats from
//! it. What it does not model: any storage fault.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::rc::Rc;

use super::{DurableFile, DurableStorage, OpenMode, validate_relative_path};

type Contents = Rc<RefCell<Vec<u8>>>;

/// Files by path. Cloning shares the same files (the simulator keeps one per replica
/// across crashes and hands it to the restarted replica).
#[derive(Clone, Default, Debug)]
pub struct MemStorage {
    files: Rc<RefCell<BTreeMap<String, Contents>>>,
}

impl MemStorage {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Total bytes held, for memory accounting.
    pub fn bytes(&self) -> usize {
        self.files
            .borrow()
            .values()
            .map(|contents| contents.borrow().len())
            .sum()
    }

    /// A copy of the file at `path` (empty if there is none), for tests that read
    /// what a format wrote.
    pub fn get(&self, path: &str) -> Vec<u8> {
        self.files
            .borrow()
            .get(path)
            .map(|contents| contents.borrow().clone())
            .unwrap_or_default()
    }

    /// Replace the file at `path` with `bytes`, for tests that boot from bytes they
    /// made (or damaged).
    pub fn put(&self, path: &str, bytes: &[u8]) {
        self.files
            .borrow_mut()
            .insert(path.to_owned(), Rc::new(RefCell::new(bytes.to_vec())));
    }

    /// A copy of every file that shares nothing with this store, for a fresh boot on
    /// the same bytes (a clone shares the files instead).
    pub fn fork(&self) -> Self {
        let files = self
            .files
            .borrow()
            .iter()
            .map(|(path, contents)| (path.clone(), Rc::new(RefCell::new(contents.borrow().clone()))))
            .collect();
        Self {
            files: Rc::new(RefCell::new(files)),
        }
    }

    fn not_found(path: &str) -> io::Error {
        io::Error::new(io::ErrorKind::NotFound, format!("{path}: no such file"))
    }
}

fn in_dir<'a>(path: &'a str, dir: &str) -> Option<&'a str> {
    let rest = if dir.is_empty() {
        path
    } else {
        path.strip_prefix(dir)?.strip_prefix('/')?
    };
    (!rest.contains('/')).then_some(rest)
}

// The methods are `#[inline]`: the simulator calls them on every prepare of a
// `--storage memory` run, from another crate, where a release build (no LTO) could not
// inline them otherwise (measured: about 3% of such a run's ticks/s).
impl DurableStorage for MemStorage {
    type File = MemFile;

    #[inline]
    async fn open(&self, path: &str, mode: OpenMode) -> io::Result<MemFile> {
        validate_relative_path(path)?;
        let mut files = self.files.borrow_mut();
        let contents = match (files.get(path), mode) {
            (Some(_), OpenMode::CreateNew) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{path}: already exists"),
                ));
            }
            (Some(contents), _) => contents.clone(),
            (None, OpenMode::Existing) => return Err(Self::not_found(path)),
            (None, _) => files.entry(path.to_owned()).or_default().clone(),
        };
        Ok(MemFile { contents })
    }

    #[inline]
    async fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        validate_relative_path(from)?;
        validate_relative_path(to)?;
        let mut files = self.files.borrow_mut();
        let contents = files.remove(from).ok_or_else(|| Self::not_found(from))?;
        files.insert(to.to_owned(), contents);
        Ok(())
    }

    #[inline]
    async fn remove(&self, path: &str) -> io::Result<()> {
        validate_relative_path(path)?;
        self.files
            .borrow_mut()
            .remove(path)
            .map(drop)
            .ok_or_else(|| Self::not_found(path))
    }

    /// Directories exist only as the paths of their files here: an empty one is
    /// already gone, and one that holds a file cannot be removed.
    #[inline]
    async fn remove_dir(&self, dir: &str) -> io::Result<()> {
        validate_relative_path(dir)?;
        if self
            .files
            .borrow()
            .keys()
            .any(|path| path.starts_with(dir) && path[dir.len()..].starts_with('/'))
        {
            return Err(io::Error::new(
                io::ErrorKind::DirectoryNotEmpty,
                format!("{dir}: not empty"),
            ));
        }
        Ok(())
    }

    #[inline]
    async fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        if !dir.is_empty() {
            validate_relative_path(dir)?;
        }
        // BTreeMap iteration is sorted, as the contract requires.
        Ok(self
            .files
            .borrow()
            .keys()
            .filter_map(|path| in_dir(path, dir))
            .map(str::to_owned)
            .collect())
    }

    #[inline]
    async fn sync_dir(&self, dir: &str) -> io::Result<()> {
        if !dir.is_empty() {
            validate_relative_path(dir)?;
        }
        Ok(())
    }
}

/// An open file of a [`MemStorage`]. Handles to one path share its bytes.
#[derive(Debug)]
pub struct MemFile {
    contents: Contents,
}

/// Offsets are u64 on the trait; in memory they must fit usize.
fn to_index(offset: u64) -> io::Result<usize> {
    usize::try_from(offset).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset beyond addressable memory"))
}

impl DurableFile for MemFile {
    #[inline]
    async fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let contents = self.contents.borrow();
        let start = to_index(offset)?.min(contents.len());
        let n = buf.len().min(contents.len() - start);
        buf[..n].copy_from_slice(&contents[start..start + n]);
        Ok(n)
    }

    #[inline]
    async fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut contents = self.contents.borrow_mut();
        let start = to_index(offset)?;
        let end = start
            .checked_add(data.len())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "write end overflows"))?;
        if contents.len() < end {
            contents.resize(end, 0);
        }
        contents[start..end].copy_from_slice(data);
        Ok(())
    }

    #[inline]
    async fn append(&self, data: &[u8]) -> io::Result<u64> {
        let offset = self.contents.borrow().len() as u64;
        self.write_at(offset, data).await?;
        Ok(offset)
    }

    #[inline]
    async fn len(&self) -> io::Result<u64> {
        Ok(self.contents.borrow().len() as u64)
    }

    #[inline]
    async fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    #[inline]
    async fn truncate(&self, len: u64) -> io::Result<()> {
        let len = to_index(len)?;
        self.contents.borrow_mut().resize(len, 0);
        Ok(())
    }
}
