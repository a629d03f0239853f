//! `cluster-cli`: talk to a running cluster over TCP with the client library.
//!
//! ```text
//! cluster-cli --nodes 127.0.0.1:7100,127.0.0.1:7101,127.0.0.1:7102 metadata
//! cluster-cli create-stream orders
//! cluster-cli create-topic --stream 1 --partitions 3 --durability persisted events
//! echo hello | cluster-cli send --stream 1 --topic 1 --partition 0
//! cluster-cli poll --group 1049600 --offset 0 --count 10
//! cluster-cli store-offset --stream 1 --topic 1 --partition 0 --consumer 7 --offset 10
//! ```
//!
//! Exit status: 0 on success, 1 if the command failed (the message says which node
//! said what and what to do), 2 for bad usage.

use std::io::BufRead;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use cluster::client::{Client, ClientConfig, ClusterMetadata, Error, REQUEST_BUDGET_MS};
use cluster::metadata::{DEFAULT_ROOT_PASSWORD, Durability, ROOT_USERNAME};
use cluster::node::{GroupStatus, HostedGroup};
use cluster::partition::{BATCH_BYTES_MAX, Consumer, MESSAGES_PER_BATCH_MAX, Message, POLL_MESSAGES_MAX};

/// A command-line client of the cluster.
///
/// Every command connects to the nodes given by --nodes (their client addresses, in
/// replica order: the first is replica 0), logs in (--user, --password) and then acts.
/// Requests follow the cluster's client discipline: they go to the node that leads the
/// group, are redirected when a node names another primary, are resent while a view
/// change is in progress, and give up after --budget-ms. A request that gives up says
/// whether the cluster certainly never took it ("not accepted": safe to run again) or
/// may have taken it ("outcome unknown": running it again may apply it twice).
///
/// Partitions are named either by their VSR group id (--group, as printed by
/// create-topic and metadata) or by --stream, --topic and --partition ids, which are
/// looked up in a node's partition directory (the status of the metadata group).
#[derive(Parser, Debug)]
#[command(name = "cluster-cli", version, about, long_about)]
struct Cli {
    /// The cluster's name, as given to every node (--cluster of `node`).
    #[arg(long, global = true, value_name = "NAME", default_value = "local")]
    cluster: String,
    /// The nodes' client addresses in replica order, comma-separated.
    #[arg(
        long,
        global = true,
        value_name = "ADDR,ADDR,...",
        value_delimiter = ',',
        default_value = "127.0.0.1:7100"
    )]
    nodes: Vec<SocketAddr>,
    /// The user to log in as.
    #[arg(long, global = true, value_name = "NAME", default_value = ROOT_USERNAME)]
    user: String,
    /// Their password (also read from CLUSTER_PASSWORD).
    #[arg(long, global = true, value_name = "PASSWORD", env = "CLUSTER_PASSWORD", hide_env_values = true,
          default_value = DEFAULT_ROOT_PASSWORD, hide_default_value = true)]
    password: String,
    /// How long one request may take before it gives up, in milliseconds (longer than
    /// a view change, so a request rides through a failover).
    #[arg(long, global = true, value_name = "MS", default_value_t = REQUEST_BUDGET_MS)]
    budget_ms: u64,
    /// What to do.
    #[command(subcommand)]
    command: Command,
}

/// A topic's durability.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum DurabilityArg {
    /// Acknowledged once a quorum's write-ahead logs have queued the batch.
    Replicated,
    /// Acknowledged once a quorum has fsynced the batch.
    Persisted,
}

