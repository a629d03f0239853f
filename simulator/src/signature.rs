//! Failure signatures: what a failure is, stripped of what varies between seeds.
//!
//! Forty seeds hitting one bug say "replicas disagree on committed op 28" and "... op
//! 93" with different checksums, ticks and replica numbers. The signature keeps the
//! check's name and the words of its message and replaces every number with `N` and
//! every hex value with `X`, and collapses sets in braces (which replicas witnessed an
//! op, say) to `{..}`, so those forty runs form one group.

/// Longest signature kept, in characters: enough for the check and the shape of its
/// message; the rest of a long message is detail, kept in the run's record.
pub const SIGNATURE_CHARS_MAX: usize = 160;

/// The signature of a failure message. Only the first clause counts: what follows a
/// `;` is diagnostic detail (the state of the op a replica is stuck on, say) that
/// differs between runs hitting one bug.
pub fn signature(message: &str) -> String {
    let message = message.split(';').next().unwrap_or_default();
    let mut out = String::with_capacity(message.len().min(SIGNATURE_CHARS_MAX));
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        if out.chars().count() >= SIGNATURE_CHARS_MAX {
            break;
        }
        if c == '{' {
            let mut depth = 1;
            for next in chars.by_ref() {
                match next {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
            }
            out.push_str("{..}");
        } else if c == '0' && chars.peek() == Some(&'x') {
            chars.next();
            while chars.peek().is_some_and(char::is_ascii_hexdigit) {
                chars.next();
            }
            out.push('X');
        } else if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|next| next.is_ascii_digit() || *next == '_' || *next == '.')
            {
                chars.next();
            }
            out.push('N');
        } else if c.is_whitespace() {
            if !out.ends_with(' ') {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_hitting_one_bug_share_a_signature() {
        let a = signature(
            "state checker (tick 6885): replicas disagree on committed op 24: canonical checksum 0x325e (committed by {0@0x5d99, 1@0xfa05}) vs replica 0's 0x0323 (incarnation 356040)",
        );
        let b = signature(
            "state checker (tick 12): replicas disagree on committed op 7: canonical checksum 0x9 (committed by {2@0x0}) vs replica 1's 0xff (incarnation 1)",
        );
        assert_eq!(a, b);
        assert!(
            a.starts_with("state checker (tick N): replicas disagree on committed op N"),
            "{a}"
        );
    }

    #[test]
    fn different_checks_have_different_signatures() {
        assert_ne!(
            signature("commit stuck (tick 3037): replica 5 has applied 115 of 349"),
            signature("drain (tick 26000): after 20000 ticks of drain, 2 requests are outstanding")
        );
    }

    #[test]
    fn diagnostic_detail_after_a_semicolon_does_not_split_groups() {
        assert_eq!(
            signature(
                "commit stuck (tick 3037): replica 5 has applied 115 of 349 committed ops; next: op 116: missing"
            ),
            signature(
                "commit stuck (tick 12): replica 1 has applied 3 of 9 committed ops; next: op 4: view=1 trusted=false"
            )
        );
    }

    #[test]
    fn signatures_are_bounded() {
        let long = "word ".repeat(500);
        assert!(signature(&long).chars().count() <= SIGNATURE_CHARS_MAX);
        assert_eq!(signature("a   b\n c"), "a b c");
    }
}
