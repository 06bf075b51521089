//! Fuzz target `control_files`: see `src/control_files_model.rs` for the op language and the model; runs
//! every input under every lock profile.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uproc_abi::Profile;

#[path = "../src/control_files_model.rs"]
mod control_files_model;

fuzz_target!(|data: &[u8]| {
    let ops = control_files_model::decode(data);
    for &profile in Profile::ALL {
        if let Err(divergence) = control_files_model::run(profile, &ops) {
            panic!("uproc diverges from Linux: {divergence}");
        }
    }
});
