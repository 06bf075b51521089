//! Fuzz target `signals`: see `src/lifecycle_model.rs` for the op language and the
//! reference model (`Mix::Signals`); runs every input under every lock profile.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uproc_abi::Profile;

#[path = "../src/lifecycle_model.rs"]
mod lifecycle_model;

fuzz_target!(|data: &[u8]| {
    let case = lifecycle_model::decode_case(data, lifecycle_model::Mix::Signals);
    for &profile in Profile::ALL {
        if let Err(divergence) = lifecycle_model::run(profile, case.reap_orphans, &case.ops) {
            panic!("uproc diverges from Linux: {divergence}\ncase: {case:#?}");
        }
    }
});
