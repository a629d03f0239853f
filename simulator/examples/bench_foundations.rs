//! Throughput of the foundation pieces, measured on a `--release` build:
//!
//! ```text
//! cargo run --release -p simulator --example bench_foundations
//! ```
//!
//! - executor polls per second (tasks that yield and get re-picked among many ready);
//! - packet simulator packets per second (each packet submitted, queued, delivered);
//! - echo-world simulated ticks per second (the whole four-phase step).
//!
//! Each figure is the best of several repetitions, to discount a noisy neighbour.
#![allow(clippy::disallowed_methods, reason = "a benchmark reads the wall clock")]

use std::hint::black_box;
use std::time::Instant;

use simulator::executor::{DetExecutor, yield_now};
use simulator::fuzz::{self, FuzzArgs};
use simulator::network::config::NetworkConfig;
use simulator::network::{Delivered, PacketSimulator};

use clap::Parser;

const REPETITIONS: usize = 5;

fn best_rate(mut run: impl FnMut() -> (u64, f64)) -> (u64, f64) {
    (0..REPETITIONS)
        .map(|_| run())
        .map(|(count, seconds)| (count, count as f64 / seconds))
        .fold(
            (0, 0.0),
            |best, current| if current.1 > best.1 { current } else { best },
        )
}

/// Yields per task between two ticks: keeps one round (tasks x this) well under the
/// executor's per-round poll budget, as a real pump's burst of work would.
const YIELDS_PER_TICK: u64 = 100;

/// `tasks` tasks each yielding `yields` times, all ready together, sleeping one tick
/// after every `YIELDS_PER_TICK` yields.
fn executor_polls(tasks: u64, yields: u64) -> (u64, f64) {
    let mut executor = DetExecutor::new(0xBE7C);
    for _ in 0..tasks {
        let handle = executor.handle();
        executor.spawn(None, async move {
            for step in 0..yields {
                if step % YIELDS_PER_TICK == 0 {
                    handle.sleep_micros(10_000).await;
                }
                yield_now().await;
            }
        });
    }
    let started = Instant::now();
    let mut polls = 0;
    let mut now = 0;
    while executor.live_tasks() > 0 {
        polls += executor.run_until_idle().expect("bench tasks never spin").polls;
        now += 10_000;
        executor.advance_time(now);
    }
    (black_box(polls), started.elapsed().as_secs_f64())
}

/// Packets through a perfect 3-replica, 1-client network: every tick each process sends
/// `per_path` packets to every other process, then everything due is delivered.
fn packets(ticks: u64, per_path: usize) -> (u64, f64) {
    let processes = 4;
    let mut network: PacketSimulator<Vec<u8>> = PacketSimulator::new(NetworkConfig::perfect(), 3, 1, 7);
    let mut out: Vec<Delivered<Vec<u8>>> = Vec::with_capacity(1024);
    let payload = vec![1u8; 64];
    let started = Instant::now();
    let mut delivered = 0u64;
    for _ in 0..ticks {
        for from in 0..processes {
            for to in 0..processes {
                if from != to {
                    for _ in 0..per_path {
                        network.submit(from, to, payload.clone());
                    }
                }
            }
        }
        network.deliver_due(&mut out);
        delivered += out.len() as u64;
        out.clear();
        network.advance();
    }
    assert_eq!(network.stats().evicted, 0, "the bench must not measure evictions");
    (black_box(delivered), started.elapsed().as_secs_f64())
}

fn echo_world(ticks: u64) -> (u64, f64) {
    let args = FuzzArgs::parse_from(["workload-fuzz", "--ticks", &ticks.to_string()]);
    let started = Instant::now();
    let report = fuzz::run(&args, 1, &mut std::io::sink()).expect("sink never fails");
    assert_eq!(report.verdict, fuzz::Verdict::Pass);
    (report.ticks, started.elapsed().as_secs_f64())
}

fn main() {
    let (polls, rate) = best_rate(|| executor_polls(64, 10_000));
    println!("executor: {polls} polls, 64 ready tasks: {:.1} M polls/s", rate / 1e6);
    let (polls, rate) = best_rate(|| executor_polls(1, 1_000_000));
    println!("executor: {polls} polls, 1 ready task: {:.1} M polls/s", rate / 1e6);
    let (packets, rate) = best_rate(|| packets(50_000, 4));
    println!(
        "network: {packets} packets submitted and delivered: {:.1} M packets/s",
        rate / 1e6
    );
    let (ticks, rate) = best_rate(|| echo_world(100_000));
    println!(
        "echo world (3 replicas, 1 client, perfect network): {ticks} ticks: {:.0} ticks/s",
        rate
    );
}
