//! How this binary was built, for `zklock bench` to print beside its figures.
//!
//! The compile-time part comes from build.rs (`ZKLOCK_BUILD`). Whether BOLT rewrote the
//! binary afterwards (scripts/pgo-build's last step) only the file itself can say: BOLT
//! adds a `.note.bolt_info` section (its command line), found here by reading the ELF
//! section headers.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

/// How this binary was compiled, stamped by build.rs.
const BUILD: &str = env!("ZKLOCK_BUILD");
/// Whether it was built with profile-guided optimization (scripts/pgo-build).
pub const PROFILE_GUIDED: bool = !env!("ZKLOCK_PROFILE_GUIDED").is_empty();

/// The build as the bench names it, e.g. "release, profile-guided (scripts/pgo-build),
/// BOLT-optimized".
pub fn describe() -> String {
    name(BUILD, bolt_note().as_deref())
}

fn name(build: &str, bolt_note: Option<&str>) -> String {
    match bolt_note {
        // The note holds BOLT's command line; the training binary's has "-instrument".
        Some(note) if note.contains("-instrument") => format!("{build}, instrumented by BOLT"),
        Some(_) => format!("{build}, BOLT-optimized"),
        None => build.to_owned(),
    }
}

/// The running executable's BOLT note, if it has one. `None` too when the file cannot be
/// read or is not a 64-bit little-endian ELF file: the label then claims nothing.
fn bolt_note() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    section(&exe, ".note.bolt_info").ok()?
}

/// The bytes of an ELF64 (little-endian) file's named section, as lossy text, reading
/// only the headers, the section-name table and that section; `Ok(None)` if it has none.
fn section(path: &std::path::Path, wanted: &str) -> std::io::Result<Option<String>> {
    // More sections than this, or a table or section larger than this, mean a corrupt
    // file.
    const SECTIONS_MAX: u64 = 4096;
    const SECTION_BYTES_MAX: u64 = 1 << 20;
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let mut f = File::open(path)?;
    let mut read_at = |offset: u64, len: u64| -> std::io::Result<Vec<u8>> {
        if len > SECTION_BYTES_MAX {
            return Err(bad("implausible section size"));
        }
        let mut buf = vec![0u8; len as usize];
        f.seek(SeekFrom::Start(offset))?;
        f.read_exact(&mut buf)?;
        Ok(buf)
    };
    let header = read_at(0, 64)?;
    // ELF magic, ELFCLASS64, little-endian.
    if header[..4] != *b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return Err(bad("not a 64-bit little-endian ELF file"));
    }
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let u64_at =
        |b: &[u8], at: usize| u64::from(u32_at(b, at)) | u64::from(u32_at(b, at + 4)) << 32;
    let sh_off = u64_at(&header, 0x28);
    let sh_entsize = u64::from(u16_at(&header, 0x3a));
    let sh_num = u64::from(u16_at(&header, 0x3c));
    let sh_strndx = u64::from(u16_at(&header, 0x3e));
    if sh_entsize < 64 || sh_num > SECTIONS_MAX || sh_strndx >= sh_num {
        return Err(bad("implausible section header table"));
    }
    let table = read_at(sh_off, sh_entsize * sh_num)?;
    let entry = |i: u64| &table[(i * sh_entsize) as usize..((i + 1) * sh_entsize) as usize];
    // A section header: name offset at 0, file offset at 0x18, size at 0x20.
    let names = read_at(
        u64_at(entry(sh_strndx), 0x18),
        u64_at(entry(sh_strndx), 0x20),
    )?;
    let name_of = |i: u64| {
        let rest = names.get(u32_at(entry(i), 0) as usize..)?;
        rest.iter().position(|&b| b == 0).map(|end| &rest[..end])
    };
    match (0..sh_num).find(|&i| name_of(i) == Some(wanted.as_bytes())) {
        Some(i) => {
            let bytes = read_at(u64_at(entry(i), 0x18), u64_at(entry(i), 0x20))?;
            Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
        }
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_section_of_this_test_binary_and_no_bolt_note() {
        let exe = std::env::current_exe().unwrap();
        // The section-name table names itself.
        let names = section(&exe, ".shstrtab").unwrap().expect("a .shstrtab");
        assert!(names.contains(".text"), "{names:?}");
        // A test binary is never rewritten by BOLT, so its build is named as stamped.
        assert_eq!(section(&exe, ".note.bolt_info").unwrap(), None);
        assert_eq!(describe(), BUILD);
    }

    #[test]
    fn the_name_says_what_bolt_did() {
        let pgo = "release, profile-guided (scripts/pgo-build)";
        assert_eq!(name(pgo, None), pgo);
        let optimized = "BOLT revision: <unknown>, command line: llvm-bolt zklock -o out \
                         -data=merged.fdata -reorder-blocks=ext-tsp";
        assert_eq!(name(pgo, Some(optimized)), format!("{pgo}, BOLT-optimized"));
        let instrumented = "BOLT revision: <unknown>, command line: llvm-bolt zklock -o inst \
                            -instrument --instrumentation-file=profile.fdata";
        assert_eq!(
            name(pgo, Some(instrumented)),
            format!("{pgo}, instrumented by BOLT")
        );
    }

    #[test]
    fn a_file_that_is_not_elf_is_an_error_not_a_claim() {
        let dir = std::env::temp_dir().join(format!("zklock-build-info-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("not-elf");
        std::fs::write(&path, "#!/bin/sh\n".repeat(20)).unwrap();
        let err = section(&path, ".text").unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{err}");
    }
}
