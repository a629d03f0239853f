//! Tests of loading, validation and the swarm draw.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;
use crate::network::config::{PartitionMode, PartitionSymmetry};
use crate::rng::SimRng;

/// The built-in file text of `name`.
fn builtin_text(name: &str) -> &'static str {
    BUILTIN_PROFILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
        .expect("built-in profile exists")
}

/// The built-in profile `name`, loaded.
fn builtin(name: &str) -> FaultProfile {
    load_profile(name).expect("built-in profile loads")
}

/// The swarm ranges of the built-in swarm profile.
fn swarm_ranges() -> SwarmRanges {
    match builtin("swarm") {
        FaultProfile::Swarm { ranges, .. } => ranges,
        other => panic!("swarm is not a swarm profile: {other:?}"),
    }
}

/// Parses `name`'s built-in JSON, applies `edit`, and returns the error loading it
/// gives (failing the test if it loads).
fn error_after(name: &str, edit: impl FnOnce(&mut Value)) -> ProfileError {
    let mut value: Value = serde_json::from_str(builtin_text(name)).expect("built-in is JSON");
    edit(&mut value);
    let text = serde_json::to_string_pretty(&value).expect("serializes");
    match parse_profile(&text, "test profile") {
        Ok(profile) => panic!("edited profile loaded: {profile:?}"),
        Err(error) => error,
    }
}

/// Asserts `error` is about `field` and its message names it and contains `words`.
fn assert_names(error: &ProfileError, field: &str, words: &str) {
    let message = error.to_string();
    assert_eq!(error.field.as_deref(), Some(field), "{message}");
    assert!(message.contains(&format!("`{field}`")), "{message}");
    assert!(message.contains(words), "{message} lacks {words:?}");
    assert!(message.contains("test profile"), "{message}");
}

/// `value[a][b]... = new`, inserting the last key if absent.
fn set(value: &mut Value, path: &[&str], new: Value) {
    let (last, parents) = path.split_last().expect("non-empty path");
    let mut here = value;
    for key in parents {
        here = here.get_mut(*key).expect("path exists");
    }
    here.as_object_mut()
        .expect("parent is an object")
        .insert((*last).to_owned(), new);
}

// ---------------------------------------------------------------- built-ins

#[test]
fn every_builtin_profile_loads_and_validates() {
    for name in BUILTIN_PROFILE_NAMES {
        let profile = builtin(name);
        assert_eq!(profile.name(), name);
        profile.validate().expect("validates");
        let expected_kind = if name == "swarm" { "swarm" } else { "fixed" };
        assert_eq!(profile.kind(), expected_kind);
        // Loading the same file by path gives the same profile.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fault-profiles")
            .join(format!("{name}.json"));
        let by_path = load_profile(path.to_str().expect("utf-8 path")).expect("loads by path");
        assert_eq!(by_path, profile);
    }
}

#[test]
fn fixed_resolve_returns_exactly_the_file_values() {
    let light = NetworkConfig {
        one_way_delay_min_ticks: 1,
        one_way_delay_mean_ticks: 3,
        packet_loss_probability: 0.02,
        packet_replay_probability: 0.01,
        packet_corruption_probability: 0.001,
        link_capacity_packets: 64,
        partition_probability: 0.005,
        unpartition_probability: 0.05,
        partition_stability_ticks: 20,
        unpartition_stability_ticks: 40,
        partition_mode: PartitionMode::IsolateSingle,
        partition_symmetry: PartitionSymmetry::Asymmetric,
        path_clog_probability: 0.002,
        path_clog_duration_mean_ticks: 10,
        clock_offset_max_micros: 50_000,
        clock_drift_max_ppm: 50,
    };
    let heavy = NetworkConfig {
        one_way_delay_min_ticks: 1,
        one_way_delay_mean_ticks: 8,
        packet_loss_probability: 0.10,
        packet_replay_probability: 0.03,
        packet_corruption_probability: 0.01,
        link_capacity_packets: 64,
        partition_probability: 0.02,
        unpartition_probability: 0.02,
        partition_stability_ticks: 50,
        unpartition_stability_ticks: 50,
        partition_mode: PartitionMode::UniformSize,
        partition_symmetry: PartitionSymmetry::Asymmetric,
        path_clog_probability: 0.01,
        path_clog_duration_mean_ticks: 25,
        clock_offset_max_micros: 500_000,
        clock_drift_max_ppm: 200,
    };
    for (name, expected) in [("none", NetworkConfig::perfect()), ("light", light), ("heavy", heavy)] {
        let profile = builtin(name);
        for seed in [0, 1, u64::MAX] {
            let resolved = profile.resolve(seed);
            assert_eq!(resolved.name, name);
            assert_eq!(resolved.network, expected, "{name}");
            assert_eq!(resolved.swarm, None);
        }
    }
}

