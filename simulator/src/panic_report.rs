//! A run's panic as a report line: a quiet panic hook that records where a panic
//! happened (instead of printing it to stderr), and [`describe_panic`], which turns a
//! caught panic's payload and that location into a failure signature and a detail.
//!
//! Used wherever runs are caught with `catch_unwind` (the campaign's runner, the
//! shrinker); it knows nothing of campaigns or reports beyond the signature's shape.

use std::cell::{Cell, RefCell};

use crate::signature::signature;

thread_local! {
    /// Where the panic hook leaves the location of a panic in a run on this thread.
    static PANIC_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Whether this thread is inside [`catch_run`]: only there is a panic a run's, to
    /// be reported as its failure rather than printed.
    static IN_RUN: Cell<bool> = const { Cell::new(false) };
}

/// Replace the default panic hook (which prints every run's panic to stderr) with one
/// that records the location for the run's report. Call once, before running. A panic
/// outside a run ([`catch_run`]), in the tool itself, still goes to the hook that was
/// installed before (by default, printed to stderr with its location): it is a bug of
/// the tool, and must never end the process silently.
pub fn install_quiet_panic_hook() {
    let outside_runs = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if IN_RUN.with(Cell::get) {
            let location = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
            PANIC_LOCATION.with(|slot| *slot.borrow_mut() = location);
        } else {
            outside_runs(info);
        }
    }));
}

/// Run `run` (one simulated run, or one step of a sweep) catching its panic, which the
/// quiet hook records for [`describe_panic`] instead of printing.
pub fn catch_run<R>(run: impl FnOnce() -> R) -> std::thread::Result<R> {
    let outer = IN_RUN.with(|flag| flag.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run));
    IN_RUN.with(|flag| flag.set(outer));
    result
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_panic_is_recorded_for_its_report_and_the_thread_leaves_the_run_after() {
        // Panics outside a run still reach the hook installed before (the default one
        // here), so installing the quiet hook in a test binary hides no other test's.
        install_quiet_panic_hook();
        let caught = catch_run(|| -> u32 { panic!("the run broke") }).expect_err("the run panicked");
        let (signature, detail) = describe_panic(caught.as_ref());
        assert!(detail.contains("panic_report.rs:"), "the location: {detail}");
        assert!(detail.ends_with("the run broke"), "{detail}");
        assert!(signature.starts_with("panic at "), "{signature}");
        assert!(!IN_RUN.with(Cell::get), "the thread is outside a run again");
        assert_eq!(catch_run(|| 7).expect("no panic"), 7);
    }
}
