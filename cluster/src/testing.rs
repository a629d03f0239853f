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
    let reopened_removed = storage.open("wal/log", OpenMode::Existing).await;
    checks += expect(
        matches!(&reopened_removed, Err(error) if error.kind() == io::ErrorKind::NotFound),
        "opening a removed file as Existing is NotFound",
    );
    checks += check_files_and_handles(&storage).await;
    checks += check_namespace(&storage).await;
    checks
}

/// Bytes through handles: offsets, zero-filled extension, sharing between handles.
async fn check_files_and_handles<S: DurableStorage>(storage: &S) -> usize {
    let mut checks = 0;
    let mut buf = [0u8; 32];

    let file = storage
        .open("data/bytes", OpenMode::CreateNew)
        .await
        .expect("create data/bytes");
    file.write_at(0, b"0123456789").await.expect("write_at");
    file.write_at(3, b"abc").await.expect("overwrite");
    let n = file.read_at(0, &mut buf).await.expect("read");
    checks += expect(&buf[..n] == b"012abc6789", "an overwrite changes only its bytes");
    let n = file.read_at(8, &mut buf).await.expect("read");
    checks += expect(&buf[..n] == b"89", "a read across the end returns what is there");
    checks += expect(
        file.read_at(10, &mut buf).await.expect("read") == 0,
        "a read at the end returns 0",
    );

    file.truncate(4).await.expect("truncate");
    file.truncate(8).await.expect("extend");
    let n = file.read_at(0, &mut buf).await.expect("read");
    checks += expect(
        &buf[..n] == b"012a\0\0\0\0",
        "truncate shrinks, and extending again reads zeros, not the old bytes",
    );
    checks += expect(
        file.append(b"xy").await.expect("append") == 8,
        "append after truncate returns the new end",
    );
    file.write_at(12, b"z").await.expect("write past end");
    checks += expect(
        file.append(b"!").await.expect("append") == 13,
        "append after a write past the end lands at the new end",
    );

    let other = storage
        .open("data/bytes", OpenMode::CreateOrOpen)
        .await
        .expect("second handle");
    checks += expect(
        other.len().await.expect("len") == 14,
        "CreateOrOpen on an existing file keeps its contents",
    );
    other.write_at(0, b"Q").await.expect("write through second handle");
    let n = file.read_at(0, &mut buf[..1]).await.expect("read");
    checks += expect(&buf[..n] == b"Q", "a write through one handle is read through another");
    checks += expect(
        file.append(b"?").await.expect("append") == 14 && other.len().await.expect("len") == 15,
        "an append through one handle grows the file for every handle",
    );
    file.sync().await.expect("sync");
    other.sync().await.expect("sync through a second handle");
    drop(file);
    drop(other);

    let reopened = storage.open("data/bytes", OpenMode::Existing).await.expect("reopen");
    let n = reopened.read_at(0, &mut buf).await.expect("read");
    checks += expect(
        &buf[..n] == b"Q12a\0\0\0\0xy\0\0z!?",
        "reopening after closing every handle sees every written byte",
    );

    storage.remove("data/bytes").await.expect("remove");
    let n = reopened.read_at(0, &mut buf[..2]).await.expect("read a removed file");
    checks += expect(&buf[..n] == b"Q1", "a handle open on a removed file still reads it");
    checks
}

/// Names: nesting, listing only direct children, rename carrying open handles.
async fn check_namespace<S: DurableStorage>(storage: &S) -> usize {
    let mut checks = 0;

    let missing_dir = storage.open("nowhere/file", OpenMode::Existing).await;
    checks += expect(
        matches!(&missing_dir, Err(error) if error.kind() == io::ErrorKind::NotFound),
        "opening as Existing under a missing directory is NotFound",
    );
    for path in ["tree/b", "tree/a", "tree/sub/deep", "treetop", "tree.log"] {
        storage
            .open(path, OpenMode::CreateNew)
            .await
            .unwrap_or_else(|error| panic!("storage contract violated: creating {path} (with parents): {error}"));
    }
    checks += expect(
        storage.list("tree").await.expect("list") == ["a", "b"],
        "list is sorted and holds only the files directly inside the directory",
    );
    checks += expect(
        storage.list("tree/sub").await.expect("list") == ["deep"],
        "a nested directory lists its own files",
    );
    let root = storage.list("").await.expect("list root");
    checks += expect(
        root.contains(&"treetop".to_owned())
            && root.contains(&"tree.log".to_owned())
            && !root.contains(&"tree".to_owned()),
        "the root lists its files and not its directories",
    );

    let moving = storage.open("tree/a", OpenMode::Existing).await.expect("open");
    storage
        .rename("tree/a", "tree/sub/moved")
        .await
        .expect("rename across directories");
    moving
        .append(b"carried")
        .await
        .expect("append through a renamed handle");
    let moved = storage
        .open("tree/sub/moved", OpenMode::Existing)
        .await
        .expect("open moved");
    let mut buf = [0u8; 16];
    let n = moved.read_at(0, &mut buf).await.expect("read");
    checks += expect(&buf[..n] == b"carried", "a handle follows its file through a rename");
    checks += expect(
        storage.list("tree").await.expect("list") == ["b"]
            && storage.list("tree/sub").await.expect("list") == ["deep", "moved"],
        "rename moves the entry between directories",
    );
    let gone = storage.open("tree/a", OpenMode::Existing).await;
    checks += expect(
        matches!(&gone, Err(error) if error.kind() == io::ErrorKind::NotFound),
        "the old name of a renamed file is NotFound",
    );
    let missing_rename = storage.rename("tree/a", "tree/c").await;
    checks += expect(
        matches!(&missing_rename, Err(error) if error.kind() == io::ErrorKind::NotFound),
        "renaming a missing file is NotFound",
    );
    moved.sync().await.expect("sync");
    for dir in ["tree/sub", "tree", ""] {
        storage
            .sync_dir(dir)
            .await
            .unwrap_or_else(|error| panic!("storage contract violated: sync_dir({dir:?}): {error}"));
    }
    checks += 1;
    checks
}

/// The property tests' shared configuration and damage (see the module).
#[cfg(test)]
pub(crate) mod proptest_support;
