//! Kernel MPTCP (RFC 8684) sockets: stream sockets of either transport, and what each subflow
//! of an MPTCP socket reports — its TCP_INFO and its addresses, which say the path it takes.
//!
//! std makes only TCP sockets; socket2 makes one with IPPROTO_MPTCP, which is then an ordinary
//! `TcpListener`/`TcpStream` to read and write. The per-subflow getsockopts (SOL_MPTCP) take a
//! header that says how large the caller's records are (<linux/mptcp.h>).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::RawFd;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use crate::error::EmuError;
use crate::tcp_info::TcpInfo;

/// IPPROTO_MPTCP, SOL_MPTCP and its options MPTCP_TCPINFO and MPTCP_SUBFLOW_ADDRS of
/// <linux/mptcp.h> (Linux 5.16).
const IPPROTO_MPTCP: i32 = 262;
const SOL_MPTCP: i32 = 284;
const MPTCP_TCPINFO: i32 = 2;
const MPTCP_SUBFLOW_ADDRS: i32 = 3;

/// What a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Tcp,
    Mptcp,
}

fn socket(transport: Transport) -> Result<Socket, EmuError> {
    let protocol = match transport {
        Transport::Tcp => Protocol::TCP,
        Transport::Mptcp => Protocol::from(IPPROTO_MPTCP),
    };
    Socket::new(Domain::IPV4, Type::STREAM, Some(protocol)).map_err(|e| EmuError::System(format!("socket({transport:?}): {e}")))
}

/// A listening socket of the transport on `addr` (in the calling thread's namespace).
pub fn listen(transport: Transport, addr: SocketAddrV4) -> Result<TcpListener, EmuError> {
    let socket = socket(transport)?;
    socket.set_reuse_address(true).map_err(|e| EmuError::System(format!("SO_REUSEADDR: {e}")))?;
    socket.bind(&SocketAddr::V4(addr).into()).map_err(|e| EmuError::System(format!("cannot listen on {addr}: {e}")))?;
    socket.listen(16).map_err(|e| EmuError::System(format!("cannot listen on {addr}: {e}")))?;
    Ok(socket.into())
}

/// A connection of the transport from local address `from` to `addr`, given up after
/// `timeout`.
pub fn connect(transport: Transport, from: Ipv4Addr, addr: SocketAddrV4, timeout: Duration) -> Result<TcpStream, EmuError> {
    let socket = socket(transport)?;
    let local = SocketAddr::V4(SocketAddrV4::new(from, 0));
    socket.bind(&local.into()).map_err(|e| EmuError::System(format!("cannot bind to {from}: {e}")))?;
    socket
        .connect_timeout(&SocketAddr::V4(addr).into(), timeout)
        .map_err(|e| EmuError::System(format!("cannot connect to {addr}: {e}")))?;
    Ok(socket.into())
}

/// One subflow of an MPTCP socket: its TCP_INFO, and the peer's address (which says the
/// path it takes).
#[derive(Clone, Copy, Debug)]
pub struct Subflow {
    pub info: TcpInfo,
    pub remote: SocketAddrV4,
}

/// struct mptcp_subflow_data: the header of the per-subflow answers.
#[repr(C, align(8))]
#[derive(Clone, Copy, Default)]
struct SubflowData {
    size_subflow_data: u32,
    num_subflows: u32,
    size_kernel: u32,
    size_user: u32,
}

/// struct mptcp_subflow_addrs: a local and a remote `struct __kernel_sockaddr_storage`.
#[repr(C)]
#[derive(Clone, Copy)]
struct SubflowAddrs {
    /// Part of the layout; the path is told by the peer's address.
    _local: libc::sockaddr_storage,
    remote: libc::sockaddr_storage,
}

/// Subflows read at most: a connection of the emulator has one per radio path.
const MAX_SUBFLOWS: usize = 8;

/// Reads one per-subflow option into `records`; returns how many subflows it filled.
fn per_subflow<T: Copy>(fd: RawFd, option: i32, name: &str, records: &mut [T; MAX_SUBFLOWS]) -> Result<usize, EmuError> {
    #[repr(C)]
    struct Answer<T> {
        header: SubflowData,
        records: [T; MAX_SUBFLOWS],
    }
    let mut answer = Answer {
        header: SubflowData {
            size_subflow_data: std::mem::size_of::<SubflowData>() as u32,
            size_user: std::mem::size_of::<T>() as u32,
            ..SubflowData::default()
        },
        records: *records,
    };
    let mut len = std::mem::size_of::<Answer<T>>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `answer`, which is that large.
    let r = unsafe { libc::getsockopt(fd, SOL_MPTCP, option, (&mut answer as *mut Answer<T>).cast(), &mut len) };
    if r != 0 {
        return Err(EmuError::os(&format!("getsockopt({name})")));
    }
    if (answer.header.size_user as usize) < std::mem::size_of::<T>() {
        return Err(EmuError::System(format!(
            "this kernel's {name} records have {} bytes, fewer than the {} this build reads",
            answer.header.size_user,
            std::mem::size_of::<T>()
        )));
    }
    *records = answer.records;
    Ok((answer.header.num_subflows as usize).min(MAX_SUBFLOWS))
}

fn ipv4(storage: &libc::sockaddr_storage) -> Option<SocketAddrV4> {
    if storage.ss_family != libc::AF_INET as libc::sa_family_t {
        return None;
    }
    // SAFETY: an AF_INET sockaddr_storage holds a sockaddr_in at its start.
    let sin = unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
    Some(SocketAddrV4::new(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)), u16::from_be(sin.sin_port)))
}

/// Every IPv4 subflow of an MPTCP socket, with its TCP_INFO and peer address. The two options
/// are read one after the other; a subflow that came or went in between makes the counts
/// differ, and the read is taken again.
pub fn subflows(fd: RawFd) -> Result<Vec<Subflow>, EmuError> {
    // SAFETY: sockaddr_storage is plain data; all zeroes is a valid (AF_UNSPEC) value.
    let empty: SubflowAddrs = unsafe { std::mem::zeroed() };
    let (mut infos, mut addrs) = ([TcpInfo::default(); MAX_SUBFLOWS], [empty; MAX_SUBFLOWS]);
    for _ in 0..3 {
        let n = per_subflow(fd, MPTCP_TCPINFO, "MPTCP_TCPINFO", &mut infos)?;
        if per_subflow(fd, MPTCP_SUBFLOW_ADDRS, "MPTCP_SUBFLOW_ADDRS", &mut addrs)? != n {
            continue;
        }
        return Ok((0..n).filter_map(|i| Some(Subflow { info: infos[i], remote: ipv4(&addrs[i].remote)? })).collect());
    }
    Err(EmuError::System("the MPTCP socket's subflows kept changing while they were read".into()))
}
