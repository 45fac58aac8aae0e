//! A TUN device with the virtio-net header: the kernel hands over and takes back whole GSO
//! packets (up to 64 KB, one system call each) with a header saying how to segment them and
//! where the checksum goes, which is what lets a userspace link keep up with multi-Gbit/s
//! TCP (one 1500-byte packet per system call tops out near 1–1.5 Gbit/s on this kind of machine;
//! docs/emulator.md#the-link).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

use crate::error::EmuError;

// <linux/if_tun.h>
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
const TUN_F_CSUM: libc::c_uint = 0x01;
const TUN_F_TSO4: libc::c_uint = 0x02;
const TUN_F_TSO6: libc::c_uint = 0x04;
const TUN_F_TSO_ECN: libc::c_uint = 0x08;

pub struct Tun {
    file: File,
    pub name: String,
}

impl Tun {
    /// Creates `name` in the calling thread's network namespace, non-blocking, with checksum
    /// and TCP segmentation offloads (so the kernel may hand over unsegmented packets).
    pub fn create(name: &str) -> Result<Tun, EmuError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(|e| EmuError::System(format!("cannot open /dev/net/tun: {e}")))?;
        // struct ifreq: 16 bytes of name, then the flags (a union padded to 24 bytes).
        let mut ifreq = [0u8; 40];
        ifreq[..name.len()].copy_from_slice(name.as_bytes());
        ifreq[16..18].copy_from_slice(&(IFF_TUN | IFF_NO_PI | IFF_VNET_HDR).to_ne_bytes());
        // SAFETY: TUNSETIFF reads and writes a struct ifreq, which `ifreq` is large enough for.
        if unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF, ifreq.as_mut_ptr()) } != 0 {
            return Err(EmuError::os(&format!("cannot create TUN device {name}")));
        }
        let offloads = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
        // SAFETY: TUNSETOFFLOAD takes the flags by value.
        if unsafe { libc::ioctl(file.as_raw_fd(), TUNSETOFFLOAD, offloads as libc::c_ulong) } != 0 {
            return Err(EmuError::os(&format!("cannot enable offloads on {name}")));
        }
        Ok(Tun { file, name: name.to_string() })
    }

    /// One frame (virtio header + IP packet) into `buf`; `None` when nothing is waiting.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<Option<usize>, EmuError> {
        match self.file.read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(EmuError::System(format!("reading {}: {e}", self.name))),
        }
    }

    /// Hands one frame (virtio header + IP packet) to the kernel. A frame the kernel refuses
    /// (it drops rather than blocks) is reported, not retried.
    pub fn write(&mut self, frame: &[u8]) -> Result<bool, EmuError> {
        match self.file.write(frame) {
            Ok(_) => Ok(true),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINVAL) | Some(libc::ENOBUFS)) => Ok(false),
            Err(e) => Err(EmuError::System(format!("writing {}: {e}", self.name))),
        }
    }

    /// The same device through a second file descriptor, for a thread of its own.
    pub fn try_clone(&self) -> Result<Tun, EmuError> {
        let file = self.file.try_clone().map_err(|e| EmuError::System(format!("duplicating {}: {e}", self.name)))?;
        Ok(Tun { file, name: self.name.clone() })
    }

    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}