// ---------------------------------------------------------------- swarm draw

#[test]
fn swarm_resolve_is_a_pure_function_of_the_seed() {
    let profile = builtin("swarm");
    for seed in [0, 1, 42, u64::MAX] {
        assert_eq!(profile.resolve(seed), profile.resolve(seed));
        assert_eq!(
            profile.resolve(seed).banner_line(),
            load_profile("swarm").expect("loads").resolve(seed).banner_line()
        );
    }
}

#[test]
fn swarm_draws_differ_across_seeds() {
    let profile = builtin("swarm");
    let draws: BTreeSet<String> = (0..20).map(|seed| profile.resolve(seed).banner_line()).collect();
    assert_eq!(draws.len(), 20, "20 seeds gave only {} distinct draws", draws.len());
}

#[test]
fn swarm_draws_stay_in_range_and_on_grid_over_1000_seeds() {
    let ranges = swarm_ranges();
    let profile = builtin("swarm");
    let (n, c) = (&ranges.network, &ranges.cluster);
    let mut replicas_seen = BTreeSet::new();
    let mut modes_seen = BTreeSet::new();
    let mut symmetries_seen = BTreeSet::new();
    for seed in 0..1000 {
        let resolved = profile.resolve(seed);
        let net = &resolved.network;
        let draw = resolved.swarm.expect("swarm draws a cluster");
        let banner = resolved.banner_line();
        // A drawn network obeys every fixed-profile rule.
        validate::network("draw", "network", net).expect("drawn network is valid");

        assert!(
            n.one_way_delay_min_ticks.contains(net.one_way_delay_min_ticks),
            "{banner}"
        );
        assert!(
            n.one_way_delay_mean_ticks.contains(net.one_way_delay_mean_ticks),
            "{banner}"
        );
        assert!(net.one_way_delay_mean_ticks >= net.one_way_delay_min_ticks, "{banner}");
        assert!(
            n.packet_loss_probability.contains(net.packet_loss_probability),
            "{banner}"
        );
        assert!(
            n.packet_replay_probability.contains(net.packet_replay_probability),
            "{banner}"
        );
        assert!(
            n.packet_corruption_probability
                .contains(net.packet_corruption_probability),
            "{banner}"
        );
        assert!(
            n.link_capacity_packets.contains(net.link_capacity_packets as u64),
            "{banner}"
        );
        assert!(net.link_capacity_packets >= 8, "{banner}");
        assert!(n.partition_probability.contains(net.partition_probability), "{banner}");
        assert!(
            n.unpartition_probability.contains(net.unpartition_probability),
            "{banner}"
        );
        assert!(net.unpartition_probability > 0.0, "{banner}");
        assert!(
            n.partition_stability_ticks.contains(net.partition_stability_ticks),
            "{banner}"
        );
        assert!(
            n.unpartition_stability_ticks.contains(net.unpartition_stability_ticks),
            "{banner}"
        );
        assert!(n.partition_mode.contains(&net.partition_mode), "{banner}");
        assert!(n.partition_symmetry.contains(&net.partition_symmetry), "{banner}");
        assert!(n.path_clog_probability.contains(net.path_clog_probability), "{banner}");
        assert!(
            n.path_clog_duration_mean_ticks
                .contains(net.path_clog_duration_mean_ticks),
            "{banner}"
        );
        assert!(
            n.clock_offset_max_micros.contains(net.clock_offset_max_micros),
            "{banner}"
        );
        assert!(n.clock_drift_max_ppm.contains(net.clock_drift_max_ppm), "{banner}");

        assert!(c.replicas.contains(draw.replicas as u64), "{banner}");
        assert!(c.clients.contains(draw.clients as u64), "{banner}");
        assert!(c.shards.contains(draw.shards as u64), "{banner}");
        assert!(c.crash_probability.contains(draw.crash_probability), "{banner}");
        assert!(c.restart_probability.contains(draw.restart_probability), "{banner}");
        assert!(c.power_loss_share.contains(draw.power_loss_share), "{banner}");

        // Drawn probabilities print as short decimals (no 0.30000000000000004).
        for p in [
            net.packet_loss_probability,
            net.partition_probability,
            net.path_clog_probability,
            draw.restart_probability,
        ] {
            assert!(p.to_string().len() <= 6, "{p} in {banner}");
        }

        replicas_seen.insert(draw.replicas);
        modes_seen.insert(mode_name(net.partition_mode));
        symmetries_seen.insert(symmetry_name(net.partition_symmetry));
    }
    // Both ends and every choice come up.
    assert_eq!(replicas_seen, (1..=6).collect());
    assert_eq!(modes_seen.len(), 4);
    assert_eq!(symmetries_seen.len(), 2);
}

