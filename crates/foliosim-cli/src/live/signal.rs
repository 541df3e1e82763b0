//! SIGINT, SIGTERM and SIGHUP during a live run: the handler only notes the signal; the run's
//! loop sees it, stops the programs and takes the cleanup path, so knobs are restored and what
//! the run made is removed before the process exits. (SIGKILL cannot be caught: after one, see
//! kernel-bench/README.md for the manual cleanup.)

use std::sync::atomic::{AtomicI32, Ordering};

pub const SIGHUP: i32 = 1;
pub const SIGINT: i32 = 2;
pub const SIGKILL: i32 = 9;
pub const SIGTERM: i32 = 15;
const SIG_DFL: usize = 0;

static PENDING: AtomicI32 = AtomicI32::new(0);

// The C library's own functions; std links it already, so no crate is needed for three calls.
extern "C" {
    fn signal(signum: i32, handler: usize) -> usize;
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

extern "C" fn note(sig: i32) {
    // only an atomic store: async-signal-safe
    PENDING.store(sig, Ordering::SeqCst);
}

/// Routes the three signals to `note` until the guard is dropped.
pub struct Handlers;

impl Handlers {
    pub fn install() -> Handlers {
        for sig in [SIGHUP, SIGINT, SIGTERM] {
            // SAFETY: `note` is an extern "C" fn(i32) that only stores to an atomic.
            unsafe {
                signal(sig, note as extern "C" fn(i32) as usize);
            }
        }
        Handlers
    }
}

impl Drop for Handlers {
    fn drop(&mut self) {
        for sig in [SIGHUP, SIGINT, SIGTERM] {
            // SAFETY: restoring the default disposition.
            unsafe {
                signal(sig, SIG_DFL);
            }
        }
    }
}

/// The signal that arrived, if any.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

pub fn name(sig: i32) -> &'static str {
    match sig {
        SIGHUP => "SIGHUP",
        SIGINT => "SIGINT",
        SIGKILL => "SIGKILL",
        SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// Sends a signal to a process; false when it could not (it is gone).
pub fn kill(pid: i32, sig: i32) -> bool {
    if pid <= 0 {
        // 0 and negative pids address process groups: never meant here
        return false;
    }
    // SAFETY: kill(2) takes plain integers.
    unsafe { libc_kill(pid, sig) == 0 }
}
