//! The node processes: started (inside their namespace, under libfiu, perhaps under
//! libfaketime), signalled, supervised (a node that stopped on a storage failure is
//! started again, as its supervisor would), and every one stopped by its pid when the
//! [`Nodes`] is dropped: at the end of a run, on a failure, on a panic and on Ctrl-C.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

/// How long a node may take from spawn to `node ready`: a release node opening a data
/// dir of a few MB takes milliseconds; 30 s absorbs a loaded 2-core machine and a node
/// whose reads are failing.
pub const NODE_READY_TIMEOUT_MS: u64 = 30_000;
/// How long a node may take to stop after SIGTERM (it makes every journal durable
/// first: a few fsyncs), in milliseconds, before it counts as stuck.
pub const NODE_TERM_TIMEOUT_MS: u64 = 10_000;
/// How long the supervisor waits before restarting a node that stopped on a storage
/// failure, in milliseconds (a real supervisor's restart delay).
pub const SUPERVISOR_RESTART_MS: u64 = 500;
/// Restarts one node's supervisor allows in one run: a node that fail-stops at every
/// start is a finding, not something to retry forever.
pub const SUPERVISOR_RESTARTS_MAX: u32 = 50;

/// How long one `fiu-ctrl` command may take, in seconds: it writes a line to the
/// node's control FIFO and reads the answer, microseconds for a live process.
pub const FIU_CTRL_TIMEOUT_SECONDS: u64 = 5;

/// A clock fault a node is started under (libfaketime's `FAKETIME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// The true time.
    True,
    /// Offset by this many seconds.
    OffsetSeconds(i64),
    /// Running at this many per mille of the true rate.
    RatePerMille(i64),
}

impl Clock {
    /// The `FAKETIME` value, if any.
    pub fn faketime(self) -> Option<String> {
        match self {
            Clock::True => None,
            Clock::OffsetSeconds(seconds) => Some(format!("{seconds:+}")),
            Clock::RatePerMille(rate) => Some(format!("+0 x{}.{:03}", rate / 1000, rate % 1000)),
        }
    }
}

/// Why a node process ended, as the nemesis sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It stopped on a storage failure (status 3): its supervisor restarts it.
    StorageFailure,
    /// Anything else: a crash, a refusal to start, a panic. The run fails.
    Unexpected(String),
}

struct Running {
    child: Child,
    log: PathBuf,
    /// The nemesis sent a signal that ends it.
    ending: bool,
}

/// Everything needed to start node `i`.
#[derive(Clone, Debug)]
pub struct NodeCommand {
    /// The node binary.
    pub binary: PathBuf,
    /// The cluster's name.
    pub cluster: String,
    /// `--roster`.
    pub roster: String,
    /// Per node: the command prefix placing it in its namespace.
    pub prefixes: Vec<Vec<String>>,
    /// Extra flags for every node (`--test-break ...`).
    pub extra: Vec<String>,
    /// Start nodes under `fiu-run -x` (disk faults possible).
    pub fiu: bool,
    /// libfaketime's library (clock faults possible).
    pub faketime: Option<PathBuf>,
}

/// The run's node processes.
pub struct Nodes {
    command: NodeCommand,
    dir: PathBuf,
    running: Vec<Option<Running>>,
    incarnations: Vec<u32>,
    clocks: Vec<Clock>,
    restarts: Vec<u32>,
}

fn signal(pid: u32, name: &str) -> Result<(), String> {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|error| format!("kill -{name} {pid}: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kill -{name} {pid}: {status}"))
    }
}

/// The fifo prefix fiu-ctrl talks to node `node` through (the pid is appended).
fn fiu_prefix(dir: &Path, node: usize) -> PathBuf {
    dir.join(format!("fiu-{node}"))
}

impl Nodes {
    /// Nodes of `command`, their data and logs under `dir`; none started.
    pub fn new(command: NodeCommand, dir: &Path, count: usize) -> Nodes {
        Nodes {
            command,
            dir: dir.to_path_buf(),
            running: (0..count).map(|_| None).collect(),
            incarnations: vec![0; count],
            clocks: vec![Clock::True; count],
            restarts: vec![0; count],
        }
    }

