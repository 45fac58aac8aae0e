//! Per-packet capture in libpcap format (docs/outputs.md §4), readable by
//! Wireshark/tshark.
//!
//! Link type RAW (each record is an IPv4 datagram, no link header) with
//! nanosecond timestamps, which is the simulator's resolution. Only the headers
//! are captured: the record's captured length is the header length and its
//! original length is the full datagram, exactly as `tcpdump -s` truncates, so
//! captures of multi-gigabyte runs stay small and analysers still compute
//! sequence numbers and throughput from the original lengths.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use millinet_wire::{emit_headers, Packet, MAX_HEADER_BYTES};
use pcap_file::pcap::{PcapHeader, PcapPacket};
use pcap_file::{DataLink, Endianness, TsResolution};

/// The largest IPv4 datagram: records may claim any original length up to it.
const SNAPLEN_BYTES: u32 = 65_535;
const WRITE_BUFFER_BYTES: usize = 1 << 20;

pub struct PcapWriter {
    /// `None` after `finish`. `BufWriter` flushes when dropped, so a capture
    /// that is never finished is still complete.
    out: Option<pcap_file::pcap::PcapWriter<BufWriter<File>>>,
    path: PathBuf,
    /// Reused for every packet's headers: writing allocates nothing.
    scratch: [u8; MAX_HEADER_BYTES],
    /// The first write error; later packets are skipped and `finish` reports it,
    /// so the per-packet path never has to handle errors.
    error: Option<String>,
}

impl PcapWriter {
    pub fn create(path: impl AsRef<Path>) -> Result<PcapWriter, String> {
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path).map_err(|e| format!("cannot create pcap file {}: {e}", path.display()))?;
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen: SNAPLEN_BYTES,
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::native(),
        };
        let out = pcap_file::pcap::PcapWriter::with_header(BufWriter::with_capacity(WRITE_BUFFER_BYTES, file), header)
            .map_err(|e| format!("cannot write pcap file {}: {e}", path.display()))?;
        Ok(PcapWriter { out: Some(out), path, scratch: [0; MAX_HEADER_BYTES], error: None })
    }

    /// Records `pkt` as seen at simulation time `now_ns`. Ignored after `finish`.
    pub fn write(&mut self, now_ns: u64, pkt: &Packet) {
        let Some(out) = &mut self.out else { return };
        if self.error.is_some() {
            return;
        }
        let captured = match emit_headers(pkt, &mut self.scratch) {
            Ok(n) => n,
            Err(e) => {
                self.error = Some(format!("pcap file {}: packet at {now_ns} ns cannot be written: {e}", self.path.display()));
                return;
            }
        };
        let record = PcapPacket::new(Duration::from_nanos(now_ns), pkt.wire_bytes(), &self.scratch[..captured]);
        if let Err(e) = out.write_packet(&record) {
            self.error = Some(format!("cannot write pcap file {}: {e}", self.path.display()));
        }
    }

    /// Flushes and closes the file and reports the first error, if any.
    pub fn finish(&mut self) -> Result<(), String> {
        let out = self.out.take();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        match out {
            Some(out) => out.into_writer().flush().map_err(|e| format!("cannot write pcap file {}: {e}", self.path.display())),
            None => Ok(()),
        }
    }
}
