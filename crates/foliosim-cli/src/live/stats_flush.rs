//! When the memcg statistics flusher ran during a live run. mm/memcontrol.c's
//! flush_memcg_stats_dwork flushes every memory cgroup's statistics each FLUSH_TIME (2 s), and
//! reclaim and refault detection read the LRU sizes and refault activations as last flushed; so
//! a run of a second or two under a memcg limit behaves one way when a flush lands early in it
//! and another way when none does (docs/fidelity.md, "The flusher's phase"). The simulator draws
//! that phase from the seed, or takes it from `memcg_stats_flush_first_us`.
//!
//! The memcg:memcg_flush_stats tracepoint (v6.10+) fires at every flush attempt; the periodic
//! flusher's is the only forced one (force=1). A run enables it, filtered to those, in a tracefs
//! instance of its own (the global buffer and other tracers are left alone) with the mono clock,
//! and reports the flushes' times against the programs' start. tracefs is mounted for the run
//! if it is not already. Without tracefs or the tracepoint, nothing is recorded and the result
//! says why.

use std::path::{Path, PathBuf};

use super::session::Session;
use super::sys::{read, write};

const TRACEFS: &str = "/sys/kernel/tracing";
const EVENT: &str = "events/memcg/memcg_flush_stats";

/// A tracefs instance recording the periodic flushes; the session removes it.
pub struct FlushRecorder {
    instance: PathBuf,
}

/// Starts recording in a new instance, or says why it cannot.
pub fn start(session: &mut Session, serial: u32) -> Result<FlushRecorder, String> {
    start_in(Path::new(TRACEFS), session, serial)
}

fn start_in(tracefs: &Path, session: &mut Session, serial: u32) -> Result<FlushRecorder, String> {
    if !tracefs.exists() {
        return Err(format!(
            "this kernel has no tracefs ({} is missing)",
            tracefs.display()
        ));
    }
    if !tracefs.join("instances").exists() {
        session.mount_tracefs(tracefs)?;
    }
    if !tracefs.join(EVENT).exists() {
        return Err("this kernel has no memcg:memcg_flush_stats tracepoint (v6.10+)".to_string());
    }
    let instance = tracefs
        .join("instances")
        .join(format!("foliosim-{}-{serial}", std::process::id()));
    session.add_trace_instance(&instance)?;
    write(&instance.join("trace_clock"), "mono")?;
    write(&instance.join(EVENT).join("filter"), "force == 1")?;
    write(&instance.join(EVENT).join("enable"), "1")?;
    Ok(FlushRecorder { instance })
}

impl FlushRecorder {
    /// The periodic flushes recorded so far, in µs from `start_mono_ns` (CLOCK_MONOTONIC; those
    /// before it are negative). Stops the recording.
    pub fn flushes_us(&self, start_mono_ns: u64) -> Result<Vec<i64>, String> {
        write(&self.instance.join(EVENT).join("enable"), "0")?;
        let text = read(&self.instance.join("trace"))
            .ok_or_else(|| format!("cannot read {}", self.instance.join("trace").display()))?;
        Ok(parse_flush_times_ns(&text)
            .into_iter()
            .map(|ns| (ns as i64 - start_mono_ns as i64).div_euclid(1000))
            .collect())
    }
}

/// The `memcg_stats_flush_first_us` that plays a run whose periodic flushes came at `flushes_us`
/// (from its start): the first at or after the start; else, when the run ended before one, a
/// period after the last before it. None when none was recorded.
pub fn first_flush_us(flushes_us: &[i64]) -> Option<u64> {
    let period_us = (foliosim::mm::memcontrol::FLUSH_TIME_NS / 1000) as i64;
    match flushes_us.iter().find(|t| **t >= 0) {
        Some(t) => Some(*t as u64),
        None => flushes_us.last().map(|t| (t + period_us).max(0) as u64),
    }
}

/// The timestamps (ns) of the memcg_flush_stats lines of a tracefs `trace` file, whose lines
/// read `  TASK-PID  [CPU] FLAGS  SECONDS.MICROS: memcg_flush_stats: ...`.
fn parse_flush_times_ns(text: &str) -> Vec<u64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (head, _) = line.split_once(": memcg_flush_stats:")?;
            let (seconds, micros) = head.rsplit(' ').next()?.split_once('.')?;
            let seconds: u64 = seconds.parse().ok()?;
            let micros: u64 = format!("{micros:0<6}").get(..6)?.parse().ok()?;
            Some(seconds * 1_000_000_000 + micros * 1000)
        })
        .collect()
}

/// CLOCK_MONOTONIC now, in ns: the clock the instance's trace_clock "mono" stamps events with.
pub fn monotonic_now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_lines_give_their_timestamps_and_other_lines_nothing() {
        let trace = "# tracer: nop\n#\n\
            \x20   kworker/u8:0-595     [001] ..... 21398.159568: memcg_flush_stats: memcg_id=1 stats_updates=192 force=1 needs_flush=1\n\
            \x20          sort-4147    [000] ..... 21401.158266: mm_vmscan_memcg_reclaim_begin: order=0\n\
            \x20   kworker/u8:0-595     [000] ..... 21400.175569: memcg_flush_stats: memcg_id=1 stats_updates=133 force=1 needs_flush=1\n";
        assert_eq!(
            parse_flush_times_ns(trace),
            vec![21_398_159_568_000, 21_400_175_569_000]
        );
    }

    #[test]
    fn the_first_flush_is_the_first_in_the_run_or_a_period_after_the_last_before_it() {
        assert_eq!(
            first_flush_us(&[-1_500_000, 300_000, 2_316_000]),
            Some(300_000)
        );
        assert_eq!(first_flush_us(&[-3_500_000, -1_500_000]), Some(500_000));
        assert_eq!(first_flush_us(&[]), None);
    }

    #[test]
    fn without_tracefs_or_the_tracepoint_nothing_is_made_and_the_reason_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let mut session = Session::new();
        let missing = dir.path().join("tracing");
        let err = start_in(&missing, &mut session, 1).err().unwrap();
        assert!(err.contains("no tracefs"), "{err}");
        std::fs::create_dir(dir.path().join("instances")).unwrap();
        let err = start_in(dir.path(), &mut session, 1).err().unwrap();
        assert!(
            err.contains("no memcg:memcg_flush_stats tracepoint"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_dir(dir.path().join("instances"))
                .unwrap()
                .count(),
            0
        );
    }

    #[test]
    fn flushes_are_reported_from_the_start_and_may_be_negative() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(EVENT)).unwrap();
        std::fs::write(
            dir.path().join("trace"),
            "  kworker/u8:0-595 [001] ..... 10.000100: memcg_flush_stats: memcg_id=1 force=1\n\
             \x20 kworker/u8:0-595 [001] ..... 12.016100: memcg_flush_stats: memcg_id=1 force=1\n",
        )
        .unwrap();
        let recorder = FlushRecorder {
            instance: dir.path().to_path_buf(),
        };
        assert_eq!(
            recorder.flushes_us(11_000_000_000).unwrap(),
            vec![-999_900, 1_016_100]
        );
        let enable = dir.path().join(EVENT).join("enable");
        assert_eq!(std::fs::read_to_string(enable).unwrap(), "0");
    }
}
