//! A trace file (TraceReader) on arbitrary bytes, and what it reads written back (see src/lib.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = foliosim_fuzz::trace_bytes(data);
});
