//! `ProfileError`: every way a fault profile can fail to load, with the profile it came
//! from and the dotted path of the offending field.

use std::fmt;

use super::BUILTIN_PROFILE_NAMES;

/// A fault profile that could not be found, read, parsed or validated.
///
/// The message always names where the profile came from (`origin`) and, when one field
/// is to blame, its dotted path inside the file (for example
/// `network.packet_loss_probability` or `cluster.replicas.max`).
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileError {
    /// Where the profile came from, e.g. ``built-in fault profile `light` `` or
    /// ``fault profile file `/tmp/x.json` ``.
    pub origin: String,
    /// Dotted path of the field at fault, or `None` for whole-file problems.
    pub field: Option<String>,
    /// What went wrong.
    pub kind: ProfileErrorKind,
}

/// The class of a [`ProfileError`].
#[derive(Clone, Debug, PartialEq)]
pub enum ProfileErrorKind {
    /// A bare name that is not one of [`BUILTIN_PROFILE_NAMES`].
    UnknownProfile {
        /// The name asked for.
        name: String,
    },
    /// The file could not be read.
    Read {
        /// The operating system's reason.
        message: String,
    },
    /// The text is not JSON.
    Malformed {
        /// 1-based line of the syntax error, as serde_json reports it.
        line: usize,
        /// 1-based column of the syntax error, as serde_json reports it.
        column: usize,
        /// serde_json's message (it repeats the position).
        message: String,
    },
    /// An object holds a key the schema does not define.
    UnknownField {
        /// The keys that object may hold.
        expected: Vec<&'static str>,
    },
    /// A required key is absent (every field is required: there are no defaults).
    MissingField,
    /// A value has the wrong JSON type or is not one of the allowed strings.
    WrongType {
        /// What the schema wants there.
        expected: String,
        /// A short description of what the file holds there.
        found: String,
    },
    /// `kind` is neither `fixed` nor `swarm`.
    UnknownKind {
        /// The kind the file names.
        found: String,
    },
    /// The value is well-typed but breaks a rule (out of range, inconsistent, ...).
    Invalid {
        /// Which rule and which value.
        reason: String,
    },
}

impl ProfileError {
    /// An error about the whole profile rather than one field.
    pub(crate) fn whole(origin: &str, kind: ProfileErrorKind) -> Self {
        Self {
            origin: origin.to_owned(),
            field: None,
            kind,
        }
    }

    /// An error about one field, named by its dotted path.
    pub(crate) fn at(origin: &str, field: &str, kind: ProfileErrorKind) -> Self {
        Self {
            origin: origin.to_owned(),
            field: Some(field.to_owned()),
            kind,
        }
    }

    /// A rule violation at `field`.
    pub(crate) fn invalid(origin: &str, field: &str, reason: impl Into<String>) -> Self {
        Self::at(origin, field, ProfileErrorKind::Invalid { reason: reason.into() })
    }
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        match &self.kind {
            ProfileErrorKind::UnknownProfile { name } => write!(
                f,
                ": unknown fault profile `{name}`; valid names are {} \
                 (or a path containing '/' or ending in .json)",
                BUILTIN_PROFILE_NAMES.join(", ")
            ),
            ProfileErrorKind::Read { message } => write!(f, ": cannot read: {message}"),
            ProfileErrorKind::Malformed { line, column, message } => {
                write!(f, ": malformed JSON at line {line} column {column}: {message}")
            }
            ProfileErrorKind::UnknownField { expected } => {
                write!(f, ": unknown field; expected one of {}", expected.join(", "))
            }
            ProfileErrorKind::MissingField => {
                write!(f, ": missing (every field is required, there are no defaults)")
            }
            ProfileErrorKind::WrongType { expected, found } => {
                write!(f, ": expected {expected}, found {found}")
            }
            ProfileErrorKind::UnknownKind { found } => {
                write!(f, ": unknown kind `{found}`; expected `fixed` or `swarm`")
            }
            ProfileErrorKind::Invalid { reason } => write!(f, ": {reason}"),
        }
    }
}

impl std::error::Error for ProfileError {}
