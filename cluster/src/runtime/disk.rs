//! [`DiskStorage`]: the production [`DurableStorage`] on real files.
//!
//! Calls are blocking filesystem calls inside `async fn`s. A shard owns its thread,
//! so blocking it on its own disk I/O is the same back-pressure an io_uring
//! submission would give, without a thread pool that would break one-shard-one-thread.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::seam::{DurableFile, DurableStorage, OpenMode, validate_relative_path};

/// Files under one root directory.
#[derive(Clone, Debug)]
pub struct DiskStorage {
    root: PathBuf,
}

impl DiskStorage {
    /// Storage rooted at `root`, which is created if missing.
    pub fn new(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        fs::create_dir_all(&root)
            .map_err(|error| io::Error::new(error.kind(), format!("creating data dir {}: {error}", root.display())))?;
        Ok(Self { root })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn resolve(&self, path: &str) -> io::Result<PathBuf> {
        validate_relative_path(path)?;
        Ok(self.root.join(path))
    }

    fn resolve_dir(&self, dir: &str) -> io::Result<PathBuf> {
        if dir.is_empty() {
            Ok(self.root.clone())
        } else {
            self.resolve(dir)
        }
    }
}

/// Attach the path to an OS error so a user sees which file failed.
fn with_path(error: io::Error, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

impl DurableStorage for DiskStorage {
    type File = DiskFile;

    async fn open(&self, path: &str, mode: OpenMode) -> io::Result<DiskFile> {
        let full = self.resolve(path)?;
        if mode != OpenMode::Existing
            && let Some(parent) = full.parent()
        {
            fs::create_dir_all(parent).map_err(|error| with_path(error, parent))?;
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        match mode {
            OpenMode::Existing => {}
            OpenMode::CreateOrOpen => {
                options.create(true);
            }
            OpenMode::CreateNew => {
                options.create_new(true);
            }
        }
        let file = options.open(&full).map_err(|error| with_path(error, &full))?;
        Ok(DiskFile { file, path: full })
    }

    async fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let (from_full, to_full) = (self.resolve(from)?, self.resolve(to)?);
        fs::rename(&from_full, &to_full).map_err(|error| with_path(error, &from_full))
    }

    async fn remove(&self, path: &str) -> io::Result<()> {
        let full = self.resolve(path)?;
        fs::remove_file(&full).map_err(|error| with_path(error, &full))
    }

    async fn remove_dir(&self, dir: &str) -> io::Result<()> {
        let full = self.resolve(dir)?;
        fs::remove_dir(&full).map_err(|error| with_path(error, &full))
    }

    async fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let full = self.resolve_dir(dir)?;
        let mut names = Vec::new();
        for entry in fs::read_dir(&full).map_err(|error| with_path(error, &full))? {
            let entry = entry.map_err(|error| with_path(error, &full))?;
            if entry.file_type().map_err(|error| with_path(error, &full))?.is_file() {
                // A name that is not UTF-8 was not written by us; skip rather than fail
                // every listing of the directory.
                if let Ok(name) = entry.file_name().into_string() {
                    names.push(name);
                }
            }
        }
        names.sort();
        Ok(names)
    }

    async fn sync_dir(&self, dir: &str) -> io::Result<()> {
        let full = self.resolve_dir(dir)?;
        File::open(&full)
            .and_then(|handle| handle.sync_all())
            .map_err(|error| with_path(error, &full))
    }
}

/// An open file of a [`DiskStorage`].
#[derive(Debug)]
pub struct DiskFile {
    file: File,
    path: PathBuf,
}

impl DurableFile for DiskFile {
    async fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            // usize -> u64 is lossless on our targets.
            match self.file.read_at(&mut buf[filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(with_path(error, &self.path)),
            }
        }
        Ok(filled)
    }

    async fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.file
            .write_all_at(data, offset)
            .map_err(|error| with_path(error, &self.path))
    }

    async fn append(&self, data: &[u8]) -> io::Result<u64> {
        let offset = self.len().await?;
        self.write_at(offset, data).await?;
        Ok(offset)
    }

    async fn len(&self) -> io::Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(|error| with_path(error, &self.path))?
            .len())
    }

    async fn sync(&self) -> io::Result<()> {
        self.file.sync_data().map_err(|error| with_path(error, &self.path))
    }

    async fn truncate(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len).map_err(|error| with_path(error, &self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::run_local;
    use crate::testing::check_storage_contract;

    #[test]
    fn disk_storage_meets_the_storage_contract() {
        let root = std::env::temp_dir().join(format!("cluster-disk-contract-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let storage = DiskStorage::new(&root).expect("temp dir");
        let checked = run_local(check_storage_contract(storage)).expect("runtime");
        fs::remove_dir_all(&root).expect("cleanup");
        assert!(checked >= 10, "contract ran {checked} checks");
    }
}
