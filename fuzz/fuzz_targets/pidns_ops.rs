//! Fuzz target `pidns_ops`: decodes the input into a pid namespace op sequence and checks
//! `alloc_pid`/`free_pid` against the reference model in both `Linux*` lock profiles.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uproc_abi::Profile;

/// The model pins Linux's cyclic numbering: the `Linux*` profiles only (`Scalable`
/// hands numbers out in pool order; its own properties are in `crates/pidns/tests/scalable_pool.rs`).
const LINUX_NUMBERING: &[Profile] = &[Profile::Linux618, Profile::Linux70];

#[path = "../src/pidns_model.rs"]
mod pidns_model;

fuzz_target!(|data: &[u8]| {
    let case = pidns_model::decode(data);
    for &profile in LINUX_NUMBERING {
        if let Err(divergence) = pidns_model::run(profile, &case) {
            panic!("uproc-pidns diverges from Linux: {divergence}");
        }
    }
});
