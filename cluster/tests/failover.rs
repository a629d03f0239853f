//! Killing real node processes under load: the claims the simulator makes, checked on
//! three `node` processes over loopback TCP with real disks.
//!
//! Each test runs producers (one client and one connection each, one partition each)
//! on a thread of their own while the test kills and restarts nodes with SIGKILL. At
//! the end, with the load stopped, every node must report the same commit, state
//! digest and next offset for every partition (count and checksum on every replica),
//! and a poll of each partition must hold every message a producer was told is
//! committed exactly once at the offset it was told, no message twice, and none of the
//! messages the client reported as never taken (`NotAccepted`).
//!
//! The timeline of a kill (new primary elected, producers acknowledged again, the
//! restarted node caught up) is printed; run with `--nocapture` to see it. No test
//! asserts a duration: the machine's speed is not the cluster's correctness.

#![allow(clippy::disallowed_methods, reason = "tests time their deadlines on the wall clock")]

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cluster::client::{Client, ClientConfig, Error};
use cluster::metadata::{DEFAULT_ROOT_PASSWORD, Durability, ROOT_USERNAME};
use cluster::node::GroupStatus;
use cluster::partition::Message;
use cluster::vsr::Status;
use support::{LoopbackCluster, status};

/// The loopback tests start nine processes between them; one at a time keeps a
/// two-core CI machine from starving a node's heartbeats into a spurious view change.
static ONE_CLUSTER_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_CLUSTER_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How long any phase may take before the test fails: a view change takes about 5 s
/// of silence plus an election; repair of a few thousand messages well under a second.
const PHASE_TIMEOUT: Duration = Duration::from_secs(60);

/// Messages per batch a producer sends.
const BATCH_MESSAGES: u64 = 8;

/// Pause between a producer's batches: enough load to have prepares in flight at the
/// kill, little enough for debug builds of three nodes on two cores.
const PRODUCER_PAUSE: Duration = Duration::from_millis(5);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The id of producer `producer`'s message `seq`: unique across the test.
fn message_id(producer: u64, seq: u64) -> u128 {
    (u128::from(producer) << 64) | u128::from(seq)
}

/// The payload of message `id`: derived from it, so a poll can check it.
fn payload(id: u128) -> Vec<u8> {
    format!("message {id:#x}").into_bytes()
}

/// What one producer saw.
#[derive(Debug, Default)]
struct ProducerLog {
    /// Messages acknowledged, with the offset the cluster gave each.
    acked: Vec<(u128, u64)>,
    /// Messages whose outcome the client reported unknown (`NotCommitted`).
    unknown: Vec<u128>,
    /// Messages the client reported never taken (`NotAccepted`).
    not_taken: Vec<u128>,
    /// Any other error, in words (the test requires none).
    other_errors: Vec<String>,
    /// When each acknowledgement arrived.
    ack_times: Vec<Instant>,
}

/// Producers running on their own thread until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    logs: Vec<Arc<Mutex<ProducerLog>>>,
    thread: Option<JoinHandle<()>>,
}

impl Load {
    /// One producer per group, each with its own client.
    fn start(cluster: &LoopbackCluster, groups: &[u64]) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let logs: Vec<Arc<Mutex<ProducerLog>>> = groups.iter().map(|_| Arc::default()).collect();
        let config = ClientConfig::new(cluster.name.clone(), cluster.client_addresses());
        let (thread_stop, thread_logs, groups) = (stop.clone(), logs.clone(), groups.to_vec());
        let thread = std::thread::spawn(move || {
            let producers = groups
                .iter()
                .zip(&thread_logs)
                .enumerate()
                .map(|(producer, (&group, log))| {
                    let (config, stop, log) = (config.clone(), thread_stop.clone(), log.clone());
                    async move { produce(config, producer as u64, group, stop, log).await }
                });
            runtime().block_on(futures::future::join_all(producers));
        });
        Self {
            stop,
            logs,
            thread: Some(thread),
        }
    }

    /// Stop the producers and wait for their last requests to end.
    fn stop(mut self) -> Vec<ProducerLog> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("producer thread");
        }
        self.logs
            .iter()
            .map(|log| std::mem::take(&mut *log.lock().expect("log")))
            .collect()
    }

    /// Acknowledgements so far, over every producer.
    fn acks(&self) -> usize {
        self.logs.iter().map(|log| log.lock().expect("log").acked.len()).sum()
    }

    /// The first acknowledgement after `since` of every producer, if each has one.
    fn each_acked_after(&self, since: Instant) -> Option<Vec<Instant>> {
        self.logs
            .iter()
            .map(|log| {
                log.lock()
                    .expect("log")
                    .ack_times
                    .iter()
                    .copied()
                    .find(|at| *at > since)
            })
            .collect()
    }
}

