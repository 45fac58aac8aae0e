//! Where the daemon's telemetry comes from (docs/telemetry.md, docs/proxyd.md): a Unix
//! datagram socket the gNB's publisher on the same host sends records to, a UDP socket a
//! remote gNB sends sealed records to (with the key file they share), or a CSV file replayed
//! at the times it gives. Judging a record (its tag, sequence number and age) is the
//! datapath's and the core's business.

use std::fmt;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};

use millinet_wire::{Telemetry, TelemetryKey, MIN_KEY_BYTES};

/// The replay file's header, column by column.
pub const REPLAY_COLUMNS: [&str; 6] = ["t_s", "ue", "rlc_bytes", "rate_bps", "sinr_db", "outage"];

/// A bound telemetry socket; its file is removed when it is dropped.
pub struct TelemetrySocket {
    pub socket: UnixDatagram,
    path: PathBuf,
}

impl TelemetrySocket {
    /// Binds `path`. A socket file already there (left by a daemon that was killed before it
    /// could remove it) is replaced; any other file is an error.
    pub fn bind(path: &Path) -> Result<TelemetrySocket, String> {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_socket() => {
                std::fs::remove_file(path).map_err(|e| format!("--telemetry {}: cannot remove the old socket file: {e}", path.display()))?
            }
            Ok(_) => {
                return Err(format!("--telemetry {}: exists and is not a socket; allowed: a free path or an old socket", path.display()))
            }
            Err(_) => {}
        }
        let socket =
            UnixDatagram::bind(path).map_err(|e| format!("--telemetry {}: cannot bind a Unix datagram socket: {e}", path.display()))?;
        // Only the daemon's user may send: whoever can write records steers the flow windows.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("--telemetry {}: cannot make it 0600: {e}", path.display()))?;
        socket.set_nonblocking(true).map_err(|e| format!("--telemetry {}: {e}", path.display()))?;
        Ok(TelemetrySocket { socket, path: path.to_path_buf() })
    }

    /// Every datagram waiting, each handed to `record` (a malformed one too: the datapath
    /// counts it).
    pub fn drain(&self, buf: &mut [u8], record: &mut dyn FnMut(&[u8])) -> std::io::Result<()> {
        drain(|b| self.socket.recv(b), buf, record)
    }
}

/// The UDP socket sealed records arrive on (`--telemetry-udp`).
pub struct SealedTelemetrySocket {
    pub socket: UdpSocket,
}

impl SealedTelemetrySocket {
    pub fn bind(address: SocketAddr) -> Result<SealedTelemetrySocket, String> {
        let socket = UdpSocket::bind(address).map_err(|e| format!("--telemetry-udp {address}: cannot bind a UDP socket: {e}"))?;
        socket.set_nonblocking(true).map_err(|e| format!("--telemetry-udp {address}: {e}"))?;
        Ok(SealedTelemetrySocket { socket })
    }

    pub fn drain(&self, buf: &mut [u8], record: &mut dyn FnMut(&[u8])) -> std::io::Result<()> {
        drain(|b| self.socket.recv(b), buf, record)
    }
}

/// Every datagram `recv` has waiting, each handed to `record`.
fn drain(recv: impl Fn(&mut [u8]) -> std::io::Result<usize>, buf: &mut [u8], record: &mut dyn FnMut(&[u8])) -> std::io::Result<()> {
    loop {
        match recv(buf) {
            Ok(n) => record(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The pre-shared key of sealed telemetry (`--telemetry-key`): the file's raw bytes, at least
/// `MIN_KEY_BYTES`, in a file only its owner may read or write (as ssh asks of private keys).
pub fn load_telemetry_key(path: &Path) -> Result<TelemetryKey, String> {
    let name = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("--telemetry-key {name}: {e}"))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "--telemetry-key {name}: mode {mode:04o} lets others read or write the key; allowed: 0600 or 0400 (chmod 600 {name})"
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("--telemetry-key {name}: {e}"))?;
    TelemetryKey::new(&bytes).ok_or_else(|| {
        format!(
            "--telemetry-key {name}: {} bytes; allowed: at least {MIN_KEY_BYTES} bytes of key (e.g. head -c 32 /dev/urandom > {name})",
            bytes.len()
        )
    })
}

impl Drop for TelemetrySocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One row of a replay file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplayRecord {
    /// When to deliver it, from the daemon's start.
    pub at_ns: u64,
    pub ue: Ipv4Addr,
    pub rlc_bytes: u64,
    pub rate_bps: f64,
    pub sinr_db: f64,
    pub outage: bool,
}

impl ReplayRecord {
    /// The wire record, sampled `now_ns` (so its age is 0 when delivered).
    pub fn datagram(&self, now_ns: u64) -> [u8; millinet_wire::TELEMETRY_DATAGRAM_BYTES] {
        Telemetry { t_ns: now_ns, rlc_bytes: self.rlc_bytes, rate_bps: self.rate_bps, sinr_db: self.sinr_db, outage: self.outage }
            .encode(self.ue)
    }
}

/// A bad replay file: which file, line and column, the value, and what is allowed.
#[derive(Debug, PartialEq)]
pub struct ReplayError {
    pub file: String,
    pub line: usize,
    /// 1-based column and its name; None for a whole-line problem.
    pub column: Option<(usize, &'static str)>,
    pub value: String,
    pub allowed: String,
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--telemetry-replay {}: line {}", self.file, self.line)?;
        if let Some((n, name)) = self.column {
            write!(f, ", column {n} ({name})")?;
        }
        write!(f, ": '{}': allowed: {}", self.value, self.allowed)
    }
}

/// Reads and checks a whole replay file (header `t_s,ue,rlc_bytes,rate_bps,sinr_db,outage`,
/// times in seconds from the daemon's start, never going back).
pub fn load_replay(path: &Path) -> Result<Vec<ReplayRecord>, ReplayError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ReplayError {
        file: file.clone(),
        line: 0,
        column: None,
        value: e.to_string(),
        allowed: "a readable UTF-8 file".into(),
    })?;
    parse_replay(&text, &file)
}

