//! `campaign`: run many seeds x fault profiles x planes in parallel and write a report;
//! `campaign merge DIR...` merges shard reports. See `--help`.
#![allow(
    clippy::disallowed_methods,
    reason = "the campaign id is stamped with the wall-clock date"
)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use simulator::campaign::report::{CampaignReport, RunVerdict};
use simulator::campaign::runner::run_campaign;
use simulator::campaign::shrink::{SHRINK_GROUPS_MAX, SHRUNK_DIR, ShrinkOptions, shrink_failure_groups};
use simulator::campaign::spec::{CampaignFlags, SubCampaign, parse_required_marks};
use simulator::campaign::spec_file::SpecFile;
use simulator::campaign::{check_writable, default_out, write_report};
use simulator::panic_report::install_quiet_panic_hook;

/// Run a seed campaign: every profile x plane x seed, in parallel, into one report.
///
/// Each run is an isolated workload-fuzz run; a failing or panicking run never stops the
/// others. The report (`report.json` and `report.html` under `--out`) lists every run
/// with its repro command and groups failures by signature, smallest seed first.
///
/// A campaign can be kept in a spec file (`--spec FILE`; the nightly's is
/// `scripts/nightly.spec`). It holds flags as on the command line (any number per line,
/// `#` starts a comment, a line ending in `\` goes on on the next), and may split the
/// campaign into sub-campaigns, one per line: `sub NAME WEIGHT FLAGS...`. Each
/// sub-campaign runs its own profiles x planes x seeds with the file's other flags, then
/// its own, then the command line's (a later flag wins); under `--minutes` the
/// sub-campaigns share the time by weight, and the report gives each its own line.
/// Flags that shape the whole campaign (`--jobs`, `--minutes`, `--stop-after-failures`,
/// `--out`, `--shard`, `--require-marks`) go outside `sub` lines or on the command line.
///
/// Coverage: every run records the coverage marks it reached (named points on the rare
/// paths of the cluster code; `workload-fuzz` prints them as its `coverage:` line). The
/// summary and report.html count the runs that reached each mark and name the marks no
/// run reached; `--require-marks` (or the spec's) makes a campaign whose runs never
/// reached a listed mark exit 1. A sharded campaign records its required marks in its
/// report and `campaign merge` checks them over all shards.
///
/// Exit codes: 0 every run passed; 1 at least one run failed (or was vacuous or
/// invalid); 2 bad input (flags, profiles, planes, seed range, report directory, corpus).
#[derive(Parser, Debug)]
#[command(
    name = "campaign",
    version,
    about,
    long_about,
    args_conflicts_with_subcommands = true,
    args_override_self = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: CampaignFlags,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Merge shard reports (directories holding report.json) into one report.
    Merge {
        /// Shard report directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where to write the merged report (default: reports/<campaign id>-merged/).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Known failure signatures (one per line, `#` comments): only a failure with a
        /// signature not listed (a new bug) makes the merge exit 1.
        #[arg(long, value_name = "FILE")]
        known: Option<PathBuf>,
        /// Coverage marks the merged campaign must reach (comma-separated names, as the
        /// `coverage:` lines print them); one that no run reached makes it exit 1.
        #[arg(long, value_name = "MARKS")]
        require_marks: Option<String>,
    },
}

/// Which shards of an N-way campaign the reports lack, if they are shards and some
/// are missing: a lost pod or job must not pass as a whole night.
fn missing_shards(reports: &[CampaignReport]) -> Option<String> {
    let (_, n) = reports.iter().find_map(|report| report.shard)?;
    let present: std::collections::BTreeSet<u32> = reports
        .iter()
        .filter_map(|report| report.shard)
        .filter(|&(_, of)| of == n)
        .map(|(k, _)| k)
        .collect();
    let missing: Vec<String> = (1..=n)
        .filter(|k| !present.contains(k))
        .map(|k| k.to_string())
        .collect();
    (!missing.is_empty()).then(|| format!("shard(s) {} of {n} are missing", missing.join(", ")))
}

