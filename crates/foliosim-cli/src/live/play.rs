//! Playing a live run: every kernel-bench program started in its cgroup, their records read
//! (releasing barriers when every participant has arrived), the series sampled, and all of them
//! waited for; on a signal, they are killed.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use foliosim::scenario::{Counters, RunSpec};

use super::bench::{self, Launch, Record};
use super::figures::{Series, Snapshot};
use super::setup::Setup;
use super::{signal, unsupported, Host, LiveError};

/// What a running program process is doing.
pub(super) struct Running {
    pub(super) launch: Launch,
    pub(super) child: Child,
    pub(super) cgroup: PathBuf,
    pub(super) exit: Option<(ExitStatus, u64)>,
    /// User and system CPU time of the process and the children it waited for, from wait4.
    pub(super) cpu_ns: Option<(u64, u64)>,
    pub(super) eof: bool,
}

pub(super) enum Line {
    Text(usize, String),
    Eof(usize),
}

/// The programs' records, exits and the sampled series.
pub(super) struct Played {
    pub(super) running: Vec<Running>,
    /// (time since start, process index, record).
    pub(super) records: Vec<(u64, usize, Record)>,
    pub(super) series: Series,
    pub(super) elapsed_ns: u64,
    /// Time zero on CLOCK_MONOTONIC, in ns (what tracefs's mono clock stamps events with).
    pub(super) start_mono_ns: u64,
}