#[test]
fn swarm_draw_order_is_pinned() {
    // The draw order is part of the seed contract: this line may only change when a
    // parameter is appended (and then only by gaining a suffix) or a range in
    // swarm.json changes. Re-lock deliberately and say why in the commit.
    let banner = builtin("swarm").resolve(42).banner_line();
    assert_eq!(banner, PINNED_SWARM_SEED_42);
}

/// Re-locks: (1) first version of swarm.json. (2) issue #16: the `storage` section's
/// two rates are appended (a suffix; every earlier value unchanged). (3) issue #16:
/// `disk_slow_probability` appended (a suffix again). (4) issue #16:
/// `power_outage_probability` appended (its range is 0..=0 for now, so it draws 0).
/// (5) issue #42: `adversary_forged_frame_probability` appended, printed only when
/// nonzero (a suffix; every earlier value unchanged).
const PINNED_SWARM_SEED_42: &str = concat!(
    "profile=swarm kind=swarm one_way_delay_min_ticks=3 ",
    "one_way_delay_mean_ticks=5 packet_loss_probability=0.15 ",
    "packet_replay_probability=0.04 packet_corruption_probability=0.016 ",
    "link_capacity_packets=41 partition_probability=0.003 ",
    "unpartition_probability=0.07 partition_stability_ticks=32 ",
    "unpartition_stability_ticks=56 partition_mode=uniform-partition ",
    "partition_symmetry=asymmetric path_clog_probability=0.01 ",
    "path_clog_duration_mean_ticks=2 clock_offset_max_micros=201000 ",
    "clock_drift_max_ppm=109 replicas=2 clients=1 shards=3 ",
    "crash_probability=0.005 restart_probability=0.005 power_loss_share=1 ",
    "disk_error_probability=0.013 disk_corruption_probability=0.5 ",
    "disk_slow_probability=0.002 power_outage_probability=0 ",
    "adversary_forged_frame_probability=0.025",
);

#[test]
fn the_adversary_section_is_optional_checked_and_drawn_last() {
    // Absent: no adversary, and the banner says nothing of one.
    let light = builtin("light").resolve(1);
    assert_eq!(light.adversary.forged_frame_probability, 0.0);
    assert!(!light.banner_line().contains("adversary"));
    // Present in a fixed profile: used as is, and checked as a probability.
    let text = include_str!("../../../fault-profiles/light.json").replacen(
        "\"storage\"",
        "\"adversary\": { \"forged_frame_probability\": 0.25 },\n  \"storage\"",
        1,
    );
    let attacked = parse_profile(&text, "attacked").expect("parses").resolve(1);
    assert_eq!(attacked.adversary.forged_frame_probability, 0.25);
    assert!(
        attacked
            .banner_line()
            .ends_with("adversary_forged_frame_probability=0.25")
    );
    let bad = text.replacen("0.25", "1.5", 1);
    let error = parse_profile(&bad, "bad").expect_err("not a probability");
    assert_eq!(error.field.as_deref(), Some("adversary.forged_frame_probability"));
    let unknown = text.replacen("forged_frame_probability", "frames", 1);
    assert!(parse_profile(&unknown, "unknown").is_err());
    // Swarm draws it on its grid, some seeds none.
    let swarm = builtin("swarm");
    let drawn: BTreeSet<u64> = (0..200)
        .map(|seed| (swarm.resolve(seed).adversary.forged_frame_probability * 10_000.0).round() as u64)
        .collect();
    assert_eq!(drawn, BTreeSet::from([0, 125, 250, 375, 500]), "{drawn:?}");
}

