//! The codec of a tagged enum (an op or a reply), declared once as a table.
//!
//! Models: an enum whose bytes are `[code: u8][fields in declaration order]`, each
//! field written by its [`WireField`] impl and read under a label that a
//! [`DecodeError`] names. [`wire_table!`] takes one line per variant (its code, its
//! fields with their wire labels, and `[redacted]` on a field `Debug` must not print)
//! and writes the enum, its code method, its [`WireTable`] impl (the encode and decode
//! arms) and its `Debug` impl, so a new op is one table entry plus its logic.
//!
//! Does not model: variants whose bytes are not a plain sequence of fields (the
//! table's `=> by_hand(encode, decode)` escape hatch names functions that write and
//! read them), or what an op means (the state machines apply it).

use super::{DecodeError, Reader, Writer};

/// A value with one fixed encoding, read under a label the [`DecodeError`] names.
pub(crate) trait WireField: Sized {
    /// Append the value's bytes.
    fn encode_field(&self, w: &mut Writer);
    /// Read the value, naming `field` in any error. A composite value (permissions, a
    /// consumer) names its own parts instead.
    fn decode_field(r: &mut Reader<'_>, field: &'static str) -> Result<Self, DecodeError>;
}

/// `WireField` for the types the [`Writer`] and [`Reader`] have methods for: how the
/// value `$v` is written to `$w`, and which reader method reads it back.
macro_rules! wire_field_by_methods {
    ($($ty:ty: |$w:ident, $v:ident| $write:expr, $read:ident;)*) => {
        $(
            impl WireField for $ty {
                fn encode_field(&self, $w: &mut Writer) {
                    let $v = self;
                    $write;
                }
                fn decode_field(r: &mut Reader<'_>, field: &'static str) -> Result<Self, DecodeError> {
                    r.$read(field)
                }
            }
        )*
    };
}

wire_field_by_methods! {
    u32: |w, v| w.u32(*v), u32;
    u64: |w, v| w.u64(*v), u64;
    u128: |w, v| w.u128(*v), u128;
    bool: |w, v| w.bool(*v), bool;
    String: |w, v| w.str(v), string;
    Option<String>: |w, v| w.opt_str(v.as_deref()), opt_string;
    Option<bool>: |w, v| w.opt_bool(*v), opt_bool;
}

/// An enum [`wire_table!`] declared: `[code][fields]`, decoded back exactly.
pub(crate) trait WireTable: Sized {
    /// The label a bad or missing code byte is reported under.
    const CODE_LABEL: &'static str;

    /// The variant's code byte.
    fn code_byte(&self) -> u8;

    /// Append the variant's fields (not its code).
    fn encode_fields(&self, w: &mut Writer);