/// Which partition: a group id, or stream, topic and partition ids.
#[derive(clap::Args, Debug)]
struct PartitionArgs {
    /// The partition's VSR group id.
    #[arg(long, value_name = "GROUP", conflicts_with_all = ["stream", "topic", "partition"])]
    group: Option<u64>,
    /// The stream id (with --topic and --partition).
    #[arg(long, value_name = "ID", requires_all = ["topic", "partition"])]
    stream: Option<u32>,
    /// The topic id within the stream.
    #[arg(long, value_name = "ID", requires_all = ["stream", "partition"])]
    topic: Option<u32>,
    /// The partition id within the topic (0-based).
    #[arg(long, value_name = "ID", requires_all = ["stream", "topic"])]
    partition: Option<u32>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show the roster: per node, whether it answers and its metadata group's status
    /// (normal / view change / recovering, view, the replica it takes for primary,
    /// commit point, head), then every partition of the directory with the primary
    /// each node takes for it. A login is tried first; the report is printed even if
    /// it fails (status needs no session).
    Metadata,
    /// Create a stream; prints its id.
    CreateStream {
        /// The stream's name (unique among streams).
        name: String,
    },
    /// Create a topic; prints its id and its partitions' group ids.
    CreateTopic {
        /// The stream id.
        #[arg(long, value_name = "ID")]
        stream: u32,
        /// The topic's name (unique in the stream).
        name: String,
        /// Partitions to create.
        #[arg(long, value_name = "N", default_value_t = 1)]
        partitions: u32,
        /// When writes are acknowledged.
        #[arg(long, value_enum, default_value = "replicated")]
        durability: DurabilityArg,
    },
    /// Append messages to a partition: the MESSAGE arguments, or else one message per
    /// line of standard input. Prints the offsets each batch was given.
    Send {
        /// The partition.
        #[command(flatten)]
        partition: PartitionArgs,
        /// The messages (UTF-8 payloads).
        messages: Vec<String>,
    },
    /// Read messages from a partition: prints OFFSET<TAB>PAYLOAD per message.
    Poll {
        /// The partition.
        #[command(flatten)]
        partition: PartitionArgs,
        /// The first offset to read.
        #[arg(long, value_name = "O", default_value_t = 0)]
        offset: u64,
        /// Most messages to read.
        #[arg(long, value_name = "N", default_value_t = 10)]
        count: u32,
    },
    /// Store a consumer's offset in a partition (where it reads next).
    StoreOffset {
        /// The partition.
        #[command(flatten)]
        partition: PartitionArgs,
        /// The consumer id.
        #[arg(long, value_name = "ID")]
        consumer: u32,
        /// The offset.
        #[arg(long, value_name = "O")]
        offset: u64,
    },
}

/// A failed command: what to print.
type Failure = String;

fn usage_error(message: &str) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::MissingRequiredArgument, message)
        .exit()
}

/// The group a partition argument names, looking stream/topic/partition up in the
/// first answering node's directory.
async fn resolve(client: &mut Client, partition: &PartitionArgs) -> Result<u64, Failure> {
    if let Some(group) = partition.group {
        return Ok(group);
    }
    let (Some(stream), Some(topic), Some(id)) = (partition.stream, partition.topic, partition.partition) else {
        usage_error("name the partition with --group, or with --stream, --topic and --partition");
    };
    let mut problems = Vec::new();
    for node in 0..client.nodes().len() {
        match client.status(node, 0).await {
            Ok(status) => {
                return status
                    .partitions
                    .iter()
                    .find(|e| e.stream_id == stream && e.topic_id == topic && e.partition_id == id)
                    .map(|e| e.group)
                    .ok_or_else(|| {
                        format!(
                            "node {node}'s directory has no partition {id} of topic {topic} in stream {stream} \
                             (not created, or that node's metadata lags: see `cluster-cli metadata`)"
                        )
                    });
            }
            Err(error) => problems.push(error.to_string()),
        }
    }
    Err(format!(
        "no node answered a status request to look the partition up: {}",
        problems.join("; ")
    ))
}

fn describe_hosted(hosted: &HostedGroup) -> String {
    format!(
        "{:?}, view {}, primary {}, commit {}/{}, head {}",
        hosted.status, hosted.view, hosted.primary, hosted.commit, hosted.commit_max, hosted.head
    )
}

fn print_metadata(cluster: &str, metadata: &ClusterMetadata) {
    println!("cluster {cluster:?}, {} node(s)", metadata.nodes.len());
    for report in &metadata.nodes {
        match &report.status {
            Ok(GroupStatus {
                hosted: Some(hosted), ..
            }) => println!(
                "  node {} {}: metadata {}",
                report.node,
                report.address,
                describe_hosted(hosted)
            ),
            Ok(GroupStatus { hosted: None, .. }) => {
                println!(
                    "  node {} {}: answers, but hosts no metadata replica",
                    report.node, report.address
                )
            }
            Err(error) => println!("  {error}"),
        }
    }
    println!("partitions: {}", metadata.partitions.len());
    for partition in &metadata.partitions {
        let entry = &partition.entry;
        println!(
            "  group {} (stream {}, topic {}, partition {}, {:?})",
            entry.group, entry.stream_id, entry.topic_id, entry.partition_id, entry.durability
        );
        for (node, view) in partition.views.iter().enumerate() {
            match view {
                Ok(Some(hosted)) => println!(
                    "    node {node}: {}, next offset {}",
                    describe_hosted(hosted),
                    hosted.next_offset
                ),
                Ok(None) => println!("    node {node}: does not host it"),
                Err(error) => println!("    node {node}: {error}"),
            }
        }
    }
}