#[test]
fn swarm_mean_respects_the_drawn_floor_on_a_tight_range() {
    // The mean range starts below the floor range: the mean is drawn at or above the
    // drawn floor, still on its own grid.
    let mut ranges = swarm_ranges();
    ranges.network.one_way_delay_min_ticks = IntRange {
        min: 5,
        max: 9,
        step: 1,
    };
    ranges.network.one_way_delay_mean_ticks = IntRange {
        min: 1,
        max: 9,
        step: 2,
    };
    let profile = FaultProfile::Swarm {
        name: "tight".to_owned(),
        ranges,
    };
    profile.validate().expect("valid");
    for seed in 0..500 {
        let net = profile.resolve(seed).network;
        assert!(net.one_way_delay_mean_ticks >= net.one_way_delay_min_ticks);
        assert_eq!(net.one_way_delay_mean_ticks % 2, 1);
    }
}

#[test]
fn banner_line_prints_every_value() {
    let fixed = builtin("heavy").resolve(0).banner_line();
    let swarm = builtin("swarm").resolve(7).banner_line();
    for key in parse::NETWORK_KEYS {
        assert!(fixed.contains(&format!(" {key}=")), "{key} missing from {fixed}");
        assert!(swarm.contains(&format!(" {key}=")), "{key} missing from {swarm}");
    }
    for key in parse::CLUSTER_KEYS {
        assert!(!fixed.contains(&format!(" {key}=")), "{fixed}");
        assert!(swarm.contains(&format!(" {key}=")), "{key} missing from {swarm}");
    }
    assert!(fixed.starts_with("profile=heavy kind=fixed "), "{fixed}");
    assert!(fixed.contains(" packet_loss_probability=0.1 "), "{fixed}");
    assert!(fixed.contains(" partition_mode=uniform-size "), "{fixed}");
    assert!(swarm.starts_with("profile=swarm kind=swarm "), "{swarm}");
    assert!(!fixed.contains('\n') && !swarm.contains('\n'));
}

// ---------------------------------------------------------------- sources

#[test]
fn load_by_path_from_a_temp_file() {
    let path = std::env::temp_dir().join(format!(
        "simulator-profile-test-{}-{}.json",
        std::process::id(),
        line!()
    ));
    let text = builtin_text("light").replace("\"light\"", "\"my-light\"");
    std::fs::write(&path, text).expect("write temp file");
    let loaded = load_profile(path.to_str().expect("utf-8 path"));
    std::fs::remove_file(&path).expect("remove temp file");
    let loaded = loaded.expect("loads");
    assert_eq!(loaded.name(), "my-light");
    match (&loaded, builtin("light")) {
        (FaultProfile::Fixed { network, .. }, FaultProfile::Fixed { network: light, .. }) => {
            assert_eq!(*network, light);
        }
        other => panic!("unexpected profiles {other:?}"),
    }
}

#[test]
fn load_of_a_missing_file_names_the_path() {
    let path = std::env::temp_dir().join(format!("simulator-profile-missing-{}.json", std::process::id()));
    let shown = path.to_str().expect("utf-8 path").to_owned();
    let error = load_profile(&shown).expect_err("missing file");
    assert!(matches!(error.kind, ProfileErrorKind::Read { .. }), "{error:?}");
    assert!(error.to_string().contains(&shown), "{error}");
}

#[test]
fn unknown_name_error_lists_the_valid_names() {
    let error = load_profile("medium").expect_err("unknown");
    let message = error.to_string();
    assert!(message.contains("medium"), "{message}");
    for name in BUILTIN_PROFILE_NAMES {
        assert!(message.contains(name), "{message} lacks {name}");
    }
    assert_eq!(
        ProfileSource::parse("x.json").expect("path"),
        ProfileSource::Path("x.json".into())
    );
    assert_eq!(
        ProfileSource::parse("dir/x").expect("path"),
        ProfileSource::Path("dir/x".into())
    );
    assert_eq!(
        ProfileSource::parse("heavy").expect("builtin"),
        ProfileSource::Builtin("heavy")
    );
    let error = ProfileSource::Builtin("bogus").load().expect_err("unknown builtin");
    assert!(
        error.to_string().contains("none, light, heavy, split, swarm"),
        "{error}"
    );
}