    /// Read the fields of the variant with code `code`; an unassigned code is
    /// [`DecodeError::UnknownCode`] under [`WireTable::CODE_LABEL`].
    fn decode_fields(code: u8, r: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// `[code][fields]`.
    fn encode_tagged(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(self.code_byte());
        self.encode_fields(&mut w);
        w.finish()
    }

    /// The value occupying all of `bytes`: trailing bytes are an error.
    fn decode_tagged(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let value = Self::decode_fields(r.u8(Self::CODE_LABEL)?, &mut r)?;
        r.finish()?;
        Ok(value)
    }
}

/// What `Debug` prints, unquoted, in place of a credential.
#[derive(Clone, Copy)]
pub(crate) struct Redacted;

impl std::fmt::Debug for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Declares a tagged enum and its codec from one table:
///
/// ```text
/// wire_table! {
///     /// Docs and derives of the enum (not `Debug`: the table writes it).
///     pub enum Name {
///         code_label: "operation code",   // what a bad code byte is reported as
///         redacted: REDACTED,             // what `Debug` prints for a `[redacted]` field
///         debug: one_line,                // optional: `{:#?}` prints as `{:?}` does
///         /// Docs of the code method.
///         fn operation_code;
///         variants: {
///             /// Docs of the variant.
///             Variant = code::CONSTANT {
///                 /// Docs of the field.
///                 field: Type = "wire label",
///                 secret: String = "label" [redacted],
///             },
///             Unit = code::OTHER,
///             Custom = code::THIRD => by_hand(encode_fn, decode_fn) { field: Type = "label" },
///         }
///     }
/// }
/// ```
///
/// Fields are written in table order with [`WireField`]. A `by_hand` variant is
/// written by `Self::encode_fn(w, &field, ...)` and read by `Self::decode_fn(r)`.
macro_rules! wire_table {
    (
        $(#[$enum_meta:meta])*
        $vis:vis enum $name:ident {
            code_label: $code_label:literal,
            redacted: $redacted:expr,
            $(debug: $debug_style:ident,)?
            $(#[$code_fn_meta:meta])*
            fn $code_fn:ident;
            variants: {
                $(
                    $(#[$variant_meta:meta])*
                    $variant:ident = $code:path
                    $(=> by_hand($encode:ident, $decode:ident))?
                    $({
                        $(
                            $(#[$field_meta:meta])*
                            $field:ident : $ty:ty = $label:literal $([$redact:ident])?
                        ),* $(,)?
                    })?
                ),* $(,)?
            }
        }
    ) => {
        $(#[$enum_meta])*
        $vis enum $name {
            $(
                $(#[$variant_meta])*
                $variant $({ $( $(#[$field_meta])* $field: $ty, )* })?,
            )*
        }

        impl $name {
            $(#[$code_fn_meta])*
            $vis fn $code_fn(&self) -> u8 {
                match self {
                    $( Self::$variant { .. } => $code, )*
                }
            }
        }

        impl $crate::codec::WireTable for $name {
            const CODE_LABEL: &'static str = $code_label;

            fn code_byte(&self) -> u8 {
                self.$code_fn()
            }

            fn encode_fields(&self, w: &mut $crate::codec::Writer) {
                match self {
                    $(
                        Self::$variant { $($($field,)*)? } => {
                            $crate::codec::wire_table!(@encode w; [$($($field)*)?]; $($encode)?)
                        }
                    )*
                }
            }

            fn decode_fields(
                code: u8,
                r: &mut $crate::codec::Reader<'_>,
            ) -> Result<Self, $crate::codec::DecodeError> {
                Ok(match code {
                    $(
                        $code => $crate::codec::wire_table!(
                            @decode r; $variant; [$($($field $label)*)?]; $($decode)?
                        ),
                    )*
                    code => {
                        return Err($crate::codec::DecodeError::UnknownCode {
                            field: $code_label,
                            code,
                        });
                    }
                })
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                $crate::codec::wire_table!(@debug_style f, self; $($debug_style)?);
                match self {
                    $(
                        Self::$variant { $($($field,)*)? } => f
                            .debug_struct(stringify!($variant))
                            $($(.field(
                                stringify!($field),
                                $crate::codec::wire_table!(@debug $field, $redacted; $($redact)?),
                            ))*)?
                            .finish(),
                    )*
                }
            }
        }
    };
    (@encode $w:ident; [$($field:ident)*];) => {{
        $( $crate::codec::WireField::encode_field($field, $w); )*
    }};
    (@encode $w:ident; [$($field:ident)*]; $encode:ident) => {
        Self::$encode($w, $($field),*)
    };
    (@decode $r:ident; $variant:ident; [$($field:ident $label:literal)*];) => {
        Self::$variant {
            $( $field: $crate::codec::WireField::decode_field($r, $label)?, )*
        }
    };
    (@decode $r:ident; $variant:ident; [$($field:ident $label:literal)*]; $decode:ident) => {
        Self::$decode($r)?
    };
    (@debug_style $f:ident, $self:tt;) => {};
    (@debug_style $f:ident, $self:tt; one_line) => {
        if $f.alternate() {
            // `{:?}` through a fresh formatter drops the `#` flag.
            return write!($f, "{:?}", $self);
        }
    };
    (@debug $field:ident, $redacted:expr;) => {
        $field
    };
    (@debug $field:ident, $redacted:expr; redacted) => {{
        let _ = $field;
        &$redacted
    }};
}

pub(crate) use wire_table;