async fn produce(config: ClientConfig, producer: u64, group: u64, stop: Arc<AtomicBool>, log: Arc<Mutex<ProducerLog>>) {
    let mut client = match Client::new(config) {
        Ok(client) => client,
        Err(error) => {
            log.lock().expect("log").other_errors.push(format!("client: {error}"));
            return;
        }
    };
    if let Err(error) = client.login(ROOT_USERNAME, DEFAULT_ROOT_PASSWORD).await {
        log.lock().expect("log").other_errors.push(format!("login: {error}"));
        return;
    }
    let mut seq = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let ids: Vec<u128> = (seq..seq + BATCH_MESSAGES).map(|s| message_id(producer, s)).collect();
        seq += BATCH_MESSAGES;
        let messages = ids
            .iter()
            .map(|&id| Message {
                id,
                payload: payload(id),
            })
            .collect();
        let outcome = client.send_messages(group, messages).await;
        {
            let mut log = log.lock().expect("log");
            match outcome {
                Ok((base, last)) => {
                    assert_eq!(last - base + 1, BATCH_MESSAGES, "a batch keeps its size");
                    log.acked
                        .extend(ids.iter().zip(base..=last).map(|(id, offset)| (*id, offset)));
                    log.ack_times.push(Instant::now());
                }
                Err(Error::NotCommitted { .. }) => log.unknown.extend(ids),
                Err(Error::NotAccepted { .. }) => log.not_taken.extend(ids),
                Err(other) => log.other_errors.push(other.to_string()),
            }
        }
        tokio::time::sleep(PRODUCER_PAUSE).await;
    }
}

/// Log in as root, create a stream and a topic of `partitions` partitions.
fn create_topic(cluster: &LoopbackCluster, partitions: u32, durability: Durability) -> Vec<u64> {
    runtime().block_on(async {
        let mut client =
            Client::new(ClientConfig::new(cluster.name.clone(), cluster.client_addresses())).expect("client");
        client.login(ROOT_USERNAME, DEFAULT_ROOT_PASSWORD).await.expect("login");
        let stream = client.create_stream("load").await.expect("create stream");
        client
            .create_topic(stream, "events", partitions, durability)
            .await
            .expect("create topic")
            .groups
    })
}

