//! Rules about values: every probability in `[0, 1]`, delays and capacities that the
//! packet simulator can use, ranges that are non-empty and on a sensible grid, and a
//! topology the cluster supports. Works on typed profiles, so profiles built in code
//! (not loaded from a file) are checked by the same rules.

use super::error::ProfileError;
use super::swarm::{GRID_TOLERANCE, IntRange, MAX_GRID_STEPS, ProbabilityRange, SwarmRanges};
use super::{
    MAX_CLIENTS, MAX_CLOCK_DRIFT_PPM, MAX_CLOCK_OFFSET_MICROS, MAX_REPLICAS, MAX_SHARDS, MIN_SWARM_LINK_CAPACITY,
    mode_name, symmetry_name,
};
use crate::network::config::NetworkConfig;

/// A profile name: non-empty, at most 64 characters of `[A-Za-z0-9_.-]`, so it prints
/// cleanly in the banner and in a reproduction command.
pub(crate) fn name(origin: &str, name: &str) -> Result<(), ProfileError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ProfileError::invalid(
            origin,
            "name",
            format!("{name:?} is not a valid profile name (1 to 64 characters of A-Z a-z 0-9 _ - .)"),
        ))
    }
}

fn probability(origin: &str, path: &str, value: f64) -> Result<(), ProfileError> {
    // NaN fails both comparisons.
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(ProfileError::invalid(
            origin,
            path,
            format!("probability {value} is outside [0, 1]"),
        ))
    }
}

fn at_most(origin: &str, path: &str, value: u64, limit: u64, what: &str) -> Result<(), ProfileError> {
    if value <= limit {
        Ok(())
    } else {
        Err(ProfileError::invalid(
            origin,
            path,
            format!("{value} exceeds the limit of {limit} {what}"),
        ))
    }
}

/// The rules for a concrete network (a fixed profile's `network`).
pub(crate) fn network(origin: &str, prefix: &str, n: &NetworkConfig) -> Result<(), ProfileError> {
    let path = |field: &str| format!("{prefix}.{field}");
    if n.one_way_delay_min_ticks < 1 {
        return Err(ProfileError::invalid(
            origin,
            &path("one_way_delay_min_ticks"),
            "must be at least 1 (nothing arrives in the tick it was sent)",
        ));
    }
    if n.one_way_delay_mean_ticks < n.one_way_delay_min_ticks {
        return Err(ProfileError::invalid(
            origin,
            &path("one_way_delay_mean_ticks"),
            format!(
                "mean {} is below one_way_delay_min_ticks {}",
                n.one_way_delay_mean_ticks, n.one_way_delay_min_ticks
            ),
        ));
    }
    for (field, value) in [
        ("packet_loss_probability", n.packet_loss_probability),
        ("packet_replay_probability", n.packet_replay_probability),
        ("packet_corruption_probability", n.packet_corruption_probability),
        ("partition_probability", n.partition_probability),
        ("unpartition_probability", n.unpartition_probability),
        ("path_clog_probability", n.path_clog_probability),
    ] {
        probability(origin, &path(field), value)?;
    }
    if n.link_capacity_packets < 1 {
        return Err(ProfileError::invalid(
            origin,
            &path("link_capacity_packets"),
            "must be at least 1",
        ));
    }
    if n.partition_probability > 0.0 && n.unpartition_probability == 0.0 {
        return Err(ProfileError::invalid(
            origin,
            &path("unpartition_probability"),
            format!(
                "is 0 while partition_probability is {}: a partition would never heal",
                n.partition_probability
            ),
        ));
    }
    at_most(
        origin,
        &path("clock_offset_max_micros"),
        n.clock_offset_max_micros,
        MAX_CLOCK_OFFSET_MICROS,
        "microseconds",
    )?;
    at_most(
        origin,
        &path("clock_drift_max_ppm"),
        n.clock_drift_max_ppm,
        MAX_CLOCK_DRIFT_PPM,
        "ppm",
    )?;
    Ok(())
}

