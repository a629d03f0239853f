//! `superblock-write`: format a replica's superblock, then write four view changes.
//!
//! Recovery is `SuperblockFile::open`. It must find a copy at least as new as the last
//! acknowledged write, holding a state that was written. It must never find every copy
//! damaged, and never lose a format that was acknowledged.

use cluster::storage::superblock::{Identity, SuperblockError, SuperblockFile, SuperblockState, cluster_id};

use crate::storage::SimStorage;
use crate::storage_sweep::{CheckContext, Ledger, Sweep, ready};

/// The group directory the sweep writes in.
const DIR: &str = "groups/0";

/// View changes written after the format: enough to cycle both halves of the copies
/// twice, so a fault lands on every slot of every phase.
const WRITES: u64 = 4;

fn identity() -> Identity {
    Identity {
        cluster: cluster_id("sweep"),
        group: 0,
        replica: 1,
        replica_count: 3,
    }
}

fn state(write: u64) -> SuperblockState {
    SuperblockState {
        view: write,
        log_view: write,
        commit_max: write * 3,
        extension: vec![write as u8; 8],
    }
}

/// The ledger value of a state: its fields in order.
fn encode(state: &SuperblockState) -> Vec<u8> {
    let mut bytes = Vec::new();
    for field in [state.view, state.log_view, state.commit_max] {
        bytes.extend_from_slice(&field.to_le_bytes());
    }
    bytes.extend_from_slice(&state.extension);
    bytes
}

/// The sweep.
pub struct SuperblockWrite;

impl Sweep for SuperblockWrite {
    crate::sweep_about!(
        "superblock-write",
        "SuperblockFile::format then four writes; open must return the newest acknowledged copy or a newer one"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        let mut ledger = Ledger::new();
        // Sequence 1 is the format; every write bumps it by one.
        ledger.attempt(1, &encode(&SuperblockState::default()));
        let Ok(mut superblock) = ready(SuperblockFile::format(storage, DIR, identity())) else {
            return ledger;
        };
        ledger.acknowledge(1, &encode(&SuperblockState::default()));
        for write in 1..=WRITES {
            let state = state(write);
            ledger.attempt(1 + write, &encode(&state));
            if ready(superblock.write(state.clone())).is_err() {
                // A replica whose superblock write fails stops; so does the sweep.
                return ledger;
            }
            assert_eq!(superblock.sequence(), 1 + write, "sweep expects one sequence per write");
            ledger.acknowledge(1 + write, &encode(&state));
        }
        ledger
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, _context: CheckContext) -> Result<u64, String> {
        let newest_acknowledged = ledger.acknowledged().keys().next_back().copied();
        match ready(SuperblockFile::open(storage, DIR, identity())) {
            Ok((superblock, report)) => {
                let sequence = superblock.sequence();
                let recovered = encode(superblock.state());
                if !ledger.was_attempted(sequence, &recovered) {
                    return Err(format!(
                        "open returned sequence {sequence} with a state never written there"
                    ));
                }
                if let Some(newest) = newest_acknowledged
                    && sequence < newest
                {
                    return Err(format!(
                        "open returned sequence {sequence}, older than the acknowledged {newest} \
                         (damaged copies: {:?})",
                        report.damaged
                    ));
                }
                Ok(u64::from(newest_acknowledged.is_some()))
            }
            Err(SuperblockError::NotFormatted { .. }) if newest_acknowledged.is_none() => Ok(0),
            Err(error) => Err(format!(
                "open failed ({error}) with {} acknowledged",
                newest_acknowledged.map_or("nothing".to_owned(), |sequence| format!("sequence {sequence}"))
            )),
        }
    }
}