    /// How many nodes.
    pub fn count(&self) -> usize {
        self.running.len()
    }

    /// Node `node`'s data directory.
    pub fn data_dir(&self, node: usize) -> PathBuf {
        self.dir.join(format!("data-{node}"))
    }

    /// The file holding the cluster's secret, shared by every node (written on the
    /// first start: the nemesis runs the nodes as an operator would, authenticated).
    pub fn secret_file(&self) -> PathBuf {
        self.dir.join("cluster.secret")
    }

    /// Whether node `node` has a process.
    pub fn is_running(&self, node: usize) -> bool {
        self.running[node].is_some()
    }

    /// The pid of node `node`'s process.
    pub fn pid(&self, node: usize) -> Option<u32> {
        self.running[node].as_ref().map(|running| running.child.id())
    }

    /// The log of node `node`'s current (or last) incarnation.
    pub fn log_path(&self, node: usize) -> PathBuf {
        self.dir
            .join(format!("node-{node}.{}.log", self.incarnations[node].max(1)))
    }

    /// The clock node `node` runs under.
    pub fn clock(&self, node: usize) -> Clock {
        self.clocks[node]
    }

    /// Start node `node` (its next incarnation) under `clock`, with libfiu faults
    /// `fiu_enable` on from its first instruction (empty: none). Does not wait.
    pub fn start(&mut self, node: usize, clock: Clock, fiu_enable: &str) -> Result<(), String> {
        assert!(self.running[node].is_none(), "node {node} already runs");
        self.incarnations[node] += 1;
        self.clocks[node] = clock;
        let log = self.log_path(node);
        let file = fs::File::create(&log).map_err(|error| format!("{}: {error}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|error| format!("{}: {error}", log.display()))?;
        let secret = self.secret_file();
        if !secret.exists() {
            std::fs::write(&secret, format!("nemesis-secret-of-{}\n", self.command.cluster))
                .map_err(|error| format!("writing {}: {error}", secret.display()))?;
        }
        let c = &self.command;
        let mut argv: Vec<String> = c.prefixes[node].clone();
        if c.fiu {
            argv.extend(["fiu-run".into(), "-x".into(), "-f".into()]);
            argv.push(fiu_prefix(&self.dir, node).display().to_string());
            if !fiu_enable.is_empty() {
                argv.extend(["-c".into(), fiu_enable.to_owned()]);
            }
        }
        let faketime = clock.faketime();
        if let (Some(_), Some(library)) = (&faketime, &c.faketime) {
            // fiu-run sets LD_PRELOAD to its own libraries; libfaketime joins them in a
            // shell that then execs the node, so the pid stays the node's.
            argv.extend([
                "/bin/sh".into(),
                "-c".into(),
                format!(
                    "LD_PRELOAD=\"${{LD_PRELOAD:-}} {}\" exec \"$0\" \"$@\"",
                    library.display()
                ),
            ]);
        }
        argv.push(c.binary.display().to_string());
        argv.extend([
            "--cluster".into(),
            c.cluster.clone(),
            "--replica".into(),
            node.to_string(),
            "--data-dir".into(),
            self.data_dir(node).display().to_string(),
            "--roster".into(),
            c.roster.clone(),
            "--secret-file".into(),
            self.secret_file().display().to_string(),
        ]);
        argv.extend(c.extra.iter().cloned());
        let mut process = Command::new(&argv[0]);
        process
            .args(&argv[1..])
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(err));
        if let Some(value) = &faketime {
            process.env("FAKETIME", value).env("FAKETIME_NO_CACHE", "1");
        }
        let child = process
            .spawn()
            .map_err(|error| format!("cannot start node {node} ({}): {error}", argv.join(" ")))?;
        self.running[node] = Some(Running {
            child,
            log,
            ending: false,
        });
        Ok(())
    }

    /// Whether node `node` has logged `node ready`; an error if it exited before (the
    /// exit is left for [`Nodes::reap`], so the supervisor judges it: restarted after a
    /// storage failure its disk fault explains, a problem otherwise).
    pub fn ready_now(&mut self, node: usize) -> Result<bool, String> {
        let Some(running) = self.running[node].as_mut() else {
            return Err(format!("node {node} is not running"));
        };
        if fs::read_to_string(&running.log).is_ok_and(|text| text.contains("node ready")) {
            return Ok(true);
        }
        if !matches!(running.child.try_wait(), Ok(None)) {
            return Err(format!(
                "node {node} exited before it was ready; its log: {}",
                running.log.display()
            ));
        }
        Ok(false)
    }

    /// Send `name` (KILL, TERM, STOP, CONT) to node `node`. KILL and TERM mark the end
    /// as the nemesis's doing.
    pub fn signal(&mut self, node: usize, name: &str) -> Result<(), String> {
        let Some(running) = self.running[node].as_mut() else {
            return Err(format!("node {node} is not running"));
        };
        if matches!(name, "KILL" | "TERM") {
            running.ending = true;
        }
        signal(running.child.id(), name)
    }

    /// SIGKILL node `node` and reap it.
    pub fn kill(&mut self, node: usize) -> Result<(), String> {
        if let Some(mut running) = self.running[node].take() {
            running.ending = true;
            let _ = running.child.kill();
            running
                .child
                .wait()
                .map_err(|error| format!("waiting for node {node}: {error}"))?;
        }
        Ok(())
    }

    /// Node `node`'s exit status if it ended (reaped: it no longer runs).
    pub fn exited(&mut self, node: usize) -> Option<ExitStatus> {
        let running = self.running[node].as_mut()?;
        let status = running.child.try_wait().ok()??;
        self.running[node] = None;
        Some(status)
    }

    /// Reap every node that exited on its own; what each exit was.
    pub fn reap(&mut self) -> Vec<(usize, Exit)> {
        let mut exits = Vec::new();
        for node in 0..self.count() {
            let Some(running) = self.running[node].as_mut() else {
                continue;
            };
            // A node the nemesis is stopping is reaped by whoever stops it.
            if running.ending {
                continue;
            }
            let Ok(Some(status)) = running.child.try_wait() else {
                continue;
            };
            let exit = if status.code() == Some(i32::from(cluster::server::EXIT_STORAGE_FAILED)) {
                Exit::StorageFailure
            } else if let Some(panic) = fs::read(&running.log).ok().and_then(|log| panic_of_log(&log)) {
                Exit::Unexpected(format!(
                    "crash: node {node} {panic} ({status}); its log: {}",
                    running.log.display()
                ))
            } else {
                Exit::Unexpected(format!(
                    "crash: node {node} exited on its own ({status}); its log: {}",
                    running.log.display()
                ))
            };
            self.running[node] = None;
            exits.push((node, exit));
        }
        exits
    }

    /// Count one supervisor restart of `node`; false once it reached the bound.
    pub fn count_restart(&mut self, node: usize) -> bool {
        self.restarts[node] += 1;
        self.restarts[node] <= SUPERVISOR_RESTARTS_MAX
    }

    /// Run a libfiu remote-control command in node `node`'s process. Refused for a
    /// process that already exited (its control FIFO is still there, and a write to it
    /// would wait forever for a reader); bounded by [`FIU_CTRL_TIMEOUT_SECONDS`] in case
    /// the process dies or stops while the command is under way.
    pub fn fiu_ctrl(&mut self, node: usize, command: &str) -> Result<(), String> {
        let Some(running) = self.running[node].as_mut() else {
            return Err(format!("node {node} is not running"));
        };
        if !matches!(running.child.try_wait(), Ok(None)) {
            return Err(format!("node {node} has exited"));
        }
        let pid = running.child.id();
        let output = Command::new("timeout")
            .arg(FIU_CTRL_TIMEOUT_SECONDS.to_string())
            .arg("fiu-ctrl")
            .arg("-f")
            .arg(fiu_prefix(&self.dir, node))
            .arg("-c")
            .arg(command)
            .arg(pid.to_string())
            .stdin(Stdio::null())
            .output()
            .map_err(|error| format!("fiu-ctrl: {error}"))?;
        let said = String::from_utf8_lossy(&output.stdout);
        if output.status.success() && !said.contains("error") {
            Ok(())
        } else {
            Err(format!(
                "fiu-ctrl -c '{command}' {pid} (node {node}): {} {} ({})",
                said.trim(),
                String::from_utf8_lossy(&output.stderr).trim(),
                output.status
            ))
        }
    }

    /// SIGCONT and SIGKILL every process (a paused node cannot handle SIGTERM) and
    /// reap them.
    pub fn stop_all(&mut self) {
        for node in 0..self.count() {
            if let Some(running) = self.running[node].as_ref() {
                let _ = signal(running.child.id(), "CONT");
            }
            let _ = self.kill(node);
        }
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// How much of a node's log [`panic_of_log`] reads back from the end, in bytes: a
/// panic's message and backtrace are the last few KiB a node writes before it exits.
pub const PANIC_LOG_TAIL_BYTES: usize = 64 * 1024;

/// The last panic a node's log reports, as `panicked at <where>: <message>` (the
/// message's first line), so a crash names the broken invariant without opening the
/// log; `None` if the log's tail holds no panic.
pub fn panic_of_log(log: &[u8]) -> Option<String> {
    let tail = &log[log.len().saturating_sub(PANIC_LOG_TAIL_BYTES)..];
    let text = String::from_utf8_lossy(tail);
    let mut lines = text.lines();
    let mut found = None;
    while let Some(line) = lines.next() {
        if let Some(at) = line.find("panicked at ") {
            let location = line[at..].trim_end_matches(':').trim_end();
            let message = lines.next().map(str::trim).unwrap_or("");
            found = Some(if message.is_empty() {
                location.to_owned()
            } else {
                format!("{location}: {message}")
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_names_the_last_panic_in_the_node_s_log() {
        let log = b"2026-12-04T12:28:24Z  INFO cluster::vsr::view_change: start view change\n\n\
thread 'main' (32670) panicked at cluster/src/vsr/view_change.rs:538:9:\n\
replica 1 group 0xc00: view 1 would start with head 95 below the commit point 96\n\
stack backtrace:\n   0: __rustc::rust_begin_unwind\n\
node: panicked; stopping with exit status 101 (a broken invariant, see above)\n";
        assert_eq!(
            panic_of_log(log).as_deref(),
            Some(
                "panicked at cluster/src/vsr/view_change.rs:538:9: replica 1 group 0xc00: view 1 would start \
                 with head 95 below the commit point 96"
            )
        );
        assert_eq!(panic_of_log(b"INFO node ready\nINFO counters\n"), None);
        // Only the tail is read: a panic far back is not this exit's.
        let mut long = b"thread 'main' panicked at old.rs:1:1:\nold\n".to_vec();
        long.extend(std::iter::repeat_n(b'x', PANIC_LOG_TAIL_BYTES));
        assert_eq!(panic_of_log(&long), None);
    }

    #[test]
    fn clock_faults_spell_libfaketime_s_faketime_values() {
        assert_eq!(Clock::True.faketime(), None);
        assert_eq!(Clock::OffsetSeconds(-870).faketime().as_deref(), Some("-870"));
        assert_eq!(Clock::OffsetSeconds(3600).faketime().as_deref(), Some("+3600"));
        assert_eq!(Clock::RatePerMille(500).faketime().as_deref(), Some("+0 x0.500"));
        assert_eq!(Clock::RatePerMille(2_000).faketime().as_deref(), Some("+0 x2.000"));
        assert_eq!(Clock::RatePerMille(1_250).faketime().as_deref(), Some("+0 x1.250"));
    }
}
