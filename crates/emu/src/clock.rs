//! The emulation's one clock: nanoseconds since the run started, shared by the link and the
//! endpoints. Stopping it (Ctrl-C) makes it read the end of time, so every loop, which all
//! run "until the clock reaches the end", ends at its next look.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

pub struct RunClock {
    start: Instant,
    /// CLOCK_MONOTONIC at `start`, for what leaves the process stamped with the host's clock.
    pub monotonic_start_ns: u64,
    stopped: AtomicBool,
}

impl RunClock {
    pub fn start() -> RunClock {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes the timespec it is given.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        let monotonic_start_ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        RunClock { start: Instant::now(), monotonic_start_ns, stopped: AtomicBool::new(false) }
    }

    pub fn now_ns(&self) -> u64 {
        if self.stopped.load(Ordering::Relaxed) {
            return u64::MAX;
        }
        self.start.elapsed().as_nanos() as u64
    }

    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }
}

/// Real-time scheduling for the calling thread (the link's timing), when the host allows it:
/// SCHED_FIFO wakes within tens of µs where a normal thread has multi-ms tails
/// (emulation.md §1), and no timer slack. Returns whether SCHED_FIFO was granted.
pub fn make_realtime() -> bool {
    // SAFETY: both calls only change the calling thread's scheduling attributes.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        let param = libc::sched_param { sched_priority: 50 };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0
    }
}
