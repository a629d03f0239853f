//! JSON text to an unvalidated [`FaultProfile`]: structure and types only.
//!
//! The text is read into a `serde_json::Value` and walked by hand rather than
//! deserialized with derived impls, so that every error can name the dotted path of
//! the field at fault (serde's derive reports only line and column). Every key is
//! required and unknown keys are rejected. Rules about values (ranges, consistency)
//! are checked afterwards by `validate`.

use serde_json::{Map, Value};

use super::error::{ProfileError, ProfileErrorKind};
use super::swarm::{
    IntRange, ProbabilityRange, SwarmClusterRanges, SwarmNetworkRanges, SwarmRanges, SwarmStorageRanges,
};
use super::{AdversaryRates, FaultProfile, StorageRates, SwarmAdversaryRanges, mode_name, symmetry_name};
use crate::network::config::{NetworkConfig, PartitionMode, PartitionSymmetry};

/// Keys of a fixed profile's top level.
const FIXED_KEYS: &[&str] = &["kind", "name", "network", "storage", "adversary"];
/// Keys of a swarm profile's top level.
const SWARM_KEYS: &[&str] = &["kind", "name", "network", "cluster", "storage", "adversary"];
/// Keys of the optional `adversary` object (a fixed value or a swarm range).
pub(crate) const ADVERSARY_KEYS: &[&str] = &["forged_frame_probability"];
/// Keys of a `storage` object (fixed values or swarm ranges), in draw order.
pub(crate) const STORAGE_KEYS: &[&str] = &[
    "disk_error_probability",
    "disk_corruption_probability",
    "disk_slow_probability",
    "power_outage_probability",
];
/// Keys of a `network` object (fixed values or swarm ranges), in draw order.
pub(crate) const NETWORK_KEYS: &[&str] = &[
    "one_way_delay_min_ticks",
    "one_way_delay_mean_ticks",
    "packet_loss_probability",
    "packet_replay_probability",
    "packet_corruption_probability",
    "link_capacity_packets",
    "partition_probability",
    "unpartition_probability",
    "partition_stability_ticks",
    "unpartition_stability_ticks",
    "partition_mode",
    "partition_symmetry",
    "path_clog_probability",
    "path_clog_duration_mean_ticks",
    "clock_offset_max_micros",
    "clock_drift_max_ppm",
];
/// Keys of a swarm `cluster` object, in draw order.
pub(crate) const CLUSTER_KEYS: &[&str] = &[
    "replicas",
    "clients",
    "shards",
    "crash_probability",
    "restart_probability",
    "power_loss_share",
];
/// Keys of a range object.
const RANGE_KEYS: &[&str] = &["min", "max", "step"];

/// Every partition mode, for parsing and error messages.
const MODES: [PartitionMode; 4] = [
    PartitionMode::None,
    PartitionMode::UniformSize,
    PartitionMode::UniformPartition,
    PartitionMode::IsolateSingle,
];
/// Every partition symmetry, for parsing and error messages.
const SYMMETRIES: [PartitionSymmetry; 2] = [PartitionSymmetry::Symmetric, PartitionSymmetry::Asymmetric];

/// A short description of a JSON value for error messages.
fn describe(value: &Value) -> String {
    let text = match value {
        Value::Null => return "null".to_owned(),
        Value::Bool(b) => return format!("boolean {b}"),
        Value::Number(n) => return format!("number {n}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => return "an array".to_owned(),
        Value::Object(_) => return "an object".to_owned(),
    };
    // Keep messages one readable line even for a huge string.
    if text.len() > 80 {
        let cut = (0..=77).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        format!("{}...", &text[..cut])
    } else {
        text
    }
}

/// `parent.key`, or `key` at the top level.
fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// An object being taken apart key by key, with its path for error messages.
struct Object<'a> {
    map: Map<String, Value>,
    path: String,
    origin: &'a str,
}