/// Split messages into batches within the cluster's bounds.
fn batches(messages: Vec<Message>) -> Vec<Vec<Message>> {
    let mut out: Vec<Vec<Message>> = Vec::new();
    let mut bytes = 0usize;
    for message in messages {
        let full = out.last().is_none_or(|batch| {
            batch.len() >= MESSAGES_PER_BATCH_MAX || bytes + message.payload.len() > BATCH_BYTES_MAX
        });
        if full {
            out.push(Vec::new());
            bytes = 0;
        }
        bytes += message.payload.len();
        if let Some(batch) = out.last_mut() {
            batch.push(message);
        }
    }
    out
}

async fn run(cli: Cli) -> Result<(), Failure> {
    let mut config = ClientConfig::new(cli.cluster.clone(), cli.nodes.clone());
    config.request_budget = Duration::from_millis(cli.budget_ms);
    let mut client = Client::new(config).map_err(|e| e.to_string())?;
    let login = client.login(&cli.user, &cli.password).await;
    if let Command::Metadata = cli.command {
        if let Err(error) = &login {
            eprintln!("warning: login failed: {error}");
        }
        let metadata = client.cluster_metadata().await;
        print_metadata(&cli.cluster, &metadata);
        return if metadata.nodes.iter().any(|n| n.status.is_ok()) {
            Ok(())
        } else {
            Err("no node answered".into())
        };
    }
    login.map_err(|error| format!("login as {:?}: {error}", cli.user))?;
    match cli.command {
        Command::Metadata => Ok(()),
        Command::CreateStream { name } => {
            let id = client.create_stream(&name).await.map_err(|e| e.to_string())?;
            println!("stream {id} created: {name}");
            Ok(())
        }
        Command::CreateTopic {
            stream,
            name,
            partitions,
            durability,
        } => {
            let durability = match durability {
                DurabilityArg::Replicated => Durability::Replicated,
                DurabilityArg::Persisted => Durability::Persisted,
            };
            let topic = client
                .create_topic(stream, &name, partitions, durability)
                .await
                .map_err(|e| e.to_string())?;
            println!(
                "topic {} created in stream {stream}: {name} ({partitions} partition(s), {durability:?}, metadata op {})",
                topic.topic_id, topic.op
            );
            for (partition, group) in topic.groups.iter().enumerate() {
                println!("  partition {partition}: group {group}");
            }
            Ok(())
        }
        Command::Send { partition, messages } => {
            let group = resolve(&mut client, &partition).await?;
            let payloads: Vec<String> = if messages.is_empty() {
                std::io::stdin()
                    .lock()
                    .lines()
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("reading standard input: {e}"))?
            } else {
                messages
            };
            if payloads.is_empty() {
                return Err("no messages to send (give them as arguments or on standard input)".into());
            }
            // Message ids: this client's id in the high half, a counter in the low.
            let base = client.client_id() << 64;
            let messages: Vec<Message> = payloads
                .into_iter()
                .enumerate()
                .map(|(i, payload)| Message {
                    id: base | i as u128,
                    payload: payload.into_bytes(),
                })
                .collect();
            for batch in batches(messages) {
                let count = batch.len();
                match client.send_messages(group, batch).await {
                    Ok((base, last)) => println!("group {group}: {count} message(s) at offsets {base}..={last}"),
                    Err(error @ Error::NotCommitted { .. }) => {
                        return Err(format!("{error} (earlier batches, if any, were appended)"));
                    }
                    Err(error) => return Err(error.to_string()),
                }
            }
            Ok(())
        }
        Command::Poll {
            partition,
            offset,
            count,
        } => {
            let group = resolve(&mut client, &partition).await?;
            let mut next = offset;
            let mut left = count;
            let mut printed = 0u64;
            let mut log_next = offset;
            while left > 0 {
                let ask = left.min(POLL_MESSAGES_MAX as u32);
                let reply = client.poll(group, next, ask).await.map_err(|e| e.to_string())?;
                log_next = reply.next_offset;
                let Some(last) = reply.messages.last().map(|m| m.offset) else {
                    break;
                };
                for message in &reply.messages {
                    println!("{}\t{}", message.offset, String::from_utf8_lossy(&message.payload));
                    printed += 1;
                }
                left = left.saturating_sub(reply.messages.len() as u32);
                next = last + 1;
            }
            eprintln!("{printed} message(s); the partition's next offset is {log_next}");
            Ok(())
        }
        Command::StoreOffset {
            partition,
            consumer,
            offset,
        } => {
            let group = resolve(&mut client, &partition).await?;
            client
                .store_consumer_offset(group, Consumer::Single { consumer_id: consumer }, offset)
                .await
                .map_err(|e| e.to_string())?;
            println!("group {group}: consumer {consumer} offset stored: {offset}");
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
