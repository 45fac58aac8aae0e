//! The emulation's one clock: nanoseconds since the run started, shared by the link and the
//! endpoints. Stopping it (Ctrl-C) or ending it (the user's command exited) makes it read the
//! end of time, so every loop, which all run "until the clock reaches the end", ends at its
//! next look.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

pub struct RunClock {
    start: Instant,
    /// CLOCK_MONOTONIC at `start`, for what leaves the process stamped with the host's clock.
    pub monotonic_start_ns: u64,
    stopped: AtomicBool,
    /// When the run was ended early, on purpose (0: it was not).
    ended_at_ns: AtomicU64,
}

impl RunClock {
    pub fn start() -> RunClock {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes the timespec it is given.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        let monotonic_start_ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        RunClock { start: Instant::now(), monotonic_start_ns, stopped: AtomicBool::new(false), ended_at_ns: AtomicU64::new(0) }
    }

    pub fn now_ns(&self) -> u64 {
        if self.stopped.load(Ordering::Relaxed) || self.ended_at_ns.load(Ordering::Relaxed) > 0 {
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

    /// Ends the run now, as complete (not an interruption).
    pub fn end(&self) {
        let now = self.start.elapsed().as_nanos().max(1) as u64;
        let _ = self.ended_at_ns.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// When [`RunClock::end`] ended the run, if it did.
    pub fn ended_at_ns(&self) -> Option<u64> {
        Some(self.ended_at_ns.load(Ordering::Relaxed)).filter(|&t| t > 0)
    }
}

/// Real-time scheduling for the calling thread (the link's timing), when the host allows it:
/// SCHED_FIFO wakes within tens of µs where a normal thread has multi-ms tails
/// (docs/emulator.md#the-link), and no timer slack. Returns whether SCHED_FIFO was granted.
pub fn make_realtime() -> bool {
    // SAFETY: both calls only change the calling thread's scheduling attributes.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        let param = libc::sched_param { sched_priority: 50 };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0
    }
}