impl<'a> Object<'a> {
    /// Requires `value` to be an object whose keys are all in `expected`.
    fn new(origin: &'a str, path: &str, value: Value, expected: &'static [&'static str]) -> Result<Self, ProfileError> {
        let map = match value {
            Value::Object(map) => map,
            other => return Err(wrong_type(origin, path, "an object", &other)),
        };
        let object = Self {
            map,
            path: path.to_owned(),
            origin,
        };
        object.reject_unknown(expected)?;
        Ok(object)
    }

    /// The first key (in sorted order) outside `expected`, as an error.
    fn reject_unknown(&self, expected: &'static [&'static str]) -> Result<(), ProfileError> {
        match self.map.keys().find(|key| !expected.contains(&key.as_str())) {
            Some(key) => Err(ProfileError::at(
                self.origin,
                &join(&self.path, key),
                ProfileErrorKind::UnknownField {
                    expected: expected.to_vec(),
                },
            )),
            None => Ok(()),
        }
    }

    /// Removes and returns a required key, with its path.
    fn take(&mut self, key: &str) -> Result<(Value, String), ProfileError> {
        let path = join(&self.path, key);
        match self.map.remove(key) {
            Some(value) => Ok((value, path)),
            None => Err(ProfileError::at(self.origin, &path, ProfileErrorKind::MissingField)),
        }
    }

    fn u64(&mut self, key: &str) -> Result<u64, ProfileError> {
        let (value, path) = self.take(key)?;
        as_u64(self.origin, &path, &value)
    }

    fn usize(&mut self, key: &str) -> Result<usize, ProfileError> {
        let (value, path) = self.take(key)?;
        let number = as_u64(self.origin, &path, &value)?;
        usize::try_from(number)
            .map_err(|_| ProfileError::invalid(self.origin, &path, format!("{number} does not fit in usize")))
    }

    fn f64(&mut self, key: &str) -> Result<f64, ProfileError> {
        let (value, path) = self.take(key)?;
        as_f64(self.origin, &path, &value)
    }

    fn string(&mut self, key: &str) -> Result<String, ProfileError> {
        let (value, path) = self.take(key)?;
        match value {
            Value::String(s) => Ok(s),
            other => Err(wrong_type(self.origin, &path, "a string", &other)),
        }
    }

    fn object(&mut self, key: &str, expected: &'static [&'static str]) -> Result<Self, ProfileError> {
        let (value, path) = self.take(key)?;
        Object::new(self.origin, &path, value, expected)
    }

    /// An object that may be absent (`None`), for sections added after profiles existed.
    fn optional_object(&mut self, key: &str, expected: &'static [&'static str]) -> Result<Option<Self>, ProfileError> {
        if self.map.contains_key(key) {
            self.object(key, expected).map(Some)
        } else {
            Ok(None)
        }
    }

    fn mode(&mut self, key: &str) -> Result<PartitionMode, ProfileError> {
        let (value, path) = self.take(key)?;
        as_mode(self.origin, &path, &value)
    }

    fn symmetry(&mut self, key: &str) -> Result<PartitionSymmetry, ProfileError> {
        let (value, path) = self.take(key)?;
        as_symmetry(self.origin, &path, &value)
    }

    fn int_range(&mut self, key: &str) -> Result<IntRange, ProfileError> {
        let mut range = self.object(key, RANGE_KEYS)?;
        Ok(IntRange {
            min: range.u64("min")?,
            max: range.u64("max")?,
            step: range.u64("step")?,
        })
    }

    fn probability_range(&mut self, key: &str) -> Result<ProbabilityRange, ProfileError> {
        let mut range = self.object(key, RANGE_KEYS)?;
        Ok(ProbabilityRange {
            min: range.f64("min")?,
            max: range.f64("max")?,
            step: range.f64("step")?,
        })
    }

    /// A non-empty list whose items are parsed by `item` (emptiness and repeats are
    /// checked by `validate`).
    fn list<T>(
        &mut self,
        key: &str,
        item: fn(&str, &str, &Value) -> Result<T, ProfileError>,
    ) -> Result<Vec<T>, ProfileError> {
        let (value, path) = self.take(key)?;
        let items = match value {
            Value::Array(items) => items,
            other => return Err(wrong_type(self.origin, &path, "a list of choices", &other)),
        };
        items
            .iter()
            .enumerate()
            .map(|(index, value)| item(self.origin, &format!("{path}[{index}]"), value))
            .collect()
    }
}