/// Read a known-signatures file.
fn read_known(path: &std::path::Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("--known {}: {error}", path.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

/// `YYYYMMDD-HHMMSS` in UTC, from the system clock (days-to-civil conversion).
fn utc_stamp() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let (days, rest) = ((seconds / 86_400) as i64, seconds % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rest / 3_600,
        rest / 60 % 60,
        rest % 60
    )
}

/// Print the summary; the exit code is 1 when any run failed, was vacuous or invalid
/// (with `known`: only a failure of a signature not in it, or a vacuous run, counts),
/// or when a mark of `required` was reached by no run.
fn summarize(report: &CampaignReport, dir: &std::path::Path, known: Option<&[String]>, required: &[String]) -> u8 {
    let totals = report.totals();
    let rate = totals.runs() as f64 / report.wall_seconds.max(1e-9);
    println!(
        "campaign {}: {} runs in {:.1} s ({rate:.1} runs/s): {} passed, {} failed, {} vacuous, {} invalid, {} not started",
        report.campaign_id,
        totals.runs(),
        report.wall_seconds,
        totals.pass,
        totals.fail,
        totals.vacuous,
        totals.invalid,
        report.not_started
    );
    if report.sub_campaigns.len() > 1 {
        let total_ms: f64 = report.runs.iter().map(|run| run.wall_ms).sum::<f64>().max(1e-9);
        let total_weight: f64 = report.sub_campaigns.iter().map(|sub| sub.sub.weight).sum();
        for sub in &report.sub_campaigns {
            let runs: Vec<_> = report.runs.iter().filter(|run| run.campaign == sub.sub.name).collect();
            let passed = runs.iter().filter(|run| run.verdict == RunVerdict::Pass).count();
            // (`sum` of no f64 is -0.0, which prints as "-0")
            let ms: f64 = runs.iter().map(|run| run.wall_ms).sum::<f64>() + 0.0;
            println!(
                "  sub-campaign {}: {} runs ({} passed), {:.0}% of run time for {:.0}% of the weight, {} not started",
                sub.sub.name,
                runs.len(),
                passed,
                100.0 * ms / total_ms,
                100.0 * sub.sub.weight / total_weight,
                sub.not_started
            );
        }
    }
    let (checkpoints, transfers) = report.runs.iter().fold((0, 0), |(checkpoints, transfers), run| {
        (checkpoints + run.checkpoints, transfers + run.transfers_installed)
    });
    let exercised = report.runs.iter().filter(|run| run.transfers_installed > 0).count();
    println!(
        "catch-up: {checkpoints} checkpoints and {transfers} state transfers installed over all runs; \
         {exercised} of {} runs installed at least one",
        report.runs.len()
    );
    println!("{}", report.failover_line());
    let (sent, refused) = report.runs.iter().fold((0, 0), |(sent, refused), run| {
        (sent + run.adversary_sent, refused + run.adversary_refused)
    });
    let attacked = report.runs.iter().filter(|run| run.adversary_sent > 0).count();
    if attacked > 0 {
        println!(
            "adversary: {sent} forged, replayed or foreign frames sent over {attacked} runs; {refused} reached a \
             replica, and every one was refused (a run where one was not fails `adversary frame acted on`)"
        );
    }
    if let Some(explore) = &report.explore {
        println!("{}", explore.line());
        if let Some(line) = explore.targets_line() {
            println!("{line}");
        }
    }
    let reached = report.coverage();
    let never = report.marks_never_reached();
    println!(
        "coverage: {} of {} marks reached over all runs; never reached: {}",
        reached.len(),
        cluster::coverage::MARKS,
        if never.is_empty() {
            "none".to_owned()
        } else {
            never.join(", ")
        }
    );
    if let Some(first) = report
        .runs
        .iter()
        .filter(|run| run.verdict == RunVerdict::Fail)
        .min_by(|a, b| a.finished_seconds.total_cmp(&b.finished_seconds))
    {
        let before = report
            .runs
            .iter()
            .filter(|run| run.finished_seconds <= first.finished_seconds)
            .count();
        println!(
            "first failure: {:.1} s into the campaign, after {before} runs finished: {}",
            first.finished_seconds, first.command
        );
    }
    let deepest = report.deepest();
    if !deepest.is_empty() {
        let values: Vec<String> = deepest
            .iter()
            .map(|(name, value, _)| format!("{name}={value}"))
            .collect();
        println!("watermarks (deepest run of each, in report.json): {}", values.join(" "));
    }
    let mut required: Vec<&String> = required.iter().chain(&report.required_marks).collect();
    required.sort();
    required.dedup();
    if report.shard.is_some() {
        if !required.is_empty() {
            println!(
                "coverage: {} required marks are checked when the shards are merged (campaign merge)",
                required.len()
            );
        }
        required.clear();
    }
    let missing: Vec<&String> = required
        .into_iter()
        .filter(|name| !reached.contains_key(*name))
        .collect();
    for name in &missing {
        let why = cluster::coverage::Mark::from_name(name).map_or("", |mark| mark.why());
        println!("  [coverage] required mark {name} was reached by no run ({why})");
    }
    let mut new_signatures = 0;
    for group in report.failure_groups() {
        let seeds: Vec<String> = group.runs.iter().take(10).map(|run| run.seed.to_string()).collect();
        let is_known = known.is_some_and(|known| known.contains(&group.signature));
        new_signatures += u64::from(!is_known);
        let tag = match known {
            Some(_) if is_known => "known",
            Some(_) => "NEW",
            None => "failure",
        };
        println!("  [{tag}] {} run(s): {}", group.runs.len(), group.signature);
        println!(
            "    seeds: {}{}",
            seeds.join(", "),
            if group.runs.len() > 10 { ", ..." } else { "" }
        );
        if let Some(first) = group.runs.first() {
            println!("    reproduce with: {}", first.command);
        }
        if let Some(repro) = report.shrunk.iter().find(|repro| repro.signature == group.signature) {
            match (&repro.shrunk, &repro.command) {
                (Some(shrunk), Some(command)) => {
                    println!(
                        "    shrunk seed {} in {:.1} s ({} runs): ticks {} -> {}, fault events {} -> {}, replicas {} -> {}, \
                         requests {} -> {}",
                        repro.seed,
                        repro.seconds,
                        repro.runs,
                        repro.original.ticks,
                        shrunk.ticks,
                        repro.original.fault_events,
                        shrunk.fault_events,
                        repro.original.replicas,
                        shrunk.replicas,
                        repro.original.requests,
                        shrunk.requests
                    );
                    println!("    smallest repro: {command}");
                    if let Some(trace) = &repro.trace_file {
                        println!("    trace: {}", dir.join(trace).display());
                    }
                }
                _ => println!(
                    "    not shrunk: {}",
                    repro.note.as_deref().unwrap_or("no smaller failing run found")
                ),
            }
        }
    }
    println!("report: {}", dir.join("report.html").display());
    println!(
        "{} passed, {} failed",
        totals.pass,
        totals.fail + totals.vacuous + totals.invalid
    );
    let runs_bad = match known {
        Some(_) => new_signatures > 0 || totals.vacuous > 0,
        None => totals.fail + totals.vacuous + totals.invalid > 0,
    };
    u8::from(runs_bad || !missing.is_empty())
}

/// Take `--spec FILE` (or `--spec=FILE`) out of the arguments: the file, parsed, and the
/// other arguments.
fn take_spec(args: Vec<String>) -> Result<(Option<SpecFile>, Vec<String>), String> {
    let mut rest = Vec::with_capacity(args.len());
    let mut spec = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let path = if arg == "--spec" {
            Some(args.next().ok_or("--spec needs a file")?)
        } else {
            arg.strip_prefix("--spec=").map(str::to_owned)
        };
        match path {
            Some(_) if spec.is_some() => return Err("--spec is given twice; a campaign reads one spec file".to_owned()),
            Some(path) => spec = Some(SpecFile::read(&path)?),
            None => rest.push(arg),
        }
    }
    Ok((spec, rest))
}

