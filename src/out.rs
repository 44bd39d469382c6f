//! The command's standard output. A reader that goes away early (`zklock check | head -1`)
//! is no error: the rest of the output is dropped and the command goes on, so that the
//! files it writes (traces, checkpoints, timelines) are still written and its exit status
//! still tells the verdict. Any other failure to write is told once on stderr.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Prints a line to stdout, as `println!` does, without panicking when it cannot.
macro_rules! outln {
    () => {
        $crate::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}

/// Prints to stdout, as `print!` does, without panicking when it cannot.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::text(format_args!($($arg)*))
    };
}

/// Writes `args` and a newline to stdout, in one piece.
pub(crate) fn line(args: fmt::Arguments<'_>) {
    let mut stdout = io::stdout().lock();
    let written = stdout
        .write_fmt(args)
        .and_then(|()| stdout.write_all(b"\n"));
    if let Err(e) = written {
        failed(&e);
    }
}

/// Writes `args` to stdout.
pub(crate) fn text(args: fmt::Arguments<'_>) {
    if let Err(e) = io::stdout().lock().write_fmt(args) {
        failed(&e);
    }
}

fn failed(e: &io::Error) {
    static TOLD: AtomicBool = AtomicBool::new(false);
    if e.kind() != io::ErrorKind::BrokenPipe && !TOLD.swap(true, Ordering::Relaxed) {
        eprintln!("zklock: cannot write to standard output: {e}; the rest of it is dropped");
    }
}
