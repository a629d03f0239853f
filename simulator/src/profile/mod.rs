//! Fault profiles: the network, disk fault (and, for swarm, topology and crash)
//! parameters of a run, kept as data in `fault-profiles/*.json` (format: `fault-profiles/README.md`).
//!
//! - `none`, `light`, `heavy` are fixed points: a [`NetworkConfig`] written out in full.
//! - `swarm` holds a range for every parameter and draws one value per parameter from
//!   `SimRng::new(swarm_seed)` in a fixed order (see [`swarm`](SwarmRanges::draw); the
//!   order is part of the seed contract).
//!
//! The five built-in files are embedded with `include_str!`, so a binary finds them from
//! any working directory. A name containing `/` or ending in `.json` is read from disk.
//!
//! Loading never panics: every failure is a [`ProfileError`] naming the profile, the
//! dotted field path and what is wrong.

mod error;
mod parse;
mod swarm;
mod validate;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::PathBuf;

pub use error::{ProfileError, ProfileErrorKind};
pub use swarm::{
    IntRange, MAX_GRID_STEPS, ProbabilityRange, SwarmAdversaryRanges, SwarmClusterRanges, SwarmDraw,
    SwarmNetworkRanges, SwarmRanges, SwarmStorageRanges,
};

/// A profile's adversary (the optional `adversary` section; absent: none): a party on
/// the network, not a replica, sending replicas forged, replayed and foreign frames
/// (see `crate::adversary`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AdversaryRates {
    /// Probability, per tick, that the adversary sends one frame to a replica.
    pub forged_frame_probability: f64,
}

/// A profile's disk faults inside cluster runs (the `storage` section).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StorageRates {
    /// Probability that one write, sync or background writeback of a replica's disk
    /// fails with EIO (budgeted: one replica at a time; see `harness::StorageFaults`).
    pub disk_error_probability: f64,
    /// Probability, per restart of the run's corruptible replica, that one bit of its
    /// WAL rots before it boots.
    pub disk_corruption_probability: f64,
    /// Probability that one write or sync of any replica's disk is slow, stalling its
    /// node for up to `harness::SLOW_IO_TICKS_MAX` ticks (a limping disk).
    pub disk_slow_probability: f64,
    /// Probability, per tick of a run on the simulated disk, that the whole cluster
    /// loses power at once (see `fuzz::outage`).
    pub power_outage_probability: f64,
}

use crate::network::config::NetworkConfig;

/// Check a network built or changed outside a profile file (command-line overrides)
/// against the rules a profile file obeys; `origin` names where it came from.
pub fn validate_network(origin: &str, network: &NetworkConfig) -> Result<(), ProfileError> {
    validate::network(origin, "network", network)
}

/// The names of the built-in profiles, in the order error messages list them.
pub const BUILTIN_PROFILE_NAMES: [&str; 5] = ["none", "light", "heavy", "split", "swarm"];

/// The built-in profile files, embedded at compile time.
const BUILTIN_PROFILES: [(&str, &str); 5] = [
    ("none", include_str!("../../../fault-profiles/none.json")),
    ("light", include_str!("../../../fault-profiles/light.json")),
    ("heavy", include_str!("../../../fault-profiles/heavy.json")),
    ("split", include_str!("../../../fault-profiles/split.json")),
    ("swarm", include_str!("../../../fault-profiles/swarm.json")),
];

/// Largest replica count a profile may ask for (the cluster's VSR configuration limit).
pub const MAX_REPLICAS: u64 = 6;
/// Largest client count a profile may ask for (the cluster's client table holds 8,192).
pub const MAX_CLIENTS: u64 = 8_192;
/// Largest shard count per replica a profile may ask for: a guard against typos, not a
/// limit of the cluster; raise it when a profile needs more.
pub const MAX_SHARDS: u64 = 64;
/// Smallest link capacity a swarm draw may produce (design: "link capacity never below 8").
pub const MIN_SWARM_LINK_CAPACITY: u64 = 8;
/// Largest realtime clock offset a profile may ask for: 60 s. Far beyond any real
/// NTP-disciplined fleet; larger values are taken to be a unit mistake (ms vs us).
pub const MAX_CLOCK_OFFSET_MICROS: u64 = 60_000_000;
/// Largest realtime clock drift a profile may ask for: 10,000 ppm (1 %), fifty times a
/// bad crystal; larger values are taken to be a mistake.
pub const MAX_CLOCK_DRIFT_PPM: u64 = 10_000;

