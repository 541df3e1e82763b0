//! DAMON records imported (DamoImport) from arbitrary bytes (see src/lib.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = foliosim_fuzz::damo_records(data);
});
