//! Timelines: a run is a root seed plus an ordered list of branch points, each a tick
//! and a salt. At a branch point the run's choice streams are reseeded, so the run
//! goes on from the state its prefix reached with fresh randomness: the fuzzer's way
//! of trying many futures of one rare moment (see `campaign --explore`).
//!
//! What a branch reseeds (every stream that decides what happens *next*):
//! the network (delays, loss, duplication, corruption, clogs, partitions), the
//! executor's choice of the next ready task, the shard a packet enters on, the crash
//! and restart injector, power losses, WAL rot, each simulated disk (writeback order,
//! tears, slow and failed operations), the whole-cluster outage coin, the adversary,
//! and the workload (what each client asks for next, and the contended driver).
//!
//! What it keeps (the world the prefix was built in, so that what the prefix reached
//! stays reachable): the swarm profile's draws, the buggify knobs, each replica's clock
//! offset and drift (drawn once at boot), the run's flags, and the liveness phase's
//! choice of its core (a function of the seed, drawn when that phase starts).
//!
//! How: each stream takes one draw of its own and is reseeded from that draw mixed with
//! the branch's key ([`BranchKey`], from the tick and the salt). The prefix fixes every
//! stream's state, so a child is a pure function of (seed, branch points); distinct
//! streams stay distinct because each mixes its own draw; and a run with no branch
//! points draws nothing extra, so it is exactly the run it was before timelines.

use std::fmt;

/// Branch points a timeline may hold. An exploration branches a run where it first
/// reaches something rare; a chain of 64 such moments is far past anything an
/// exploration's budget reaches, and the bound keeps a repro command readable.
pub const BRANCH_POINTS_MAX: usize = 64;

/// Where a timeline forks: at the start of simulation tick `tick` (before anything of
/// that tick runs), every choice stream is reseeded with `salt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BranchPoint {
    /// The simulation tick the branch is taken at (the tick `step` is about to run).
    pub tick: u64,
    /// Which of the futures from that tick: distinct salts give distinct children.
    pub salt: u64,
}

impl BranchPoint {
    /// The key each stream mixes into its reseed.
    pub fn key(self) -> BranchKey {
        BranchKey(splitmix64(
            splitmix64(self.tick) ^ self.salt.rotate_left(29) ^ BRANCH_KEY_SALT,
        ))
    }
}

impl fmt::Display for BranchPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.tick, self.salt)
    }
}

/// Mixed into every key, so a branch key never equals a tick's or a salt's own hash.
const BRANCH_KEY_SALT: u64 = 0xB7A1_0C4E_5EED_0045;

/// The 64-bit value a branch mixes into every stream's reseed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchKey(pub u64);

/// SplitMix64's finaliser: a bijection that spreads every input bit over the output.
fn splitmix64(mut value: u64) -> u64 {
    value = value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    value ^ (value >> 31)
}

/// A run's branch points, in tick order (at most one per tick).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Branches {
    points: Vec<BranchPoint>,
}

impl Branches {
    /// No branch points: the root timeline, exactly the run of its seed.
    pub fn none() -> Self {
        Self::default()
    }

    /// Branch points from a list; refused (with the reason) unless ticks are at least
    /// 1, strictly increasing, and at most [`BRANCH_POINTS_MAX`] of them.
    pub fn new(points: Vec<BranchPoint>) -> Result<Self, String> {
        if points.len() > BRANCH_POINTS_MAX {
            return Err(format!(
                "{} branch points; at most {BRANCH_POINTS_MAX} are allowed",
                points.len()
            ));
        }
        if let Some(point) = points.iter().find(|point| point.tick == 0) {
            return Err(format!(
                "branch point {point}: ticks start at 1 (tick 0 is before the run; change the seed instead)"
            ));
        }
        if let Some(pair) = points.windows(2).find(|pair| pair[0].tick >= pair[1].tick) {
            return Err(format!(
                "branch points {} and {}: ticks must be strictly increasing (one branch per tick)",
                pair[0], pair[1]
            ));
        }
        Ok(Self { points })
    }

