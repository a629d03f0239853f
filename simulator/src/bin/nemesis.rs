//! `nemesis`: the simulator's workload and checkers against real `node` processes under
//! real faults (process signals, cut links, failing syscalls, skewed clocks).
//!
//! ```text
//! nemesis --nodes 3 --clients 4 --runs 20 --minutes 10
//! nemesis --seed 7 --runs 1 --run-seconds 30 --faults kill,fsync-primary
//! ```
//!
//! Exit status: 0 every run passed, 1 a run failed, 2 bad flags or a machine that cannot
//! run it, 3 no run failed but one compared nothing (vacuous), 130 interrupted (SIGINT
//! or SIGTERM: every node is killed and every namespace deleted first).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use simulator::campaign::report::RunVerdict;
use simulator::nemesis::{self, ModeChoice, NemesisConfig, NetworkChoice, faults};

/// Run the cluster's real `node` binary as N processes and drive the simulator's workload
/// through the production client while a seeded nemesis injects faults: SIGKILL,
/// SIGSTOP/SIGCONT of a primary, SIGTERM restarts, rolling restarts, the whole cluster
/// killed; links cut one way or both, a node isolated, the cluster split (each node in
/// its own network namespace, by `ip`); fdatasync, pwrite or pread failing with EIO
/// (libfiu: `fiu-run`, `fiu-ctrl`); a node's clock offset or drifting (libfaketime).
///
/// After the fault phase everything is healed, the clients run on a healed cluster for
/// a while, and the cluster must settle: every node the same view, commit point, state
/// digest and next offsets on every group. Then every acknowledged message must be in
/// its partition exactly once at the offset it was acknowledged at, no message the
/// client library called not accepted may be there, contended partitions must be
/// linearizable, no healthy majority may go 30 s without acknowledging a send, and the
/// healed cluster must acknowledge a send to every client within 30 s.
///
/// Every run deals each fault kind once in a seeded order, then draws more while its
/// fault phase lasts. A real run does not replay bit for bit: the seed replays the plan,
/// the run's directory holds what happened (schedule.jsonl and every node's logs).
/// Writes report.json and report.html (the campaign's format) into --out.
///
/// Needs root for namespaces (falls back to loopback without network faults),
/// fiu-utils and faketime: `scripts/install-test-tools.sh nemesis` installs them; a
/// fault kind whose tool is missing is left out and named.
#[derive(Parser, Debug)]
#[command(name = "nemesis", version, about, long_about)]
struct Args {
    /// The first run's seed; run i uses seed + i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How many runs.
    #[arg(long, default_value_t = 1)]
    runs: u64,
    /// Nodes per cluster: 3 or 5.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Concurrent clients, 1 to 16.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// The whole campaign's wall-clock budget in minutes: each run's fault phase is
    /// minutes*60/runs less about 10 s of start-up, settle and checks (at least 10 s).
    /// No run starts after the budget is spent.
    #[arg(long, default_value_t = 2.0)]
    minutes: f64,
    /// Each run's fault phase in seconds, instead of sizing it from --minutes (a run
    /// goes on until every fault kind was dealt once, at most twice this).
    #[arg(long, value_name = "SECONDS")]
    run_seconds: Option<u64>,
    /// exact (a partition per client, offsets known), contended (shared partitions,
    /// linearizability), or alternate (even seeds exact, odd contended).
    #[arg(long, default_value = "alternate", value_parser = ["exact", "contended", "alternate"])]
    mode: String,
    /// Fault kinds: all, none, or a comma list of kinds and categories (process,
    /// network, disk, clock). Kinds: kill, kill-all, pause-primary, terminate,
    /// rolling-restart, isolate, one-way, cut-link, split, fsync-primary, write-error,
    /// read-error, clock-offset, clock-drift.
    #[arg(long, default_value = "all")]
    faults: String,
    /// auto (namespaces where possible, else loopback), namespaces (or refuse), or
    /// loopback (no network faults).
    #[arg(long, default_value = "auto", value_parser = ["auto", "namespaces", "loopback"])]
    network: String,
    /// The node binary (default: `node` next to this binary).
    #[arg(long, value_name = "PATH")]
    node_binary: Option<PathBuf>,
    /// Where report.json, report.html and each run's directory go.
    #[arg(long, default_value = "reports/nemesis", value_name = "DIR")]
    out: PathBuf,
    /// Requests per run at most (the clients stop early when they reach it).
    #[arg(long, default_value_t = 20_000)]
    requests_max: u64,
    /// TEST ONLY: start every node with `--test-break NAME`, a planted bug the nemesis
    /// must catch (wal-drop-last-record: each restart forgets its last log record).
    #[arg(long, value_name = "NAME")]
    node_break: Option<String>,
    /// Keep every run's data directories (by default only a failing run's are kept;
    /// logs and schedules always are).
    #[arg(long)]
    keep_data: bool,
    /// One fault at a time, each dealt only once every client had a send acknowledged
    /// after the last one ended (or the liveness bound passed): a fault's cost is then
    /// its own, not the mix's. For measuring failover per kind (the figures line
    /// "from a fault's start until every client had a send acknowledged").
    #[arg(long)]
    one_fault_at_a_time: bool,
}

