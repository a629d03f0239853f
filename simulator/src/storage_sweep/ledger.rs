//! What the code under test promised: the items it acknowledged as durable, and every
//! item it ever tried to write.

use std::collections::BTreeMap;

use super::CheckContext;

/// Items by key (an op, a sequence, an offset), as the code under test wrote them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ledger {
    /// key → bytes the code acknowledged as durable (its latest acknowledged value).
    acknowledged: BTreeMap<u64, Vec<u8>>,
    /// key → when (in attempt order) the acknowledged value was attempted.
    acknowledged_at: BTreeMap<u64, u64>,
    /// key → every value the code ever tried to write there, with when it tried.
    attempted: BTreeMap<u64, BTreeMap<Vec<u8>, u64>>,
    /// Attempts so far: the clock that orders them.
    attempts: u64,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// The code is about to write `bytes` under `key`.
    pub fn attempt(&mut self, key: u64, bytes: &[u8]) {
        self.attempts += 1;
        self.attempted
            .entry(key)
            .or_default()
            .insert(bytes.to_vec(), self.attempts);
    }

    /// The code acknowledged `bytes` under `key` as durable (after its sync returned).
    pub fn acknowledge(&mut self, key: u64, bytes: &[u8]) {
        let at = self
            .attempted
            .get(&key)
            .and_then(|values| values.get(bytes))
            .copied()
            .expect("sweep bug: acknowledging a value never attempted");
        self.acknowledged.insert(key, bytes.to_vec());
        self.acknowledged_at.insert(key, at);
    }

    /// The code is about to remove every key above `key` (a truncation): from here on
    /// they are no longer promised, whether or not the removal becomes durable.
    pub fn release_above(&mut self, key: u64) {
        self.acknowledged.retain(|&k, _| k <= key);
        self.acknowledged_at.retain(|&k, _| k <= key);
    }

    /// Acknowledged items, by key.
    pub fn acknowledged(&self) -> &BTreeMap<u64, Vec<u8>> {
        &self.acknowledged
    }

    /// Whether `bytes` was ever attempted under `key`.
    pub fn was_attempted(&self, key: u64, bytes: &[u8]) -> bool {
        self.attempted
            .get(&key)
            .is_some_and(|values| values.contains_key(bytes))
    }

    /// Whether recovery may return `bytes` under `key`: the acknowledged value or one
    /// attempted after it (a newer write in flight), or, while nothing is acknowledged
    /// there, any attempted value. For checks that find one value and must decide
    /// whether it is allowed, rather than compare a whole recovered log.
    pub fn may_recover(&self, key: u64, bytes: &[u8]) -> bool {
        match self.acknowledged.get(&key) {
            Some(acknowledged) => acknowledged == bytes || self.supersedes_acknowledged(key, bytes),
            None => self.was_attempted(key, bytes),
        }
    }

    /// Whether `bytes` was attempted under `key` after its acknowledged value was: a
    /// newer write in flight may legitimately replace an acknowledged value.
    fn supersedes_acknowledged(&self, key: u64, bytes: &[u8]) -> bool {
        let acknowledged_at = self.acknowledged_at.get(&key).copied().unwrap_or(0);
        self.attempted
            .get(&key)
            .and_then(|values| values.get(bytes))
            .is_some_and(|&at| at > acknowledged_at)
    }

    /// Check a recovered log: every acknowledged item is there with its acknowledged
    /// bytes (or with a value attempted after them, a newer write in flight), and every
    /// recovered item is something the code attempted. Returns how many
    /// acknowledged items were compared.
    ///
    /// `damage_noticed` says recovery reported damage (a torn record, a corrupt one):
    /// together with `context.silent_fault` (the device acknowledged a write it tore) it
    /// excuses a missing acknowledged item, which peers must then repair. A loss that
    /// recovery did not notice, or one without a lying device, is always a failure,
    /// except after a lying sync (`context.lying_sync`) and for a silently dropped write
    /// at the very end of the log, which no single disk can notice.
    pub fn check_recovered(
        &self,
        what: &str,
        recovered: &BTreeMap<u64, Vec<u8>>,
        damage_noticed: bool,
        context: CheckContext,
    ) -> Result<u64, String> {
        self.check_recovered_with_uncertain(what, recovered, damage_noticed, &[], context)
    }

    /// [`Ledger::check_recovered`] for a log whose recovery also names keys it cannot
    /// vouch for (`uncertain`, ascending: a WAL's vacant slots, which a silently dropped
    /// fill leaves looking valid). Under a lying device a missing acknowledged item
    /// there is excused, since recovery said so and the caller treats its log as
    /// possibly lacking acknowledged items; anywhere else the rules are unchanged.
    pub fn check_recovered_with_uncertain(
        &self,
        what: &str,
        recovered: &BTreeMap<u64, Vec<u8>>,
        damage_noticed: bool,
        uncertain: &[u64],
        context: CheckContext,
    ) -> Result<u64, String> {
        for (key, bytes) in recovered {
            if !self.was_attempted(*key, bytes) {
                return Err(format!(
                    "{what}: recovered key {key} ({} bytes) holds bytes that were never written there",
                    bytes.len()
                ));
            }
        }
        let recovered_top = recovered.keys().next_back().copied();
        for (key, bytes) in &self.acknowledged {
            match recovered.get(key) {
                None if context.lying_sync => {}
                None if context.silent_fault && uncertain.binary_search(key).is_ok() => {}
                None if damage_noticed && context.silent_fault => {}
                // A silent tear that landed nothing at the end of a log is a dropped
                // write: the log ends cleanly before it, indistinguishable from one never
                // written. A hole with valid records above it must still be reported.
                None if context.silent_fault && recovered_top.is_none_or(|top| *key > top) => {}
                None if damage_noticed => {
                    return Err(format!(
                        "{what}: acknowledged key {key} was lost as damage, but no write was torn silently"
                    ));
                }
                None => {
                    return Err(format!(
                        "{what}: acknowledged key {key} was lost without recovery noticing"
                    ));
                }
                // A silently dropped overwrite leaves the older record in place, intact:
                // no single-disk format can tell it from the truth (the protocol's hash
                // chain and repair do), so under a lying device an older written value
                // is excused. It must still be one that was written.
                Some(found)
                    if found != bytes
                        && !self.supersedes_acknowledged(*key, found)
                        && !((context.silent_fault || context.lying_sync) && self.was_attempted(*key, found)) =>
                {
                    return Err(format!(
                        "{what}: acknowledged key {key} came back with other bytes ({} bytes, acknowledged {})",
                        found.len(),
                        bytes.len()
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(self.acknowledged.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLEAN: CheckContext = CheckContext {
        silent_fault: false,
        lying_sync: false,
    };
    const LIED: CheckContext = CheckContext {
        silent_fault: true,
        lying_sync: false,
    };

    fn recovered(items: &[(u64, &[u8])]) -> BTreeMap<u64, Vec<u8>> {
        items.iter().map(|(key, bytes)| (*key, bytes.to_vec())).collect()
    }

    #[test]
    fn a_lost_acknowledged_item_and_an_invented_one_are_both_caught() {
        let mut ledger = Ledger::new();
        ledger.attempt(1, b"one");
        ledger.acknowledge(1, b"one");
        ledger.attempt(2, b"two");
        assert_eq!(
            ledger.check_recovered("log", &recovered(&[(1, b"one")]), false, CLEAN),
            Ok(1)
        );
        assert_eq!(
            ledger.check_recovered("log", &recovered(&[(1, b"one"), (2, b"two")]), false, CLEAN),
            Ok(1)
        );
        let lost = ledger
            .check_recovered("log", &recovered(&[(2, b"two")]), false, CLEAN)
            .expect_err("lost");
        assert!(
            lost.contains("acknowledged key 1 was lost without recovery noticing"),
            "{lost}"
        );
        let excused = ledger.check_recovered("log", &recovered(&[(2, b"two")]), true, LIED);
        assert_eq!(
            excused,
            Ok(1),
            "a silently torn write that recovery reported is for peers to repair"
        );
        let unexcused = ledger
            .check_recovered("log", &recovered(&[(2, b"two")]), true, CLEAN)
            .expect_err("damage without a lying device");
        assert!(unexcused.contains("no write was torn silently"), "{unexcused}");
        let invented = ledger
            .check_recovered("log", &recovered(&[(1, b"one"), (3, b"three")]), false, CLEAN)
            .expect_err("invented");
        assert!(invented.contains("never written"), "{invented}");
        let changed = ledger
            .check_recovered("log", &recovered(&[(1, b"uno")]), false, CLEAN)
            .expect_err("changed");
        assert!(changed.contains("never written"), "{changed}");
    }

    /// A fill a lying disk dropped whole leaves a valid vacant slot: the loss is
    /// excused at a key recovery names as uncertain, under a lying device only, and
    /// nowhere else (a hole above it still fails).
    #[test]
    fn a_lost_item_is_excused_only_at_a_key_recovery_named_uncertain_under_a_lying_device() {
        let mut ledger = Ledger::new();
        for (key, bytes) in [(1, &b"one"[..]), (2, b"two"), (3, b"three")] {
            ledger.attempt(key, bytes);
            ledger.acknowledge(key, bytes);
        }
        let missing_two = recovered(&[(1, b"one"), (3, b"three")]);
        assert_eq!(
            ledger.check_recovered_with_uncertain("log", &missing_two, false, &[2], LIED),
            Ok(3)
        );
        let elsewhere = ledger
            .check_recovered_with_uncertain("log", &missing_two, false, &[1, 3], LIED)
            .expect_err("key 2 not named");
        assert!(
            elsewhere.contains("key 2 was lost without recovery noticing"),
            "{elsewhere}"
        );
        let honest_device = ledger
            .check_recovered_with_uncertain("log", &missing_two, false, &[2], CLEAN)
            .expect_err("no lying device");
        assert!(
            honest_device.contains("key 2 was lost without recovery noticing"),
            "{honest_device}"
        );
    }

    #[test]
    fn a_newer_write_may_replace_an_acknowledged_value_but_an_older_one_may_not() {
        let mut ledger = Ledger::new();
        ledger.attempt(5, b"old");
        ledger.attempt(5, b"header");
        ledger.acknowledge(5, b"header");
        ledger.attempt(5, b"prepare");
        assert_eq!(
            ledger.check_recovered("log", &recovered(&[(5, b"prepare")]), false, CLEAN),
            Ok(1)
        );
        let rolled_back = ledger
            .check_recovered("log", &recovered(&[(5, b"old")]), false, CLEAN)
            .expect_err("an older value than the acknowledged one");
        assert!(rolled_back.contains("other bytes"), "{rolled_back}");
    }

    #[test]
    fn may_recover_allows_the_acknowledged_value_and_later_attempts_only() {
        let mut ledger = Ledger::new();
        ledger.attempt(0, b"old");
        assert!(ledger.may_recover(0, b"old"), "attempted, nothing acknowledged");
        assert!(!ledger.may_recover(0, b"never"));
        ledger.acknowledge(0, b"old");
        ledger.attempt(0, b"new");
        assert!(ledger.may_recover(0, b"old"));
        assert!(ledger.may_recover(0, b"new"), "a newer write in flight");
        ledger.acknowledge(0, b"new");
        assert!(!ledger.may_recover(0, b"old"), "older than the acknowledged value");
        // Promising the old value again puts it after the new one.
        ledger.attempt(0, b"old");
        ledger.acknowledge(0, b"old");
        assert!(ledger.may_recover(0, b"old"));
        assert!(!ledger.may_recover(0, b"new"));
    }

    #[test]
    fn a_truncation_releases_the_keys_above_it() {
        let mut ledger = Ledger::new();
        for key in 1..=3 {
            ledger.attempt(key, &[key as u8]);
            ledger.acknowledge(key, &[key as u8]);
        }
        ledger.release_above(1);
        assert_eq!(
            ledger.check_recovered("log", &recovered(&[(1, &[1])]), false, CLEAN),
            Ok(1)
        );
    }
}
