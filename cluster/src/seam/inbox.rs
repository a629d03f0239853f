//! A shard's inbox: frames delivered by the bus wait here until the pump takes them.
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
                // One receiver per inbox: the pump. Replace rather than accumulate, and
                // keep the stored waker when it already wakes this task (the pump polls
                // its inbox at every tick; a clone and a drop each time were two atomic
                // reference-count updates).
                match &mut state.waker {
                    Some(waker) => waker.clone_from(cx.waker()),
                    empty => *empty = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
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

    #[test]
    fn push_wakes_a_pending_receiver_and_frames_come_out_in_order() {
        let inbox = Inbox::new();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
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
