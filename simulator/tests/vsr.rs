//! Consensus scenarios on the simulated cluster: normal operation, primary failover,
//! recovery, and a replica whose superblock write fails.

use std::cell::RefCell;
use std::rc::Rc;

use cluster::metadata::{DEFAULT_ROOT_PASSWORD, MetadataMachine, MetadataOp, MetadataReply};
use cluster::vsr::{StateMachine, Status};
use cluster::wire::Header;
use simulator::harness::client::ClientDriver;
use simulator::harness::crash::CrashConfig;
use simulator::harness::{Harness, HarnessConfig, SIMULATED_CLUSTER_ID};
use simulator::network::config::NetworkConfig;
use simulator::simulation::SimulationConfig;

/// Every client creates streams with names nobody else uses: every reply must be Ok.
#[derive(Default)]
struct UniqueStreams {
    sent: Vec<u64>,
    ok: u64,
    unexpected: Vec<String>,
    stopped: bool,
}

impl ClientDriver for UniqueStreams {
    fn next_request(&mut self, client: usize) -> Option<(u8, Vec<u8>)> {
        if self.stopped {
            return None;
        }
        if self.sent.len() <= client {
            self.sent.resize(client + 1, 0);
        }
        self.sent[client] += 1;
        let op = MetadataOp::CreateStream {
            name: format!("s-{client}-{}", self.sent[client]),
        };
        Some((op.operation_code(), op.encode()))
    }

    fn on_reply(&mut self, _client: usize, _reply: &Header, body: &[u8]) {
        match MetadataReply::decode(body) {
            Ok(MetadataReply::StreamCreated { .. }) => self.ok += 1,
            other => self.unexpected.push(format!("{other:?}")),
        }
    }
}

fn harness(
    seed: u64,
    replicas: usize,
    network: NetworkConfig,
    crash: CrashConfig,
) -> (Harness<MetadataMachine>, Rc<RefCell<UniqueStreams>>) {
    let driver = Rc::new(RefCell::new(UniqueStreams::default()));
    let config = HarnessConfig {
        simulation: SimulationConfig {
            replicas,
            clients: 1,
            network,
        },
        crash,
    };
    let harness = Harness::new(
        seed,
        &config,
        Box::new(|| MetadataMachine::new(SIMULATED_CLUSTER_ID, DEFAULT_ROOT_PASSWORD)),
        driver.clone(),
    );
    (harness, driver)
}

fn run(harness: &mut Harness<MetadataMachine>, ticks: u64) {
    for _ in 0..ticks {
        if let Err(failure) = harness.step() {
            panic!("{failure}\n{}", harness.status_lines().join("\n"));
        }
    }
}

/// Stop the client, let commit broadcasts reach every backup, then compare the state
/// of every live replica; returns how many were compared.
fn digests_agree(harness: &mut Harness<MetadataMachine>, driver: &Rc<RefCell<UniqueStreams>>) -> usize {
    driver.borrow_mut().stopped = true;
    run(harness, 400);
    let live = harness.live_replicas();
    let top = live.iter().map(|(_, r)| r.borrow().commit_min()).max().unwrap_or(0);
    let digests: Vec<u128> = live
        .iter()
        .filter(|(_, r)| r.borrow().commit_min() == top)
        .map(|(_, r)| r.borrow().state_machine().digest())
        .collect();
    assert!(
        digests.windows(2).all(|pair| pair[0] == pair[1]),
        "replicas at op {top} differ"
    );
    digests.len()
}

#[test]
fn normal_operation_commits_on_every_replica() {
    let (mut harness, driver) = harness(1, 3, NetworkConfig::perfect(), CrashConfig::default());
    run(&mut harness, 2_000);
    {
        let driver = driver.borrow();
        assert!(driver.unexpected.is_empty(), "{:?}", driver.unexpected);
        assert!(driver.ok > 100, "only {} replies in 2,000 ticks", driver.ok);
    }
    assert!(
        harness.checker().ops_compared() >= 3 * 100,
        "{}",
        harness.checker().ops_compared()
    );
    assert_eq!(digests_agree(&mut harness, &driver), 3);
}

#[test]
fn primary_crash_leads_to_a_view_change_and_writes_continue() {
    let (mut harness, driver) = harness(2, 3, NetworkConfig::perfect(), CrashConfig::default());
    run(&mut harness, 500);
    let before = driver.borrow().ok;
    harness.crash_now(0);
    run(&mut harness, 2_500);
    let after = driver.borrow().ok;
    assert!(
        after > before + 50,
        "writes stalled after the primary crashed: {before} -> {after}"
    );
    for (index, replica) in harness.live_replicas() {
        let replica = replica.borrow();
        assert!(replica.view() >= 1, "replica {index} still in view 0");
        assert_eq!(replica.status(), Status::Normal);
    }
    assert!(
        driver.borrow().unexpected.is_empty(),
        "{:?}",
        driver.borrow().unexpected
    );
    assert_eq!(digests_agree(&mut harness, &driver), 2);
}

