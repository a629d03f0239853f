//! The seed corpus: every line of `seeds/*.jsonl` names a command that once failed, what
//! broke, and the test that pins it. This replays every `workload-fuzz` line (each must
//! pass now, and reach the coverage marks its line names as its scenario) and checks
//! that each named test exists.

use std::path::Path;

use clap::Parser;
use simulator::fuzz::{self, FuzzArgs, Verdict};

fn corpus_lines() -> Vec<(String, serde_json::Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../seeds");
    let mut lines = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("seeds/ exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable seed file");
        for (number, line) in text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
            let where_ = format!("{}:{}", file.display(), number + 1);
            let value: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|error| panic!("{where_}: not JSON: {error}"));
            for field in ["command", "broke", "test", "found"] {
                assert!(
                    value[field].is_string(),
                    "{where_}: field `{field}` missing or not a string"
                );
            }
            lines.push((where_, value));
        }
    }
    lines
}

fn all_test_sources() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut text = String::new();
    let mut stack = vec![root.join("simulator"), root.join("cluster")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() && !path.ends_with("target") {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                text.push_str(&std::fs::read_to_string(&path).expect("readable source"));
            }
        }
    }
    text
}

#[test]
fn every_seed_in_the_corpus_names_an_existing_test() {
    let lines = corpus_lines();
    assert!(!lines.is_empty(), "the corpus is empty");
    let sources = all_test_sources();
    for (where_, value) in &lines {
        let test = value["test"].as_str().unwrap_or_default();
        assert!(
            sources.contains(&format!("fn {test}(")),
            "{where_}: test `{test}` does not exist"
        );
    }
}

#[test]
fn every_workload_fuzz_seed_in_the_corpus_passes() {
    let mut replayed = 0;
    for (where_, value) in corpus_lines() {
        let command = value["command"].as_str().unwrap_or_default();
        let Some(flags) = command.strip_prefix("workload-fuzz ") else {
            continue;
        };
        let args = FuzzArgs::try_parse_from(std::iter::once("workload-fuzz").chain(flags.split_whitespace()))
            .unwrap_or_else(|error| panic!("{where_}: bad command: {error}"));
        let seed = args
            .seed
            .unwrap_or_else(|| panic!("{where_}: the command must give --seed"));
        let mut out = Vec::new();
        let report = fuzz::run(&args, seed, &mut out).expect("writing to a Vec never fails");
        assert_eq!(
            report.verdict,
            Verdict::Pass,
            "{where_}: {command}\n{}",
            String::from_utf8_lossy(&out)
        );
        if let Err(error) = check_scenario(&value, &fuzz::marks_reached()) {
            panic!("{where_}: {command}\n{error}");
        }
        replayed += 1;
    }
    assert!(replayed > 0, "no workload-fuzz line was replayed");
}

/// The marks a line names as its scenario (`"marks": [...]`, optional), each checked
/// to be a mark of the table.
fn scenario_marks(value: &serde_json::Value) -> Result<Vec<String>, String> {
    let Some(marks) = value.get("marks") else {
        return Ok(Vec::new());
    };
    let marks = marks.as_array().ok_or("field `marks` is not a list of mark names")?;
    marks
        .iter()
        .map(|mark| {
            let name = mark.as_str().ok_or("field `marks` holds a non-string")?;
            cluster::coverage::Mark::from_name(name)
                .map(|_| name.to_owned())
                .ok_or_else(|| format!("field `marks` names `{name}`, which is no coverage mark"))
        })
        .collect()
}

/// Whether the run reached every mark its line names as its scenario: a seed pins a
/// run, and a re-lock of the draws may move the run off the situation its bug lived in
/// while it still passes; this says so instead of letting the line go on meaning
/// nothing.
fn check_scenario(value: &serde_json::Value, reached: &[String]) -> Result<(), String> {
    let named = scenario_marks(value)?;
    let missing: Vec<&String> = named.iter().filter(|mark| !reached.contains(mark)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let missing: Vec<&str> = missing.iter().map(|mark| mark.as_str()).collect();
    Err(format!(
        "the run passes but no longer reaches {} (its scenario: {}): the seed moved off the situation it pins. \
         Find a run that reaches it again with `campaign --explore --target-marks {} ...` (the line's flags, a \
         seed range around its seed), check that the test `{}` still covers the bug, and re-pin the line",
        missing.join(", "),
        value["broke"].as_str().unwrap_or_default(),
        named.join(","),
        value["test"].as_str().unwrap_or_default(),
    ))
}

#[test]
fn every_mark_a_corpus_line_names_is_a_coverage_mark() {
    for (where_, value) in corpus_lines() {
        if let Err(error) = scenario_marks(&value) {
            panic!("{where_}: {error}");
        }
    }
}

#[test]
fn a_line_whose_run_misses_a_named_mark_fails_naming_the_mark_and_the_re_pin() {
    let flags = "--seed 3 --ticks 2000 --plane metadata --faults none";
    let args = FuzzArgs::try_parse_from(std::iter::once("workload-fuzz").chain(flags.split_whitespace()))
        .expect("valid flags");
    let mut out = Vec::new();
    let report = fuzz::run(&args, 3, &mut out).expect("writing to a Vec never fails");
    assert_eq!(report.verdict, Verdict::Pass, "{}", String::from_utf8_lossy(&out));
    let reached = fuzz::marks_reached();
    // A fault-free run never installs a state transfer.
    let line = serde_json::json!({
        "command": format!("workload-fuzz {flags}"),
        "broke": "a transfer was installed wrong",
        "test": "some_test",
        "found": "2026-12-06",
        "marks": ["catch_up.transfer_installed"],
    });
    let error = check_scenario(&line, &reached).expect_err("the run does not reach the mark");
    assert!(
        error.contains("no longer reaches catch_up.transfer_installed"),
        "{error}"
    );
    assert!(error.contains("--target-marks catch_up.transfer_installed"), "{error}");
    let reached_line = serde_json::json!({ "marks": reached.iter().take(2).collect::<Vec<_>>() });
    assert_eq!(
        check_scenario(&reached_line, &reached),
        Ok(()),
        "marks the run reaches pass"
    );
    let bad = serde_json::json!({ "marks": ["vc.no_such_mark"] });
    assert!(
        check_scenario(&bad, &reached)
            .expect_err("an unknown mark is refused")
            .contains("no coverage mark")
    );
}
