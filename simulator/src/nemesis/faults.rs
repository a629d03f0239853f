//! The nemesis's fault kinds and the seeded plan that deals them out.
//!
//! A run's plan is drawn from its seed alone: which kind comes next, how long it lasts,
//! how long to wait before the next one, and a coin for each choice of target. What a
//! coin resolves to (which node is primary at that moment) depends on the real cluster,
//! so the *resolved* schedule is logged as it happens (`FaultRecord`, one JSON line per
//! fault) and reported; the plan makes two runs of one seed try the same faults in the
//! same order, not hit the same bytes.
//!
//! Every run deals the whole deck of enabled kinds first, in a seeded order, so each
//! kind is injected at least once per run; then it draws kinds at random until the
//! fault phase ends.

pub use crate::nemesis_format::{Category, FaultKind, FaultRecord};
use crate::rng::SimRng;

/// Parse a `--faults` list: `all`, a comma list of kinds and categories (`process`,
/// `network`, `disk`, `clock`), or `none`.
pub fn parse_kinds(text: &str) -> Result<Vec<FaultKind>, String> {
    let mut kinds = Vec::new();
    for part in text.split(',').map(str::trim).filter(|part| !part.is_empty()) {
        let category = match part {
            "all" => {
                kinds.extend_from_slice(FaultKind::ALL);
                continue;
            }
            "none" => continue,
            "process" => Some(Category::Process),
            "network" => Some(Category::Network),
            "disk" => Some(Category::Disk),
            "clock" => Some(Category::Clock),
            _ => None,
        };
        match category {
            Some(category) => kinds.extend(FaultKind::ALL.iter().filter(|kind| kind.category() == category)),
            None => kinds.push(part.parse()?),
        }
    }
    kinds.sort();
    kinds.dedup();
    Ok(kinds)
}

/// The shortest pause between two faults starting, in milliseconds: long enough that
/// two faults are not the same instant to the cluster.
pub const FAULT_GAP_MS_MIN: u64 = 200;
/// The longest pause between two faults starting, in milliseconds: short enough that a
/// run of 30 s (a 20-run, 10-minute campaign) deals the whole deck (14 kinds) in its
/// fault phase, next to the 10 to 15 s a healed cluster takes to serve again.
pub const FAULT_GAP_MS_MAX: u64 = 1_000;
/// Faults active at once at most. Two lets a node die while another is cut off (no
/// majority for a while: safety must hold, liveness is not asked), without leaving the
/// cluster down for most of the run.
pub const FAULTS_CONCURRENT_MAX: usize = 2;

/// One fault the plan asks for, before its target is resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedFault {
    /// The kind.
    pub kind: FaultKind,
    /// How long it lasts, milliseconds (for kill and terminate: how long the node stays
    /// down; for the exclusive kinds: the pause between stopping and starting).
    pub duration_ms: u64,
    /// A coin for each target choice (index into the candidates, modulo their count).
    pub coins: [u64; 4],
    /// Clock faults: the offset in seconds (signed) or the rate in per mille.
    pub clock: i64,
}

/// The seeded plan of one run.
pub struct Plan {
    rng: SimRng,
    deck: Vec<FaultKind>,
    enabled: Vec<FaultKind>,
}

impl Plan {
    /// The plan of a run with `seed` over `enabled` kinds (none: the plan is empty).
    pub fn new(seed: u64, enabled: &[FaultKind]) -> Plan {
        let mut rng = SimRng::new(seed ^ 0x6e65_6d65_7369_7300);
        let mut deck = enabled.to_vec();
        // Fisher-Yates, drawn from the seed; dealt from the back.
        for index in (1..deck.len()).rev() {
            let other = rng.index(index + 1);
            deck.swap(index, other);
        }
        Plan {
            rng,
            deck,
            enabled: enabled.to_vec(),
        }
    }

    /// Whether every kind of the first deck has been dealt.
    pub fn deck_dealt(&self) -> bool {
        self.deck.is_empty()
    }