/// File-format names of partition modes and symmetries: the network's own spelling.
pub use crate::network::partition::{mode_name, symmetry_name};

/// Where a profile comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProfileSource {
    /// One of [`BUILTIN_PROFILE_NAMES`], embedded in the binary.
    Builtin(&'static str),
    /// A JSON file on disk.
    Path(PathBuf),
}

impl ProfileSource {
    /// Interprets a `--profile` argument: a string containing `/` or ending in `.json`
    /// is a path; anything else must be a built-in name.
    pub fn parse(name_or_path: &str) -> Result<Self, ProfileError> {
        if name_or_path.contains('/') || name_or_path.ends_with(".json") {
            return Ok(Self::Path(PathBuf::from(name_or_path)));
        }
        match BUILTIN_PROFILE_NAMES.iter().find(|&&name| name == name_or_path) {
            Some(&name) => Ok(Self::Builtin(name)),
            None => Err(ProfileError::whole(
                "fault profile",
                ProfileErrorKind::UnknownProfile {
                    name: name_or_path.to_owned(),
                },
            )),
        }
    }

    /// How errors name this source.
    pub fn origin(&self) -> String {
        match self {
            Self::Builtin(name) => format!("built-in fault profile `{name}`"),
            Self::Path(path) => format!("fault profile file `{}`", path.display()),
        }
    }

    /// Reads, parses and validates the profile.
    pub fn load(&self) -> Result<FaultProfile, ProfileError> {
        let origin = self.origin();
        match self {
            Self::Builtin(name) => {
                let Some(&(_, text)) = BUILTIN_PROFILES.iter().find(|(n, _)| n == name) else {
                    return Err(ProfileError::whole(
                        "fault profile",
                        ProfileErrorKind::UnknownProfile {
                            name: (*name).to_owned(),
                        },
                    ));
                };
                let profile = parse_profile(text, &origin)?;
                if profile.name() != *name {
                    return Err(ProfileError::invalid(
                        &origin,
                        "name",
                        format!("built-in file names itself {:?}; it must be {name:?}", profile.name()),
                    ));
                }
                Ok(profile)
            }
            Self::Path(path) => {
                let text = std::fs::read_to_string(path).map_err(|error| {
                    ProfileError::whole(
                        &origin,
                        ProfileErrorKind::Read {
                            message: error.to_string(),
                        },
                    )
                })?;
                parse_profile(&text, &origin)
            }
        }
    }
}

impl fmt::Display for ProfileSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Builtin(name) => f.write_str(name),
            Self::Path(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Loads a profile by built-in name (`none`, `light`, `heavy`, `swarm`) or by path (a
/// string containing `/` or ending in `.json`), and validates it.
pub fn load_profile(name_or_path: &str) -> Result<FaultProfile, ProfileError> {
    ProfileSource::parse(name_or_path)?.load()
}

/// Parses and validates profile JSON. `origin` names the source in error messages.
pub fn parse_profile(text: &str, origin: &str) -> Result<FaultProfile, ProfileError> {
    let profile = parse::parse(text, origin)?;
    profile.validate_as(origin)?;
    Ok(profile)
}

/// A loaded, validated fault profile.
// One profile is loaded per run; its size does not matter and an unboxed `ranges`
// keeps pattern matching plain.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum FaultProfile {
    /// Every parameter fixed.
    Fixed {
        /// The profile's name (from the file's `name`).
        name: String,
        /// The network, used as is.
        network: NetworkConfig,
        /// The disk fault rates, used as is.
        storage: StorageRates,
        /// The adversary, used as is.
        adversary: AdversaryRates,
    },
    /// Every parameter drawn per seed.
    Swarm {
        /// The profile's name (from the file's `name`).
        name: String,
        /// What each parameter is drawn from.
        ranges: SwarmRanges,
    },
}

impl FaultProfile {
    /// The profile's name.
    pub fn name(&self) -> &str {
        match self {
            Self::Fixed { name, .. } | Self::Swarm { name, .. } => name,
        }
    }

    /// `"fixed"` or `"swarm"`, as in the file's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Fixed { .. } => "fixed",
            Self::Swarm { .. } => "swarm",
        }
    }

    /// Checks every rule a file must obey; for profiles built in code. (Loading already
    /// validates.)
    pub fn validate(&self) -> Result<(), ProfileError> {
        self.validate_as(&format!("fault profile `{}`", self.name()))
    }

    fn validate_as(&self, origin: &str) -> Result<(), ProfileError> {
        validate::name(origin, self.name())?;
        match self {
            Self::Fixed {
                network,
                storage,
                adversary,
                ..
            } => {
                validate::network(origin, "network", network)?;
                validate::storage(origin, storage)?;
                validate::adversary(origin, adversary)
            }
            Self::Swarm { ranges, .. } => validate::swarm(origin, ranges),
        }
    }

    /// The concrete parameters for one run. Fixed profiles ignore the seed and draw
    /// nothing; swarm profiles draw everything from `SimRng::new(swarm_seed)` (a pure
    /// function of the seed).
    pub fn resolve(&self, swarm_seed: u64) -> ResolvedProfile {
        match self {
            Self::Fixed {
                name,
                network,
                storage,
                adversary,
            } => ResolvedProfile {
                name: name.clone(),
                network: network.clone(),
                storage: *storage,
                adversary: *adversary,
                swarm: None,
            },
            Self::Swarm { name, ranges } => {
                let (network, draw) = ranges.draw(swarm_seed);
                ResolvedProfile {
                    name: name.clone(),
                    network,
                    storage: draw.storage,
                    adversary: draw.adversary,
                    swarm: Some(draw),
                }
            }
        }
    }
}