pub fn parse_replay(text: &str, file: &str) -> Result<Vec<ReplayRecord>, ReplayError> {
    let err = |line: usize, column: Option<usize>, value: &str, allowed: &str| ReplayError {
        file: file.to_string(),
        line,
        column: column.map(|c| (c + 1, REPLAY_COLUMNS[c])),
        value: value.to_string(),
        allowed: allowed.to_string(),
    };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end_matches('\r')));
    let header = REPLAY_COLUMNS.join(",");
    match lines.next() {
        Some((_, l)) if l.trim() == header => {}
        Some((_, l)) => return Err(err(1, None, l, &format!("the header {header}"))),
        None => return Err(err(1, None, "", &format!("the header {header}, then one record a line"))),
    }
    let mut records = Vec::new();
    let mut last_t = 0.0;
    for (n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != REPLAY_COLUMNS.len() {
            return Err(err(n, None, line, &format!("{} comma-separated fields ({header})", REPLAY_COLUMNS.len())));
        }
        let float = |c: usize| fields[c].parse::<f64>().ok();
        let t_s = float(0).filter(|t| t.is_finite() && *t >= last_t).ok_or_else(|| {
            err(n, Some(0), fields[0], &format!("seconds from the daemon's start, finite, ≥ {last_t} (the previous line's)"))
        })?;
        last_t = t_s;
        let ue = fields[1].parse().map_err(|_| err(n, Some(1), fields[1], "an IPv4 address, e.g. 10.45.0.2"))?;
        let rlc_bytes = fields[2].parse().map_err(|_| err(n, Some(2), fields[2], "an integer number of bytes 0..=2^64-1"))?;
        let rate_bps = float(3).filter(|r| r.is_finite() && *r >= 0.0).ok_or_else(|| err(n, Some(3), fields[3], "bit/s, finite, ≥ 0"))?;
        // docs/telemetry.md: −∞ before the first CQI report; never NaN or +∞.
        let sinr_db =
            float(4).filter(|s| !s.is_nan() && *s != f64::INFINITY).ok_or_else(|| err(n, Some(4), fields[4], "dB, finite or -inf"))?;
        let outage = match fields[5] {
            "0" => false,
            "1" => true,
            v => return Err(err(n, Some(5), v, "0 or 1")),
        };
        records.push(ReplayRecord { at_ns: (t_s * 1e9).round() as u64, ue, rlc_bytes, rate_bps, sinr_db, outage });
    }
    Ok(records)
}

/// A replay file's records, delivered in order as their times come.
pub struct Replay {
    records: std::vec::IntoIter<ReplayRecord>,
    next: Option<ReplayRecord>,
    /// The daemon's start on the clock the datapath is driven with.
    start_ns: u64,
}

impl Replay {
    pub fn new(records: Vec<ReplayRecord>, start_ns: u64) -> Replay {
        let mut records = records.into_iter();
        let next = records.next();
        Replay { records, next, start_ns }
    }

    /// When the next record is due, on the datapath's clock.
    pub fn next_deadline_ns(&self) -> Option<u64> {
        self.next.map(|r| self.start_ns.saturating_add(r.at_ns))
    }

