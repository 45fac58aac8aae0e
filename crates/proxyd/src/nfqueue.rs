//! The daemon's packets in: NFQUEUE (the kernel hands each forwarded packet that the
//! operator's iptables rule queues, and waits for a verdict); out through `output`.
//!
//! The queue is bound with NFQA_CFG_F_GSO, so the kernel does not segment GSO/GRO packets nor
//! finish CHECKSUM_PARTIAL checksums before queueing them (cheaper, and the datapath copes with
//! both), and with NFQA_CFG_F_FAIL_OPEN, so packets that find the queue full pass instead of
//! being dropped. The rule's `--queue-bypass` does the same while no daemon is bound.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use millinet_proxyd::{ChecksumState, Input};
use nfq::{Message, Queue, Verdict};

/// Packets the kernel may hold for the daemon before fail-open lets the rest through.
pub const QUEUE_MAX_LEN: u32 = 8192;
/// The queue socket's receive buffer: a burst of full-size GSO packets fits.
const QUEUE_RCVBUF_BYTES: libc::c_int = 16 << 20;

pub struct NfQueue {
    queue: Queue,
    number: u16,
    /// The queue's netlink socket (owned by `queue`), for poll(2).
    fd: RawFd,
}

impl NfQueue {
    /// Binds queue `number` of the calling process's network namespace.
    pub fn bind(number: u16) -> Result<NfQueue, String> {
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            format!(
                "--queue {number}: cannot {what}: {e} (needs root or CAP_NET_ADMIN, and no other process bound to queue {number}; see docs/proxyd.md)"
            )
        };
        // nfq keeps its socket private, and the daemon polls it with its other sources: socket(2)
        // takes the lowest free descriptor, so the one a probe just freed is the queue's (no
        // other thread runs yet), which `is_netfilter_socket` then checks.
        let probe = std::fs::File::open("/dev/null").map_err(|e| fail("open a descriptor", &e))?;
        let fd = probe.as_raw_fd();
        drop(probe);
        let mut queue = Queue::open().map_err(|e| fail("open a netfilter socket", &e))?;
        if !is_netfilter_socket(fd) {
            return Err(fail("find the netfilter socket's descriptor", &"another thread took it"));
        }
        queue.bind(number).map_err(|e| fail("bind the queue", &e))?;
        queue.set_recv_gso(number, true).map_err(|e| fail("set NFQA_CFG_F_GSO", &e))?;
        queue.set_fail_open(number, true).map_err(|e| fail("set NFQA_CFG_F_FAIL_OPEN", &e))?;
        queue.set_queue_max_len(number, QUEUE_MAX_LEN).map_err(|e| fail("set the queue length", &e))?;
        // A smaller buffer only means earlier fail-open: not worth refusing to start for.
        let _ = set_int_option(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, QUEUE_RCVBUF_BYTES);
        queue.set_nonblocking(true);
        Ok(NfQueue { queue, number, fd })
    }

    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// The next queued packet, None when none is waiting.
    pub fn recv(&mut self) -> io::Result<Option<Message>> {
        match self.queue.recv() {
            Ok(msg) => Ok(Some(msg)),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn verdict(&mut self, mut msg: Message, accept: bool) -> io::Result<()> {
        msg.set_verdict(if accept { Verdict::Accept } else { Verdict::Drop });
        self.queue.verdict(msg)
    }

    /// Unbinds the queue: from then on the rule's `--queue-bypass` lets packets through.
    pub fn unbind(mut self) -> io::Result<()> {
        self.queue.unbind(self.number)
    }
}

/// The datapath's view of a queued packet. `segment_bytes`: a GSO packet's segment size is not
/// in the NFQUEUE message; the server's segments are at most MSS1 (the proxy clamps the MSS
/// option of the UE's SYN to it, RFC 9293 §3.7.1), so the datapath cuts at `mss1`.
pub fn input_of(msg: &Message, mss1: u16) -> Input<'_> {
    Input {
        datagram: msg.get_payload(),
        checksum: if msg.is_checksum_ready() { ChecksumState::Complete } else { ChecksumState::Partial },
        segment_bytes: msg.is_seg_offloaded().then_some(mss1),
    }
}

/// Whether `fd` is a NETLINK_NETFILTER socket.
fn is_netfilter_socket(fd: RawFd) -> bool {
    get_int_option(fd, libc::SO_DOMAIN) == Some(libc::AF_NETLINK) && get_int_option(fd, libc::SO_PROTOCOL) == Some(libc::NETLINK_NETFILTER)
}

fn get_int_option(fd: RawFd, name: libc::c_int) -> Option<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `value`; a bad fd is an error return.
    let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, name, (&mut value as *mut libc::c_int).cast(), &mut len) };
    (r == 0).then_some(value)
}

fn set_int_option(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from `value`.
    let r = unsafe {
        libc::setsockopt(fd, level, name, (&value as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