#[test]
fn parse_never_panics_on_mangled_input() {
    let mut rng = SimRng::new(99);
    for name in BUILTIN_PROFILE_NAMES {
        let bytes = builtin_text(name).as_bytes();
        // Every truncation.
        for cut in 0..bytes.len() {
            let text = String::from_utf8_lossy(&bytes[..cut]);
            let _ = parse_profile(&text, "mangled");
        }
        // Random byte flips; whatever loads also resolves.
        for _ in 0..2000 {
            let mut mangled = bytes.to_vec();
            for _ in 0..=rng.below(3) {
                let at = rng.index(mangled.len());
                mangled[at] = b"0123456789.-e\"{}[],: xz"[rng.index(23)];
            }
            let text = String::from_utf8_lossy(&mangled);
            if let Ok(profile) = parse_profile(&text, "mangled") {
                let _ = profile.resolve(rng.next_u64()).banner_line();
            }
        }
    }
}

#[test]
fn resolve_never_panics_on_unvalidated_ranges() {
    let mut ranges = swarm_ranges();
    ranges.network.one_way_delay_min_ticks = IntRange {
        min: 9,
        max: 2,
        step: 0,
    };
    ranges.network.packet_loss_probability = ProbabilityRange {
        min: f64::NAN,
        max: -1.0,
        step: 0.0,
    };
    ranges.network.partition_mode.clear();
    ranges.cluster.replicas = IntRange {
        min: 0,
        max: u64::MAX,
        step: 1,
    };
    let profile = FaultProfile::Swarm {
        name: "broken".to_owned(),
        ranges,
    };
    assert!(profile.validate().is_err());
    for seed in 0..100 {
        let _ = profile.resolve(seed).banner_line();
    }
}

// ---------------------------------------------------------------- errors: structure

#[test]
fn error_malformed_json_reports_line_and_column() {
    let text = "{\n  \"kind\": \"fixed\",\n  \"name\": \"x\" \"network\": {}\n}";
    let error = parse_profile(text, "test profile").expect_err("malformed");
    match &error.kind {
        ProfileErrorKind::Malformed { line, column, .. } => {
            assert_eq!((*line, *column), (3, 15), "{error}");
        }
        other => panic!("{other:?}"),
    }
    let message = error.to_string();
    assert!(message.contains("line 3 column 15"), "{message}");
    assert!(message.contains("test profile"), "{message}");
}

#[test]
fn error_top_level_not_an_object() {
    let error = parse_profile("[1, 2]", "test profile").expect_err("array");
    assert_names(&error, "(top level)", "expected an object");
}

#[test]
fn error_missing_kind() {
    let error = error_after("light", |v| {
        v.as_object_mut().expect("object").remove("kind");
    });
    assert_names(&error, "kind", "missing");
}

#[test]
fn error_wrong_kind() {
    let error = error_after("light", |v| set(v, &["kind"], json!("fixd")));
    assert_names(&error, "kind", "unknown kind `fixd`");
    let error = error_after("light", |v| set(v, &["kind"], json!(1)));
    assert_names(&error, "kind", "found number 1");
}

#[test]
fn error_fixed_file_marked_swarm_reports_the_missing_section() {
    let error = error_after("light", |v| set(v, &["kind"], json!("swarm")));
    // A swarm needs ranges where the fixed file has numbers; the first such field is named.
    assert!(error.field.is_some(), "{error}");
    assert!(
        error.to_string().contains("network.") || error.to_string().contains("cluster"),
        "{error}"
    );
}

#[test]
fn error_unknown_top_level_field() {
    let error = error_after("heavy", |v| set(v, &["cluster"], json!({})));
    assert_names(
        &error,
        "cluster",
        "unknown field; expected one of kind, name, network, storage",
    );
}

#[test]
fn error_unknown_network_field() {
    let error = error_after("light", |v| {
        set(v, &["network", "packet_loss_probabilty"], json!(0.1));
    });
    assert_names(&error, "network.packet_loss_probabilty", "packet_loss_probability");
}

#[test]
fn error_unknown_range_field() {
    let error = error_after("swarm", |v| {
        set(v, &["cluster", "replicas", "mean"], json!(3));
    });
    assert_names(&error, "cluster.replicas.mean", "expected one of min, max, step");
}

