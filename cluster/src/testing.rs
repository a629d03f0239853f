//! Contract checks shared by every implementation of a seam trait, so the production
//! and simulated implementations are held to the same behaviour. Used by tests in
//! both crates; nothing in the cluster's own logic calls it.

use std::io;

use crate::seam::{DurableFile, DurableStorage, OpenMode};

fn expect(condition: bool, what: &str) -> usize {
    assert!(condition, "storage contract violated: {what}");
    1
}

/// Run the storage contract against an empty `storage`; panics naming the first
/// violated rule. Returns how many checks ran, so a caller can assert it ran them.
pub async fn check_storage_contract<S: DurableStorage>(storage: S) -> usize {
    let mut checks = 0;

    let missing = storage.open("wal/missing", OpenMode::Existing).await;
    checks += expect(
        matches!(&missing, Err(error) if error.kind() == io::ErrorKind::NotFound),
        "opening a missing file as Existing is NotFound",
    );
    let escape = storage.open("../outside", OpenMode::CreateOrOpen).await;
    checks += expect(
        matches!(&escape, Err(error) if error.kind() == io::ErrorKind::InvalidInput),
        "a path escaping the root is InvalidInput",
    );

    let file = storage
        .open("wal/log", OpenMode::CreateNew)
        .await
        .expect("create wal/log");
    checks += expect(file.len().await.expect("len") == 0, "a new file is empty");
    let again = storage.open("wal/log", OpenMode::CreateNew).await;
    checks += expect(
        matches!(&again, Err(error) if error.kind() == io::ErrorKind::AlreadyExists),
        "CreateNew on an existing file is AlreadyExists",
    );

    checks += expect(file.append(b"hello").await.expect("append") == 0, "first append at 0");
    checks += expect(file.append(b" world").await.expect("append") == 5, "second append at 5");
    file.write_at(0, b"J").await.expect("write_at");
    file.sync().await.expect("sync");
    let mut buf = [0u8; 32];
    let n = file.read_at(0, &mut buf).await.expect("read");
    checks += expect(&buf[..n] == b"Jello world", "read returns what was written");
    let n = file.read_at(6, &mut buf[..3]).await.expect("read");
    checks += expect(&buf[..n] == b"wor", "read_at honours offset and length");
    checks += expect(
        file.read_at(100, &mut buf).await.expect("read") == 0,
        "read past end is 0",
    );

    file.write_at(20, b"!").await.expect("write past end");
    checks += expect(file.len().await.expect("len") == 21, "write past end extends");
    let n = file.read_at(11, &mut buf).await.expect("read");
    checks += expect(n == 10 && buf[..9].iter().all(|&b| b == 0), "a gap reads as zeros");
    file.truncate(5).await.expect("truncate");
    checks += expect(file.len().await.expect("len") == 5, "truncate shortens");

    let reopened = storage.open("wal/log", OpenMode::Existing).await.expect("reopen");
    let n = reopened.read_at(0, &mut buf).await.expect("read");
    checks += expect(&buf[..n] == b"Jello", "a second handle sees the same bytes");

    storage.open("wal/next", OpenMode::CreateOrOpen).await.expect("create");
    checks += expect(
        storage.list("wal").await.expect("list") == ["log", "next"],
        "list is sorted and holds exactly the files",
    );
    storage.rename("wal/next", "wal/log").await.expect("rename");
    storage.sync_dir("wal").await.expect("sync_dir");
    checks += expect(storage.list("wal").await.expect("list") == ["log"], "rename replaces");
    let replaced = storage.open("wal/log", OpenMode::Existing).await.expect("open");
    checks += expect(replaced.len().await.expect("len") == 0, "rename replaced the contents");
    storage.remove("wal/log").await.expect("remove");
    checks += expect(storage.list("wal").await.expect("list").is_empty(), "remove removes");
    let removed_again = storage.remove("wal/log").await;
    checks += expect(
        matches!(&removed_again, Err(error) if error.kind() == io::ErrorKind::NotFound),
        "removing a missing file is NotFound",
    );
    checks
}
