//! Replaying recorded events: one consumer's share of a fault schedule (the harness's
//! crashes and disk windows, the network's partitions and clogs, the outages), handed
//! out as their ticks come. Kept apart from `fault_schedule` so the network, which
//! consumes a share, does not depend on the schedule that names its faults.

/// One consumer's share of a schedule being replayed: its events in tick order,
/// handed out as their ticks come.
#[derive(Clone, Debug)]
pub struct Replay<T> {
    events: std::collections::VecDeque<(u64, T)>,
}

impl<T> Replay<T> {
    /// A replay of `events` (in tick order).
    pub fn new(events: impl IntoIterator<Item = (u64, T)>) -> Self {
        Self {
            events: events.into_iter().collect(),
        }
    }

    /// The next event due at or before `tick`, if any. An event whose tick passed
    /// while its consumer was not asking (faults off during a drain, say) comes out
    /// late; a consumer that must not act late compares the tick itself.
    pub fn next_due(&mut self, tick: u64) -> Option<(u64, T)> {
        if self.events.front().is_some_and(|(at, _)| *at <= tick) {
            self.events.pop_front()
        } else {
            None
        }
    }

    /// Drop the events of ticks before `tick` (they can no longer come due).
    pub fn discard_before(&mut self, tick: u64) {
        while self.events.front().is_some_and(|(at, _)| *at < tick) {
            self.events.pop_front();
        }
    }

    /// Hand out the next event if it is due exactly at `tick` and `wanted`.
    pub fn pop_if(&mut self, tick: u64, wanted: impl FnOnce(&T) -> bool) -> bool {
        if self
            .events
            .front()
            .is_some_and(|(at, value)| *at == tick && wanted(value))
        {
            self.events.pop_front();
            true
        } else {
            false
        }
    }

    /// Events not handed out yet.
    pub fn remaining(&self) -> usize {
        self.events.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_hands_out_events_as_their_ticks_come() {
        let mut replay = Replay::new([(3, 'a'), (3, 'b'), (9, 'c')]);
        assert_eq!(replay.next_due(2), None);
        assert_eq!(replay.next_due(3), Some((3, 'a')));
        assert_eq!(replay.next_due(3), Some((3, 'b')));
        assert_eq!(replay.next_due(3), None);
        assert_eq!(replay.next_due(20), Some((9, 'c')), "late events still come out");
        assert_eq!(replay.remaining(), 0);
    }
}
