//! A shard's inbox: frames delivered by the bus wait here until the pump takes them,
//! and so do notices that a peer's connection closed ([`Inbox::push_closed`]).
//!
//! Single-threaded on purpose (`Rc`, no locks): the producer is the simulator's
//! delivery phase or the production transport task on the same shard thread. A push
//! wakes the task waiting in [`Inbox::recv`]; the simulator checks at quiescence that
//! no live inbox still holds frames, which is how a missing wake-up is caught.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::ProcessId;

/// Frames an inbox holds at most. A shard drains its inbox every time it is polled, so
/// only a burst within one delivery round fills it; 4,096 covers a full 64-packet link
/// from each of 64 peers. Past it, frames are dropped and counted, like a lossy network.
pub const INBOX_FRAMES_MAX: usize = 4_096;

/// Closed-connection notices an inbox holds at most. A notice names a peer, and one
/// already waiting is not queued twice, so only a caller naming many distinct peers
/// between two polls reaches this; the replicas of a cluster are far fewer
/// (`REPLICAS_MAX`). Past it, notices are dropped: a notice only hastens a view
/// change the liveness window would start anyway.
pub const CLOSED_NOTICES_MAX: usize = 16;

/// What happened to a pushed frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InboxPush {
    /// Queued for the pump.
    Queued,
    /// Dropped: the inbox already held [`INBOX_FRAMES_MAX`] frames.
    Full,
}

#[derive(Default)]
struct InboxState {
    frames: VecDeque<(ProcessId, Vec<u8>)>,
    /// Peers whose connection closed, oldest first, each at most once.
    closed: VecDeque<ProcessId>,
    waker: Option<Waker>,
    dropped_full: u64,
}

/// A cloneable handle to one shard's inbox.
#[derive(Clone, Default)]
pub struct Inbox {
    state: Rc<RefCell<InboxState>>,
}

impl Inbox {
    /// An empty inbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queue a frame from `from` and wake the receiver.
    pub fn push(&self, from: ProcessId, frame: Vec<u8>) -> InboxPush {
        let waker = {
            let mut state = self.state.borrow_mut();
            if state.frames.len() >= INBOX_FRAMES_MAX {
                state.dropped_full += 1;
                return InboxPush::Full;
            }
            state.frames.push_back((from, frame));
            state.waker.take()
        };
        // Wake outside the borrow: a waker may run arbitrary code.
        if let Some(waker) = waker {
            waker.wake();
        }
        InboxPush::Queued
    }

    /// Note that the connection from `peer` closed (the transport saw it end, or a
    /// dial of it refused) and wake the receiver. A notice already waiting for the
    /// same peer is not queued again. Returns false if it was dropped (the inbox
    /// already held [`CLOSED_NOTICES_MAX`] notices).
    pub fn push_closed(&self, peer: ProcessId) -> bool {
        let waker = {
            let mut state = self.state.borrow_mut();
            if state.closed.contains(&peer) {
                return true;
            }
            if state.closed.len() >= CLOSED_NOTICES_MAX {
                return false;
            }
            state.closed.push_back(peer);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }

    /// Wait for the next closed-connection notice (see [`Inbox::push_closed`]).
    pub fn closed(&self) -> Closed {
        Closed { inbox: self.clone() }
    }

    /// Closed-connection notices waiting.
    pub fn closed_waiting(&self) -> usize {
        self.state.borrow().closed.len()
    }

    /// Take the oldest frame without waiting.
    pub fn try_recv(&self) -> Option<(ProcessId, Vec<u8>)> {
        self.state.borrow_mut().frames.pop_front()
    }

    /// Wait for the next frame.
    pub fn recv(&self) -> Recv {
        Recv { inbox: self.clone() }
    }

    /// Frames waiting.
    pub fn len(&self) -> usize {
        self.state.borrow().frames.len()
    }

    /// Whether no frame is waiting.
    pub fn is_empty(&self) -> bool {
        self.state.borrow().frames.is_empty()
    }

    /// Frames dropped because the inbox was full.
    pub fn dropped_full(&self) -> u64 {
        self.state.borrow().dropped_full
    }
}

/// What a shard's pump takes from its inbox ([`Inbox::poll_next`]).
#[derive(Debug, PartialEq, Eq)]
pub enum InboxEvent {
    /// A frame and who sent it.
    Frame(ProcessId, Vec<u8>),
    /// A peer's connection closed.
    Closed(ProcessId),
}

impl Inbox {
    /// The oldest frame, else the oldest closed-connection notice, else register `cx`
    /// to be woken by the next push of either. Frames come first, as a burst should
    /// drain before the pump looks elsewhere. This is what the pump polls: one borrow
    /// and one waker check for both queues, where a [`Recv`] and a [`Closed`] each
    /// clone the inbox and register on their own.
    pub fn poll_next(&self, cx: &mut Context<'_>) -> Poll<InboxEvent> {
        let mut state = self.state.borrow_mut();
        if let Some((from, frame)) = state.frames.pop_front() {
            return Poll::Ready(InboxEvent::Frame(from, frame));
        }
        if let Some(peer) = state.closed.pop_front() {
            return Poll::Ready(InboxEvent::Closed(peer));
        }
        state.register(cx);
        Poll::Pending
    }
}

/// Future returned by [`Inbox::recv`].
pub struct Recv {
    inbox: Inbox,
}

impl Future for Recv {
    type Output = (ProcessId, Vec<u8>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.inbox.state.borrow_mut();
        match state.frames.pop_front() {
            Some(frame) => Poll::Ready(frame),
            None => {
                state.register(cx);
                Poll::Pending
            }
        }
    }
}

/// Future returned by [`Inbox::closed`]: the next peer whose connection closed.
pub struct Closed {
    inbox: Inbox,
}

impl Future for Closed {
    type Output = ProcessId;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.inbox.state.borrow_mut();
        match state.closed.pop_front() {
            Some(peer) => Poll::Ready(peer),
            None => {
                state.register(cx);
                Poll::Pending
            }
        }
    }
}