/// A parsed command line: the whole campaign's flags, its sub-campaigns (none without
/// a spec file's `sub` lines) and a label for the campaign id.
type Parsed = (Cli, Vec<(SubCampaign, CampaignFlags)>, String);

/// The command line, as the spec file expands it: `(whole campaign, sub-campaigns)`.
/// Without sub-campaigns the file's flags stand where `--spec FILE` stood (first, then
/// the command line's).
fn parse_command_line(args: Vec<String>) -> Result<Parsed, String> {
    let (spec, rest) = take_spec(args)?;
    let program = rest.first().cloned().unwrap_or_else(|| "campaign".to_owned());
    let Some(spec) = spec else {
        return Ok((Cli::parse_from(rest), Vec::new(), String::new()));
    };
    let with = |flags: &[String]| -> Vec<String> {
        std::iter::once(program.clone())
            .chain(spec.global.iter().cloned())
            .chain(flags.iter().cloned())
            .chain(rest.iter().skip(1).cloned())
            .collect()
    };
    let cli = Cli::parse_from(with(&[]));
    let mut subs = Vec::with_capacity(spec.subs.len());
    for sub in &spec.subs {
        let flags = Cli::try_parse_from(with(&sub.flags))
            .map_err(|error| {
                format!(
                    "--spec {}:{} (sub-campaign {}): {}",
                    spec.path,
                    sub.line,
                    sub.name,
                    error.to_string().trim()
                )
            })?
            .run;
        let sub = SubCampaign {
            name: sub.name.clone(),
            weight: sub.weight,
            flags: sub.flags.join(" "),
        };
        subs.push((sub, flags));
    }
    let label = std::path::Path::new(&spec.path).file_stem().map_or_else(
        || "spec".to_owned(),
        |stem| stem.to_string_lossy().replace(['/', '.'], "_"),
    );
    Ok((cli, subs, label))
}

