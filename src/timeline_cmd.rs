//! `zklock timeline TRACE [-o FILE.html]`: a trace drawn as one self-contained HTML page.

use crate::Status;
use crate::cli::TimelineArgs;
use crate::files::write_private;
use anyhow::{Result, bail};
use zklock_checker::Trace;

pub fn run(a: TimelineArgs) -> Result<Status> {
    let out = a.out.clone().unwrap_or_else(|| Trace::html_path(&a.trace));
    if out == a.trace {
        bail!(
            "-o {} is the trace itself: choose another file",
            out.display()
        );
    }
    crate::files::check_out_file("-o", &out, false, a.force)?;
    let trace = Trace::read(&a.trace)?;
    write_private(&out, trace.timeline_html().as_bytes(), a.force)?;
    outln!("timeline: {}", out.display());
    Ok(Status::Held)
}
