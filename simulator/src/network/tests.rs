//! PacketSimulator behaviour: determinism, fault rates, links, clogs, partitions, filters, crashes.
use super::config::{PartitionMode, PartitionSymmetry};
use super::*;

type Log = Vec<(u64, ProcessIndex, ProcessIndex, Vec<u8>, bool)>;

fn payload(command: u8, id: u64) -> Vec<u8> {
    let mut bytes = vec![command];
    bytes.extend_from_slice(&id.to_le_bytes());
    bytes
}

fn id_of(payload: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&payload[1..9]);
    u64::from_le_bytes(bytes)
}

fn faulty() -> NetworkConfig {
    NetworkConfig {
        one_way_delay_min_ticks: 1,
        one_way_delay_mean_ticks: 4,
        packet_loss_probability: 0.05,
        packet_replay_probability: 0.05,
        packet_corruption_probability: 0.05,
        link_capacity_packets: 16,
        partition_probability: 0.02,
        unpartition_probability: 0.1,
        partition_stability_ticks: 10,
        unpartition_stability_ticks: 10,
        partition_mode: PartitionMode::UniformSize,
        partition_symmetry: PartitionSymmetry::Asymmetric,
        path_clog_probability: 0.01,
        path_clog_duration_mean_ticks: 5,
        ..NetworkConfig::perfect()
    }
}

/// Random traffic from a fixed workload stream; returns every delivery with its tick.
fn traffic(config: NetworkConfig, replicas: usize, clients: usize, seed: u64, ticks: u64) -> (Log, NetworkStats) {
    let mut sim = PacketSimulator::new(config, replicas, clients, seed);
    let mut workload = SimRng::new(999);
    let n = replicas + clients;
    let (mut out, mut log, mut id) = (Vec::new(), Vec::new(), 0);
    for _ in 0..ticks {
        for _ in 0..8 {
            let from = workload.index(n);
            let mut to = workload.index(n - 1);
            if to >= from {
                to += 1;
            }
            sim.submit(from, to, payload(workload.below(4) as u8, id));
            id += 1;
        }
        sim.deliver_due(&mut out);
        for d in out.drain(..) {
            log.push((sim.tick(), d.from, d.to, d.payload, d.corrupted));
        }
        assert!(sim.stats().accounted(sim.queued()), "{}", sim.stats());
        sim.advance();
    }
    (log, sim.stats().clone())
}

/// Advance `sim` `ticks` ticks, collecting every packet that comes due.
fn run_for(sim: &mut PacketSimulator<Vec<u8>>, ticks: u64) -> Vec<Delivered<Vec<u8>>> {
    let mut out = Vec::new();
    for _ in 0..ticks {
        sim.advance();
        sim.deliver_due(&mut out);
    }
    out
}

#[test]
fn same_seed_gives_identical_deliveries_and_stats() {
    let (log_a, stats_a) = traffic(faulty(), 3, 2, 42, 3_000);
    let (log_b, stats_b) = traffic(faulty(), 3, 2, 42, 3_000);
    assert_eq!(log_a, log_b);
    assert_eq!(stats_a, stats_b);
    // The run exercised every fault, so the equality covers them.
    assert!(stats_a.lost > 0 && stats_a.replayed > 0 && stats_a.corrupted > 0);
    assert!(stats_a.evicted > 0 && stats_a.partitions_started > 0 && stats_a.clogs_started > 0);
    assert!(stats_a.dropped_partitioned > 0);
}

#[test]
fn different_seed_gives_different_deliveries() {
    let (log_a, stats_a) = traffic(faulty(), 3, 2, 42, 1_000);
    let (log_b, stats_b) = traffic(faulty(), 3, 2, 43, 1_000);
    assert_ne!(log_a, log_b);
    assert_ne!(stats_a, stats_b);
    let (perfect_a, _) = traffic(NetworkConfig::perfect(), 3, 1, 1, 200);
    let (perfect_b, _) = traffic(NetworkConfig::perfect(), 3, 1, 2, 200);
    assert_ne!(perfect_a, perfect_b);
}

