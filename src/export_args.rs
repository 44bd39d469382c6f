//! The flags of `zklock export` and `zklock search --export` that both share: where an
//! export goes and how it is verified.

use crate::numbers::whole;
use clap::Args;
use std::path::PathBuf;
use zklock_search::export::{self, ExportOptions};

/// `search --export DIR` and how its exports are verified.
#[derive(Debug, Args)]
pub struct ExportFlags {
    /// Export each violation found (one per cause) as a reproduction under DIR, each in
    /// a new directory of its own, shrunk and verified first: for Kazoo's locks, a Python
    /// file that runs with Python and Kazoo alone; for Curator's locks and LeaderLatch and
    /// ZooKeeper's WriteLock and LeaderElectionSupport, a Java file that compiles and runs
    /// with the library's jars alone (other locks are refused before the search starts)
    #[arg(long, value_name = "DIR")]
    pub export: Option<PathBuf>,
    #[command(flatten)]
    pub verify: VerifyFlags,
}

/// How an export is verified before it is written.
#[derive(Debug, Args)]
pub struct VerifyFlags {
    /// Runs of each export here, 1 to 20: it is written when it fails in at least one,
    /// with its rate, and passes with its faults removed
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = export::RUNS_DEFAULT,
        value_parser = whole::<u32, 1, { export::RUNS_MAX as u64 }>,
    )]
    pub export_runs: u32,
    /// The Python that runs the exports (its Kazoo is the version tested)
    #[arg(long, value_name = "PATH", default_value = export::PYTHON_DEFAULT)]
    pub export_python: PathBuf,
    /// Export the finding's own script, without first trying smaller ones
    #[arg(long)]
    pub no_shrink: bool,
}

impl VerifyFlags {
    pub(crate) fn options(&self) -> ExportOptions {
        ExportOptions {
            runs: self.export_runs,
            python: self.export_python.clone(),
            shrink: !self.no_shrink,
            ..ExportOptions::default()
        }
    }
}
