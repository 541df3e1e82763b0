//! The scenario parser on arbitrary bytes, and resolving what it accepts (see src/lib.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = foliosim_fuzz::scenario_text(data);
});
