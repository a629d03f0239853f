//! A run's panic as a report line: a quiet panic hook that records where a panic
//! happened (instead of printing it to stderr), and [`describe_panic`], which turns a
//! caught panic's payload and that location into a failure signature and a detail.
//!
//! Used wherever runs are caught with `catch_unwind` (the campaign's runner, the
//! shrinker); it knows nothing of campaigns or reports beyond the signature's shape.

use std::cell::RefCell;

use crate::signature::signature;

thread_local! {
    /// Where the panic hook leaves the location of a panic in a run on this thread.
    static PANIC_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Replace the default panic hook (which prints every run's panic to stderr) with one
/// that records the location for the run's report. Call once, before running.
pub fn install_quiet_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let location = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
        PANIC_LOCATION.with(|slot| *slot.borrow_mut() = location);
    }));
}

/// The location of the last panic on this thread, as the quiet hook recorded it.
pub fn take_panic_location() -> Option<String> {
    PANIC_LOCATION.with(|slot| slot.borrow_mut().take())
}

/// A run's panic as a failure signature and a detail line (`panic at LOCATION:
/// MESSAGE`), the location as the quiet hook recorded it on this thread.
pub fn describe_panic(payload: &(dyn std::any::Any + Send)) -> (String, String) {
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic with no message".to_owned());
    let location = take_panic_location().unwrap_or_default();
    (
        format!("panic at {location}: {}", signature(&message)),
        format!("panic at {location}: {message}"),
    )
}
