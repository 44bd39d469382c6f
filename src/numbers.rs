//! Numeric flags' parsers: a refusal in the words of the flag's own range, not its type's.

/// A count flag's parser: refuses what is not a whole number in `u32` (a negative one, a
/// word) in the words of the flag's real range, `LO` to `HI`, not `u32`'s. A number past
/// the range parses, so that the subcommand's own check names the flag and its bound.
pub(crate) fn count<const LO: u64, const HI: u64>(s: &str) -> Result<u32, String> {
    whole::<u32, LO, HI>(s)
}

/// [`whole`]'s `HI` for a flag bounded only by its type: its error says "LO or more".
pub(crate) const ANY: u64 = u64::MAX;

/// A numeric flag's parser: refuses what is not a whole number of type `T` (a negative
/// one, a word) in the words of the flag's real range, `LO` to `HI` (`HI` = [`ANY`]: no
/// bound but the type's), not the type's `0..=4294967295`. A number past `HI` parses, so
/// that the subcommand's own check names the flag and its bound, as it did.
pub(crate) fn whole<T: TryFrom<u64>, const LO: u64, const HI: u64>(s: &str) -> Result<T, String> {
    s.trim()
        .parse::<u64>()
        .ok()
        .and_then(|v| T::try_from(v).ok())
        .ok_or_else(|| match HI {
            ANY => format!("{s} is not a whole number, {LO} or more"),
            _ => format!("{s} is not a whole number from {LO} to {HI}"),
        })
}

/// [`whole`] that refuses a number past `LO..=HI` too, for a flag no later check bounds.
pub(crate) fn within<T: TryFrom<u64>, const LO: u64, const HI: u64>(s: &str) -> Result<T, String> {
    let refused = || format!("{s} is not a whole number from {LO} to {HI}");
    let v = whole::<u64, LO, HI>(s)?;
    if !(LO..=HI).contains(&v) {
        return Err(refused());
    }
    T::try_from(v).map_err(|_| refused())
}
