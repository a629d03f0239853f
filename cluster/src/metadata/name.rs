//! Validation of the human-chosen strings the metadata holds: names and passwords.
//!
//! Models: the rule every stream, topic, consumer group, username and personal access
//! token name obeys (1..=255 bytes of UTF-8, no control characters), and the length
//! rule for passwords. Does not model: uniqueness (a property of a scope, checked by
//! the state machine), normalisation or case folding (names are compared byte for
//! byte), or password strength.

/// Longest name, in bytes. Names travel in every metadata reply and snapshot and are
/// shown to people; 255 matches the reference server and keeps an op small.
pub const NAME_BYTES_MAX: usize = 255;

/// Longest password, in bytes. Same bound as names: long enough for any passphrase,
/// short enough that hashing it is cheap and the op stays small.
pub const PASSWORD_BYTES_MAX: usize = 255;

/// True if `name` can name a stream, topic, consumer group, user or token: 1 to
/// [`NAME_BYTES_MAX`] bytes with no control characters (they break logs and terminals
/// and are never intended).
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= NAME_BYTES_MAX && !name.chars().any(char::is_control)
}

/// True if `password` is 1 to [`PASSWORD_BYTES_MAX`] bytes. Any characters are allowed.
pub fn is_valid_password(password: &str) -> bool {
    !password.is_empty() && password.len() <= PASSWORD_BYTES_MAX
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_to_255_bytes_without_control_characters() {
        assert!(is_valid_name("orders"));
        assert!(is_valid_name("zamówienia 2026"));
        assert!(is_valid_name(&"x".repeat(NAME_BYTES_MAX)));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name(&"x".repeat(NAME_BYTES_MAX + 1)));
        assert!(!is_valid_name("tab\there"));
        assert!(!is_valid_name("line\n"));
        assert!(!is_valid_name("nul\0"));
    }

    #[test]
    fn passwords_are_one_to_255_bytes() {
        assert!(is_valid_password("p"));
        assert!(is_valid_password("with\ttab"));
        assert!(!is_valid_password(""));
        assert!(!is_valid_password(&"p".repeat(PASSWORD_BYTES_MAX + 1)));
    }
}
