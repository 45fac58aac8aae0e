//! Running tshark on captures the tests write: shared by the tshark tests.

use std::path::Path;
use std::process::Command;

fn tshark() -> &'static str {
    let found = Command::new("tshark").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    assert!(found, "tshark is not installed; run `make deps` (it installs Debian's tshark) and rerun the tests");
    "tshark"
}

/// A fresh file path named after `name`, the file removed when the result is dropped.
pub fn temp_path(name: &str) -> tempfile::TempPath {
    tempfile::Builder::new().prefix(name).tempfile().unwrap().into_temp_path()
}

/// Runs tshark on `path` and returns one row of tab-separated fields per frame.
pub fn tshark_fields(path: &Path, extra: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new(tshark());
    cmd.arg("-r").arg(path).args(["-n", "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,"]);
    cmd.args(extra);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("running tshark");
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| l.split('\t').map(str::to_string).collect()).collect()
}

/// Wireshark's expert severities (epan/proto.h): anything at or above Warning
/// ("previous segment not captured", "ACKed unseen segment", malformed, ...) means
/// the capture is inconsistent; Notes (duplicate ACK, retransmission) are expected.
pub const EXPERT_WARNING: u64 = 0x0060_0000;

pub fn field(row: &[String], i: usize) -> &str {
    row.get(i).map(String::as_str).unwrap_or("")
}
