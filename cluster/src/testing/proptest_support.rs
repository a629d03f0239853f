//! The property tests' shared configuration and damage: one file, used by the decoders
//! whose tests live next to them (`vsr/checkpoint.rs`, `vsr/view_change.rs`,
//! `storage/install.rs`) and by the decoder tests under `tests/decoders/` (which
//! include this file by path, as an integration test cannot see the crate's test
//! modules).

use proptest::prelude::ProptestConfig;
use proptest::sample::Index;
use proptest::test_runner::{RngAlgorithm, RngSeed};

/// 256 cases from a fixed seed, no failure persistence (no regression files).
pub(crate) fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(0x16_D15C_FA17),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Flip one bit, cut short, or overwrite a range with `other` (`how` picks).
pub(crate) fn damage(bytes: &[u8], how: u8, at: Index, bit: u8, other: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    if out.is_empty() {
        return out;
    }
    let at = at.index(out.len());
    match how % 3 {
        0 => out[at] ^= 1 << bit,
        1 => out.truncate(at),
        _ => {
            let end = (at + other.len()).min(out.len());
            out.splice(at..end, other.iter().copied());
        }
    }
    out
}
