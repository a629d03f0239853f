//! Reads that outlast a transient disk error.
//!
//! A disk may fail a read once and serve the same bytes on the next try (a sector that
//! needed the drive's own retries, a path that timed out). Writes and syncs are never
//! retried here: after a failed write or sync the page cache may have dropped the data
//! (errseq), and only a fresh boot knows what the disk holds (see `vsr::store`). A read
//! changes nothing, so trying it again is always safe.
//!
//! [`RetryReads`] wraps any [`DurableStorage`] and retries every `read_at` up to
//! [`READ_ATTEMPTS_MAX`] times. A read that still fails returns its error: at boot,
//! [`super::record::read_to_end`] then treats the unreadable pages as damaged bytes
//! (held but unknown, repaired from peers, the same answer as to a checksum failure);
//! at run time the store that asked fails stop, and the next boot reads again.
//!
//! What this does not model: a read error that names a sector the drive has since
//! remapped (the retry then reads the remapped sector's zeros; the checksums catch it).

use std::io;

use crate::seam::{DurableFile, DurableStorage, OpenMode};

/// Attempts per read before its error is passed on. A transient error clears within a
/// retry or two on real drives (the kernel has usually retried already); four attempts
/// ride out a short burst without hiding an unreadable sector for long.
pub const READ_ATTEMPTS_MAX: u32 = 4;

/// How reads answer an error (test-only breakage aside, always [`ReadErrors::Retry`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadErrors {
    /// Retry up to [`READ_ATTEMPTS_MAX`] times, then return the error.
    #[default]
    Retry,
    /// Test-only broken answer: a failed read reads as the end of the file, as a naive
    /// loop that stops at the first error would (a boot then sees a shorter log).
    EndOfFile,
}

/// A [`DurableStorage`] whose files retry failed reads (see the module doc).
#[derive(Clone, Debug)]
pub struct RetryReads<S> {
    inner: S,
    errors: ReadErrors,
}

impl<S: DurableStorage> RetryReads<S> {
    /// Wrap `inner`.
    pub fn new(inner: S, errors: ReadErrors) -> Self {
        Self { inner, errors }
    }

    /// The wrapped storage.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S: DurableStorage> DurableStorage for RetryReads<S> {
    type File = RetryReadsFile<S::File>;

    async fn open(&self, path: &str, mode: OpenMode) -> io::Result<Self::File> {
        Ok(RetryReadsFile {
            inner: self.inner.open(path, mode).await?,
            errors: self.errors,
        })
    }

    crate::forward_to_inner!(rename, remove, remove_dir, list, sync_dir);
}

/// A file of [`RetryReads`].
#[derive(Debug)]
pub struct RetryReadsFile<F> {
    inner: F,
    errors: ReadErrors,
}

impl<F: DurableFile> DurableFile for RetryReadsFile<F> {
    async fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut attempt = 1;
        loop {
            match self.inner.read_at(offset, buf).await {
                Ok(read) => return Ok(read),
                Err(_) if self.errors == ReadErrors::EndOfFile => return Ok(0),
                Err(error) if attempt >= READ_ATTEMPTS_MAX => return Err(error),
                Err(error) => {
                    tracing::debug!(offset, attempt, %error, "read failed; trying again");
                    crate::cover!(ReadRetried);
                    attempt += 1;
                }
            }
        }
    }

    crate::forward_to_inner!(write_at, append, len, sync, truncate);
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use futures::FutureExt;

    use super::*;

    /// A file whose first `failures` reads fail.
    #[derive(Clone, Debug, Default)]
    struct Flaky {
        failures: Rc<Cell<u32>>,
        reads: Rc<Cell<u32>>,
    }

    impl DurableFile for Flaky {
        async fn read_at(&self, _offset: u64, buf: &mut [u8]) -> io::Result<usize> {
            self.reads.set(self.reads.get() + 1);
            if self.failures.get() > 0 {
                self.failures.set(self.failures.get() - 1);
                return Err(io::Error::other("flaky read"));
            }
            buf.fill(7);
            Ok(buf.len())
        }
        async fn write_at(&self, _offset: u64, _data: &[u8]) -> io::Result<()> {
            Ok(())
        }
        async fn append(&self, _data: &[u8]) -> io::Result<u64> {
            Ok(0)
        }
        async fn len(&self) -> io::Result<u64> {
            Ok(0)
        }
        async fn sync(&self) -> io::Result<()> {
            Ok(())
        }
        async fn truncate(&self, _len: u64) -> io::Result<()> {
            Ok(())
        }
    }

    fn read(file: &RetryReadsFile<Flaky>) -> io::Result<usize> {
        let mut buf = [0; 4];
        file.read_at(0, &mut buf).now_or_never().expect("completes")
    }

    #[test]
    fn a_read_that_fails_fewer_times_than_the_attempts_succeeds() {
        let flaky = Flaky::default();
        flaky.failures.set(READ_ATTEMPTS_MAX - 1);
        let file = RetryReadsFile {
            inner: flaky.clone(),
            errors: ReadErrors::Retry,
        };
        assert_eq!(read(&file).expect("the last attempt reads"), 4);
        assert_eq!(flaky.reads.get(), READ_ATTEMPTS_MAX);
    }

    #[test]
    fn a_read_that_keeps_failing_returns_its_error_after_the_last_attempt() {
        let flaky = Flaky::default();
        flaky.failures.set(READ_ATTEMPTS_MAX);
        let file = RetryReadsFile {
            inner: flaky.clone(),
            errors: ReadErrors::Retry,
        };
        let error = read(&file).expect_err("every attempt failed");
        assert!(error.to_string().contains("flaky read"), "{error}");
        assert_eq!(flaky.reads.get(), READ_ATTEMPTS_MAX);
    }

    #[test]
    fn the_broken_answer_reads_a_failed_read_as_the_end_of_the_file() {
        let flaky = Flaky::default();
        flaky.failures.set(1);
        let file = RetryReadsFile {
            inner: flaky.clone(),
            errors: ReadErrors::EndOfFile,
        };
        assert_eq!(read(&file).expect("no error"), 0);
        assert_eq!(flaky.reads.get(), 1);
    }
}
