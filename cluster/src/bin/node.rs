//! `node`: one replica of the cluster, on TCP and real disks.
//!
//! ```text
//! node --config node.json
//! node --cluster demo --replica 0 --data-dir /var/lib/demo/0 \
//!      --roster 10.0.0.1:7000=10.0.0.1:7100,10.0.0.2:7000=10.0.0.2:7100,10.0.0.3:7000=10.0.0.3:7100
//! node --cluster dev --data-dir ./dev-data              # a group of one on 127.0.0.1:7100
//! ```
//!
//! Logs go to stderr through `tracing`; `RUST_LOG` filters them (default `info`).
//! Stops on SIGINT or SIGTERM. Exit status: 0 after a signal, 1 if it could not start
//! (the message says what to fix), 2 for bad flags, 3 if it stopped because its
//! storage failed (a write or sync refused, or, while starting, a read that failed
//! through its retries; restart it on the same data directory, as a supervisor would:
//! it boots from what the disk holds and its peers fill the rest), 101 if it panicked
//! on any of its tasks (a broken invariant: the process stops rather than run on).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use cluster::node::TestBreak;
use cluster::server::{
    EXIT_STORAGE_FAILED, ServerConfig, StartupError, Stopped, fail_stop_on_panic, parse_roster, run,
};

/// One replica of the cluster: the metadata group and its share of the partition groups,
/// over TCP, with its data in one directory.
///
/// Give either --config (a JSON file with the same fields: cluster, replica, data_dir,
/// shards, roster [{replica_address, client_address}], client_address, root_password,
/// secret_file, insecure_dev) or the flags. Every node of a cluster needs the same
/// --cluster, --roster (in the same order), root password and cluster secret
/// (--secret-file or CLUSTER_SECRET); --replica is this node's index in the roster.
#[derive(Parser, Debug)]
#[command(name = "node", version, about, long_about)]
struct Args {
    /// A JSON config file; no other flag may be given with it.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["cluster", "replica", "data_dir", "shards", "roster", "client_address"])]
    config: Option<PathBuf>,
    /// The cluster's name (the same on every node; a data dir of another cluster is refused).
    #[arg(long, value_name = "NAME")]
    cluster: Option<String>,
    /// This node's index in --roster.
    #[arg(long, value_name = "N", default_value_t = 0)]
    replica: u8,
    /// The directory holding this node's data (created if missing).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Shards (cores) to split the partition groups over, 1 to 8.
    #[arg(long, value_name = "N", default_value_t = 1)]
    shards: u8,
    /// The cluster's nodes in replica order: REPLICA_ADDR=CLIENT_ADDR,... Omit for a
    /// group of one.
    #[arg(long, value_name = "LIST")]
    roster: Option<String>,
    /// Without --roster: where clients connect (default 127.0.0.1:7100).
    #[arg(long, value_name = "IP:PORT")]
    client_address: Option<std::net::SocketAddr>,
    /// The root user's password at genesis (the same on every node). Also read from
    /// the environment variable CLUSTER_ROOT_PASSWORD; default "secret".
    #[arg(long, value_name = "PASSWORD", env = "CLUSTER_ROOT_PASSWORD", hide_env_values = true)]
    root_password: Option<String>,
    /// A file holding the cluster's shared secret (one line, at least 16 bytes; e.g.
    /// `openssl rand -hex 32 > cluster.secret`), the same on every node: replicas prove
    /// they hold it before any of their messages is read. Without it the secret is
    /// read from the environment variable CLUSTER_SECRET; there is no flag for the
    /// secret itself, so it never shows in `ps`.
    #[arg(long, value_name = "PATH")]
    secret_file: Option<PathBuf>,
    /// Run without a cluster secret, for development on a machine nobody else can
    /// reach: replica connections still handshake, but with a key derived from the
    /// cluster name, so anyone who reaches the replica port can act as a replica. The
    /// node logs a warning. Without a secret and without this flag the node refuses to
    /// start.
    #[arg(long)]
    insecure_dev: bool,
    /// TEST-ONLY, never in production: start with a deliberately broken behaviour
    /// (`wal-drop-last-record`), so a fault harness on real nodes can show it catches
    /// the bug (see `cluster::node::TestBreak`). Hidden from --help. Allowed with
    /// --config too, where it overrides the file's `test_break`.
    #[arg(long, value_name = "BREAK", value_enum, hide = true)]
    test_break: Option<TestBreak>,
}