#[test]
fn a_restarted_replica_recovers_and_catches_up() {
    let (mut harness, driver) = harness(3, 3, NetworkConfig::perfect(), CrashConfig::default());
    run(&mut harness, 500);
    harness.crash_now(2);
    run(&mut harness, 500);
    harness.restart_now(2, 0xABC);
    run(&mut harness, 1_500);
    let live = harness.live_replicas();
    let restarted = &live.iter().find(|(index, _)| *index == 2).expect("replica 2 is up").1;
    let primary_commit = live[0].1.borrow().commit_min();
    let replica = restarted.borrow();
    assert_eq!(replica.status(), Status::Normal);
    assert!(
        replica.commit_min() + 10 >= primary_commit,
        "replica 2 at {} vs {primary_commit}",
        replica.commit_min()
    );
    assert!(driver.borrow().unexpected.is_empty());
}

#[test]
fn superblock_write_failure_withholds_votes() {
    // Replica 2 cannot write its superblock; when the primary dies, replica 1 needs
    // replica 2's vote, which it must never get: the view cannot start.
    let (mut harness, driver) = harness(4, 3, NetworkConfig::perfect(), CrashConfig::default());
    run(&mut harness, 300);
    harness.store(2).set_fail_superblock_writes(true);
    harness.crash_now(0);
    run(&mut harness, 1_500);
    for (index, replica) in harness.live_replicas() {
        assert_ne!(
            replica.borrow().status(),
            Status::Normal,
            "replica {index} started a view without a durable quorum"
        );
    }
    let stalled = driver.borrow().ok;
    // Once the disk recovers, the view starts and writes resume.
    harness.store(2).set_fail_superblock_writes(false);
    run(&mut harness, 1_500);
    assert!(driver.borrow().ok > stalled, "writes never resumed");
    let (_, failures) = harness.store(2).superblock_write_counts();
    assert!(failures > 0, "the fault was never exercised");
}

/// A scratch sweep over seeds with heavy faults and crashes (primary included), using
/// the unique-streams driver: every reply must be Ok and the checks must hold.
fn sweep(seeds: std::ops::Range<u64>, ticks: u64, profile: &str) {
    let profile = simulator::profile::load_profile(profile).expect("built-in profile");
    for seed in seeds {
        let network = profile.resolve(seed).network;
        let crash = CrashConfig {
            crash_probability: 0.01,
            restart_probability: 0.05,
            crash_primary: true,
        };
        let (mut harness, driver) = harness(seed, 3, network, crash);
        for _ in 0..ticks {
            if let Err(failure) = harness.step() {
                panic!("seed {seed}: {failure}\n{}", harness.status_lines().join("\n"));
            }
        }
        // Drain: no new requests, no more crashes; the outstanding request must finish.
        driver.borrow_mut().stopped = true;
        harness.disable_crashes();
        let mut drain_ticks = 0;
        while harness.client_stats()[0].outstanding {
            drain_ticks += 1;
            assert!(
                drain_ticks < 20_000,
                "seed {seed}: drain never finished\n{}",
                harness.status_lines().join("\n")
            );
            if let Err(failure) = harness.step() {
                panic!("seed {seed} (drain): {failure}\n{}", harness.status_lines().join("\n"));
            }
        }
        assert!(
            driver.borrow().unexpected.is_empty(),
            "seed {seed}: {:?}",
            driver.borrow().unexpected
        );
        assert!(
            harness.checker().commits() > 0,
            "seed {seed}: nothing committed\n{}\n{:?}",
            harness.status_lines().join("\n"),
            harness.client_stats()
        );
    }
}

#[test]
fn heavy_faults_with_crashes_keep_replicas_in_agreement() {
    sweep(1..6, 4_000, "heavy");
}

#[test]
#[ignore = "a longer sweep, run by hand: cargo test --release -p simulator --test vsr -- --ignored"]
fn heavy_and_swarm_sweep_200_seeds() {
    sweep(1..200, 6_000, "heavy");
    sweep(1..200, 6_000, "swarm");
}

#[test]
#[ignore = "debug trace"]
fn trace_seed() {
    let seed: u64 = std::env::var("SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(190);
    let profile = simulator::profile::load_profile(&std::env::var("PROFILE").unwrap_or_else(|_| "heavy".into()))
        .expect("built-in profile");
    let network = profile.resolve(seed).network;
    let crash = CrashConfig {
        crash_probability: 0.01,
        restart_probability: 0.05,
        crash_primary: true,
    };
    let (mut harness, driver) = harness(seed, 3, network, crash);
    let mut last: Vec<String> = vec![String::new(); 3];
    for tick in 0..12_000u64 {
        if tick == 6_000 {
            driver.borrow_mut().stopped = true;
            harness.disable_crashes();
        }
        let result = harness.step();
        for (index, line) in harness.status_lines().into_iter().enumerate() {
            if line != last[index] {
                eprintln!("t{tick} {line}");
                last[index] = line;
            }
        }
        if let Err(failure) = result {
            eprintln!("FAIL {failure}");
            break;
        }
    }
}
