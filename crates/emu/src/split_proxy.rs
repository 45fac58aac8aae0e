//! The split-TCP baseline (milliproxy.md §5) as a real proxy: in the `proxy` namespace it
//! accepts the UE's connections, opens one to the server for each, and relays the bytes both
//! ways. Each side is the kernel's TCP, so the server's data is acknowledged by the proxy's
//! stack as it arrives (early ACKs) and sent on with the proxy's own congestion control and
//! MSS; what waits in between is the two sockets' buffers. The UE addresses the proxy (an
//! explicit proxy, as an operator's configured one is); the server sees the proxy's address.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use crate::endpoint::set_congestion_control;
use crate::error::EmuError;
use crate::plan::SplitPlan;

/// How often a blocked relay looks at the clock, to stop when the run ends.
const POLL: Duration = Duration::from_millis(20);

pub struct SplitRelay {
    listener: TcpListener,
}

impl SplitRelay {
    /// Listens on `at` (in the calling thread's namespace) with the proxy's congestion control
    /// and MSS, which the accepted connections toward the UE inherit.
    pub fn bind(at: SocketAddrV4, plan: &SplitPlan) -> Result<SplitRelay, EmuError> {
        let listener = TcpListener::bind(at).map_err(|e| EmuError::System(format!("split proxy: cannot listen on {at}: {e}")))?;
        set_congestion_control(listener.as_raw_fd(), &plan.cc)?;
        if let Some(max_segment) = plan.max_segment_bytes {
            let value = max_segment as libc::c_int;
            // SAFETY: TCP_MAXSEG reads one c_int.
            let r = unsafe {
                libc::setsockopt(
                    listener.as_raw_fd(),
                    libc::IPPROTO_TCP,
                    libc::TCP_MAXSEG,
                    (&value as *const libc::c_int).cast(),
                    size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if r != 0 {
                return Err(EmuError::os(&format!("split proxy: cannot set its MSS to {}", plan.mss_bytes)));
            }
        }
        listener.set_nonblocking(true).map_err(|e| EmuError::System(format!("split proxy listener: {e}")))?;
        Ok(SplitRelay { listener })
    }

    /// Relays every connection the UE opens to `server` until `clock()` reaches `end_ns`;
    /// returns the bytes relayed toward the UE.
    pub fn serve(&self, server: SocketAddrV4, end_ns: u64, clock: &(dyn Fn() -> u64 + Sync)) -> Result<u64, EmuError> {
        std::thread::scope(|scope| {
            let mut relays = Vec::new();
            while clock() < end_ns {
                match self.listener.accept() {
                    Ok((ue_side, _)) => {
                        let remaining = Duration::from_nanos(end_ns.saturating_sub(clock()).max(1));
                        let server_side = TcpStream::connect_timeout(&server.into(), remaining)
                            .map_err(|e| EmuError::System(format!("split proxy: cannot connect to the server {server}: {e}")))?;
                        for s in [&ue_side, &server_side] {
                            s.set_nonblocking(false).map_err(|e| EmuError::System(format!("split proxy socket: {e}")))?;
                            s.set_read_timeout(Some(POLL)).map_err(|e| EmuError::System(format!("split proxy SO_RCVTIMEO: {e}")))?;
                        }
                        let (down_from, down_to) = (clone(&server_side)?, clone(&ue_side)?);
                        relays.push(scope.spawn(move || relay(down_from, down_to, end_ns, clock)));
                        scope.spawn(move || relay(ue_side, server_side, end_ns, clock));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_micros(200)),
                    Err(e) => return Err(EmuError::System(format!("split proxy accept: {e}"))),
                }
            }
            relays.into_iter().map(|r| r.join().expect("a relay does not panic")).sum()
        })
    }
}

fn clone(s: &TcpStream) -> Result<TcpStream, EmuError> {
    s.try_clone().map_err(|e| EmuError::System(format!("split proxy socket: {e}")))
}

/// Copies `from` to `to` until `from` ends (then closes `to`'s sending side, passing the FIN
/// on), either side fails, or the run ends; returns the bytes copied.
fn relay(mut from: TcpStream, mut to: TcpStream, end_ns: u64, clock: &(dyn Fn() -> u64 + Sync)) -> Result<u64, EmuError> {
    let mut buf = vec![0u8; 1 << 16];
    let mut copied = 0u64;
    while clock() < end_ns {
        match from.read(&mut buf) {
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                break;
            }
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
                copied += n as u64;
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            // The other end went away with the run's end.
            Err(_) => break,
        }
    }
    Ok(copied)
}
