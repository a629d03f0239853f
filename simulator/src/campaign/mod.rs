//! `campaign`: many seeds x profiles x planes in parallel, one report.
//!
//! [`spec_file`] reads a campaign kept in a file (sub-campaigns with weights), [`spec`]
//! turns flags into planned runs (and a shard of them), [`runner`] runs them
//! isolated and in parallel (failures grouped by `crate::signature`), [`report`] is the JSON
//! model (and merging shards), [`html`] the page a person reads. With `--explore`,
//! [`explore`] decides where to branch runs (by [`energy`], its policy) and [`exploration`] is the one
//! exploration the exploring sub-campaigns share while it runs.

pub mod batch;
pub mod energy;
pub mod exploration;
pub mod explore;
pub mod html;
pub mod report;
pub mod runner;
pub mod shrink;
pub mod spec;
pub mod spec_file;

use std::path::{Path, PathBuf};

use report::CampaignReport;

/// Write `report.json` and `report.html` into `dir` (created if missing).
pub fn write_report(report: &CampaignReport, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|error| format!("cannot create report directory {}: {error}", dir.display()))?;
    let json = serde_json::to_string_pretty(report).map_err(|error| format!("cannot encode the report: {error}"))?;
    let json_path = dir.join("report.json");
    std::fs::write(&json_path, json).map_err(|error| format!("cannot write {}: {error}", json_path.display()))?;
    let html_path = dir.join("report.html");
    std::fs::write(&html_path, html::render(report))
        .map_err(|error| format!("cannot write {}: {error}", html_path.display()))?;
    Ok(())
}

/// Check that `dir` can be written before a campaign spends an hour running.
pub fn check_writable(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|error| format!("cannot create report directory {}: {error}", dir.display()))?;
    let probe = dir.join(".campaign-write-probe");
    std::fs::write(&probe, b"")
        .map_err(|error| format!("report directory {} is not writable: {error}", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// The default report directory for a campaign id.
pub fn default_out(campaign_id: &str) -> PathBuf {
    PathBuf::from("reports").join(campaign_id)
}
