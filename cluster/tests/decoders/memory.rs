//! An in-memory `DurableStorage`, so the storage formats decode through their boot paths.

#[allow(unused_imports)]
use crate::{metadata::*, partition::*, storage_boot::*, storage_logs::*, support::*, vsr_node::*, wire::*};

// ---------------------------------------------------------------------------------------
// An in-memory DurableStorage, so the storage formats decode through their boot paths
// ---------------------------------------------------------------------------------------

pub(crate) type Contents = Rc<RefCell<Vec<u8>>>;

/// Files by path; every write is durable at once.
#[derive(Clone, Default)]
pub(crate) struct Memory {
    pub(crate) files: Rc<RefCell<BTreeMap<String, Contents>>>,
}

impl Memory {
    pub(crate) fn get(&self, path: &str) -> Vec<u8> {
        self.files
            .borrow()
            .get(path)
            .map(|contents| contents.borrow().clone())
            .unwrap_or_default()
    }

    pub(crate) fn put(&self, path: &str, bytes: &[u8]) {
        self.files
            .borrow_mut()
            .insert(path.to_owned(), Rc::new(RefCell::new(bytes.to_vec())));
    }

    /// A copy of every file, for a fresh boot on the same bytes.
    pub(crate) fn fork(&self) -> Memory {
        let files = self
            .files
            .borrow()
            .iter()
            .map(|(path, contents)| (path.clone(), Rc::new(RefCell::new(contents.borrow().clone()))))
            .collect();
        Memory {
            files: Rc::new(RefCell::new(files)),
        }
    }
}

pub(crate) fn not_found(path: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{path}: no such file"))
}

impl DurableStorage for Memory {
    type File = MemoryFile;

    async fn open(&self, path: &str, mode: OpenMode) -> io::Result<MemoryFile> {
        validate_relative_path(path)?;
        let mut files = self.files.borrow_mut();
        let contents = match (files.get(path), mode) {
            (Some(_), OpenMode::CreateNew) => return Err(io::Error::new(io::ErrorKind::AlreadyExists, path)),
            (Some(contents), _) => contents.clone(),
            (None, OpenMode::Existing) => return Err(not_found(path)),
            (None, _) => files.entry(path.to_owned()).or_default().clone(),
        };
        Ok(MemoryFile { contents })
    }

    async fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut files = self.files.borrow_mut();
        let contents = files.remove(from).ok_or_else(|| not_found(from))?;
        files.insert(to.to_owned(), contents);
        Ok(())
    }

    async fn remove(&self, path: &str) -> io::Result<()> {
        self.files
            .borrow_mut()
            .remove(path)
            .map(drop)
            .ok_or_else(|| not_found(path))
    }

    async fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        Ok(self
            .files
            .borrow()
            .keys()
            .filter_map(|path| path.strip_prefix(&prefix))
            .filter(|rest| !rest.contains('/'))
            .map(str::to_owned)
            .collect())
    }

    async fn sync_dir(&self, _dir: &str) -> io::Result<()> {
        Ok(())
    }
}

pub(crate) struct MemoryFile {
    pub(crate) contents: Contents,
}

pub(crate) fn index_of(offset: u64) -> io::Result<usize> {
    usize::try_from(offset).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset"))
}

impl DurableFile for MemoryFile {
    async fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let contents = self.contents.borrow();
        let start = index_of(offset)?.min(contents.len());
        let n = buf.len().min(contents.len() - start);
        buf[..n].copy_from_slice(&contents[start..start + n]);
        Ok(n)
    }

    async fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut contents = self.contents.borrow_mut();
        let start = index_of(offset)?;
        let end = start + data.len();
        if contents.len() < end {
            contents.resize(end, 0);
        }
        contents[start..end].copy_from_slice(data);
        Ok(())
    }

    async fn append(&self, data: &[u8]) -> io::Result<u64> {
        let offset = self.contents.borrow().len() as u64;
        self.write_at(offset, data).await?;
        Ok(offset)
    }

    async fn len(&self) -> io::Result<u64> {
        Ok(self.contents.borrow().len() as u64)
    }

    async fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    async fn truncate(&self, len: u64) -> io::Result<()> {
        let len = index_of(len)?;
        self.contents.borrow_mut().resize(len, 0);
        Ok(())
    }
}
