#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| millinet_fuzzing::proxyd_datapath(data));