    /// Parse `T:S[,T:S...]` (ticks and salts in decimal), as `--branch` takes it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Self::none());
        }
        let points = text
            .split(',')
            .map(|part| {
                let part = part.trim();
                let (tick, salt) = part
                    .split_once(':')
                    .ok_or_else(|| format!("branch point {part:?}: expected TICK:SALT, e.g. 4200:1"))?;
                let tick = tick
                    .trim()
                    .parse::<u64>()
                    .map_err(|error| format!("branch point {part:?}: tick {tick:?} is not a number ({error})"))?;
                let salt = salt
                    .trim()
                    .parse::<u64>()
                    .map_err(|error| format!("branch point {part:?}: salt {salt:?} is not a number ({error})"))?;
                Ok(BranchPoint { tick, salt })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Self::new(points)
    }

    /// The points, in tick order.
    pub fn points(&self) -> &[BranchPoint] {
        &self.points
    }

    /// Whether this is the root timeline.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// How many points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// These points and then `point` (a child of this timeline branching later).
    /// Refused if `point` is not after the last point.
    pub fn then(&self, point: BranchPoint) -> Result<Self, String> {
        let mut points = self.points.clone();
        points.push(point);
        Self::new(points)
    }

    /// These points without the one at `index` (the shrinker's step).
    pub fn without(&self, index: usize) -> Self {
        let mut points = self.points.clone();
        points.remove(index);
        Self { points }
    }

    /// The point to take at the start of tick `tick`, if any.
    pub fn at(&self, tick: u64) -> Option<BranchPoint> {
        // Few points; a search keeps the type a plain sorted list.
        self.points
            .binary_search_by_key(&tick, |point| point.tick)
            .ok()
            .map(|index| self.points[index])
    }
}

impl fmt::Display for Branches {
    /// `T:S,T:S`, as `--branch` takes it (empty for the root timeline).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, point) in self.points.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{point}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_points_round_trip_through_their_flag_text() {
        let branches = Branches::parse("4200:1, 9000:17").expect("valid");
        assert_eq!(
            branches.points(),
            &[
                BranchPoint { tick: 4200, salt: 1 },
                BranchPoint { tick: 9000, salt: 17 }
            ]
        );
        assert_eq!(branches.to_string(), "4200:1,9000:17");
        assert_eq!(Branches::parse(&branches.to_string()), Ok(branches.clone()));
        assert_eq!(branches.at(9000), Some(BranchPoint { tick: 9000, salt: 17 }));
        assert_eq!(branches.at(9001), None);
        assert_eq!(Branches::parse(""), Ok(Branches::none()));
        assert_eq!(branches.without(0).to_string(), "9000:17");
    }

    #[test]
    fn bad_branch_text_is_refused_naming_the_point() {
        for (text, says) in [
            ("4200", "expected TICK:SALT"),
            ("x:1", "is not a number"),
            ("5:y", "is not a number"),
            ("0:1", "ticks start at 1"),
            ("9:1,9:2", "strictly increasing"),
            ("9:1,5:2", "strictly increasing"),
        ] {
            let error = Branches::parse(text).expect_err(text);
            assert!(error.contains(says), "{text}: {error}");
        }
        let many = (1..=BRANCH_POINTS_MAX as u64 + 1)
            .map(|tick| format!("{tick}:0"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(Branches::parse(&many).expect_err("too many").contains("at most"));
    }

    #[test]
    fn keys_differ_by_tick_and_by_salt() {
        let keys: Vec<u64> = [(1, 0), (1, 1), (2, 0), (2, 1), (0x1_0000, 0), (0, 0x1_0000)]
            .iter()
            .map(|&(tick, salt)| BranchPoint { tick, salt }.key().0)
            .collect();
        for (index, key) in keys.iter().enumerate() {
            assert!(!keys[index + 1..].contains(key), "key {index} repeats");
        }
    }
}
