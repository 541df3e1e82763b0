//! How busy the machine is around `foliosim calibrate`'s measurements. A cost measured while
//! other tasks run is not this machine's cost but the cost under their load: they take turns on
//! the CPUs (the flush IPI benchmark needs its spinning thread on the other CPU all the time) and
//! share the memory bandwidth (the page scans). So calibrate starts only on an idle machine (the
//! load average, waited for), and measures what others used of the CPUs during each round
//! (/proc/stat's busy time less calibrate's own and its programs'), measuring a busy round again.

use std::time::{Duration, Instant};

use crate::live::{signal, sys};
use crate::Failure;

/// The 1-minute load average, from `/proc/loadavg` ("0.52 0.61 0.70 2/143 12345").
pub fn parse_load_average(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

pub fn load_average() -> Option<f64> {
    sys::read("/proc/loadavg").and_then(|t| parse_load_average(&t))
}

/// Waits until the 1-minute load average is at most `max_load`, for at most `wait`, polling
/// every 15 s and saying so; returns the load average it starts at. A machine still busy after
/// the wait is refused (exit 2: this machine cannot be calibrated now).
pub fn wait_until_idle(max_load: f64, wait: Duration) -> Result<f64, Failure> {
    let start = Instant::now();
    let mut said = false;
    loop {
        let Some(load) = load_average() else {
            eprintln!("calibrate: /proc/loadavg cannot be read; going on without the idle check");
            return Ok(0.0);
        };
        if load <= max_load {
            eprintln!(
                "calibrate: load average {load:.2} (at most {max_load:.2}): the machine is idle"
            );
            return Ok(load);
        }
        if start.elapsed() >= wait {
            return Err(Failure::Live {
                message: format!(
                    "the machine is busy: load average {load:.2} is above --max-load \
                     {max_load:.2} after waiting {} s; measured now, the costs would be those under \
                     other tasks' load (retry when it is idle, or raise --max-load or --wait-idle)",
                    wait.as_secs()
                ),
                status: 2,
            });
        }
        if !said {
            eprintln!(
                "calibrate: load average {load:.2} is above --max-load {max_load:.2}: waiting up \
                 to {} s for the machine to be idle",
                wait.as_secs()
            );
            said = true;
        } else {
            eprintln!("  load average {load:.2}, waiting");
        }
        // in short steps, so that a signal stops the wait
        for _ in 0..15 {
            if let Some(sig) = signal::pending() {
                return Err(Failure::Live {
                    message: format!("calibrate interrupted by {}", signal::name(sig)),
                    status: 128 + sig,
                });
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// CPU time in clock ticks (USER_HZ): the machine's busy time over all CPUs, and this process's
/// own with its waited-for children's (the benchmark programs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTicks {
    pub machine_busy: u64,
    pub this_and_children: u64,
}

/// The busy ticks of the `cpu` line of /proc/stat: user, nice, system, irq, softirq, steal (not
/// idle, iowait, or guest, which user already counts).
pub fn parse_machine_busy(proc_stat: &str) -> Option<u64> {
    let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    Some(at(0) + at(1) + at(2) + at(5) + at(6) + at(7))
}

/// utime + stime + cutime + cstime of /proc/self/stat (fields 14-17; the command name, field
/// 2, is in parentheses and may hold spaces, so fields are counted after its closing one).
pub fn parse_own_ticks(self_stat: &str) -> Option<u64> {
    let rest = &self_stat[self_stat.rfind(')')? + 1..];
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    // after ")": field 3 is f[0], so field k is f[k - 3]
    Some(f.get(11)? + f.get(12)? + f.get(13)? + f.get(14)?)
}

pub fn cpu_ticks() -> Option<CpuTicks> {
    Some(CpuTicks {
        machine_busy: parse_machine_busy(&sys::read("/proc/stat")?)?,
        this_and_children: parse_own_ticks(&sys::read("/proc/self/stat")?)?,
    })
}

/// USER_HZ: the unit of /proc/stat and /proc/self/stat on every Linux architecture.
const TICKS_PER_SECOND: f64 = 100.0;

/// The CPUs' worth of time other tasks used between `before` and `after`, `elapsed` apart: 0.3
/// means that others kept 30 % of one CPU busy on average.
pub fn others_cpus(before: CpuTicks, after: CpuTicks, elapsed: Duration) -> f64 {
    let busy = after.machine_busy.saturating_sub(before.machine_busy);
    let own = after
        .this_and_children
        .saturating_sub(before.this_and_children);
    let secs = elapsed.as_secs_f64();
    if secs <= 0.0 {
        return 0.0;
    }
    busy.saturating_sub(own) as f64 / TICKS_PER_SECOND / secs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_average_is_the_first_field() {
        assert_eq!(
            parse_load_average("0.52 0.61 0.70 2/143 12345\n"),
            Some(0.52)
        );
        assert_eq!(parse_load_average(""), None);
        assert_eq!(parse_load_average("busy"), None);
    }

    #[test]
    fn busy_ticks_leave_out_idle_and_iowait() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        let stat = "cpu  100 20 30 5000 40 1 2 3 50 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        assert_eq!(parse_machine_busy(stat), Some(156));
        assert_eq!(parse_machine_busy("intr 1 2 3\n"), None);
    }

    #[test]
    fn own_ticks_are_counted_after_a_command_name_with_spaces() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 11 13 20 0 1 0";
        assert_eq!(parse_own_ticks(stat), Some(7 + 3 + 11 + 13));
        assert_eq!(parse_own_ticks("4242 (x) S 1"), None);
    }

    #[test]
    fn what_others_used_is_the_machines_busy_time_less_ours() {
        let before = CpuTicks {
            machine_busy: 1_000,
            this_and_children: 400,
        };
        let after = CpuTicks {
            machine_busy: 1_250,
            this_and_children: 600,
        };
        // 250 ticks busy in 2 s, 200 of them ours: others used 0.5 s of CPU in 2 s
        let others = others_cpus(before, after, Duration::from_secs(2));
        assert!((others - 0.25).abs() < 1e-9, "{others}");
        // our ticks counted at a different moment than the machine's: never negative
        let late = CpuTicks {
            machine_busy: 1_100,
            this_and_children: 600,
        };
        assert_eq!(others_cpus(before, late, Duration::from_secs(1)), 0.0);
    }
}
