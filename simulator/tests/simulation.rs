//! The four-phase `Simulation`: delivery, crashes, and the lost-wakeup check.

use std::cell::Cell;
use std::rc::Rc;

use cluster::seam::{Bus, ProcessId, TICK};
use cluster::wire::{self, Command};
use simulator::simulation::{Simulation, SimulationConfig, SimulationError};

fn world(replicas: usize, clients: usize) -> Simulation {
    Simulation::new(7, &SimulationConfig::perfect(replicas, clients, 1))
}

#[test]
fn a_frame_sent_in_a_tick_arrives_in_a_later_tick() {
    let mut simulation = world(2, 0);
    let received_at = Rc::new(Cell::new(0u64));
    let inbox = simulation.inbox(ProcessId(1));
    let seen = received_at.clone();
    let bus = simulation.bus(ProcessId(1));
    simulation.spawn(ProcessId(1), async move {
        let (from, frame) = inbox.recv().await;
        assert_eq!(from, ProcessId(0));
        assert_eq!(
            wire::open(&frame).map(|(header, _)| header.command),
            Ok(Command::Request)
        );
        seen.set(bus.realtime_micros());
    });
    let sender = simulation.bus(ProcessId(0));
    simulation.spawn(ProcessId(0), async move {
        sender.send(ProcessId(1), wire::seal(Command::Request, b"x"));
    });
    simulation.step().expect("step 1");
    assert_eq!(received_at.get(), 0, "nothing arrives in the tick it was sent");
    for _ in 0..20 {
        simulation.step().expect("step");
    }
    let epoch = simulator::clock::SIMULATION_EPOCH_MICROS;
    assert!(
        received_at.get() > epoch + TICK.as_micros() as u64,
        "arrived after tick 1"
    );
    assert_eq!(simulation.stats().frames_delivered, 1);
}

#[test]
fn a_frame_nobody_reads_is_reported_as_a_lost_wakeup() {
    let mut simulation = world(2, 0);
    // Process 1 runs a task that never reads its inbox.
    let bus = simulation.bus(ProcessId(1));
    simulation.spawn(ProcessId(1), async move {
        loop {
            bus.sleep(TICK * 1000).await;
        }
    });
    let sender = simulation.bus(ProcessId(0));
    simulation.spawn(ProcessId(0), async move {
        sender.send(ProcessId(1), wire::seal(Command::Request, b"hello"))
    });
    let error = (0..50)
        .find_map(|_| simulation.step().err())
        .expect("the unread frame must be caught");
    let SimulationError::LostWakeup { process, frames, .. } = error else {
        panic!("expected a lost wakeup, got {error}");
    };
    assert_eq!((process, frames), (ProcessId(1), 1));
    assert!(
        error.to_string().starts_with("lost wakeup: p1 inbox holds 1 frame(s)"),
        "{error}"
    );
}

#[test]
fn a_crash_drops_the_process_tasks_and_traffic_and_a_restart_brings_it_back() {
    let mut simulation = world(2, 0);
    let polls = Rc::new(Cell::new(0u32));
    let counter = polls.clone();
    let bus = simulation.bus(ProcessId(1));
    let inbox = simulation.inbox(ProcessId(1));
    simulation.spawn(ProcessId(1), async move {
        loop {
            let _ = inbox.recv().await;
            counter.set(counter.get() + 1);
            let _ = &bus;
        }
    });
    let sender = simulation.bus(ProcessId(0));
    simulation.spawn(ProcessId(0), async move {
        loop {
            sender.send(ProcessId(1), wire::seal(Command::Request, b"tick"));
            sender.sleep(TICK).await;
        }
    });
    for _ in 0..20 {
        simulation.step().expect("step");
    }
    let before_crash = polls.get();
    assert!(before_crash > 10, "p1 received {before_crash} frames");
    assert_eq!(simulation.executor().tasks_of(ProcessId(1)), 1);

    simulation.crash(ProcessId(1));
    assert!(!simulation.is_up(ProcessId(1)));
    assert_eq!(
        simulation.executor().tasks_of(ProcessId(1)),
        0,
        "tasks dropped mid-await"
    );
    for _ in 0..20 {
        simulation.step().expect("a crashed process's inbox is not checked");
    }
    assert_eq!(polls.get(), before_crash, "nothing reaches a crashed process");
    assert!(simulation.network().stats().dropped_crashed > 0);

    simulation.restart(ProcessId(1));
    let inbox = simulation.inbox(ProcessId(1));
    let counter = polls.clone();
    simulation.spawn(ProcessId(1), async move {
        loop {
            let _ = inbox.recv().await;
            counter.set(counter.get() + 1);
        }
    });
    for _ in 0..20 {
        simulation.step().expect("step");
    }
    assert!(polls.get() > before_crash + 10, "traffic resumes after restart");
    assert_eq!((simulation.stats().crashes, simulation.stats().restarts), (1, 1));
}

#[test]
fn frames_to_a_process_outside_the_world_are_counted_as_unroutable() {
    let mut simulation = world(1, 0);
    let bus = simulation.bus(ProcessId(0));
    simulation.spawn(ProcessId(0), async move {
        bus.send(ProcessId(42), wire::seal(Command::Request, b"?"))
    });
    simulation.step().expect("step");
    assert_eq!(simulation.stats().frames_unroutable, 1);
}
