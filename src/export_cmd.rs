//! `zklock export` and `zklock search --export`: a finding as a reproduction a maintainer
//! runs without zklock ([`zklock_search::export`]); this module parses and prints.

use crate::Status;
use crate::cli::ExportArgs;
use crate::export_args::VerifyFlags;
use anyhow::{Result, bail};
use std::path::Path;
use zklock_search::export::{self, ToExport};

/// Exports one finding and prints what was written.
pub(crate) fn export_one(what: &ToExport, to: &Path, verify: &VerifyFlags) -> Result<()> {
    eprintln!("exporting {}", what.repro);
    let mut progress = |s: &str| eprintln!("  {s}");
    let e = export::export(what, to, &verify.options(), &mut progress)?;
    outln!("exported {}", e.dir.display());
    outln!("  {}", e.line);
    outln!(
        "  failed in {} of {} runs here ({}){}: {}",
        e.failed,
        e.runs,
        e.versions,
        match e.control_passed {
            Some(_) => ", passed without its faults",
            None => ", no fault to remove",
        },
        e.assertion
    );
    Ok(())
}

pub fn run(a: ExportArgs) -> Result<Status> {
    if let Some(dir) = &a.against {
        return against(dir, &a);
    }
    if !a.versions.is_empty() {
        bail!("--versions goes with --against DIR (an export's directory)");
    }
    let Some(journal) = &a.journal else {
        bail!("a journal, or --against DIR");
    };
    let found = export::journal_findings(journal)?;
    let Some(n) = a.point else {
        if found.is_empty() {
            bail!("{}: no violating run to export", journal.display());
        }
        for (i, f) in found.iter().enumerate() {
            outln!("{}: {} ({})", i + 1, f.repro, f.violated.join(", "));
        }
        outln!("export one with --point N");
        return Ok(Status::Held);
    };
    let Some(what) = found.get(n - 1) else {
        bail!(
            "--point {n}: {} has {} violating run(s)",
            journal.display(),
            found.len()
        );
    };
    export_one(what, &a.to, &a.verify)?;
    Ok(Status::Held)
}

/// `export --against DIR`: the export run on each Kazoo release asked for.
fn against(dir: &Path, a: &ExportArgs) -> Result<Status> {
    let cache = zklock_real::driver::locate::cache_dir().map_err(anyhow::Error::msg)?;
    let options = a.verify.options();
    if dir.join("Repro.java").is_file() {
        // No registry here serves other Curator or ZooKeeper releases.
        bail!(
            "{}: a Java export runs against Debian's Curator and ZooKeeper only: no registry \
             reached here serves their other releases",
            dir.display()
        );
    }
    if !dir.join("repro.py").is_file() {
        // Said before any environment is made.
        bail!("{}: no exported repro.py there", dir.display());
    }
    let versions = match a.versions.is_empty() {
        true => export::versions::kazoo_releases(&options.python, &cache)?,
        false => a.versions.clone(),
    };
    let mut progress = |s: &str| eprintln!("  {s}");
    let runs = export::versions::run_versions(dir, &versions, &cache, &options, &mut progress)?;
    outln!("| Kazoo | failed | affected |");
    outln!("|---|---|---|");
    for r in &runs {
        let affected = if r.affected() { "yes" } else { "no" };
        outln!(
            "| {} | {} of {} | {affected} |",
            r.version,
            r.failed,
            r.runs
        );
    }
    outln!("{}: {}", dir.display(), export::versions::summary(&runs));
    Ok(Status::Held)
}
