//! Small helpers for flag parsing.

use anyhow::{Context, Result};

/// A `--time-limit-s` value in milliseconds, refused past the checker's maximum (so that
/// seconds × 1000 never wraps).
pub fn time_limit_ms(flag: &'static str, v: Option<&String>) -> Result<u64> {
    Ok(zklock_checker::limits::wall_time_ms_from_s(
        flag,
        value(flag, v)?,
    )?)
}

pub fn value<T: std::str::FromStr>(flag: &str, v: Option<&String>) -> Result<T> {
    let v = v.with_context(|| format!("{flag} needs a value"))?;
    v.parse()
        .ok()
        .with_context(|| format!("{flag}: {v:?} is not a valid value"))
}
