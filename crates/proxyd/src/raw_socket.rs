//! The daemon's packets out: one raw IPv4 socket for every datagram it makes (the tests
//! send their crafted datagrams through it too).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A raw IPv4 socket that sends datagrams made whole here (IPPROTO_RAW implies IP_HDRINCL:
/// the kernel routes them by destination and sends the header as given, raw(7)).
pub struct RawSender {
    fd: OwnedFd,
}

impl RawSender {
    pub fn open() -> Result<RawSender, String> {
        // SAFETY: socket(2) with constant arguments; the result is checked before use.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::IPPROTO_RAW) };
        if fd < 0 {
            return Err(format!("cannot open a raw IPv4 socket: {} (needs root or CAP_NET_RAW)", io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        Ok(RawSender { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// Sends one IPv4 datagram (checksums complete) to its destination address.
    pub fn send(&self, datagram: &[u8]) -> io::Result<()> {
        let dst: [u8; 4] = datagram.get(16..20).and_then(|d| d.try_into().ok()).ok_or(io::ErrorKind::InvalidInput)?;
        // SAFETY: sockaddr_in is plain data; all-zero is a valid value.
        let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from_ne_bytes(dst);
        // SAFETY: the buffer and address are valid for the lengths given.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                datagram.as_ptr().cast(),
                datagram.len(),
                0,
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

impl AsRawFd for RawSender {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }
}
