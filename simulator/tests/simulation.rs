//! The four-phase `Simulation`: delivery, crashes, and the lost-wakeup check.

use std::cell::Cell;
use std::rc::Rc;

use cluster::seam::{Bus, ProcessId, TICK};
use cluster::wire::{self, Command};
use simulator::simulation::{Ending, Simulation, SimulationConfig, SimulationError};

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

    simulation.crash(ProcessId(1), Ending::Process);
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

/// What a process took, by tick: `Some(peer)` for a closed-connection notice, `None`
/// for a frame.
type Arrivals = Rc<std::cell::RefCell<Vec<(u64, Option<ProcessId>)>>>;

/// Runs a task on `process` that records, per tick, the frames and closed-connection
/// notices it takes: `(tick, Some(peer))` for a notice, `(tick, None)` for a frame.
fn record_arrivals(simulation: &Simulation, process: ProcessId) -> Arrivals {
    use futures::{FutureExt, select_biased};
    let seen = Rc::new(std::cell::RefCell::new(Vec::new()));
    let log = seen.clone();
    let inbox = simulation.inbox(process);
    let bus = simulation.bus(process);
    simulation.spawn(process, async move {
        loop {
            let arrival = select_biased! {
                _ = inbox.recv().fuse() => None,
                peer = inbox.closed().fuse() => Some(peer),
            };
            let tick = (bus.realtime_micros() - simulator::clock::SIMULATION_EPOCH_MICROS) / TICK.as_micros() as u64;
            log.borrow_mut().push((tick, arrival));
        }
    });
    seen
}

#[test]
fn a_crashed_process_s_peers_see_its_connection_close_after_what_it_sent() {
    let mut simulation = world(2, 0);
    simulation.notify_closed_connections(true);
    let seen = record_arrivals(&simulation, ProcessId(1));
    let sender = simulation.bus(ProcessId(0));
    simulation.spawn(ProcessId(0), async move {
        sender.send(ProcessId(1), wire::seal(Command::Commit, b"sent before the crash"));
        std::future::pending::<()>().await;
    });
    simulation.step().expect("step");
    assert!(simulation.network().queued() > 0, "the frame is on its way");
    simulation.crash(ProcessId(0), Ending::Process);
    for _ in 0..20 {
        simulation.step().expect("step");
    }
    let seen = seen.borrow();
    let notices: Vec<_> = seen.iter().filter(|(_, peer)| peer.is_some()).collect();
    assert_eq!(notices.len(), 1, "one notice for one closed connection: {seen:?}");
    assert_eq!(notices[0].1, Some(ProcessId(0)));
    let frame_at = seen
        .iter()
        .position(|(_, peer)| peer.is_none())
        .expect("the frame arrived");
    let notice_at = seen
        .iter()
        .position(|(_, peer)| peer.is_some())
        .expect("the notice arrived");
    assert!(
        frame_at < notice_at,
        "the close comes behind the data sent before it: {seen:?}"
    );
    assert_eq!(simulation.stats().close_notices_delivered, 1);
}

#[test]
fn a_power_loss_closes_nothing_and_a_partition_holds_the_close_until_it_heals() {
    let mut simulation = world(3, 0);
    simulation.notify_closed_connections(true);
    let seen = record_arrivals(&simulation, ProcessId(1));
    simulation.step().expect("step");
    simulation.crash(ProcessId(2), Ending::PowerLoss);
    for _ in 0..20 {
        simulation.step().expect("step");
    }
    assert!(seen.borrow().is_empty(), "a machine without power resets nothing");

    simulation.network_mut().partition_now(&[0]);
    simulation.crash(ProcessId(0), Ending::Process);
    for _ in 0..20 {
        simulation.step().expect("step");
    }
    assert!(seen.borrow().is_empty(), "the reset does not cross the cut");
    simulation.network_mut().heal_now();
    for _ in 0..5 {
        simulation.step().expect("step");
    }
    assert_eq!(
        seen.borrow().iter().map(|(_, peer)| *peer).collect::<Vec<_>>(),
        [Some(ProcessId(0))]
    );
}

#[test]
fn without_notices_turned_on_a_crash_closes_nothing() {
    let mut simulation = world(2, 0);
    let seen = record_arrivals(&simulation, ProcessId(1));
    simulation.step().expect("step");
    simulation.crash(ProcessId(0), Ending::Process);
    for _ in 0..20 {
        simulation.step().expect("step");
    }
    assert!(
        seen.borrow().is_empty(),
        "a world whose tasks do not take notices gets none"
    );
    assert_eq!(simulation.stats().close_notices_delivered, 0);
}
