//! Deterministic derivation of salts, password hashes and personal access tokens.
//!
//! Models: how the state machine turns the replicated entropy of an op into a salt or
//! a token, and a password into a stored hash, identically on every replica. Entropy
//! is drawn once by the primary and carried in the prepare, so replicas never
//! consult randomness of their own.
//!
//! NOT SECURE. The "password hash" is salted XXH3-128: a fast, non-cryptographic hash
//! standing in for a real key-derivation function (argon2id, scrypt). Fast hashes make
//! offline guessing cheap; do not ship this. Likewise a token carries at most the 64
//! bits of entropy in the op, where a real token wants 256 bits from a CSPRNG, and hash
//! comparisons here are not constant-time. What this module does get right, and what
//! a real KDF must keep, is determinism: the same (entropy, op number, inputs) gives
//! the same bytes on every replica and in every replay.
//!
//! Does not model: key stretching, peppers, hash upgrades, or token revocation lists.

use xxhash_rust::xxh3::{xxh3_128, xxh3_128_with_seed};

/// Characters in a token: 32 lowercase hex digits (128 bits printed).
pub const TOKEN_CHARS: usize = 32;

/// Domain-separation prefixes so a salt and a token drawn from the same entropy differ.
const SALT_DOMAIN: &[u8] = b"iggy-metadata/salt";
const TOKEN_DOMAIN: &[u8] = b"iggy-metadata/token";

/// The salt for a password set by the op numbered `op_number` with replicated
/// `entropy`.
pub fn derive_salt(entropy: u64, op_number: u64) -> u128 {
    let mut input = Vec::with_capacity(SALT_DOMAIN.len() + 8);
    input.extend_from_slice(SALT_DOMAIN);
    input.extend_from_slice(&op_number.to_le_bytes());
    xxh3_128_with_seed(&input, entropy)
}

/// The stored hash of `password` under `salt`: XXH3-128 of `salt (16 bytes LE) ||
/// password`. A placeholder for a real KDF (see the module docs).
pub fn hash_password(salt: u128, password: &str) -> u128 {
    let mut input = Vec::with_capacity(16 + password.len());
    input.extend_from_slice(&salt.to_le_bytes());
    input.extend_from_slice(password.as_bytes());
    xxh3_128(&input)
}

/// A new token for `user_id`'s token `name`, created by op `op_number` with replicated
/// `entropy`: [`TOKEN_CHARS`] lowercase hex characters.
pub fn derive_token(entropy: u64, op_number: u64, user_id: u32, name: &str) -> String {
    let mut input = Vec::with_capacity(TOKEN_DOMAIN.len() + 12 + name.len());
    input.extend_from_slice(TOKEN_DOMAIN);
    input.extend_from_slice(&op_number.to_le_bytes());
    input.extend_from_slice(&user_id.to_le_bytes());
    input.extend_from_slice(name.as_bytes());
    format!("{:032x}", xxh3_128_with_seed(&input, entropy))
}

/// What the state stores for a token: its hash, never the token.
pub fn hash_token(token: &str) -> u128 {
    xxh3_128(token.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derivations_are_pure_functions_of_their_inputs() {
        assert_eq!(derive_salt(7, 3), derive_salt(7, 3));
        assert_ne!(derive_salt(7, 3), derive_salt(8, 3));
        assert_ne!(derive_salt(7, 3), derive_salt(7, 4));
        let salt = derive_salt(7, 3);
        assert_eq!(hash_password(salt, "pw"), hash_password(salt, "pw"));
        assert_ne!(hash_password(salt, "pw"), hash_password(salt, "pW"));
        assert_ne!(hash_password(salt, "pw"), hash_password(salt + 1, "pw"));
    }

    #[test]
    fn tokens_are_32_hex_characters_and_differ_by_entropy_and_name() {
        let token = derive_token(1, 10, 2, "ci");
        assert_eq!(token.len(), TOKEN_CHARS);
        assert!(token.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(token, derive_token(1, 10, 2, "ci"));
        assert_ne!(token, derive_token(2, 10, 2, "ci"));
        assert_ne!(token, derive_token(1, 10, 2, "cd"));
        assert_ne!(hash_token(&token), hash_token(&derive_token(2, 10, 2, "ci")));
    }
}
