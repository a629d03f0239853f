//! Durable storage: the traits every on-disk structure is written against.
//!
//! Production implements them on real files ([`crate::runtime::DiskStorage`]); the
//! simulator implements them in memory, and later with crash, power-loss and fault
//! semantics. Paths are relative to the storage root, `/`-separated, and may not
//! climb out of it (see [`validate_relative_path`]).
//!
//! The futures are `!Send` by design (a shard owns its storage on one thread), which
//! is why these traits use `async fn` directly.
#![allow(async_fn_in_trait)]

use std::io;

/// How to open a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Open an existing file; fail with `NotFound` if it is missing.
    Existing,
    /// Create the file if missing, keep its contents if present.
    CreateOrOpen,
    /// Create a new file; fail with `AlreadyExists` if present.
    CreateNew,
}

/// A directory tree a shard keeps its durable state in.
pub trait DurableStorage: Clone + 'static {
    /// An open file.
    type File: DurableFile;

    /// Open (or create) the file at `path`. Parent directories are created as needed
    /// (and are not durable until [`DurableStorage::sync_dir`]).
    async fn open(&self, path: &str, mode: OpenMode) -> io::Result<Self::File>;

    /// Atomically replace `to` with `from` (durable after `sync_dir` of the directory).
    async fn rename(&self, from: &str, to: &str) -> io::Result<()>;

    /// Remove a file.
    async fn remove(&self, path: &str) -> io::Result<()>;

    /// Remove the empty directory `dir` (durable after `sync_dir` of its parent). A
    /// directory that still holds a file or a directory is an error.
    async fn remove_dir(&self, dir: &str) -> io::Result<()>;

    /// Names of the files directly inside `dir` (`""` for the root), sorted.
    async fn list(&self, dir: &str) -> io::Result<Vec<String>>;

    /// Make the directory's entries (creations, renames, removals) durable.
    async fn sync_dir(&self, dir: &str) -> io::Result<()>;
}

/// An open file.
#[allow(clippy::len_without_is_empty, reason = "file length is a size, not a collection")]
pub trait DurableFile: 'static {
    /// Read up to `buf.len()` bytes at `offset`; returns how many were read (0 at end).
    async fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;

    /// Write all of `data` at `offset`, extending the file if needed.
    async fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()>;

    /// Write all of `data` at the end; returns the offset it was written at.
    async fn append(&self, data: &[u8]) -> io::Result<u64>;

    /// Current length in bytes.
    async fn len(&self) -> io::Result<u64>;

    /// Make the file's data durable (fdatasync semantics: data and size, not metadata
    /// such as timestamps; the directory entry needs [`DurableStorage::sync_dir`]).
    async fn sync(&self) -> io::Result<()>;

    /// Cut or extend the file to `len` bytes.
    async fn truncate(&self, len: u64) -> io::Result<()>;
}

/// Longest relative path accepted, in bytes. Far above anything the cluster names
/// (`partitions/<stream>/<topic>/<partition>/<segment>.log`), low enough to reject
/// garbage before it reaches a filesystem call.
pub const PATH_BYTES_MAX: usize = 1_024;

/// Check that `path` names something inside the storage root: non-empty, relative,
/// no `..` or `.` components, no empty components, no NUL, at most
/// [`PATH_BYTES_MAX`] bytes. Every implementation calls this first so a bad name is a
/// clear `InvalidInput` error everywhere, never a file outside the root.
pub fn validate_relative_path(path: &str) -> io::Result<()> {
    let invalid = |why: &str| {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid storage path {path:?}: {why}"),
        ))
    };
    if path.is_empty() {
        return invalid("empty");
    }
    if path.len() > PATH_BYTES_MAX {
        return invalid("longer than PATH_BYTES_MAX");
    }
    if path.starts_with('/') {
        return invalid("absolute; paths are relative to the storage root");
    }
    if path.contains('\0') || path.contains('\\') {
        return invalid("contains NUL or backslash");
    }
    for component in path.split('/') {
        match component {
            "" => return invalid("empty component"),
            "." | ".." => return invalid("'.' and '..' are not allowed"),
            _ => {}
        }
    }
    Ok(())
}

/// Inside `impl DurableStorage` or `impl DurableFile` for a wrapper whose wrapped
/// storage or file is the field `inner`: the listed methods, forwarded unchanged.
/// A wrapper writes only what it changes (how files open, which reads fail, what a
/// write also does) and names the rest:
/// `cluster::forward_to_inner!(rename, remove, remove_dir, list, sync_dir);`.
#[macro_export]
macro_rules! forward_to_inner {
    ($($method:ident),* $(,)?) => {
        $($crate::forward_to_inner!(@one $method);)*
    };
    (@one rename) => {
        async fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
            $crate::seam::DurableStorage::rename(&self.inner, from, to).await
        }
    };
    (@one remove) => {
        async fn remove(&self, path: &str) -> std::io::Result<()> {
            $crate::seam::DurableStorage::remove(&self.inner, path).await
        }
    };
    (@one remove_dir) => {
        async fn remove_dir(&self, dir: &str) -> std::io::Result<()> {
            $crate::seam::DurableStorage::remove_dir(&self.inner, dir).await
        }
    };
    (@one list) => {
        async fn list(&self, dir: &str) -> std::io::Result<Vec<String>> {
            $crate::seam::DurableStorage::list(&self.inner, dir).await
        }
    };
    (@one sync_dir) => {
        async fn sync_dir(&self, dir: &str) -> std::io::Result<()> {
            $crate::seam::DurableStorage::sync_dir(&self.inner, dir).await
        }
    };
    (@one read_at) => {
        async fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
            $crate::seam::DurableFile::read_at(&self.inner, offset, buf).await
        }
    };
    (@one write_at) => {
        async fn write_at(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
            $crate::seam::DurableFile::write_at(&self.inner, offset, data).await
        }
    };
    (@one append) => {
        async fn append(&self, data: &[u8]) -> std::io::Result<u64> {
            $crate::seam::DurableFile::append(&self.inner, data).await
        }
    };
    (@one len) => {
        async fn len(&self) -> std::io::Result<u64> {
            $crate::seam::DurableFile::len(&self.inner).await
        }
    };
    (@one sync) => {
        async fn sync(&self) -> std::io::Result<()> {
            $crate::seam::DurableFile::sync(&self.inner).await
        }
    };
    (@one truncate) => {
        async fn truncate(&self, len: u64) -> std::io::Result<()> {
            $crate::seam::DurableFile::truncate(&self.inner, len).await
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_inside_the_root_are_accepted_and_escapes_are_not() {
        assert!(validate_relative_path("superblock").is_ok());
        assert!(validate_relative_path("partitions/1/2/0.log").is_ok());
        for bad in ["", "/etc/passwd", "../x", "a/../b", "a//b", "a/", "./a", "a\0b"] {
            let err = validate_relative_path(bad).expect_err(bad);
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
            assert!(err.to_string().contains("invalid storage path"), "{err}");
        }
        assert!(validate_relative_path(&"a".repeat(PATH_BYTES_MAX + 1)).is_err());
    }
}
