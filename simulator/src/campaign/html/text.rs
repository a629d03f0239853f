//! Numbers and durations as the report page writes them: `1,234,567`, `run`/`runs`,
//! `12 min 03 s`. Plain text (the caller escapes where it must); nothing HTML-specific.

/// `1234567` as `1,234,567`.
pub(super) fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `""` for one, `"s"` for any other count.
pub(super) fn plural(count: u64) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// Seconds as `42.0 s`, `12 min 03 s` or `2 h 05 min 03 s` (`n/a` if not a time).
pub(super) fn duration(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "n/a".to_owned();
    }
    if seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    let whole = seconds.round() as u64;
    let (hours, minutes, secs) = (whole / 3600, whole / 60 % 60, whole % 60);
    if hours > 0 {
        format!("{hours} h {minutes:02} min {secs:02} s")
    } else {
        format!("{minutes} min {secs:02} s")
    }
}