#[test]
fn error_missing_network_field() {
    let error = error_after("heavy", |v| {
        v["network"]
            .as_object_mut()
            .expect("object")
            .remove("link_capacity_packets");
    });
    assert_names(&error, "network.link_capacity_packets", "missing");
}

#[test]
fn error_missing_range_step() {
    let error = error_after("swarm", |v| {
        v["network"]["packet_loss_probability"]
            .as_object_mut()
            .expect("object")
            .remove("step");
    });
    assert_names(&error, "network.packet_loss_probability.step", "missing");
}

#[test]
fn error_wrong_type() {
    let error = error_after("light", |v| {
        set(v, &["network", "packet_loss_probability"], json!("2%"));
    });
    assert_names(
        &error,
        "network.packet_loss_probability",
        "expected a number, found string \"2%\"",
    );
    let error = error_after("light", |v| {
        set(v, &["network", "partition_stability_ticks"], json!(-5));
    });
    assert_names(&error, "network.partition_stability_ticks", "non-negative integer");
    let error = error_after("light", |v| {
        set(v, &["network", "link_capacity_packets"], json!(1.5));
    });
    assert_names(&error, "network.link_capacity_packets", "non-negative integer");
}

#[test]
fn error_unknown_partition_mode() {
    let error = error_after("light", |v| {
        set(v, &["network", "partition_mode"], json!("isolate-one"));
    });
    assert_names(&error, "network.partition_mode", "isolate-single");
    let error = error_after("swarm", |v| {
        set(v, &["network", "partition_symmetry"], json!(["symmetric", "both"]));
    });
    assert_names(&error, "network.partition_symmetry[1]", "asymmetric");
}

#[test]
fn error_bad_name() {
    let error = error_after("light", |v| set(v, &["name"], json!("my profile")));
    assert_names(&error, "name", "not a valid profile name");
}

// ---------------------------------------------------------------- errors: fixed values

#[test]
fn error_probability_above_one() {
    let error = error_after("light", |v| {
        set(v, &["network", "packet_replay_probability"], json!(1.5));
    });
    assert_names(&error, "network.packet_replay_probability", "outside [0, 1]");
}

#[test]
fn error_probability_negative() {
    let error = error_after("light", |v| {
        set(v, &["network", "path_clog_probability"], json!(-0.01));
    });
    assert_names(&error, "network.path_clog_probability", "outside [0, 1]");
}

#[test]
fn error_probability_nan() {
    // JSON cannot spell NaN; a profile built in code can.
    let mut network = NetworkConfig::perfect();
    network.packet_corruption_probability = f64::NAN;
    let profile = FaultProfile::Fixed {
        name: "nan".to_owned(),
        network,
        storage: StorageRates::default(),
        adversary: Default::default(),
    };
    let error = profile.validate().expect_err("NaN");
    let message = error.to_string();
    assert_eq!(error.field.as_deref(), Some("network.packet_corruption_probability"));
    assert!(message.contains("`network.packet_corruption_probability`"), "{message}");
    assert!(message.contains("NaN"), "{message}");
    assert!(message.contains("fault profile `nan`"), "{message}");
}

#[test]
fn error_delay_min_zero() {
    let error = error_after("none", |v| set(v, &["network", "one_way_delay_min_ticks"], json!(0)));
    assert_names(&error, "network.one_way_delay_min_ticks", "at least 1");
}

#[test]
fn error_mean_below_min() {
    let error = error_after("heavy", |v| {
        set(v, &["network", "one_way_delay_min_ticks"], json!(9));
    });
    assert_names(&error, "network.one_way_delay_mean_ticks", "mean 8 is below");
}

#[test]
fn error_link_capacity_zero() {
    let error = error_after("light", |v| set(v, &["network", "link_capacity_packets"], json!(0)));
    assert_names(&error, "network.link_capacity_packets", "at least 1");
}

#[test]
fn error_partition_that_never_heals() {
    let error = error_after("light", |v| {
        set(v, &["network", "unpartition_probability"], json!(0));
    });
    assert_names(&error, "network.unpartition_probability", "never heal");
    // No partitions at all: a zero heal probability is fine.
    assert!(load_profile("none").is_ok());
}