    /// The pause before the next fault starts, milliseconds.
    pub fn gap_ms(&mut self) -> u64 {
        self.rng.range_inclusive(FAULT_GAP_MS_MIN, FAULT_GAP_MS_MAX)
    }

    /// The next fault (`None` when no kind is enabled).
    pub fn next_fault(&mut self) -> Option<PlannedFault> {
        let kind = match self.deck.pop() {
            Some(kind) => kind,
            None if self.enabled.is_empty() => return None,
            None => self.enabled[self.rng.index(self.enabled.len())],
        };
        let (low, high) = duration_range_ms(kind);
        let duration_ms = self.rng.range_inclusive(low, high);
        let coins = [
            self.rng.next_u64(),
            self.rng.next_u64(),
            self.rng.next_u64(),
            self.rng.next_u64(),
        ];
        let clock = match kind {
            FaultKind::ClockOffset => {
                // Seconds to two hours, either way: a node whose NTP never ran, or
                // jumped.
                let magnitude = self.rng.range_inclusive(1, 7_200) as i64;
                if self.rng.below(2) == 0 { -magnitude } else { magnitude }
            }
            FaultKind::ClockDrift => {
                // Per mille: half speed to double speed, never exactly 1.
                const RATES_PER_MILLE: [i64; 6] = [500, 800, 950, 1_050, 1_250, 2_000];
                RATES_PER_MILLE[self.rng.index(RATES_PER_MILLE.len())]
            }
            _ => 0,
        };
        Some(PlannedFault {
            kind,
            duration_ms,
            coins,
            clock,
        })
    }
}

/// How long a fault of `kind` lasts, milliseconds, lowest and highest. Pause and
/// network faults straddle the production failure detection (5 s of silence, about
/// 2 s of it before a backup suspects) so some end before the cluster notices and some
/// after; all are short so one run deals every kind.
pub fn duration_range_ms(kind: FaultKind) -> (u64, u64) {
    match kind {
        FaultKind::Kill | FaultKind::Terminate => (200, 1_500),
        FaultKind::KillAll | FaultKind::RollingRestart => (100, 500),
        FaultKind::PausePrimary => (500, 3_000),
        FaultKind::Isolate | FaultKind::OneWay | FaultKind::CutLink | FaultKind::Split => (500, 3_000),
        FaultKind::FsyncPrimary | FaultKind::WriteError | FaultKind::ReadError => (500, 2_000),
        FaultKind::ClockOffset | FaultKind::ClockDrift => (1_500, 3_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_deals_every_enabled_kind_before_repeating_one() {
        let mut plan = Plan::new(7, FaultKind::ALL);
        let mut first: Vec<FaultKind> = (0..FaultKind::ALL.len())
            .map(|_| plan.next_fault().expect("a fault").kind)
            .collect();
        assert!(plan.deck_dealt());
        first.sort();
        assert_eq!(first, FaultKind::ALL.to_vec());
    }

    #[test]
    fn a_plan_is_the_same_for_the_same_seed_and_differs_for_another() {
        let draw = |seed| {
            let mut plan = Plan::new(seed, FaultKind::ALL);
            (0..30).map(|_| plan.next_fault().expect("a fault")).collect::<Vec<_>>()
        };
        assert_eq!(draw(5), draw(5));
        assert_ne!(draw(5), draw(6));
    }

    #[test]
    fn fault_lists_take_kinds_categories_all_and_none_and_name_an_unknown_kind() {
        assert_eq!(parse_kinds("all").expect("all"), FaultKind::ALL.to_vec());
        assert_eq!(parse_kinds("none").expect("none"), Vec::<FaultKind>::new());
        assert_eq!(
            parse_kinds("clock,kill").expect("list"),
            vec![FaultKind::Kill, FaultKind::ClockOffset, FaultKind::ClockDrift]
        );
        let error = parse_kinds("kill,frobnicate").expect_err("unknown");
        assert!(
            error.contains("frobnicate") && error.contains("pause-primary"),
            "{error}"
        );
    }

    #[test]
    fn an_empty_plan_deals_nothing() {
        assert_eq!(Plan::new(1, &[]).next_fault(), None);
    }
}
