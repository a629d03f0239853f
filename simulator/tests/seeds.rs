//! The seed corpus: every line of `seeds/*.jsonl` names a command that once failed, what
//! broke, and the test that pins it. This replays every `workload-fuzz` line (each must
//! pass now) and checks that each named test exists.

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
        replayed += 1;
    }
    assert!(replayed > 0, "no workload-fuzz line was replayed");
}