/// The parameters one run uses.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedProfile {
    /// The profile's name.
    pub name: String,
    /// The network, fixed or drawn.
    pub network: NetworkConfig,
    /// The disk fault rates, fixed or drawn.
    pub storage: StorageRates,
    /// The adversary, fixed or drawn.
    pub adversary: AdversaryRates,
    /// What a swarm profile drew beyond the network; `None` for fixed profiles.
    pub swarm: Option<SwarmDraw>,
}

impl ResolvedProfile {
    /// One line with every value, drawn ones included, as `key=value` pairs in draw
    /// order, e.g. `profile=light kind=fixed one_way_delay_min_ticks=1 ...`.
    pub fn banner_line(&self) -> String {
        let n = &self.network;
        let mut line = format!(
            "profile={} kind={} one_way_delay_min_ticks={} one_way_delay_mean_ticks={} \
             packet_loss_probability={} packet_replay_probability={} \
             packet_corruption_probability={} link_capacity_packets={} \
             partition_probability={} unpartition_probability={} \
             partition_stability_ticks={} unpartition_stability_ticks={} \
             partition_mode={} partition_symmetry={} path_clog_probability={} \
             path_clog_duration_mean_ticks={} clock_offset_max_micros={} \
             clock_drift_max_ppm={}",
            self.name,
            if self.swarm.is_some() { "swarm" } else { "fixed" },
            n.one_way_delay_min_ticks,
            n.one_way_delay_mean_ticks,
            n.packet_loss_probability,
            n.packet_replay_probability,
            n.packet_corruption_probability,
            n.link_capacity_packets,
            n.partition_probability,
            n.unpartition_probability,
            n.partition_stability_ticks,
            n.unpartition_stability_ticks,
            mode_name(n.partition_mode),
            symmetry_name(n.partition_symmetry),
            n.path_clog_probability,
            n.path_clog_duration_mean_ticks,
            n.clock_offset_max_micros,
            n.clock_drift_max_ppm,
        );
        if let Some(d) = &self.swarm {
            line.push_str(&format!(
                " replicas={} clients={} shards={} crash_probability={} \
                 restart_probability={} power_loss_share={}",
                d.replicas, d.clients, d.shards, d.crash_probability, d.restart_probability, d.power_loss_share,
            ));
        }
        line.push_str(&format!(
            " disk_error_probability={} disk_corruption_probability={} disk_slow_probability={} \
             power_outage_probability={}",
            self.storage.disk_error_probability,
            self.storage.disk_corruption_probability,
            self.storage.disk_slow_probability,
            self.storage.power_outage_probability
        ));
        // Printed only when there is one, so a run without it prints what it always did.
        if self.adversary.forged_frame_probability > 0.0 {
            line.push_str(&format!(
                " adversary_forged_frame_probability={}",
                self.adversary.forged_frame_probability
            ));
        }
        line
    }
}
