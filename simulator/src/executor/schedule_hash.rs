//! FNV-1a-64, spelled out.
//!
//! The schedule hash must be identical across Rust releases and platforms, which rules
//! out `DefaultHasher` (its algorithm is unspecified and has changed before).

/// FNV-1a 64-bit offset basis.
pub const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// A running FNV-1a-64 hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv1a64(u64);

impl Default for Fnv1a64 {
    fn default() -> Self {
        Self(FNV_OFFSET_BASIS)
    }
}

impl Fnv1a64 {
    /// Continue a hash from a value `finish` returned (0 starts afresh).
    pub fn from_state(state: u64) -> Self {
        if state == 0 { Self::default() } else { Self(state) }
    }

    /// Fold bytes in.
    #[inline]
    pub fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    /// Fold a tag byte and a little-endian u64 in (one scheduling event).
    #[inline]
    pub fn event(&mut self, tag: u8, value: u64) {
        self.write(&[tag]);
        self.write(&value.to_le_bytes());
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_fnv1a_test_vectors() {
        let hash = |s: &str| {
            let mut h = Fnv1a64::default();
            h.write(s.as_bytes());
            h.finish()
        };
        assert_eq!(hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(hash("foobar"), 0x85944171f73967e8);
    }
}