fn wrong_type(origin: &str, path: &str, expected: &str, found: &Value) -> ProfileError {
    ProfileError::at(
        origin,
        path,
        ProfileErrorKind::WrongType {
            expected: expected.to_owned(),
            found: describe(found),
        },
    )
}

fn as_u64(origin: &str, path: &str, value: &Value) -> Result<u64, ProfileError> {
    value
        .as_u64()
        .ok_or_else(|| wrong_type(origin, path, "a non-negative integer", value))
}

fn as_f64(origin: &str, path: &str, value: &Value) -> Result<f64, ProfileError> {
    match value {
        Value::Number(n) => n.as_f64().ok_or_else(|| wrong_type(origin, path, "a number", value)),
        other => Err(wrong_type(origin, path, "a number", other)),
    }
}

fn as_mode(origin: &str, path: &str, value: &Value) -> Result<PartitionMode, ProfileError> {
    let found = value
        .as_str()
        .and_then(|s| MODES.into_iter().find(|&m| mode_name(m) == s));
    found.ok_or_else(|| {
        let names: Vec<&str> = MODES.into_iter().map(mode_name).collect();
        wrong_type(origin, path, &format!("one of \"{}\"", names.join("\", \"")), value)
    })
}

fn as_symmetry(origin: &str, path: &str, value: &Value) -> Result<PartitionSymmetry, ProfileError> {
    let found = value
        .as_str()
        .and_then(|s| SYMMETRIES.into_iter().find(|&m| symmetry_name(m) == s));
    found.ok_or_else(|| {
        let names: Vec<&str> = SYMMETRIES.into_iter().map(symmetry_name).collect();
        wrong_type(origin, path, &format!("one of \"{}\"", names.join("\", \"")), value)
    })
}

/// Parses `text` into an unvalidated profile. `origin` names the source in errors.
pub(crate) fn parse(text: &str, origin: &str) -> Result<FaultProfile, ProfileError> {
    let value: Value = serde_json::from_str(text).map_err(|error| {
        ProfileError::whole(
            origin,
            ProfileErrorKind::Malformed {
                line: error.line(),
                column: error.column(),
                message: error.to_string(),
            },
        )
    })?;
    let map = match value {
        Value::Object(map) => map,
        other => return Err(wrong_type(origin, "(top level)", "an object", &other)),
    };
    let kind = match map.get("kind") {
        None => {
            return Err(ProfileError::at(origin, "kind", ProfileErrorKind::MissingField));
        }
        Some(Value::String(kind)) => kind.clone(),
        Some(other) => {
            return Err(wrong_type(origin, "kind", "the string \"fixed\" or \"swarm\"", other));
        }
    };
    match kind.as_str() {
        "fixed" => {
            let mut top = Object::new(origin, "", Value::Object(map), FIXED_KEYS)?;
            let name = top.string("name")?;
            let network = fixed_network(top.object("network", NETWORK_KEYS)?)?;
            let mut storage = top.object("storage", STORAGE_KEYS)?;
            let storage = StorageRates {
                disk_error_probability: storage.f64("disk_error_probability")?,
                disk_corruption_probability: storage.f64("disk_corruption_probability")?,
                disk_slow_probability: storage.f64("disk_slow_probability")?,
                power_outage_probability: storage.f64("power_outage_probability")?,
            };
            let adversary = match top.optional_object("adversary", ADVERSARY_KEYS)? {
                Some(mut adversary) => AdversaryRates {
                    forged_frame_probability: adversary.f64("forged_frame_probability")?,
                },
                None => AdversaryRates::default(),
            };
            Ok(FaultProfile::Fixed {
                name,
                network,
                storage,
                adversary,
            })
        }
        "swarm" => {
            let mut top = Object::new(origin, "", Value::Object(map), SWARM_KEYS)?;
            let name = top.string("name")?;
            let network = swarm_network(top.object("network", NETWORK_KEYS)?)?;
            let cluster = swarm_cluster(top.object("cluster", CLUSTER_KEYS)?)?;
            let mut storage = top.object("storage", STORAGE_KEYS)?;
            let storage = SwarmStorageRanges {
                disk_error_probability: storage.probability_range("disk_error_probability")?,
                disk_corruption_probability: storage.probability_range("disk_corruption_probability")?,
                disk_slow_probability: storage.probability_range("disk_slow_probability")?,
                power_outage_probability: storage.probability_range("power_outage_probability")?,
            };
            let adversary = match top.optional_object("adversary", ADVERSARY_KEYS)? {
                Some(mut adversary) => SwarmAdversaryRanges {
                    forged_frame_probability: adversary.probability_range("forged_frame_probability")?,
                },
                None => SwarmAdversaryRanges::default(),
            };
            Ok(FaultProfile::Swarm {
                name,
                ranges: SwarmRanges {
                    network,
                    cluster,
                    storage,
                    adversary,
                },
            })
        }
        _ => Err(ProfileError::at(
            origin,
            "kind",
            ProfileErrorKind::UnknownKind { found: kind },
        )),
    }
}

