//! Logs for people reading a failing run: `RUST_LOG=info workload-fuzz ...` prints what
//! each replica did (view changes, recoveries, repairs; `debug` and `trace` for more),
//! stamped with the simulated tick instead of the wall clock, on stderr.
//!
//! Logging only observes: it draws nothing and changes no schedule, so a run prints
//! the same stdout with and without it.

use std::cell::Cell;
use std::fmt;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

thread_local! {
    static CURRENT_TICK: Cell<u64> = const { Cell::new(0) };
}

/// Record the tick the simulation is in (the log timestamp).
pub fn set_tick(tick: u64) {
    CURRENT_TICK.with(|current| current.set(tick));
}

struct SimulatedTick;

impl FormatTime for SimulatedTick {
    fn format_time(&self, writer: &mut Writer<'_>) -> fmt::Result {
        write!(writer, "tick {:>6}", CURRENT_TICK.with(Cell::get))
    }
}

/// Install the stderr logger if `RUST_LOG` is set; otherwise do nothing (no cost).
pub fn init_from_env() {
    if std::env::var_os("RUST_LOG").is_none() {
        return;
    }
    let filter = EnvFilter::from_default_env();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(SimulatedTick)
        .with_target(false)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .try_init();
}
