//! The campaign spec file (`campaign --spec FILE`): a campaign kept in the repository,
//! so the nightly script, the CI workflow and the Kubernetes Job run the same thing.
//!
//! The format is the command line, laid out for people:
//!
//! ```text
//! # `#` starts a comment; a line ending in `\` goes on on the next line.
//! --seeds 1..1000000                      # flags outside `sub` lines: the whole campaign
//! --require-marks vc.nack_quorum_decides,repair.range_evicted
//!
//! # sub NAME WEIGHT FLAGS...: one sub-campaign, its share of the time budget, its flags
//! sub metadata-crashes 3 --planes metadata --profiles none,light,heavy,swarm \
//!                        --crash-prob 0.01 --restart-prob 0.05 --crash-primary
//! sub partition-power  2 --planes partition,mixed --power-loss-prob 0.3 --node-shards 2
//! ```
//!
//! Each sub-campaign's flags are the file's campaign-wide flags, then its own, then the
//! command line's (a later flag wins), so `campaign --spec F --ticks 500` shortens every
//! run. Flags that shape the whole campaign (`--jobs`, `--minutes`,
//! `--stop-after-failures`, `--out`, `--shard`, `--require-marks`, `--corpus`) are
//! refused on a `sub` line. A file with no `sub` line
//! is one campaign: its flags stand where `--spec FILE` stood.

/// Flags that belong to the whole campaign, never to one sub-campaign.
pub const CAMPAIGN_WIDE_FLAGS: [&str; 8] = [
    "--jobs",
    "--minutes",
    "--stop-after-failures",
    "--out",
    "--shard",
    "--require-marks",
    "--corpus",
    "--spec",
];

/// One `sub` line.
#[derive(Clone, Debug, PartialEq)]
pub struct SubLine {
    /// Line number (1-based) where the sub-campaign starts, for error messages.
    pub line: usize,
    /// Its name (letters, digits, `-`, `_`), unique in the file.
    pub name: String,
    /// Its share of the time budget, relative to the other sub-campaigns' weights.
    pub weight: f64,
    /// Its own flags, as written.
    pub flags: Vec<String>,
}

/// A parsed spec file.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecFile {
    /// Where it was read from (for messages and the campaign label).
    pub path: String,
    /// The campaign-wide flags (every line that is not a `sub` line).
    pub global: Vec<String>,
    /// The sub-campaigns, in file order (empty: the file is one campaign).
    pub subs: Vec<SubLine>,
}

impl SpecFile {
    /// Read and parse `path`.
    pub fn read(path: &str) -> Result<SpecFile, String> {
        let text = std::fs::read_to_string(path).map_err(|error| format!("--spec {path}: {error}"))?;
        SpecFile::parse(path, &text)
    }

    /// Parse the text of a spec file; errors name the file and line.
    pub fn parse(path: &str, text: &str) -> Result<SpecFile, String> {
        let mut spec = SpecFile {
            path: path.to_owned(),
            global: Vec::new(),
            subs: Vec::new(),
        };
        for (line, words) in logical_lines(text) {
            let at = |message: String| format!("--spec {path}:{line}: {message}");
            if words.first().map(String::as_str) != Some("sub") {
                spec.global.extend(words);
                continue;
            }
            let name = words.get(1).ok_or_else(|| {
                at("a sub line needs a name, a weight and flags: sub NAME WEIGHT FLAGS...".to_owned())
            })?;
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') || name.starts_with('-') {
                return Err(at(format!(
                    "sub-campaign name {name:?}: use letters, digits, '-' and '_' (and do not start with '-')"
                )));
            }
            if spec.subs.iter().any(|sub| &sub.name == name) {
                return Err(at(format!("sub-campaign {name:?} is named twice")));
            }
            let weight_text = words.get(2).ok_or_else(|| {
                at(format!(
                    "sub-campaign {name}: no weight (a positive number after the name)"
                ))
            })?;
            let weight: f64 = weight_text
                .parse()
                .ok()
                .filter(|weight: &f64| weight.is_finite() && *weight > 0.0)
                .ok_or_else(|| {
                    at(format!(
                        "sub-campaign {name}: weight {weight_text:?} is not a positive number"
                    ))
                })?;
            let flags: Vec<String> = words[3..].to_vec();
            for flag in &flags {
                let bare = flag.split('=').next().unwrap_or(flag);
                if CAMPAIGN_WIDE_FLAGS.contains(&bare) {
                    return Err(at(format!(
                        "sub-campaign {name}: {bare} shapes the whole campaign; put it on a line of its own, outside `sub` lines"
                    )));
                }
            }
            spec.subs.push(SubLine {
                line,
                name: name.clone(),
                weight,
                flags,
            });
        }
        for flag in &spec.global {
            if flag == "--spec" || flag.starts_with("--spec=") {
                return Err(format!("--spec {path}: a spec file cannot include another (--spec)"));
            }
        }
        Ok(spec)
    }
}