/// Copy the shrunk repros' files of the report in `source` (the `number`th merged)
/// into `into`'s `shrunk/`, and point the report's entries at the copies.
fn carry_shrunk_files(
    source: &std::path::Path,
    into: &std::path::Path,
    number: usize,
    report: &mut CampaignReport,
) -> Result<(), String> {
    for repro in &mut report.shrunk {
        for file in [&mut repro.schedule_file, &mut repro.trace_file].into_iter().flatten() {
            let name = std::path::Path::new(file.as_str())
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            let carried = format!("{SHRUNK_DIR}/part{number}-{name}");
            std::fs::create_dir_all(into.join(SHRUNK_DIR))
                .map_err(|error| format!("cannot create {}: {error}", into.join(SHRUNK_DIR).display()))?;
            std::fs::copy(source.join(file.as_str()), into.join(&carried)).map_err(|error| {
                format!(
                    "cannot copy {} into the merged report: {error}",
                    source.join(file.as_str()).display()
                )
            })?;
            if let Some(command) = &mut repro.command {
                *command = command.replace(
                    &source.join(file.as_str()).display().to_string(),
                    &into.join(&carried).display().to_string(),
                );
            }
            *file = carried;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let (cli, subs, label) = match parse_command_line(std::env::args().collect()) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("campaign: {message}");
            return ExitCode::from(2);
        }
    };
    let invalid = |message: String| {
        eprintln!("campaign: {message}");
        ExitCode::from(2)
    };
    match cli.command {
        Some(Command::Merge {
            dirs,
            out,
            known,
            require_marks,
        }) => {
            let known = match known.as_deref().map(read_known).transpose() {
                Ok(known) => known,
                Err(message) => return invalid(message),
            };
            let required = match parse_required_marks(require_marks.as_deref()) {
                Ok(required) => required,
                Err(message) => return invalid(message),
            };
            let mut reports = Vec::new();
            for dir in &dirs {
                match CampaignReport::read(dir) {
                    Ok(report) => reports.push(report),
                    Err(error) => return invalid(error.to_string()),
                }
            }
            let dir = match &out {
                Some(out) => out.clone(),
                None => match CampaignReport::merge(reports.clone()) {
                    Ok(merged) => default_out(&merged.campaign_id),
                    Err(error) => return invalid(error.to_string()),
                },
            };
            for (number, (source, report)) in dirs.iter().zip(&mut reports).enumerate() {
                if let Err(message) = carry_shrunk_files(source, &dir, number, report) {
                    return invalid(message);
                }
            }
            let missing_shards = missing_shards(&reports);
            let merged = match CampaignReport::merge(reports) {
                Ok(merged) => merged,
                Err(error) => return invalid(error.to_string()),
            };
            if let Err(error) = write_report(&merged, &dir) {
                return invalid(error);
            }
            let mut status = summarize(&merged, &dir, known.as_deref(), &required);
            if let Some(missing) = missing_shards {
                println!("  [incomplete] {missing}: the merged campaign is incomplete");
                status = 1;
            }
            ExitCode::from(status)
        }
        None => {
            let planned = if subs.is_empty() {
                cli.run.plan()
            } else {
                cli.run.plan_with_subs(subs, label)
            };
            let spec = match planned {
                Ok(spec) => spec,
                Err(message) => return invalid(message),
            };
            let shard = spec.shard.map(|(k, n)| format!("-shard{k}-of-{n}")).unwrap_or_default();
            let campaign_id = format!("{}-{}{shard}", utc_stamp(), spec.label);
            let dir = spec.out.clone().unwrap_or_else(|| default_out(&campaign_id));
            if let Err(message) = check_writable(&dir) {
                return invalid(message);
            }
            let command = std::env::args().collect::<Vec<_>>().join(" ");
            println!(
                "campaign {campaign_id}: {} runs on {} workers",
                spec.planned(),
                spec.jobs
            );
            install_quiet_panic_hook();
            let mut report = match run_campaign(&spec, &campaign_id, &command) {
                Ok(report) => report,
                Err(message) => return invalid(message),
            };
            if !cli.run.no_shrink && report.totals().fail > 0 {
                let options = ShrinkOptions {
                    seconds: cli.run.shrink_seconds,
                    runs: cli.run.shrink_runs,
                    jobs: spec.jobs,
                };
                println!(
                    "shrinking up to {SHRINK_GROUPS_MAX} failure groups ({} s and {} runs each at most)",
                    options.seconds, options.runs
                );
                report.shrunk = shrink_failure_groups(&report, &dir, options);
            }
            if let Err(error) = write_report(&report, &dir) {
                return invalid(error);
            }
            ExitCode::from(summarize(&report, &dir, None, &[]))
        }
    }
}