fn hamming(a: &[u8], b: &[u8]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

#[test]
fn loss_replay_and_corruption_rates_match_configuration() {
    let config = NetworkConfig {
        packet_loss_probability: 0.1,
        packet_replay_probability: 0.1,
        packet_corruption_probability: 0.1,
        link_capacity_packets: 4_096,
        ..NetworkConfig::perfect()
    };
    let mut sim = PacketSimulator::new(config, 2, 0, 7);
    let original = vec![5u8, 0xAA, 0xAA, 0xAA, 0xAA];
    let mut out = Vec::new();
    for _ in 0..10_000 {
        for _ in 0..10 {
            sim.submit(0, 1, original.clone());
        }
        sim.deliver_due(&mut out);
        for d in out.drain(..) {
            let distance = hamming(&d.payload, &original);
            assert_eq!(distance, u32::from(d.corrupted), "corruption flips exactly one bit");
        }
        sim.advance();
    }
    let s = sim.stats();
    let came_due = (s.delivered + s.lost) as f64;
    assert!(came_due > 100_000.0);
    let loss = s.lost as f64 / came_due;
    let replay = s.replayed as f64 / s.delivered as f64;
    let corrupt = s.corrupted as f64 / s.delivered as f64;
    for (name, rate) in [("loss", loss), ("replay", replay), ("corrupt", corrupt)] {
        assert!((0.09..0.11).contains(&rate), "{name} rate {rate}");
    }
    assert_eq!(s.evicted, 0);
    assert!(s.accounted(sim.queued()));
}

#[test]
fn zero_probability_faults_still_draw_their_coins() {
    // Turning corruption on (with no effect until a packet is damaged) must not
    // move the loss and replay coins: the same packets are lost and replayed.
    let run = |corruption: f64| {
        let config = NetworkConfig {
            packet_loss_probability: 0.2,
            packet_replay_probability: 0.2,
            packet_corruption_probability: corruption,
            ..NetworkConfig::perfect()
        };
        let mut sim = PacketSimulator::new(config, 2, 0, 3);
        let mut out = Vec::new();
        // Empty payloads: corrupt() draws nothing, so only the coin could shift draws.
        for _ in 0..2_000 {
            sim.submit(0, 1, Vec::new());
            sim.deliver_due(&mut out);
            sim.advance();
        }
        let corrupted = out.iter().filter(|d| d.corrupted).count();
        (sim.stats().lost, sim.stats().replayed, out.len(), corrupted)
    };
    let (lost_a, replayed_a, delivered_a, corrupted_a) = run(0.0);
    let (lost_b, replayed_b, delivered_b, corrupted_b) = run(0.5);
    assert_eq!((lost_a, replayed_a, delivered_a), (lost_b, replayed_b, delivered_b));
    assert_eq!(corrupted_a, 0);
    assert!(corrupted_b > 0);
}

#[test]
fn delay_respects_the_floor_and_has_the_configured_mean() {
    let config = NetworkConfig {
        one_way_delay_min_ticks: 2,
        one_way_delay_mean_ticks: 5,
        link_capacity_packets: 4_096,
        ..NetworkConfig::perfect()
    };
    let mut sim = PacketSimulator::new(config, 1, 1, 9);
    let mut out = Vec::new();
    let (mut total, mut count, mut min) = (0u64, 0u64, u64::MAX);
    for tick in 0..10_000u64 {
        for _ in 0..10 {
            sim.submit(1, 0, payload(1, tick));
        }
        sim.deliver_due(&mut out);
        for d in out.drain(..) {
            let delay = sim.tick() - id_of(&d.payload);
            min = min.min(delay);
            total += delay;
            count += 1;
        }
        sim.advance();
    }
    assert_eq!(min, 2, "delay below the floor, or the floor never hit");
    // E[max(2, floor(Exp(5)))] = 2 + e^-0.6 / (1 - e^-0.2) ≈ 5.03.
    let mean = total as f64 / count as f64;
    assert!((4.85..5.2).contains(&mean), "mean delay {mean}");
}

#[test]
fn full_link_evicts_a_random_packet_to_make_room() {
    let mut sim = PacketSimulator::new(NetworkConfig::perfect(), 2, 0, 1);
    for id in 0..100 {
        sim.submit(0, 1, payload(1, id));
    }
    assert_eq!(sim.queued(), 64);
    assert_eq!(sim.stats().evicted, 36);
    let out = run_for(&mut sim, 1_000);
    assert_eq!(out.len(), 64);
    assert_eq!(sim.queued(), 0);
    // Eviction is random, not oldest-first or newest-first.
    let ids: Vec<u64> = out.iter().map(|d| id_of(&d.payload)).collect();
    assert!(ids.iter().any(|&id| id < 36) && ids.contains(&99));
    assert!(sim.stats().accounted(0));
}

#[test]
fn a_manual_clog_holds_packets_then_releases_them() {
    let mut sim = PacketSimulator::new(NetworkConfig::perfect(), 2, 0, 1);
    sim.clog_path(0, 1, 10);
    assert!(sim.path_clogged(0, 1) && !sim.path_clogged(1, 0));
    assert_eq!(sim.stats().clogs_started, 1);
    for id in 0..5 {
        sim.submit(0, 1, payload(1, id));
        sim.submit(1, 0, payload(1, id));
    }
    let mut out = Vec::new();
    for _ in 0..9 {
        sim.advance();
        sim.deliver_due(&mut out);
        assert!(sim.path_clogged(0, 1));
    }
    // The unclogged direction delivered; the clogged one held everything.
    assert!(out.iter().all(|d| d.from == 1));
    assert_eq!(sim.queued(), 5);
    out.clear();
    sim.advance();
    assert!(!sim.path_clogged(0, 1));
    sim.deliver_due(&mut out);
    assert_eq!(out.len(), 5, "every held packet was due and comes out at once");
    assert!(out.iter().all(|d| d.from == 0 && d.to == 1));
}

#[test]
fn random_clogs_start_at_the_configured_rate_and_hold_traffic() {
    let config = NetworkConfig {
        path_clog_probability: 0.01,
        path_clog_duration_mean_ticks: 10,
        ..NetworkConfig::perfect()
    };
    let mut sim = PacketSimulator::new(config, 3, 1, 5);
    let mut out = Vec::new();
    let mut clogged_ticks = 0u64;
    for tick in 0..20_000u64 {
        for from in 0..4 {
            for to in 0..4 {
                if from != to {
                    sim.submit(from, to, payload(1, tick));
                }
            }
        }
        sim.deliver_due(&mut out);
        for d in out.drain(..) {
            assert!(!sim.path_clogged(d.from, d.to), "delivered on a clogged path");
        }
        clogged_ticks += (0..4)
            .flat_map(|f| (0..4).map(move |t| (f, t)))
            .filter(|&(f, t)| sim.path_clogged(f, t))
            .count() as u64;
        sim.advance();
    }
    let clogs = sim.stats().clogs_started;
    // Per path a cycle is ~100 ticks open plus ~10 clogged: 12 paths, 20k ticks ≈ 2,200.
    assert!((1_900..2_500).contains(&clogs), "clogs {clogs}");
    // Mean clog length max(1, floor(Exp(10))) ≈ 9.5.
    let mean = clogged_ticks as f64 / clogs as f64;
    assert!((8.5..10.5).contains(&mean), "mean clog {mean}");
    assert!(sim.stats().accounted(sim.queued()));
}

/// Runs traffic on every path under automatic partitions and checks the
/// lifecycle invariants tick by tick.
fn partition_lifecycle(mode: PartitionMode, symmetry: PartitionSymmetry) {
    let (replicas, clients) = (4, 2);
    let n = replicas + clients;
    let config = NetworkConfig {
        partition_probability: 0.05,
        unpartition_probability: 0.1,
        partition_stability_ticks: 15,
        unpartition_stability_ticks: 10,
        partition_mode: mode,
        partition_symmetry: symmetry,
        ..NetworkConfig::perfect()
    };
    let mut sim = PacketSimulator::new(config, replicas, clients, 21);
    let mut out = Vec::new();
    let mut runs: Vec<(bool, u64)> = vec![(false, 0)];
    let mut client_deliveries_while_partitioned = 0;
    for tick in 0..20_000u64 {
        for from in 0..n {
            for to in 0..n {
                if from != to {
                    sim.submit(from, to, payload(1, tick));
                }
            }
        }
        let partitioned = sim.is_partitioned();
        match runs.last_mut() {
            Some((state, length)) if *state == partitioned => *length += 1,
            _ => runs.push((partitioned, 1)),
        }
        let mut any_cut = false;
        for a in 0..n {
            for b in 0..n {
                let cut = sim.path_cut(a, b);
                any_cut |= cut;
                if a >= replicas || b >= replicas || !partitioned || a == b {
                    assert!(!cut, "{mode:?}: cut ({a}, {b})");
                } else if symmetry == PartitionSymmetry::Symmetric {
                    assert_eq!(cut, sim.path_cut(b, a));
                } else {
                    assert!(!(cut && sim.path_cut(b, a)), "asymmetric cut both ways");
                }
            }
        }
        assert_eq!(any_cut, partitioned);
        sim.deliver_due(&mut out);
        for d in out.drain(..) {
            assert!(!sim.path_cut(d.from, d.to));
            if partitioned && (d.from >= replicas || d.to >= replicas) {
                client_deliveries_while_partitioned += 1;
            }
        }
        sim.advance();
    }
    let stats = sim.stats();
    assert!(stats.partitions_started >= 20, "{mode:?}: {stats}");
    assert!(stats.partitions_healed + 1 >= stats.partitions_started);
    assert!(stats.dropped_partitioned > 0);
    assert!(client_deliveries_while_partitioned > 0);
    // Drop the last, unfinished run; every other run honours its stability window.
    runs.pop();
    for &(partitioned, length) in &runs {
        let floor = if partitioned { 15 } else { 10 };
        assert!(length >= floor, "{mode:?}: a {partitioned} run of {length} ticks");
    }
    // The windows are floors, not fixed lengths.
    assert!(runs.iter().any(|&(p, l)| p && l > 15));
    assert!(stats.accounted(sim.queued()));
}

#[test]
fn partitions_start_heal_and_honour_their_windows_in_every_mode_and_symmetry() {
    for mode in [
        PartitionMode::UniformSize,
        PartitionMode::UniformPartition,
        PartitionMode::IsolateSingle,
    ] {
        for symmetry in [PartitionSymmetry::Symmetric, PartitionSymmetry::Asymmetric] {
            partition_lifecycle(mode, symmetry);
        }
    }
}

#[test]
fn no_partitions_with_mode_none_or_a_single_replica() {
    for (mode, replicas) in [(PartitionMode::None, 3), (PartitionMode::IsolateSingle, 1)] {
        let config = NetworkConfig {
            partition_probability: 1.0,
            unpartition_probability: 1.0,
            partition_mode: mode,
            ..NetworkConfig::perfect()
        };
        let mut sim = PacketSimulator::<Vec<u8>>::new(config, replicas, 2, 4);
        // With clog draws off, any draw from the fault stream is a partition draw.
        sim.set_automatic_clogs(false);
        let untouched = sim.fault_rng.clone();
        for _ in 0..1_000 {
            sim.advance();
            assert!(!sim.is_partitioned());
        }
        assert_eq!(sim.fault_rng.next_u64(), untouched.clone().next_u64());
        assert_eq!(sim.stats().partitions_started, 0);
    }
}

#[test]
fn zero_probability_clog_coins_are_skipped_only_when_no_partition_draw_follows() {
    // No partition can ever start: the fault stream has no reader, so nothing is drawn.
    let mut quiet = PacketSimulator::<Vec<u8>>::new(NetworkConfig::perfect(), 3, 2, 4);
    let untouched = quiet.fault_rng.clone();
    for _ in 0..1_000 {
        quiet.advance();
    }
    assert_eq!(quiet.fault_rng.next_u64(), untouched.clone().next_u64());

    // Partitions on (never landing here, probability 0): the zero clog coins are still
    // drawn, so the partition coins that follow them sit where they always did. One
    // tick draws one partition coin (its stability window is 0) and one clog coin per
    // directed path between the 5 processes.
    let config = NetworkConfig {
        partition_mode: PartitionMode::IsolateSingle,
        ..NetworkConfig::perfect()
    };
    let mut drawing = PacketSimulator::<Vec<u8>>::new(config, 3, 2, 4);
    let mut expected = drawing.fault_rng.clone();
    drawing.advance();
    for _ in 0..1 + 5 * 4 {
        expected.next_u64();
    }
    assert_eq!(drawing.fault_rng.next_u64(), expected.next_u64());
    assert_eq!(drawing.stats().clogs_started + drawing.stats().partitions_started, 0);
}

#[test]
fn link_filter_drops_blocked_commands_and_passes_others() {
    let mut sim = PacketSimulator::new(NetworkConfig::perfect(), 2, 1, 8);
    sim.set_link_filter(0, 1, CommandFilter::allow_all().block(7));
    assert!(!sim.link_filter(0, 1).allows(7) && sim.link_filter(1, 0).allows(7));
    for id in 0..30 {
        sim.submit(0, 1, payload(7, id));
        sim.submit(0, 1, payload(8, id));
        sim.submit(1, 0, payload(7, id));
    }
    let out = run_for(&mut sim, 200);
    assert_eq!(sim.stats().dropped_filtered, 30);
    assert_eq!(out.len(), 60);
    assert!(out.iter().all(|d| d.payload[0] == 8 || (d.from, d.to) == (1, 0)));
    assert!(sim.stats().accounted(sim.queued()));
}

#[test]
fn crash_drops_queued_and_new_packets_and_restart_reenables() {
    let mut sim = PacketSimulator::new(NetworkConfig::perfect(), 3, 1, 6);
    for id in 0..5 {
        sim.submit(0, 2, payload(1, id));
        sim.submit(3, 2, payload(1, id));
        sim.submit(2, 0, payload(1, id));
    }
    sim.crash(2);
    assert!(!sim.is_up(2) && sim.is_up(0));
    assert_eq!(sim.stats().dropped_crashed, 10);
    assert_eq!(
        sim.queued(),
        5,
        "packets already sent by the crashed process stay in flight"
    );
    sim.submit(0, 2, payload(1, 99));
    sim.submit(2, 1, payload(1, 99));
    assert_eq!(sim.stats().dropped_crashed, 12);
    let out = run_for(&mut sim, 100);
    assert_eq!(out.len(), 5);
    assert!(out.iter().all(|d| (d.from, d.to) == (2, 0)));

    sim.restart(2);
    assert!(sim.is_up(2));
    sim.submit(0, 2, payload(1, 100));
    sim.submit(2, 1, payload(1, 101));
    let out = run_for(&mut sim, 100);
    assert_eq!(out.len(), 2);
    assert!(sim.stats().accounted(sim.queued()));
}

#[test]
fn a_standing_partition_survives_crash_and_restart() {
    let mut sim = PacketSimulator::new(NetworkConfig::perfect(), 3, 1, 6);
    sim.partition_now(&[2]);
    sim.crash(2);
    for _ in 0..10 {
        sim.advance();
    }
    sim.restart(2);
    assert!(sim.is_partitioned());
    assert!(sim.path_cut(2, 0) && sim.path_cut(0, 2) && sim.path_cut(1, 2));
    assert!(!sim.path_cut(0, 1) && !sim.path_cut(3, 2) && !sim.path_cut(2, 3));
    sim.submit(0, 2, payload(1, 0));
    sim.submit(3, 2, payload(1, 1));
    let out = run_for(&mut sim, 100);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].from, out[0].to), (3, 2));
    assert_eq!(sim.stats().dropped_partitioned, 1);
    sim.heal_now();
    assert!(!sim.is_partitioned() && !sim.path_cut(0, 2));
    assert_eq!((sim.stats().partitions_started, sim.stats().partitions_healed), (1, 1));
}