/// The file's words, one entry per logical line (comments gone, `\` continuations
/// joined), with the number of the line where each starts; blank lines are skipped.
fn logical_lines(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut lines = Vec::new();
    let mut current: Option<(usize, Vec<String>)> = None;
    for (number, raw) in text.lines().enumerate() {
        let content = raw.split('#').next().unwrap_or_default().trim_end();
        let (content, continues) = match content.strip_suffix('\\') {
            Some(head) => (head, true),
            None => (content, false),
        };
        let entry = current.get_or_insert_with(|| (number + 1, Vec::new()));
        entry.1.extend(content.split_whitespace().map(str::to_owned));
        if !continues
            && let Some(done) = current.take()
            && !done.1.is_empty()
        {
            lines.push(done);
        }
    }
    if let Some(done) = current.filter(|done| !done.1.is_empty()) {
        lines.push(done);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_lines_carry_a_name_a_weight_and_flags_and_other_lines_are_campaign_wide() {
        let text = "# nightly\n--seeds 1..9   # all\n\nsub meta 3 --planes metadata \\\n   --crash-primary\nsub part 1.5 --planes partition\n";
        let spec = SpecFile::parse("n.spec", text).expect("valid");
        assert_eq!(spec.global, ["--seeds", "1..9"]);
        assert_eq!(spec.subs.len(), 2);
        assert_eq!(spec.subs[0].name, "meta");
        assert_eq!(spec.subs[0].line, 4);
        assert!((spec.subs[0].weight - 3.0).abs() < f64::EPSILON);
        assert_eq!(spec.subs[0].flags, ["--planes", "metadata", "--crash-primary"]);
        assert_eq!(spec.subs[1].flags, ["--planes", "partition"]);
    }

    #[test]
    fn a_file_without_sub_lines_is_one_campaign() {
        let spec = SpecFile::parse("f", "--planes metadata\n--seeds 1..5\n").expect("valid");
        assert!(spec.subs.is_empty());
        assert_eq!(spec.global, ["--planes", "metadata", "--seeds", "1..5"]);
    }

    #[test]
    fn bad_sub_lines_are_refused_naming_the_line() {
        for (text, says) in [
            ("sub\n", "needs a name"),
            ("sub a\n", "no weight"),
            ("sub a zero --planes x\n", "not a positive number"),
            ("sub a 0 --planes x\n", "not a positive number"),
            ("sub a 1\nsub a 2\n", "named twice"),
            ("sub a/b 1\n", "sub-campaign name"),
            ("sub a 1 --minutes 5\n", "--minutes shapes the whole campaign"),
            ("sub a 1 --shard=1/2\n", "--shard shapes the whole campaign"),
            ("--spec other\n", "cannot include another"),
        ] {
            let error = SpecFile::parse("x.spec", text).expect_err(text);
            assert!(error.contains(says), "{text:?}: {error}");
            assert!(error.starts_with("--spec x.spec"), "{error}");
        }
    }
}