impl InboxState {
    /// Remember the task to wake. One receiver per inbox (the pump, which may wait on
    /// frames and notices at once: the same task, so one slot serves both). Replace
    /// rather than accumulate, and keep the stored waker when it already wakes this
    /// task (the pump polls its inbox at every tick; a clone and a drop each time were
    /// two atomic reference-count updates).
    fn register(&mut self, cx: &Context<'_>) {
        match &mut self.waker {
            Some(waker) => waker.clone_from(cx.waker()),
            empty => *empty = Some(cx.waker().clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct CountingWaker(AtomicUsize);
    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A waker that counts its wakes, and the count.
    fn counting_waker() -> (Waker, Arc<CountingWaker>) {
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        (Waker::from(counter.clone()), counter)
    }

    #[test]
    fn push_wakes_a_pending_receiver_and_frames_come_out_in_order() {
        let inbox = Inbox::new();
        let (waker, counter) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let mut recv = inbox.recv();
        assert!(Pin::new(&mut recv).poll(&mut cx).is_pending());
        assert_eq!(inbox.push(ProcessId(1), vec![1]), InboxPush::Queued);
        assert_eq!(inbox.push(ProcessId(2), vec![2]), InboxPush::Queued);
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "one wake per registration");
        assert_eq!(Pin::new(&mut recv).poll(&mut cx), Poll::Ready((ProcessId(1), vec![1])));
        assert_eq!(inbox.len(), 1);
        assert_eq!(inbox.try_recv(), Some((ProcessId(2), vec![2])));
        assert!(inbox.is_empty());
    }

    #[test]
    fn a_closed_notice_wakes_the_receiver_once_per_peer_and_comes_out_in_order() {
        let inbox = Inbox::new();
        let (waker, counter) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let mut closed = inbox.closed();
        assert!(Pin::new(&mut closed).poll(&mut cx).is_pending());
        assert!(inbox.push_closed(ProcessId(2)));
        assert!(
            inbox.push_closed(ProcessId(2)),
            "a second notice for a waiting peer is the same notice"
        );
        assert!(inbox.push_closed(ProcessId(0)));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "one wake per registration");
        assert_eq!(inbox.closed_waiting(), 2);
        assert_eq!(Pin::new(&mut closed).poll(&mut cx), Poll::Ready(ProcessId(2)));
        assert_eq!(Pin::new(&mut inbox.closed()).poll(&mut cx), Poll::Ready(ProcessId(0)));
        assert!(inbox.is_empty(), "notices are not frames");
        for peer in 0..CLOSED_NOTICES_MAX as u32 {
            assert!(inbox.push_closed(ProcessId(peer)));
        }
        assert!(
            !inbox.push_closed(ProcessId(1_000)),
            "past the bound a notice is dropped"
        );
    }

    #[test]
    fn the_pump_takes_frames_before_notices_and_one_push_of_either_wakes_it() {
        let inbox = Inbox::new();
        let (waker, counter) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(inbox.poll_next(&mut cx).is_pending());
        assert!(inbox.push_closed(ProcessId(2)));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "a notice wakes the pump");
        assert_eq!(inbox.push(ProcessId(1), vec![1]), InboxPush::Queued);
        assert_eq!(inbox.push(ProcessId(3), vec![3]), InboxPush::Queued);
        assert_eq!(
            inbox.poll_next(&mut cx),
            Poll::Ready(InboxEvent::Frame(ProcessId(1), vec![1]))
        );
        assert_eq!(
            inbox.poll_next(&mut cx),
            Poll::Ready(InboxEvent::Frame(ProcessId(3), vec![3]))
        );
        assert_eq!(inbox.poll_next(&mut cx), Poll::Ready(InboxEvent::Closed(ProcessId(2))));
        assert!(inbox.poll_next(&mut cx).is_pending());
        assert_eq!(inbox.push(ProcessId(1), vec![4]), InboxPush::Queued);
        assert_eq!(counter.0.load(Ordering::SeqCst), 2, "a frame wakes the pump");
    }

    #[test]
    fn a_full_inbox_drops_and_counts() {
        let inbox = Inbox::new();
        for i in 0..INBOX_FRAMES_MAX {
            assert_eq!(inbox.push(ProcessId(0), vec![i as u8]), InboxPush::Queued);
        }
        assert_eq!(inbox.push(ProcessId(0), vec![0]), InboxPush::Full);
        assert_eq!(inbox.dropped_full(), 1);
        assert_eq!(inbox.len(), INBOX_FRAMES_MAX);
    }
}