fn config_of(args: Args) -> Result<ServerConfig, String> {
    if let Some(path) = args.config {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|error| format!("cannot read config {shown}: {error}"))?;
        let mut config = ServerConfig::from_json(&shown, &text).map_err(|error| error.to_string())?;
        if let Some(password) = args.root_password {
            config.root_password = password;
        }
        if args.test_break.is_some() {
            config.test_break = args.test_break;
        }
        if args.secret_file.is_some() {
            config.secret_file = args.secret_file;
        }
        config.insecure_dev |= args.insecure_dev;
        return Ok(config);
    }
    let cluster = args.cluster.ok_or("--cluster NAME is required (or --config PATH)")?;
    let data_dir = args.data_dir.ok_or("--data-dir DIR is required (or --config PATH)")?;
    let roster = match args.roster {
        Some(text) => parse_roster(&text).map_err(|error| error.to_string())?,
        None => Vec::new(),
    };
    Ok(ServerConfig {
        cluster,
        replica: args.replica,
        data_dir,
        shards: args.shards,
        roster,
        client_address: args.client_address,
        root_password: args
            .root_password
            .unwrap_or_else(|| cluster::metadata::DEFAULT_ROOT_PASSWORD.to_owned()),
        secret_file: args.secret_file,
        insecure_dev: args.insecure_dev,
        test_break: args.test_break,
    })
}

fn main() -> ExitCode {
    fail_stop_on_panic();
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = match config_of(args) {
        Ok(config) => config,
        Err(problem) => {
            eprintln!("node: {problem}");
            return ExitCode::from(2);
        }
    };
    match run(
        &config,
        cluster::server::stop_signal(|error| {
            tracing::warn!(%error, "cannot watch SIGTERM; stopping on SIGINT only");
        }),
    ) {
        Ok(Stopped::Shutdown) => ExitCode::SUCCESS,
        Ok(Stopped::StorageFailure(failure)) => {
            eprintln!("node: stopped on a storage failure ({failure}); start it again on the same data directory");
            ExitCode::from(EXIT_STORAGE_FAILED)
        }
        Err(error) => {
            eprintln!("node: {error}");
            match error {
                StartupError::Config(_) => ExitCode::from(2),
                StartupError::Storage { .. } => ExitCode::from(EXIT_STORAGE_FAILED),
                _ => ExitCode::from(1),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(extra: &[&str]) -> Result<Args, clap::Error> {
        let mut argv = vec!["node", "--cluster", "dev", "--data-dir", "/tmp/dev"];
        argv.extend_from_slice(extra);
        Args::try_parse_from(argv)
    }

    #[test]
    fn the_hidden_test_break_flag_reaches_the_config_and_refuses_an_unknown_break() {
        let plain = config_of(parse(&[]).expect("flags")).expect("config");
        assert_eq!(plain.test_break, None);
        let broken = config_of(parse(&["--test-break", "wal-drop-last-record"]).expect("flags")).expect("config");
        assert_eq!(broken.test_break, Some(TestBreak::WalDropLastRecord));
        let unknown = parse(&["--test-break", "drop-everything"]).expect_err("unknown break");
        assert_eq!(unknown.kind(), clap::error::ErrorKind::InvalidValue);
        let help = Args::command().render_long_help().to_string();
        assert!(!help.contains("test-break"), "hidden from --help");
    }
}