#[test]
fn error_clock_offset_too_large() {
    let error = error_after("heavy", |v| {
        set(v, &["network", "clock_offset_max_micros"], json!(60_000_001));
    });
    assert_names(&error, "network.clock_offset_max_micros", "exceeds the limit");
}

#[test]
fn error_clock_drift_too_large() {
    let error = error_after("heavy", |v| {
        set(v, &["network", "clock_drift_max_ppm"], json!(20_000));
    });
    assert_names(&error, "network.clock_drift_max_ppm", "exceeds the limit");
}

// ---------------------------------------------------------------- errors: swarm ranges

#[test]
fn error_swarm_range_min_above_max() {
    let error = error_after("swarm", |v| {
        set(
            v,
            &["network", "partition_stability_ticks"],
            json!({"min": 80, "max": 20, "step": 1}),
        );
    });
    assert_names(
        &error,
        "network.partition_stability_ticks",
        "min 80 is greater than max 20",
    );
    let error = error_after("swarm", |v| {
        set(
            v,
            &["network", "packet_loss_probability"],
            json!({"min": 0.2, "max": 0.1, "step": 0.1}),
        );
    });
    assert_names(&error, "network.packet_loss_probability", "greater than max");
}

#[test]
fn error_swarm_int_step_zero() {
    let error = error_after("swarm", |v| {
        set(v, &["cluster", "clients", "step"], json!(0));
    });
    assert_names(&error, "cluster.clients.step", "at least 1");
}

#[test]
fn error_swarm_int_step_not_dividing() {
    let error = error_after("swarm", |v| {
        set(v, &["network", "clock_offset_max_micros", "step"], json!(3000));
    });
    assert_names(&error, "network.clock_offset_max_micros.step", "does not divide");
}

#[test]
fn error_swarm_probability_step_not_positive() {
    let error = error_after("swarm", |v| {
        set(v, &["network", "partition_probability", "step"], json!(0));
    });
    assert_names(&error, "network.partition_probability.step", "positive");
    let error = error_after("swarm", |v| {
        set(v, &["network", "partition_probability", "step"], json!(-0.001));
    });
    assert_names(&error, "network.partition_probability.step", "positive");
}

#[test]
fn error_swarm_probability_step_not_dividing() {
    let error = error_after("swarm", |v| {
        set(v, &["network", "packet_loss_probability", "step"], json!(0.04));
    });
    assert_names(&error, "network.packet_loss_probability.step", "does not divide");
}

#[test]
fn error_swarm_probability_grid_too_fine() {
    let error = error_after("swarm", |v| {
        set(v, &["cluster", "power_loss_share", "step"], json!(1e-9));
    });
    assert_names(&error, "cluster.power_loss_share.step", "grid steps");
}

#[test]
fn error_swarm_probability_range_outside_unit_interval() {
    let error = error_after("swarm", |v| {
        set(v, &["cluster", "crash_probability", "max"], json!(1.5));
    });
    assert_names(&error, "cluster.crash_probability.max", "outside [0, 1]");
    let error = error_after("swarm", |v| {
        set(v, &["network", "packet_replay_probability", "min"], json!(-0.5));
    });
    assert_names(&error, "network.packet_replay_probability.min", "outside [0, 1]");
}

#[test]
fn error_swarm_unpartition_min_zero() {
    let error = error_after("swarm", |v| {
        set(
            v,
            &["network", "unpartition_probability"],
            json!({"min": 0, "max": 0.1, "step": 0.01}),
        );
    });
    assert_names(
        &error,
        "network.unpartition_probability.min",
        "never draws a heal probability of 0",
    );
}

#[test]
fn error_swarm_link_capacity_min_below_8() {
    let error = error_after("swarm", |v| {
        set(
            v,
            &["network", "link_capacity_packets"],
            json!({"min": 7, "max": 64, "step": 1}),
        );
    });
    assert_names(&error, "network.link_capacity_packets.min", "below 8");
}

#[test]
fn error_swarm_delay_min_zero() {
    let error = error_after("swarm", |v| {
        set(v, &["network", "one_way_delay_min_ticks", "min"], json!(0));
    });
    assert_names(&error, "network.one_way_delay_min_ticks.min", "at least 1");
}

#[test]
fn error_swarm_mean_range_below_delay_floor() {
    let error = error_after("swarm", |v| {
        set(v, &["network", "one_way_delay_mean_ticks", "max"], json!(2));
    });
    assert_names(
        &error,
        "network.one_way_delay_mean_ticks.max",
        "below one_way_delay_min_ticks.max 3",
    );
}

