//! `cluster-bench`: producers against a running cluster, with throughput and batch
//! latency percentiles.
//!
//! ```text
//! cluster-bench --cluster demo --nodes 127.0.0.1:7100,127.0.0.1:7101,127.0.0.1:7102 \
//!     --producers 4 --partitions 4 --durability persisted --json report.json
//! ```
//!
//! Exit status: 0 when the run completed (even with failed batches, which the report
//! counts), 1 if it could not start or a producer stopped on an error, 2 for bad usage.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, ValueEnum};

use cluster::client::ClientConfig;
use cluster::client::bench::{BYTES_PER_MB, BenchConfig, BenchReport, run};
use cluster::metadata::{DEFAULT_ROOT_PASSWORD, Durability, ROOT_USERNAME};

/// Measure produce throughput and latency of a running cluster.
///
/// Logs in, creates a stream (named --stream-name, by default unique per run) and a
/// topic of --partitions partitions, then runs --producers producers at once, each with
/// its own connections and client id; producer i sends to partition i % partitions.
/// Each producer sends --batches-per-producer batches of --batch-messages messages of
/// --message-bytes bytes, one batch in flight, timing each from send to
/// acknowledgement.
///
/// Reported: messages and MB acknowledged (MB = 10^6 bytes of payload), the wall time
/// of the slowest producer, throughput = payload / that wall time (MB/s and msgs/s),
/// batch latency p50/p90/p99/p999/max (exact, nearest rank over every acknowledged
/// batch), and batches that failed: not accepted (never taken) or not committed
/// (outcome unknown). A failed batch is counted and the producer goes on.
#[derive(Parser, Debug)]
#[command(name = "cluster-bench", version, about, long_about)]
struct Args {
    /// The cluster's name, as given to every node.
    #[arg(long, value_name = "NAME", default_value = "local")]
    cluster: String,
    /// The nodes' client addresses in replica order, comma-separated.
    #[arg(
        long,
        value_name = "ADDR,ADDR,...",
        value_delimiter = ',',
        default_value = "127.0.0.1:7100"
    )]
    nodes: Vec<SocketAddr>,
    /// The user to log in as (needs to create streams and topics and send).
    #[arg(long, value_name = "NAME", default_value = ROOT_USERNAME)]
    user: String,
    /// Their password (also read from CLUSTER_PASSWORD).
    #[arg(long, value_name = "PASSWORD", env = "CLUSTER_PASSWORD", hide_env_values = true,
          default_value = DEFAULT_ROOT_PASSWORD, hide_default_value = true)]
    password: String,
    /// Producers, each with its own client.
    #[arg(long, value_name = "N", default_value_t = 4)]
    producers: usize,
    /// Partitions of the benchmark topic.
    #[arg(long, value_name = "M", default_value_t = 4)]
    partitions: u32,
    /// Payload bytes per message (at most 65,536).
    #[arg(long, value_name = "BYTES", default_value_t = 1000)]
    message_bytes: usize,
    /// Messages per batch (at most 1,000, and at most 524,288 payload bytes a batch).
    #[arg(long, value_name = "N", default_value_t = 100)]
    batch_messages: usize,
    /// Batches each producer sends.
    #[arg(long, value_name = "N", default_value_t = 200)]
    batches_per_producer: u64,
    /// Cap on the whole run's payload rate in MB/s, shared evenly by the producers
    /// (default: unthrottled).
    #[arg(long, value_name = "MB")]
    rate_mb_per_sec: Option<f64>,
    /// The topic's durability.
    #[arg(long, value_enum, default_value = "replicated")]
    durability: DurabilityArg,
    /// The stream to create (must not exist; default: bench-<random>).
    #[arg(long, value_name = "NAME")]
    stream_name: Option<String>,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

/// A topic's durability.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum DurabilityArg {
    /// Acknowledged once a quorum's write-ahead logs have queued the batch.
    Replicated,
    /// Acknowledged once a quorum has fsynced the batch.
    Persisted,
}

fn print_report(report: &BenchReport) {
    let latency = &report.latency;
    println!(
        "{} producer(s) x {} partition(s), {} x {} B per batch, {} batches each, {}",
        report.producers,
        report.partitions,
        report.batch_messages,
        report.message_bytes,
        report.batches_per_producer,
        report.durability
    );
    println!(
        "  acknowledged: {} messages, {:.2} MB in {:.3} s (slowest producer)",
        report.messages, report.megabytes, report.slowest_producer_seconds
    );
    println!(
        "  throughput:   {:.2} MB/s, {:.0} msgs/s",
        report.throughput_mb_per_sec, report.messages_per_sec
    );
    println!(
        "  latency ms:   p50 {:.3}  p90 {:.3}  p99 {:.3}  p999 {:.3}  max {:.3}  (mean {:.3}, {} batches)",
        latency.p50_ms,
        latency.p90_ms,
        latency.p99_ms,
        latency.p999_ms,
        latency.max_ms,
        latency.mean_ms,
        latency.samples
    );
    let stats = &report.client_stats;
    println!(
        "  errors:       {} not accepted, {} not committed (outcome unknown), {} producer(s) stopped",
        report.not_accepted, report.not_committed, report.producers_failed
    );
    println!(
        "  transport:    {} resends, {} redirects, {} refusals, {} binds, {} reconnects, {} timeouts",
        stats.resends, stats.redirects, stats.refusals, stats.binds, stats.reconnects, stats.timeouts
    );
    if let Some(error) = &report.first_error {
        println!("  first error:  {error}");
    }
}

/// A stream name unique enough per run: the process id and the clock's microseconds.
fn default_stream_name() -> String {
    let micros = cluster::runtime::realtime_micros() % 1_000_000;
    format!("bench-{}-{micros:06}", std::process::id())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let config = BenchConfig {
        client: ClientConfig::new(args.cluster.clone(), args.nodes.clone()),
        username: args.user.clone(),
        password: args.password.clone(),
        producers: args.producers,
        partitions: args.partitions,
        message_bytes: args.message_bytes,
        batch_messages: args.batch_messages,
        batches_per_producer: args.batches_per_producer,
        rate_bytes_per_sec: args.rate_mb_per_sec.map(|mb| mb * BYTES_PER_MB),
        durability: match args.durability {
            DurabilityArg::Replicated => Durability::Replicated,
            DurabilityArg::Persisted => Durability::Persisted,
        },
        stream_name: args.stream_name.clone().unwrap_or_else(default_stream_name),
    };
    if let Err(why) = config.validate() {
        Args::command().error(clap::error::ErrorKind::InvalidValue, why).exit();
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let report = match runtime.block_on(run(&config)) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    print_report(&report);
    if let Some(path) = &args.json {
        let written = serde_json::to_string_pretty(&report)
            .map_err(|e| e.to_string())
            .and_then(|json| std::fs::write(path, json + "\n").map_err(|e| e.to_string()));
        if let Err(error) = written {
            eprintln!("error: writing {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if report.producers_failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
