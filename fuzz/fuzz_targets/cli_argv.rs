//! The command line: an argv (arguments separated by NUL bytes) parsed and checked as a command
//! checks it before its first run (see src/lib.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = foliosim_fuzz::cli_argv(data);
});
