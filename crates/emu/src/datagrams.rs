//! UDP flows at a rate (`flows.N.kind = "udp"`): the simulator's own constant-bit-rate source
//! (`transport::udp::UdpSource`), driven by the real clock, sends real datagrams of its payload
//! size from the server's namespace; the UE counts what arrives, per goodput bin.

use std::net::{SocketAddrV4, UdpSocket};
use std::time::Duration;

use millinet_transport::udp::{UdpSource, UdpSourceConfig};

use crate::endpoint::{FlowPlan, FlowReport};
use crate::error::EmuError;

/// A UDP flow's sending rate, over whole IP datagrams as the simulator's source counts it,
/// and its datagrams' payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DatagramRate {
    pub rate_bps: u64,
    pub payload_bytes: u32,
}

/// The UE's end of a UDP flow: its radio's address, the server's port.
fn receiver(plan: &FlowPlan) -> SocketAddrV4 {
    SocketAddrV4::new(plan.bind, plan.server.port())
}

/// Sends the flow's datagrams from the flow's start to the run's end; returns how many left.
pub fn send(plan: &FlowPlan, rate: DatagramRate, clock: &dyn Fn() -> u64) -> Result<u64, EmuError> {
    let failed = |what: &str, e: std::io::Error| EmuError::System(format!("UDP source {}: {what}: {e}", plan.server));
    let socket = UdpSocket::bind(plan.server).map_err(|e| failed("bind", e))?;
    socket.connect(receiver(plan)).map_err(|e| failed("connect", e))?;
    let config = UdpSourceConfig {
        local: plan.server,
        remote: receiver(plan),
        rate_bps: rate.rate_bps,
        payload_bytes: rate.payload_bytes,
        start_ns: plan.start_ns,
        stop_ns: plan.end_ns,
        flow: 0,
    };
    let mut source = UdpSource::new(config).map_err(|e| EmuError::System(format!("UDP source: {e}")))?;
    let payload = vec![0u8; rate.payload_bytes as usize];
    let (mut out, mut sent) = (Vec::new(), 0);
    while let Some(due) = source.next_deadline_ns() {
        let now = clock();
        if now >= plan.end_ns {
            break;
        }
        if due > now {
            std::thread::sleep(Duration::from_nanos((due - now).min(1_000_000)));
            continue;
        }
        // Everything due since the last wake-up leaves now, as the model's late call says.
        source.on_timeout(now, &mut out);
        for datagram in out.drain(..) {
            match socket.send(&payload[..datagram.payload_bytes as usize]) {
                Ok(_) => sent += 1,
                // The host's own queue toward the link was full: the datagram is lost there.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) || e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(failed("send", e)),
            }
        }
    }
    Ok(sent)
}

/// Counts what reaches the UE until the run ends.
pub fn receive(plan: &FlowPlan, clock: &dyn Fn() -> u64) -> Result<FlowReport, EmuError> {
    let at = receiver(plan);
    let socket = UdpSocket::bind(at).map_err(|e| EmuError::System(format!("UDP sink {at}: {e}")))?;
    socket.set_read_timeout(Some(Duration::from_millis(20))).map_err(|e| EmuError::System(format!("UDP sink {at}: {e}")))?;
    let bins = plan.end_ns.div_ceil(plan.goodput_bin_ns) as usize;
    let mut report = FlowReport { received_per_bin: vec![0; bins], ..FlowReport::default() };
    let mut buf = vec![0u8; 65_536];
    while clock() < plan.end_ns {
        match socket.recv(&mut buf) {
            Ok(n) => {
                let now = clock().min(plan.end_ns - 1);
                report.received_per_bin[(now / plan.goodput_bin_ns) as usize] += n as u64;
                report.received_bytes += n as u64;
                report.datagrams_received += 1;
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(EmuError::System(format!("UDP sink {at}: {e}"))),
        }
    }
    Ok(report)
}