    /// Every record due at `now_ns`, as wire datagrams stamped `now_ns`.
    pub fn due(&mut self, now_ns: u64, deliver: &mut dyn FnMut(&[u8])) {
        while self.next_deadline_ns().is_some_and(|t| t <= now_ns) {
            let record = self.next.take().expect("a due record");
            deliver(&record.datagram(now_ns));
            self.next = self.records.next();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "t_s,ue,rlc_bytes,rate_bps,sinr_db,outage\n";

    fn bad(body: &str) -> String {
        parse_replay(&format!("{HEADER}{body}"), "r.csv").unwrap_err().to_string()
    }

    #[test]
    fn records_are_delivered_at_their_time_stamped_with_the_current_clock() {
        let text = format!("{HEADER}0,10.88.2.2,1000,1e9,20.5,0\n\n0.5,10.88.2.3,0,0,-inf,1\r\n");
        let records = parse_replay(&text, "r.csv").unwrap();
        assert_eq!(records.len(), 2);
        let mut replay = Replay::new(records, 7_000_000_000);
        assert_eq!(replay.next_deadline_ns(), Some(7_000_000_000));
        let mut got = Vec::new();
        replay.due(7_400_000_000, &mut |d| got.push(Telemetry::decode(d).unwrap()));
        assert_eq!(got.len(), 1);
        let (ue, r) = got[0];
        assert_eq!(
            (ue, r.t_ns, r.rlc_bytes, r.rate_bps, r.sinr_db, r.outage),
            (Ipv4Addr::new(10, 88, 2, 2), 7_400_000_000, 1000, 1e9, 20.5, false)
        );
        assert_eq!(replay.next_deadline_ns(), Some(7_500_000_000));
        replay.due(7_600_000_000, &mut |d| got.push(Telemetry::decode(d).unwrap()));
        let (ue, r) = got[1];
        assert_eq!((ue, r.t_ns, r.sinr_db, r.outage), (Ipv4Addr::new(10, 88, 2, 3), 7_600_000_000, f64::NEG_INFINITY, true));
        assert_eq!(replay.next_deadline_ns(), None);
    }

    #[test]
    fn each_bad_field_names_file_line_column_value_and_what_is_allowed() {
        let cases = [
            ("x,10.0.0.1,0,0,0,0", "line 2, column 1 (t_s): 'x': allowed: seconds"),
            ("-1,10.0.0.1,0,0,0,0", "column 1 (t_s): '-1'"),
            (
                "1,10.0.0.1,0,0,0,0\n0.5,10.0.0.1,0,0,0,0",
                "line 3, column 1 (t_s): '0.5': allowed: seconds from the daemon's start, finite, ≥ 1",
            ),
            ("0,10.0.0.256,0,0,0,0", "column 2 (ue): '10.0.0.256': allowed: an IPv4 address"),
            ("0,10.0.0.1,-5,0,0,0", "column 3 (rlc_bytes): '-5'"),
            ("0,10.0.0.1,0,NaN,0,0", "column 4 (rate_bps): 'NaN': allowed: bit/s, finite, ≥ 0"),
            ("0,10.0.0.1,0,-1,0,0", "column 4 (rate_bps): '-1'"),
            ("0,10.0.0.1,0,0,inf,0", "column 5 (sinr_db): 'inf': allowed: dB, finite or -inf"),
            ("0,10.0.0.1,0,0,0,yes", "column 6 (outage): 'yes': allowed: 0 or 1"),
            ("0,10.0.0.1,0,0,0", "line 2: '0,10.0.0.1,0,0,0': allowed: 6 comma-separated fields"),
        ];
        for (body, expected) in cases {
            let e = bad(body);
            assert!(e.starts_with("--telemetry-replay r.csv: line") && e.contains(expected), "{body}: {e}");
        }
        let e = parse_replay("time,ue\n", "r.csv").unwrap_err().to_string();
        assert_eq!(e, "--telemetry-replay r.csv: line 1: 'time,ue': allowed: the header t_s,ue,rlc_bytes,rate_bps,sinr_db,outage");
        let e = load_replay(Path::new("/nonexistent/r.csv")).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/r.csv") && e.contains("allowed: a readable UTF-8 file"), "{e}");
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("millinet-telemetry-source-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_unix_socket_is_for_its_owner_only() {
        let dir = scratch("socket");
        let path = dir.join("t.sock");
        let socket = TelemetrySocket::bind(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        drop(socket);
        assert!(!path.exists(), "removed with the socket");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_key_file_must_be_long_enough_and_its_owners_alone() {
        let dir = scratch("key");
        let path = dir.join("k");
        let write = |bytes: &[u8], mode: u32| {
            std::fs::write(&path, bytes).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        write(&[7; 32], 0o600);
        assert!(load_telemetry_key(&path).is_ok());
        write(&[7; 32], 0o400);
        assert!(load_telemetry_key(&path).is_ok());
        let name = path.display().to_string();
        write(&[7; 32], 0o644);
        assert_eq!(
            load_telemetry_key(&path).unwrap_err(),
            format!("--telemetry-key {name}: mode 0644 lets others read or write the key; allowed: 0600 or 0400 (chmod 600 {name})")
        );
        write(&[7; 31], 0o600);
        assert!(load_telemetry_key(&path)
            .unwrap_err()
            .starts_with(&format!("--telemetry-key {name}: 31 bytes; allowed: at least 32 bytes")));
        let e = load_telemetry_key(&dir.join("missing")).unwrap_err();
        assert!(e.starts_with("--telemetry-key ") && e.contains("missing"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