#[test]
fn error_swarm_empty_choice() {
    let error = error_after("swarm", |v| set(v, &["network", "partition_mode"], json!([])));
    assert_names(&error, "network.partition_mode", "empty");
    let error = error_after("swarm", |v| set(v, &["network", "partition_mode"], json!("none")));
    assert_names(&error, "network.partition_mode", "a list of choices");
}

#[test]
fn error_swarm_duplicate_choice() {
    let error = error_after("swarm", |v| {
        set(
            v,
            &["network", "partition_symmetry"],
            json!(["asymmetric", "symmetric", "asymmetric"]),
        );
    });
    assert_names(&error, "network.partition_symmetry[2]", "listed twice");
}

#[test]
fn error_swarm_replicas_min_zero() {
    let error = error_after("swarm", |v| set(v, &["cluster", "replicas", "min"], json!(0)));
    assert_names(&error, "cluster.replicas.min", "at least 1");
}

#[test]
fn error_swarm_replicas_max_above_six() {
    let error = error_after("swarm", |v| set(v, &["cluster", "replicas", "max"], json!(7)));
    assert_names(&error, "cluster.replicas.max", "exceeds the limit of 6 replicas");
}

#[test]
fn error_swarm_clients_min_zero() {
    let error = error_after("swarm", |v| set(v, &["cluster", "clients", "min"], json!(0)));
    assert_names(&error, "cluster.clients.min", "at least 1");
}

#[test]
fn error_swarm_shards_max_too_large() {
    let error = error_after("swarm", |v| set(v, &["cluster", "shards", "max"], json!(65)));
    assert_names(&error, "cluster.shards.max", "exceeds the limit of 64 shards");
}

#[test]
fn error_swarm_missing_cluster_section() {
    let error = error_after("swarm", |v| {
        v.as_object_mut().expect("object").remove("cluster");
    });
    assert_names(&error, "cluster", "missing");
}

#[test]
fn error_swarm_clock_drift_range_too_large() {
    let error = error_after("swarm", |v| {
        set(
            v,
            &["network", "clock_drift_max_ppm"],
            json!({"min": 0, "max": 20_000, "step": 1}),
        );
    });
    assert_names(&error, "network.clock_drift_max_ppm.max", "exceeds the limit");
}

#[test]
fn the_storage_section_is_required_and_checked() {
    let error = error_after("light", |v| {
        v.as_object_mut().expect("object").remove("storage");
    });
    assert_names(&error, "storage", "missing");
    let error = error_after("heavy", |v| set(v, &["storage", "disk_error_probability"], json!(1.5)));
    assert_names(&error, "storage.disk_error_probability", "outside [0, 1]");
    let error = error_after("light", |v| set(v, &["storage", "disk_rot"], json!(0.1)));
    assert_names(&error, "storage.disk_rot", "unknown field");
    let error = error_after("swarm", |v| {
        set(v, &["storage", "disk_corruption_probability", "max"], json!(2))
    });
    assert!(
        error.to_string().contains("storage.disk_corruption_probability"),
        "{error}"
    );
}

#[test]
fn light_heavy_and_swarm_inject_disk_faults_and_none_does_not() {
    let rates = |name: &str| load_profile(name).expect("built-in").resolve(7).storage;
    assert_eq!(rates("none"), StorageRates::default());
    for name in ["light", "heavy"] {
        let storage = rates(name);
        assert!(
            storage.disk_error_probability > 0.0 && storage.disk_corruption_probability > 0.0,
            "{name}"
        );
    }
    // Swarm draws its rates per seed, after everything else, from the grid.
    let drawn: Vec<StorageRates> = (0..64).map(rates_of_swarm).collect();
    assert!(drawn.iter().any(|rates| rates.disk_error_probability > 0.0));
    assert!(drawn.iter().any(|rates| rates.disk_corruption_probability > 0.0));
    assert!(drawn.iter().all(|rates| rates.disk_error_probability <= 0.02));
}

fn rates_of_swarm(seed: u64) -> StorageRates {
    let resolved = load_profile("swarm").expect("built-in").resolve(seed);
    assert_eq!(resolved.swarm.map(|draw| draw.storage), Some(resolved.storage));
    resolved.storage
}
