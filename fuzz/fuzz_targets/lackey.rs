//! valgrind lackey's text imported (LackeyImport) from arbitrary bytes (see src/lib.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = foliosim_fuzz::lackey_text(data);
});