fn fixed_network(mut n: Object<'_>) -> Result<NetworkConfig, ProfileError> {
    Ok(NetworkConfig {
        one_way_delay_min_ticks: n.u64("one_way_delay_min_ticks")?,
        one_way_delay_mean_ticks: n.u64("one_way_delay_mean_ticks")?,
        packet_loss_probability: n.f64("packet_loss_probability")?,
        packet_replay_probability: n.f64("packet_replay_probability")?,
        packet_corruption_probability: n.f64("packet_corruption_probability")?,
        link_capacity_packets: n.usize("link_capacity_packets")?,
        partition_probability: n.f64("partition_probability")?,
        unpartition_probability: n.f64("unpartition_probability")?,
        partition_stability_ticks: n.u64("partition_stability_ticks")?,
        unpartition_stability_ticks: n.u64("unpartition_stability_ticks")?,
        partition_mode: n.mode("partition_mode")?,
        partition_symmetry: n.symmetry("partition_symmetry")?,
        path_clog_probability: n.f64("path_clog_probability")?,
        path_clog_duration_mean_ticks: n.u64("path_clog_duration_mean_ticks")?,
        clock_offset_max_micros: n.u64("clock_offset_max_micros")?,
        clock_drift_max_ppm: n.u64("clock_drift_max_ppm")?,
    })
}

fn swarm_network(mut n: Object<'_>) -> Result<SwarmNetworkRanges, ProfileError> {
    Ok(SwarmNetworkRanges {
        one_way_delay_min_ticks: n.int_range("one_way_delay_min_ticks")?,
        one_way_delay_mean_ticks: n.int_range("one_way_delay_mean_ticks")?,
        packet_loss_probability: n.probability_range("packet_loss_probability")?,
        packet_replay_probability: n.probability_range("packet_replay_probability")?,
        packet_corruption_probability: n.probability_range("packet_corruption_probability")?,
        link_capacity_packets: n.int_range("link_capacity_packets")?,
        partition_probability: n.probability_range("partition_probability")?,
        unpartition_probability: n.probability_range("unpartition_probability")?,
        partition_stability_ticks: n.int_range("partition_stability_ticks")?,
        unpartition_stability_ticks: n.int_range("unpartition_stability_ticks")?,
        partition_mode: n.list("partition_mode", as_mode)?,
        partition_symmetry: n.list("partition_symmetry", as_symmetry)?,
        path_clog_probability: n.probability_range("path_clog_probability")?,
        path_clog_duration_mean_ticks: n.int_range("path_clog_duration_mean_ticks")?,
        clock_offset_max_micros: n.int_range("clock_offset_max_micros")?,
        clock_drift_max_ppm: n.int_range("clock_drift_max_ppm")?,
    })
}

fn swarm_cluster(mut c: Object<'_>) -> Result<SwarmClusterRanges, ProfileError> {
    Ok(SwarmClusterRanges {
        replicas: c.int_range("replicas")?,
        clients: c.int_range("clients")?,
        shards: c.int_range("shards")?,
        crash_probability: c.probability_range("crash_probability")?,
        restart_probability: c.probability_range("restart_probability")?,
        power_loss_share: c.probability_range("power_loss_share")?,
    })
}