/// Poll until `done` holds for the statuses of `groups` on the running nodes.
fn wait_for(
    cluster: &LoopbackCluster,
    groups: &[u64],
    what: &str,
    done: impl Fn(&BTreeMap<(usize, u64), GroupStatus>) -> bool,
) -> Instant {
    let started = Instant::now();
    loop {
        let mut seen = BTreeMap::new();
        for (node, address) in cluster.client_addresses().into_iter().enumerate() {
            if !cluster.running(node) {
                continue;
            }
            for &group in groups {
                if let Some(status) = status(&cluster.name, address, group) {
                    seen.insert((node, group), status);
                }
            }
        }
        if done(&seen) {
            return Instant::now();
        }
        assert!(
            started.elapsed() < PHASE_TIMEOUT,
            "{what}: not within {PHASE_TIMEOUT:?}; last statuses: {seen:#?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Poll until the two nodes other than `lost` host every group in a normal view that
/// `lost` does not lead; returns when they did.
fn wait_for_survivors_to_lead(cluster: &LoopbackCluster, groups: &[u64], lost: usize) -> Instant {
    wait_for(cluster, groups, "the survivors lead every group", |seen| {
        groups.iter().all(|group| {
            seen.iter()
                .filter(|((_, g), _)| g == group)
                .filter_map(|(_, status)| status.hosted)
                .all(|h| h.status == Status::Normal && usize::from(h.primary) != lost)
                && seen.keys().filter(|(_, g)| g == group).count() == 2
        })
    })
}

/// Poll until every producer has an acknowledgement after `since` (`what` happened
/// then); returns each producer's first.
fn wait_for_writes_after(load: &Load, since: Instant, what: &str) -> Vec<Instant> {
    let started = Instant::now();
    loop {
        if let Some(times) = load.each_acked_after(since) {
            return times;
        }
        assert!(
            started.elapsed() < PHASE_TIMEOUT,
            "a producer never wrote again after {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every running node hosts every group in a normal view, and each group's replicas
/// agree on view, commit, digest and next offset.
fn converged(cluster: &LoopbackCluster, groups: &[u64]) -> impl Fn(&BTreeMap<(usize, u64), GroupStatus>) -> bool {
    let running: Vec<usize> = (0..cluster.client_addresses().len())
        .filter(|n| cluster.running(*n))
        .collect();
    let groups = groups.to_vec();
    move |seen| {
        groups.iter().all(|group| {
            let hosted: Vec<_> = running
                .iter()
                .filter_map(|node| seen.get(&(*node, *group)).and_then(|status| status.hosted))
                .collect();
            hosted.len() == running.len()
                && hosted.iter().all(|h| {
                    h.status == Status::Normal
                        && h.commit == h.commit_max
                        && (h.view, h.commit, h.state_digest, h.next_offset)
                            == (
                                hosted[0].view,
                                hosted[0].commit,
                                hosted[0].state_digest,
                                hosted[0].next_offset,
                            )
                })
        })
    }
}

/// Every partition holds each acknowledged message once at its acknowledged offset, no
/// message twice, nothing reported never taken; returns the messages counted.
fn check_every_acknowledged_message(cluster: &LoopbackCluster, groups: &[u64], logs: &[ProducerLog]) -> u64 {
    for (producer, log) in logs.iter().enumerate() {
        assert!(
            log.other_errors.is_empty(),
            "producer {producer} errors: {:?}",
            log.other_errors
        );
        assert!(!log.acked.is_empty(), "producer {producer} was never acknowledged");
    }
    runtime().block_on(async {
        let mut client =
            Client::new(ClientConfig::new(cluster.name.clone(), cluster.client_addresses())).expect("client");
        client.login(ROOT_USERNAME, DEFAULT_ROOT_PASSWORD).await.expect("login");
        let mut total = 0u64;
        for (producer, (&group, log)) in groups.iter().zip(logs).enumerate() {
            let mut held: BTreeMap<u128, u64> = BTreeMap::new();
            let mut offset = 0u64;
            loop {
                let reply = client.poll(group, offset, 1_000).await.expect("poll");
                for message in &reply.messages {
                    assert_eq!(message.payload, payload(message.id), "payload of {:#x}", message.id);
                    if let Some(earlier) = held.insert(message.id, message.offset) {
                        panic!(
                            "message {:#x} appended twice: offsets {earlier} and {}",
                            message.id, message.offset
                        );
                    }
                }
                match reply.messages.last() {
                    Some(last) => offset = last.offset + 1,
                    None => break,
                }
                if offset >= reply.next_offset {
                    break;
                }
            }
            for (id, offset) in &log.acked {
                assert_eq!(
                    held.get(id),
                    Some(offset),
                    "producer {producer}: acknowledged message {id:#x} at {offset}"
                );
            }
            for id in &log.not_taken {
                assert!(
                    !held.contains_key(id),
                    "producer {producer}: {id:#x} was reported never taken but is there"
                );
            }
            let expected_max = (log.acked.len() + log.unknown.len()) as u64;
            assert!(
                held.len() as u64 >= log.acked.len() as u64 && held.len() as u64 <= expected_max,
                "producer {producer}: {} messages held, {} acknowledged, {} unknown",
                held.len(),
                log.acked.len(),
                log.unknown.len()
            );
            total += held.len() as u64;
        }
        total
    })
}

fn secs(since: Instant, at: Instant) -> f64 {
    at.saturating_duration_since(since).as_secs_f64()
}

/// How the cluster came back after a fault at `fault`, in seconds from it: a live
/// primary every survivor follows, the first and last producer acknowledged again, the
/// node restarted, every replica agreeing (and how long that took after the restart).
fn recovery_timeline(
    fault: Instant,
    elected: Instant,
    writes_again: &[Instant],
    restarted: Instant,
    caught_up: Instant,
) -> String {
    let again = writes_again.iter().map(|at| secs(fault, *at));
    format!(
        "every survivor normal with a live primary +{:.3} s; producers acknowledged again +{:.3}..+{:.3} s; \
         restarted +{:.3} s; every replica agreed +{:.3} s ({:.3} s after the restart)",
        secs(fault, elected),
        again.clone().fold(f64::MAX, f64::min),
        again.fold(0.0, f64::max),
        secs(fault, restarted),
        secs(fault, caught_up),
        secs(restarted, caught_up),
    )
}

/// Three nodes of two shards, a stream and a topic of `partitions` partitions, every
/// group started, and one producer per partition running until 200 messages are
/// acknowledged. Returns the cluster, the groups (metadata first) and the load.
fn loaded_cluster(test: &str, partitions: u32, durability: Durability) -> (LoopbackCluster, Vec<u64>, Load) {
    let mut cluster = LoopbackCluster::new(test, 3, 2);
    cluster.start_all();
    let mut groups = vec![0u64];
    groups.extend(create_topic(&cluster, partitions, durability));
    wait_for(&cluster, &groups, "every group starts", converged(&cluster, &groups));
    let load = Load::start(&cluster, &groups[1..]);
    let started = Instant::now();
    while load.acks() < 200 {
        assert!(started.elapsed() < PHASE_TIMEOUT, "the load never got going");
        std::thread::sleep(Duration::from_millis(20));
    }
    (cluster, groups, load)
}

/// Kill `victim` mid-load, let the producers go on, restart it, let it repair, check.
fn kill_mid_load_then_restart(test: &str, victim: usize) {
    let _guard = one_at_a_time();
    let (mut cluster, groups, load) = loaded_cluster(test, 3, Durability::Replicated);
    let acked_at_kill = load.acks();
    let killed_at = Instant::now();
    cluster.kill(victim);
    let elected_at = wait_for_survivors_to_lead(&cluster, &groups, victim);
    let writes_again = wait_for_writes_after(&load, killed_at, "the kill");
    std::thread::sleep(Duration::from_millis(500));
    let restarted_at = Instant::now();
    cluster.spawn(victim);
    cluster.wait_ready(victim);
    std::thread::sleep(Duration::from_millis(1_000));
    let logs = load.stop();
    let caught_up_at = wait_for(&cluster, &groups, "every replica agrees", converged(&cluster, &groups));
    let total = check_every_acknowledged_message(&cluster, &groups[1..], &logs);

    // Replicas of one cluster never send each other a frame the transport refuses (it
    // drops the connection): a node's batched heartbeats once named no cluster, and
    // every peer connection closed over and over under load.
    for node in 0..3 {
        let log = cluster.log(node);
        assert!(
            !log.contains("rejected a frame from a peer"),
            "node {node} refused a peer's frame:\n{log}"
        );
    }
    let unknown: usize = logs.iter().map(|log| log.unknown.len()).sum();
    let not_taken: usize = logs.iter().map(|log| log.not_taken.len()).sum();
    println!(
        "{test}: killed node {victim} after {acked_at_kill} acknowledged messages; {}; {total} messages held, each \
         acknowledged one exactly once; {unknown} reported unknown, {not_taken} never taken",
        recovery_timeline(killed_at, elected_at, &writes_again, restarted_at, caught_up_at)
    );
}

#[test]
fn the_primary_killed_mid_load_loses_no_acknowledged_message_and_rejoins_after_a_restart() {
    kill_mid_load_then_restart("kill-primary", 0);
}

#[test]
fn a_backup_killed_mid_load_loses_no_acknowledged_message_and_rejoins_after_a_restart() {
    kill_mid_load_then_restart("kill-backup", 2);
}

#[test]
fn persisted_writes_acknowledged_before_every_node_is_killed_survive_the_restart() {
    let _guard = one_at_a_time();
    let (mut cluster, groups, load) = loaded_cluster("restart-all", 2, Durability::Persisted);
    let killed_at = Instant::now();
    for node in 0..3 {
        cluster.kill(node);
    }
    for node in 0..3 {
        cluster.spawn(node);
    }
    for node in 0..3 {
        cluster.wait_ready(node);
    }
    let started = Instant::now();
    while load.each_acked_after(killed_at).is_none() {
        assert!(
            started.elapsed() < PHASE_TIMEOUT,
            "a producer never wrote again after the restart"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let logs = load.stop();
    wait_for(&cluster, &groups, "every replica agrees", converged(&cluster, &groups));
    let total = check_every_acknowledged_message(&cluster, &groups[1..], &logs);
    println!("restart-all: {total} messages held after every node was killed and restarted");
}

#[test]
fn replicated_writes_acknowledged_before_every_node_is_stopped_cleanly_survive_the_restart() {
    // A `replicated` topic acknowledges from memory and publishes its WAL only on a new
    // view: without the shutdown publication, stopping every node at once discarded
    // every acknowledged message at the next boot.
    let _guard = one_at_a_time();
    let (mut cluster, groups, load) = loaded_cluster("stop-all", 2, Durability::Replicated);
    let logs = load.stop();
    for node in 0..3 {
        cluster.stop(node);
        assert!(
            cluster.log(node).contains("every journal is durable"),
            "{}",
            cluster.log(node)
        );
    }
    for node in 0..3 {
        cluster.spawn(node);
    }
    for node in 0..3 {
        cluster.wait_ready(node);
    }
    wait_for(&cluster, &groups, "every replica agrees", converged(&cluster, &groups));
    let total = check_every_acknowledged_message(&cluster, &groups[1..], &logs);
    println!("stop-all: {total} messages held after every node was stopped cleanly and restarted");
}

/// fdatasync calls the primary makes before strace starts failing every one of them:
/// past start-up and the topic's creation (a few dozen), well inside the `persisted`
/// load, where every prepare the primary journals is synced.
const PRIMARY_SYNCS_BEFORE_EIO: u32 = 300;

/// The exit status of a node that stopped on a storage failure.
const EXIT_STORAGE_FAILED: i32 = cluster::server::EXIT_STORAGE_FAILED as i32;

/// The `strace` that injects the disk faults (Debian's package; `scripts/install-test-tools.sh`
/// installs it).
fn strace() -> &'static str {
    let found = std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        found,
        "strace is needed to fail a node's fdatasync; run scripts/install-test-tools.sh (apt-get install strace)"
    );
    "strace"
}

#[test]
fn a_primary_whose_fdatasync_fails_stops_and_writes_resume_on_a_new_primary() {
    // Found by hand on three loopback nodes: one primary whose fdatasync failed kept
    // heartbeating while its WAL refused every prepare, so nothing committed for as
    // long as it ran. Now the replica stops, the node exits for its supervisor, the
    // others elect a new primary, and nothing acknowledged is lost.
    let _guard = one_at_a_time();
    let mut cluster = LoopbackCluster::new("fsync-eio", 3, 2);
    let inject = format!("inject=fdatasync:error=EIO:when={PRIMARY_SYNCS_BEFORE_EIO}+");
    cluster.spawn_wrapped(
        0,
        &[
            strace(),
            "-f",
            "-qq",
            "-o",
            "/dev/null",
            "-e",
            "trace=fdatasync",
            "-e",
            &inject,
        ],
    );
    cluster.spawn(1);
    cluster.spawn(2);
    for node in 0..3 {
        cluster.wait_ready(node);
    }
    let mut groups = vec![0u64];
    groups.extend(create_topic(&cluster, 3, Durability::Persisted));
    wait_for(&cluster, &groups, "every group starts", converged(&cluster, &groups));
    let load = Load::start(&cluster, &groups[1..]);

    let status = cluster.wait_exit(0, PHASE_TIMEOUT);
    let failed_at = Instant::now();
    let log = cluster.log(0);
    let status = status.unwrap_or_else(|| panic!("the primary never stopped on its failing disk; its log:\n{log}"));
    assert_eq!(status.code(), Some(EXIT_STORAGE_FAILED), "{status}; its log:\n{log}");
    assert!(log.contains("storage failed"), "{log}");
    assert!(log.contains("node stopping on a storage failure"), "{log}");
    let acked_at_failure = load.acks();
    assert!(acked_at_failure > 0, "the load never got going before the disk failed");

    let elected_at = wait_for_survivors_to_lead(&cluster, &groups, 0);
    let writes_again = wait_for_writes_after(&load, failed_at, "the primary's disk failed");
    // The supervisor starts the node again, on a disk that works again.
    let restarted_at = Instant::now();
    cluster.spawn(0);
    cluster.wait_ready(0);
    std::thread::sleep(Duration::from_millis(1_000));
    let logs = load.stop();
    let caught_up_at = wait_for(&cluster, &groups, "every replica agrees", converged(&cluster, &groups));
    let total = check_every_acknowledged_message(&cluster, &groups[1..], &logs);
    println!(
        "fsync-eio: the primary's fdatasync failed from its call {PRIMARY_SYNCS_BEFORE_EIO} on, after {acked_at_failure} \
         acknowledged messages; the node exited with status {EXIT_STORAGE_FAILED}; {}; {total} messages held, each \
         acknowledged one exactly once",
        recovery_timeline(failed_at, elected_at, &writes_again, restarted_at, caught_up_at)
    );
}

#[test]
fn a_backup_whose_metadata_wal_record_rotted_repairs_it_from_peers_and_converges() {
    let _guard = one_at_a_time();
    let (mut cluster, groups, load) = loaded_cluster("wal-rot", 2, Durability::Replicated);
    cluster.stop(2);
    let wal = cluster.data_dir(2).join("metadata").join("wal");
    let mut bytes = std::fs::read(&wal).expect("the backup's metadata WAL");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&wal, &bytes).expect("rot one bit");
    cluster.spawn(2);
    cluster.wait_ready(2);
    std::thread::sleep(Duration::from_millis(1_000));
    let logs = load.stop();
    wait_for(&cluster, &groups, "every replica agrees", converged(&cluster, &groups));
    let log = cluster.log(2);
    assert!(
        log.contains("metadata WAL damaged"),
        "the backup never saw the rotted record; its log:\n{log}"
    );
    let total = check_every_acknowledged_message(&cluster, &groups[1..], &logs);
    println!(
        "wal-rot: bit {} of byte {middle} of {} flipped; the backup held the record as unknown, rejoined and \
         converged; {total} messages held",
        4,
        wal.display()
    );
}
