//! Small helpers for flag parsing.

use anyhow::{Context, Result};

pub fn value<T: std::str::FromStr>(flag: &str, v: Option<&String>) -> Result<T> {
    let v = v.with_context(|| format!("{flag} needs a value"))?;
    v.parse()
        .ok()
        .with_context(|| format!("{flag}: {v:?} is not a valid value"))
}