/// Shape rules every integer range obeys: `min <= max`, `step >= 1`, `step` divides
/// `max - min`.
fn int_range(origin: &str, path: &str, r: &IntRange) -> Result<(), ProfileError> {
    if r.min > r.max {
        return Err(ProfileError::invalid(
            origin,
            path,
            format!("min {} is greater than max {}", r.min, r.max),
        ));
    }
    if r.step == 0 {
        return Err(ProfileError::invalid(
            origin,
            &format!("{path}.step"),
            "step must be at least 1",
        ));
    }
    if !(r.max - r.min).is_multiple_of(r.step) {
        return Err(ProfileError::invalid(
            origin,
            &format!("{path}.step"),
            format!(
                "step {} does not divide max - min = {} (the grid must end exactly at max)",
                r.step,
                r.max - r.min
            ),
        ));
    }
    Ok(())
}

/// Shape rules every probability range obeys: ends in `[0, 1]`, `min <= max`, a
/// positive finite step that divides `max - min` into at most [`MAX_GRID_STEPS`] steps.
fn probability_range(origin: &str, path: &str, r: &ProbabilityRange) -> Result<(), ProfileError> {
    probability(origin, &format!("{path}.min"), r.min)?;
    probability(origin, &format!("{path}.max"), r.max)?;
    if r.min > r.max {
        return Err(ProfileError::invalid(
            origin,
            path,
            format!("min {} is greater than max {}", r.min, r.max),
        ));
    }
    let step_path = format!("{path}.step");
    if !(r.step.is_finite() && r.step > 0.0) {
        return Err(ProfileError::invalid(
            origin,
            &step_path,
            format!("step {} must be a positive number", r.step),
        ));
    }
    let steps = (r.max - r.min) / r.step;
    if steps > MAX_GRID_STEPS as f64 {
        return Err(ProfileError::invalid(
            origin,
            &step_path,
            format!(
                "step {} makes {steps} grid steps; at most {MAX_GRID_STEPS} are allowed",
                r.step
            ),
        ));
    }
    if (steps - steps.round()).abs() > GRID_TOLERANCE * steps.max(1.0) {
        return Err(ProfileError::invalid(
            origin,
            &step_path,
            format!(
                "step {} does not divide max - min = {} into whole steps (the grid must end exactly at max)",
                r.step,
                r.max - r.min
            ),
        ));
    }
    Ok(())
}

/// A choice list: non-empty, no option twice.
fn choices<T: PartialEq + Copy>(
    origin: &str,
    path: &str,
    options: &[T],
    name: fn(T) -> &'static str,
) -> Result<(), ProfileError> {
    if options.is_empty() {
        return Err(ProfileError::invalid(origin, path, "the list of choices is empty"));
    }
    for (index, option) in options.iter().enumerate() {
        if options[..index].contains(option) {
            return Err(ProfileError::invalid(
                origin,
                &format!("{path}[{index}]"),
                format!("\"{}\" is listed twice", name(*option)),
            ));
        }
    }
    Ok(())
}

/// A fixed profile's `storage` section.
pub(crate) fn storage(origin: &str, rates: &super::StorageRates) -> Result<(), ProfileError> {
    probability(origin, "storage.disk_error_probability", rates.disk_error_probability)?;
    probability(
        origin,
        "storage.disk_corruption_probability",
        rates.disk_corruption_probability,
    )?;
    probability(origin, "storage.disk_slow_probability", rates.disk_slow_probability)?;
    probability(
        origin,
        "storage.power_outage_probability",
        rates.power_outage_probability,
    )
}