#[test]
fn delivered_by_command_counts_each_command() {
    let mut sim = PacketSimulator::new(NetworkConfig::perfect(), 2, 0, 2);
    for id in 0..30u64 {
        sim.submit(0, 1, payload((id % 3) as u8 * 100, id));
    }
    sim.submit(1, 0, Vec::new());
    run_for(&mut sim, 100);
    let by_command = &sim.stats().delivered_by_command;
    assert_eq!((by_command[0], by_command[100], by_command[200]), (11, 10, 10));
    assert_eq!(by_command.iter().sum::<u64>(), sim.stats().delivered);
}

#[test]
fn vec_payload_command_and_corruption() {
    let mut rng = SimRng::new(1);
    assert_eq!(Vec::<u8>::new().command(), 0);
    assert_eq!(vec![9u8, 1].command(), 9);
    let mut empty: Vec<u8> = Vec::new();
    empty.corrupt(&mut rng);
    assert!(empty.is_empty());
    let original = vec![0u8; 32];
    for _ in 0..100 {
        let mut damaged = original.clone();
        damaged.corrupt(&mut rng);
        assert_eq!(hamming(&damaged, &original), 1);
    }
}

#[test]
fn describe_prints_every_parameter_on_one_line() {
    let config = NetworkConfig {
        packet_loss_probability: 0.02,
        packet_replay_probability: 0.01,
        packet_corruption_probability: 0.001,
        partition_probability: 0.005,
        unpartition_probability: 0.05,
        partition_stability_ticks: 20,
        unpartition_stability_ticks: 40,
        partition_mode: PartitionMode::IsolateSingle,
        partition_symmetry: PartitionSymmetry::Asymmetric,
        path_clog_probability: 0.002,
        path_clog_duration_mean_ticks: 10,
        ..NetworkConfig::perfect()
    };
    let sim = PacketSimulator::<Vec<u8>>::new(config, 3, 1, 0);
    assert_eq!(
        sim.describe(),
        "loss=0.02 replay=0.01 corrupt=0.001 delay=1..3 partition=isolate-single/asymmetric \
         p_partition=0.005 p_unpartition=0.05 stability=20/40 clog=0.002 clog_ticks=10 link_capacity=64"
    );
}

#[test]
fn loopback_is_dropped_and_counted() {
    let mut sim = PacketSimulator::new(NetworkConfig::perfect(), 2, 0, 2);
    sim.submit(1, 1, payload(1, 0));
    assert_eq!((sim.queued(), sim.stats().dropped_loopback), (0, 1));
}