/// Starts every program in its cgroup, reads their records (releasing barriers), samples the
/// series, and waits for all of them; on a signal, kills them.
pub(super) fn play(
    host: &Host,
    spec: &RunSpec,
    setup: &Setup,
    before: &Snapshot,
    zram_before: &[Counters],
) -> Result<Played, LiveError> {
    let failed = LiveError::Failed;
    let scenario = &spec.scenario;
    let mut launches = Vec::new();
    for (index, task) in scenario.tasks.iter().enumerate() {
        for launch in bench::launches(
            index,
            task,
            &scenario.files,
            &host.bin,
            &setup.scratch,
            spec.seed,
        )
        .map_err(|e| unsupported(format!("task {}: {e}", task.name)))?
        {
            if let Some((file, text)) = &launch.ops_file {
                std::fs::write(setup.scratch.join(file), text)
                    .map_err(|e| failed(format!("cannot write {file}: {e}")))?;
            }
            launches.push(launch);
        }
    }
    // Time zero: the start barrier's release when every program waits at it (all are ops
    // players), else the first spawn.
    let synced = launches
        .iter()
        .all(|l| l.barriers.first().map(String::as_str) == Some(bench::START_BARRIER));
    let spawned_at = Instant::now();
    let spawned_mono_ns = super::stats_flush::monotonic_now_ns();
    let mut start = (!synced).then_some(spawned_at);
    let (tx, rx) = mpsc::channel::<Line>();
    let mut running: Vec<Running> = Vec::new();
    for launch in launches {
        let cgroup = setup.group_of(&scenario.tasks[launch.task].cgroup).clone();
        let procs_file = host.hierarchy.procs_file(&cgroup);
        let mut command = if launch.joins_cgroup {
            let mut player = Command::new(&launch.argv[0]);
            player.arg("--join").arg(procs_file).args(&launch.argv[1..]);
            player
        } else {
            // the shell joins the cgroup, then becomes the program: nothing runs outside it
            let mut shell = Command::new("/bin/sh");
            shell
                .arg("-c")
                .arg("echo $$ > \"$1\" && shift && exec \"$@\"")
                .arg("sh")
                .arg(procs_file)
                .args(&launch.argv);
            shell
        };
        command.envs(launch.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &launch.cwd {
            command.current_dir(dir);
        }
        let spawned = command
            .stdin(if launch.barriers.is_empty() {
                Stdio::null()
            } else {
                Stdio::piped()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                stop(&mut running);
                let place = match &launch.cwd {
                    Some(dir) => format!(" in {}", dir.display()),
                    None => String::new(),
                };
                return Err(failed(format!(
                    "cannot start {}{place}: {e}",
                    launch.argv[0]
                )));
            }
        };
        let stdout = child.stdout.take().expect("stdout is piped");
        let tx = tx.clone();
        let index = running.len();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(Line::Text(index, line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(Line::Eof(index));
        });
        running.push(Running {
            launch,
            child,
            cgroup,
            exit: None,
            cpu_ns: None,
            eof: false,
        });
    }
    drop(tx);

    let mut records = Vec::new();
    let mut arrived: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut series = Series::default();
    let interval_ns = scenario.sample_interval_ns.max(10_000_000);
    let mut next_sample_ns = 0;
    while !running.iter().all(|r| r.exit.is_some() && r.eof) {
        let now_ns = start.map_or(0, |s| s.elapsed().as_nanos() as u64);
        if let Some(sig) = signal::pending() {
            stop(&mut running);
            return Err(LiveError::Interrupted(sig));
        }
        if start.is_some() && now_ns >= next_sample_ns {
            series.sample(now_ns, before, setup, zram_before, &host.hierarchy);
            next_sample_ns = now_ns + interval_ns;
        }
        match rx.recv_timeout(Duration::from_millis(5)) {
            Ok(Line::Text(index, text)) if !running[index].launch.prints_records => {
                eprintln!("{text}")
            }
            Ok(Line::Text(index, text)) => match bench::parse_record(&text) {
                Some(record) => {
                    if record.kind == "barrier" {
                        let name = record.get("name").unwrap_or("");
                        if arrive(&mut running, &mut arrived, index, name)
                            && name == bench::START_BARRIER
                        {
                            start = Some(Instant::now());
                        }
                    }
                    records.push((now_ns, index, record));
                }
                None => eprintln!("{text}"),
            },
            Ok(Line::Eof(index)) => running[index].eof = true,
            Err(_) => {}
        }
        for index in 0..running.len() {
            let r = &mut running[index];
            if r.exit.is_some() {
                continue;
            }
            if let Some((status, cpu_ns)) = super::sys::wait_with_usage(&r.child, false) {
                r.exit = Some((
                    status,
                    start.unwrap_or(spawned_at).elapsed().as_nanos() as u64,
                ));
                r.cpu_ns = Some(cpu_ns);
                // One that died before the start barrier must not hold the others there.
                let waiting = arrived.get(bench::START_BARRIER);
                if synced && start.is_none() && !waiting.is_some_and(|w| w.contains(&index)) {
                    if arrive(&mut running, &mut arrived, index, bench::START_BARRIER) {
                        start = Some(Instant::now());
                    }
                }
            }
        }
    }
    let elapsed_ns = running
        .iter()
        .filter_map(|r| r.exit.map(|(_, t)| t))
        .max()
        .unwrap_or(0);
    let start_mono_ns =
        spawned_mono_ns + start.map_or(0, |s| s.duration_since(spawned_at).as_nanos() as u64);
    Ok(Played {
        running,
        records,
        series,
        elapsed_ns,
        start_mono_ns,
    })
}

/// Kills and reaps the programs started so far (the cgroups' removal kills their children).
/// Those already reaped are left alone: their pid may be another process's by now.
fn stop(running: &mut [Running]) {
    for r in running.iter_mut().filter(|r| r.exit.is_none()) {
        let _ = r.child.kill();
        let _ = r.child.wait();
    }
}

/// Process `index` reached barrier `name`: once every process whose program names it has
/// arrived, each gets its go-ahead line, and this returns true.
fn arrive(
    running: &mut [Running],
    arrived: &mut BTreeMap<String, Vec<usize>>,
    index: usize,
    name: &str,
) -> bool {
    let waiting = arrived.entry(name.to_string()).or_default();
    waiting.push(index);
    let participants = running
        .iter()
        .filter(|r| r.launch.barriers.iter().any(|b| b == name))
        .count();
    if waiting.len() < participants {
        return false;
    }
    for i in std::mem::take(waiting) {
        if let Some(stdin) = running[i].child.stdin.as_mut() {
            let _ = stdin.write_all(b"go\n").and_then(|_| stdin.flush());
        }
    }
    true
}
