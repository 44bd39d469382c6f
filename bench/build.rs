//! Stamps how the binary was compiled (`ZKLOCK_BUILD`), so that `zklock bench` names it
//! beside its figures: a build with profile-guided optimization (scripts/pgo-build) runs
//! the simulation about a tenth faster than a plain release build.

fn main() {
    let profile = std::env::var("PROFILE").unwrap_or_default();
    // Flags are separated by 0x1f; "-C" and its value may come as one flag or two.
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let has = |name: &str| flags.split('\x1f').any(|f| f.contains(name));
    let guided = has("profile-use=");
    let build = if guided {
        format!("{profile}, profile-guided (scripts/pgo-build)")
    } else if has("profile-generate=") {
        format!("{profile}, instrumented for profile-guided optimization")
    } else {
        profile
    };
    println!("cargo:rustc-env=ZKLOCK_BUILD={build}");
    // Empty unless profile-guided, so that code can test it in a const.
    let guided = if guided { "1" } else { "" };
    println!("cargo:rustc-env=ZKLOCK_PROFILE_GUIDED={guided}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTFLAGS");
}