/// The rules for a swarm profile's ranges.
pub(crate) fn swarm(origin: &str, s: &SwarmRanges) -> Result<(), ProfileError> {
    let n = &s.network;
    let path = |field: &str| format!("network.{field}");

    // Shapes, in draw order.
    for (field, range) in [
        ("one_way_delay_min_ticks", &n.one_way_delay_min_ticks),
        ("one_way_delay_mean_ticks", &n.one_way_delay_mean_ticks),
        ("link_capacity_packets", &n.link_capacity_packets),
        ("partition_stability_ticks", &n.partition_stability_ticks),
        ("unpartition_stability_ticks", &n.unpartition_stability_ticks),
        ("path_clog_duration_mean_ticks", &n.path_clog_duration_mean_ticks),
        ("clock_offset_max_micros", &n.clock_offset_max_micros),
        ("clock_drift_max_ppm", &n.clock_drift_max_ppm),
    ] {
        int_range(origin, &path(field), range)?;
    }
    for (field, range) in [
        ("packet_loss_probability", &n.packet_loss_probability),
        ("packet_replay_probability", &n.packet_replay_probability),
        ("packet_corruption_probability", &n.packet_corruption_probability),
        ("partition_probability", &n.partition_probability),
        ("unpartition_probability", &n.unpartition_probability),
        ("path_clog_probability", &n.path_clog_probability),
    ] {
        probability_range(origin, &path(field), range)?;
    }
    choices(origin, &path("partition_mode"), &n.partition_mode, mode_name)?;
    choices(
        origin,
        &path("partition_symmetry"),
        &n.partition_symmetry,
        symmetry_name,
    )?;

    // Parameter rules.
    if n.one_way_delay_min_ticks.min < 1 {
        return Err(ProfileError::invalid(
            origin,
            &path("one_way_delay_min_ticks.min"),
            "must be at least 1 (nothing arrives in the tick it was sent)",
        ));
    }
    if n.one_way_delay_mean_ticks.max < n.one_way_delay_min_ticks.max {
        return Err(ProfileError::invalid(
            origin,
            &path("one_way_delay_mean_ticks.max"),
            format!(
                "max {} is below one_way_delay_min_ticks.max {}: some drawn floors would have no mean >= the floor",
                n.one_way_delay_mean_ticks.max, n.one_way_delay_min_ticks.max
            ),
        ));
    }
    if n.link_capacity_packets.min < MIN_SWARM_LINK_CAPACITY {
        return Err(ProfileError::invalid(
            origin,
            &path("link_capacity_packets.min"),
            format!(
                "min {} is below {MIN_SWARM_LINK_CAPACITY}: swarm never draws links smaller than {MIN_SWARM_LINK_CAPACITY} packets",
                n.link_capacity_packets.min
            ),
        ));
    }
    if n.unpartition_probability.min <= 0.0 {
        return Err(ProfileError::invalid(
            origin,
            &path("unpartition_probability.min"),
            "must be above 0: swarm never draws a heal probability of 0 (a partition must heal)",
        ));
    }
    at_most(
        origin,
        &path("clock_offset_max_micros.max"),
        n.clock_offset_max_micros.max,
        MAX_CLOCK_OFFSET_MICROS,
        "microseconds",
    )?;
    at_most(
        origin,
        &path("clock_drift_max_ppm.max"),
        n.clock_drift_max_ppm.max,
        MAX_CLOCK_DRIFT_PPM,
        "ppm",
    )?;

    let c = &s.cluster;
    for (field, range, limit) in [
        ("replicas", &c.replicas, MAX_REPLICAS),
        ("clients", &c.clients, MAX_CLIENTS),
        ("shards", &c.shards, MAX_SHARDS),
    ] {
        let here = format!("cluster.{field}");
        int_range(origin, &here, range)?;
        if range.min < 1 {
            return Err(ProfileError::invalid(
                origin,
                &format!("{here}.min"),
                "must be at least 1",
            ));
        }
        at_most(origin, &format!("{here}.max"), range.max, limit, field)?;
    }
    for (field, range) in [
        ("crash_probability", &c.crash_probability),
        ("restart_probability", &c.restart_probability),
        ("power_loss_share", &c.power_loss_share),
    ] {
        probability_range(origin, &format!("cluster.{field}"), range)?;
    }
    for (field, range) in [
        ("disk_error_probability", &s.storage.disk_error_probability),
        ("disk_corruption_probability", &s.storage.disk_corruption_probability),
        ("disk_slow_probability", &s.storage.disk_slow_probability),
        ("power_outage_probability", &s.storage.power_outage_probability),
    ] {
        probability_range(origin, &format!("storage.{field}"), range)?;
    }
    probability_range(
        origin,
        "adversary.forged_frame_probability",
        &s.adversary.forged_frame_probability,
    )
}

/// The rules for a fixed profile's adversary.
pub(crate) fn adversary(origin: &str, rates: &super::AdversaryRates) -> Result<(), ProfileError> {
    probability(
        origin,
        "adversary.forged_frame_probability",
        rates.forged_frame_probability,
    )
}
