//! The standard output of `zklock bench`. A reader that goes away early (`zklock bench |
//! head -1`) is no error: the rest of the output is dropped and the bench goes on, so that
//! its figures are still written. Any other failure to write is told once on stderr.

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

/// Writes `args` and a newline to stdout, in one piece.
pub(crate) fn line(args: fmt::Arguments<'_>) {
    let mut stdout = io::stdout().lock();
    let written = stdout
        .write_fmt(args)
        .and_then(|()| stdout.write_all(b"\n"));
    if let Err(e) = written {
        static TOLD: AtomicBool = AtomicBool::new(false);
        if e.kind() != io::ErrorKind::BrokenPipe && !TOLD.swap(true, Ordering::Relaxed) {
            eprintln!("zklock: cannot write to standard output: {e}; the rest of it is dropped");
        }
    }
}
