//! Fuzz target `file_handle`: see `src/file_handle_model.rs` for the op language and the model; runs
//! every input under every lock profile.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uproc_abi::Profile;

#[path = "../src/file_handle_model.rs"]
mod file_handle_model;

fuzz_target!(|data: &[u8]| {
    let ops = file_handle_model::decode(data);
    for &profile in Profile::ALL {
        if let Err(divergence) = file_handle_model::run(profile, &ops) {
            panic!("uproc diverges from Linux: {divergence}");
        }
    }
});