fn config_of(args: Args) -> Result<NemesisConfig, String> {
    if args.nodes != 3 && args.nodes != 5 {
        return Err(format!("--nodes {}: a cluster of 3 or 5 nodes", args.nodes));
    }
    if !(1..=16).contains(&args.clients) {
        return Err(format!("--clients {}: 1 to 16", args.clients));
    }
    if args.runs == 0 {
        return Err("--runs 0: at least one run".to_owned());
    }
    if !(args.minutes > 0.0 && args.minutes.is_finite()) {
        return Err(format!("--minutes {}: a positive number of minutes", args.minutes));
    }
    if args.run_seconds == Some(0) {
        return Err("--run-seconds 0: at least one second".to_owned());
    }
    if args.requests_max == 0 {
        return Err("--requests-max 0: at least one request".to_owned());
    }
    let faults = faults::parse_kinds(&args.faults).map_err(|error| format!("--faults: {error}"))?;
    let node_binary = match args.node_binary {
        Some(path) => path,
        None => std::env::current_exe()
            .map_err(|error| format!("cannot find this binary's directory ({error}); give --node-binary"))?
            .with_file_name("node"),
    };
    Ok(NemesisConfig {
        seed: args.seed,
        runs: args.runs,
        nodes: args.nodes,
        clients: args.clients,
        minutes: args.minutes,
        run_seconds: args.run_seconds,
        mode: match args.mode.as_str() {
            "exact" => ModeChoice::Exact,
            "contended" => ModeChoice::Contended,
            _ => ModeChoice::Alternate,
        },
        faults,
        faults_text: args.faults,
        network: match args.network.as_str() {
            "namespaces" => NetworkChoice::Namespaces,
            "loopback" => NetworkChoice::Loopback,
            _ => NetworkChoice::Auto,
        },
        node_binary,
        out: args.out,
        requests_max: args.requests_max,
        node_break: args.node_break,
        keep_data: args.keep_data,
        one_fault_at_a_time: args.one_fault_at_a_time,
    })
}

fn main() -> ExitCode {
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let config = match config_of(Args::parse()) {
        Ok(config) => config,
        Err(problem) => {
            eprintln!("nemesis: {problem}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("nemesis: cannot start a tokio runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let local = tokio::task::LocalSet::new();
    let outcome = local.block_on(&runtime, async {
        let campaign = Box::pin(nemesis::run_campaign(&config, &command));
        let interrupt = Box::pin(cluster::server::stop_signal(|error| {
            eprintln!("nemesis: cannot watch SIGTERM ({error}); stopping cleanly on Ctrl-C only");
        }));
        match futures::future::select(campaign, interrupt).await {
            futures::future::Either::Left((result, _)) => Some(result),
            futures::future::Either::Right(_) => None,
        }
    });
    // Every process and namespace of the run is gone once its state drops: with the
    // LocalSet's tasks, here.
    drop(local);
    let report = match outcome {
        None => {
            eprintln!("nemesis: interrupted; every node was stopped and every namespace deleted");
            return ExitCode::from(130);
        }
        Some(Err(problem)) => {
            eprintln!("nemesis: {problem}");
            return ExitCode::from(2);
        }
        Some(Ok(report)) => report,
    };
    let totals = report.totals();
    println!(
        "nemesis: {} runs: {} pass, {} fail, {} vacuous, {} invalid, {} not started; report: {}",
        totals.runs(),
        totals.pass,
        totals.fail,
        totals.vacuous,
        totals.invalid,
        report.not_started,
        config.out.join("report.html").display()
    );
    if let Some(summary) = &report.nemesis {
        let counts: Vec<String> = summary
            .faults_by_kind
            .iter()
            .map(|(kind, count)| format!("{kind} {count}"))
            .collect();
        println!("nemesis: faults injected: {}", counts.join(", "));
        let served: Vec<String> = summary
            .served_figures()
            .iter()
            .map(|(kind, count, median, longest)| format!("{kind} {count}x median {median} max {longest}"))
            .collect();
        println!(
            "nemesis: from a fault's start until every client had a send acknowledged, ms: {}",
            served.join(", ")
        );
        if let Some(median) = summary.longest_gap_median_ms() {
            println!("nemesis: longest stretch without an acknowledged send, median over runs: {median} ms");
        }
    }
    for run in report.runs.iter().filter(|run| run.verdict != RunVerdict::Pass) {
        println!(
            "nemesis: {} seed {}: {}\n  repro: {}",
            run.verdict,
            run.seed,
            run.detail.as_deref().unwrap_or(""),
            run.command
        );
    }
    if totals.fail + totals.invalid > 0 {
        ExitCode::from(1)
    } else if totals.vacuous > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}
