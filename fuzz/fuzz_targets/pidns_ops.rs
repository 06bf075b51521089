//! Fuzz target `pidns_ops`: decodes the input into a pid namespace op sequence and checks
//! `alloc_pid`/`free_pid` against the reference model in both lock profiles.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uproc_abi::Profile;

#[path = "../src/pidns_model.rs"]
mod pidns_model;

fuzz_target!(|data: &[u8]| {
    let case = pidns_model::decode(data);
    for &profile in Profile::ALL {
        if let Err(divergence) = pidns_model::run(profile, &case) {
            panic!("uproc-pidns diverges from Linux: {divergence}");
        }
    }
});
