//! Live runs: a resolved scenario run played by the kernel-bench programs on the running kernel,
//! with the same counters read back (/proc/vmstat deltas, hugepages-<size>/stats deltas, zram
//! mm_stat, the run's memory cgroups) into the same result shape as a simulated run.
//!
//! A run owns what it makes and nothing else: knob writes are recorded before they happen and
//! undone afterwards, zram devices are added (or idle ones claimed) and removed, cgroups are
//! created beside or below this process's own and removed. Cleanup runs on success, on failure,
//! on SIGINT/SIGTERM/SIGHUP, and when a session is dropped early (see `session`).
//!
//! Swap devices: zram is zram. A brd RAM disk is played by a zram device of the same size (both
//! are synchronous RAM-backed block devices; zram compresses, brd does not, which changes memory
//! use but not the swap paths). SSD, HDD and swap-file devices are refused: this runner has no
//! disk to spare for them.

pub mod bench;
pub mod cgroup;
pub mod knobs;
pub mod session;
pub mod signal;
pub mod sys;
pub mod zram;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use foliosim::scenario::{Counters, RunSpec, SwapKind};
use foliosim::RunResult;
use serde_json::{json, Map, Value};

use bench::{Launch, Record};
use cgroup::{Hierarchy, Version};
use session::Session;

/// Why a live run did not produce a result.
#[derive(Debug)]
pub enum LiveError {
    /// This machine or kernel cannot play the scenario (not root, no zram, a build option, ...).
    Unsupported(String),
    /// Setting up, running or cleaning up failed.
    Failed(String),
    /// A signal stopped the run; everything was undone.
    Interrupted(i32),
    /// Cleanup could not undo everything: the machine is not as it was (what is left is named).
    Dirty(String),
}

/// What every live run on this machine shares, found before anything is changed.
pub struct Host {
    pub release: String,
    pub hierarchy: Hierarchy,
    /// The built kernel-bench programs.
    pub bin: PathBuf,
    pub cpus: u32,
    pub memory_bytes: u64,
    /// CONFIG_THP_SWAP of this kernel, if its configuration can be read.
    pub thp_swap: Option<bool>,
}

/// Whether a run swaps to swap files on ext4 rather than to zram devices: a run that needs
/// CONFIG_THP_SWAP=n on a kernel that may have it. The kernel gives a swap file no large swap
/// entries, so reclaim splits every large folio before swap-out, the path CONFIG_THP_SWAP=n takes.
fn plays_with_swap_files(run_thp_swap: bool, kernel_thp_swap: Option<bool>) -> bool {
    !run_thp_swap && kernel_thp_swap != Some(false)
}

impl Host {
    /// The profile name live results carry.
    pub fn profile(&self) -> String {
        format!("live-{}", self.release)
    }
}

fn unsupported(message: impl Into<String>) -> LiveError {
    LiveError::Unsupported(message.into())
}

fn read_knob(path: &str) -> Option<String> {
    sys::read(path).map(|t| sys::knob_value(&t))
}

fn kind_name(kind: SwapKind) -> String {
    format!("{kind:?}").to_lowercase()
}

/// Everything that can be checked before a change: root, no foreign swap, a memory cgroup
/// hierarchy, zram and the swap tools when the runs swap, each run's knobs and build options,
/// programs the runner can play. Then builds the programs.
pub fn preflight(specs: &[RunSpec]) -> Result<Host, LiveError> {
    match sys::effective_uid() {
        Some(0) => {}
        _ => {
            return Err(unsupported(
                "kernel-run needs root: it writes /sys and /proc knobs, adds zram swap and creates cgroups",
            ))
        }
    }
    let swaps = sys::active_swaps();
    if !swaps.is_empty() {
        return Err(unsupported(format!(
            "swap is already active ({}); a live run needs its own swap device to be the only one, \
             so that every swap counter is its own (swapoff the others first)",
            swaps.join(", ")
        )));
    }
    let hierarchy = cgroup::detect().map_err(unsupported)?;
    let (cpus, memory_bytes) = sys::machine();
    let mut need_zram = false;
    let mut need_ext4 = false;
    let thp_swap = sys::kernel_config(knobs::THP_SWAP_OPTION);
    for spec in specs {
        let run = spec.variant.as_deref().unwrap_or("(no variant)");
        // a scenario for a bigger machine would push this one into global reclaim and OOM kills
        // of whatever else runs here: its cgroup limits assume the memory it describes
        let scenario_bytes = spec.scenario.machine.memory_bytes();
        if scenario_bytes > memory_bytes {
            return Err(unsupported(format!(
                "{run}: the scenario's machine has {} MiB, this one {} MiB",
                scenario_bytes >> 20,
                memory_bytes >> 20
            )));
        }
        for swap in &spec.scenario.swap {
            match swap.kind {
                SwapKind::Zram | SwapKind::Brd => need_zram = true,
                kind => {
                    return Err(unsupported(format!(
                        "{run}: swap device {} is {}; kernel-run plays zram and brd (as zram) only",
                        swap.name,
                        kind_name(kind)
                    )))
                }
            }
        }
        let changes = knobs::plan(&knobs::wanted(&spec.knobs), read_knob)
            .map_err(|e| unsupported(format!("{run}: {e}")))?;
        // a read-only /sys or /proc (a container) shows at open time, before anything is written
        for c in &changes {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&c.path)
                .map_err(|e| unsupported(format!("{run}: cannot write {}: {e}", c.path)))?;
        }
        if spec.knobs.thp_swap && thp_swap == Some(false) {
            return Err(unsupported(format!(
                "{run}: the run needs {}=y, a build option; this kernel has n",
                knobs::THP_SWAP_OPTION
            )));
        }
        need_ext4 |= plays_with_swap_files(spec.knobs.thp_swap, thp_swap);
        for (index, task) in spec.scenario.tasks.iter().enumerate() {
            bench::launches(index, task, &PathBuf::new(), &PathBuf::new(), spec.seed)
                .map_err(|e| unsupported(format!("task {}: {e}", task.name)))?;
        }
    }
    if need_zram {
        zram::check_available().map_err(unsupported)?;
        for tool in ["mkswap", "swapon", "swapoff"] {
            if sys::find_program(tool).is_none() {
                return Err(unsupported(format!("{tool} not found (util-linux)")));
            }
        }
        if need_ext4 {
            for tool in ["mkfs.ext4", "mount", "umount"] {
                if sys::find_program(tool).is_none() {
                    return Err(unsupported(format!(
                        "{tool} not found: a run that needs {}=n on this kernel swaps to a swap \
                         file on ext4",
                        knobs::THP_SWAP_OPTION
                    )));
                }
            }
        }
    }
    for tool in ["make", "cc"] {
        if sys::find_program(tool).is_none() {
            return Err(unsupported(format!(
                "{tool} not found: it builds the kernel-bench programs"
            )));
        }
    }
    let bin = bench::build().map_err(LiveError::Failed)?;
    Ok(Host {
        release: sys::os_release(),
        hierarchy,
        bin,
        cpus,
        memory_bytes,
        thp_swap,
    })
}

/// A live result and the notes on how it was made (devices, cgroups, knobs written).
pub struct LiveRun {
    pub result: RunResult,
    pub info: Value,
}

/// Plays one resolved run, then undoes everything it did, whatever happened.
pub fn run(host: &Host, spec: &RunSpec, serial: u32) -> Result<LiveRun, LiveError> {
    let mut session = Session::new();
    let outcome = run_in(host, spec, serial, &mut session);
    let cleanup = session.cleanup();
    match (outcome, cleanup) {
        (outcome, Err(errors)) => {
            let before = match outcome {
                Err(LiveError::Failed(m) | LiveError::Unsupported(m) | LiveError::Dirty(m)) => {
                    format!("{m}; ")
                }
                Err(LiveError::Interrupted(sig)) => {
                    format!("interrupted by {}; ", signal::name(sig))
                }
                Ok(_) => String::new(),
            };
            Err(LiveError::Dirty(format!(
                "{before}cleanup could not undo: {}",
                errors.join("; ")
            )))
        }
        (outcome, Ok(())) => outcome,
    }
}

fn check_signal() -> Result<(), LiveError> {
    match signal::pending() {
        Some(sig) => Err(LiveError::Interrupted(sig)),
        None => Ok(()),
    }
}

/// Counters of the whole machine at one moment.
struct Snapshot {
    vmstat: Counters,
    mthp: BTreeMap<String, Counters>,
}

impl Snapshot {
    fn take() -> Snapshot {
        Snapshot {
            vmstat: sys::parse_name_values(&sys::read("/proc/vmstat").unwrap_or_default()),
            mthp: sys::read_mthp_stats(),
        }
    }
}

/// What a running program process is doing.
struct Running {
    launch: Launch,
    child: Child,
    cgroup: PathBuf,
    exit: Option<(ExitStatus, u64)>,
    eof: bool,
}

enum Line {
    Text(usize, String),
    Eof(usize),
}

/// What a run made before its programs start.
struct Setup {
    changes: Vec<knobs::Change>,
    /// (scenario name, device), and the notes on each.
    devices: Vec<(String, zram::Zram)>,
    swap_info: Vec<Value>,
    /// (scenario name, directory).
    cgroups: Vec<(String, PathBuf)>,
    /// For tasks that name no cgroup.
    default_group: Option<PathBuf>,
    scratch: PathBuf,
}

impl Setup {
    fn group_of(&self, cgroup: &Option<String>) -> &PathBuf {
        match cgroup {
            Some(name) => self
                .cgroups
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, d)| d)
                .expect("a task's cgroup is one of the scenario's"),
            None => self
                .default_group
                .as_ref()
                .expect("made when a task has no cgroup"),
        }
    }
}

/// Knobs, then swap devices and cgroups (made under the run's settings), then the scratch
/// directory; each recorded in the session before it is made. Every change is printed on
/// stderr as it is made: the record to undo it by hand after a SIGKILL.
fn set_up(
    host: &Host,
    spec: &RunSpec,
    serial: u32,
    session: &mut Session,
) -> Result<Setup, LiveError> {
    let failed = LiveError::Failed;
    let prefix = format!("foliosim-{}-{serial}", std::process::id());
    let changes = knobs::plan(&knobs::wanted(&spec.knobs), read_knob).map_err(unsupported)?;
    for change in &changes {
        check_signal()?;
        eprintln!("  {}: {} -> {}", change.path, change.before, change.value);
        session.set_knob(change).map_err(failed)?;
    }
    let mut devices = Vec::new();
    let mut swap_info = Vec::new();
    let swap_files = plays_with_swap_files(spec.knobs.thp_swap, host.thp_swap);
    for swap in &spec.scenario.swap {
        check_signal()?;
        let setup = if swap_files {
            let dir = std::env::temp_dir().join(format!("{prefix}-{}", swap.name));
            session
                .add_zram_swap_file(swap.size_bytes, swap.priority, &dir)
                .map(|(z, algorithm, file)| (z, algorithm, Some(file)))
        } else {
            session
                .add_zram_swap(swap.size_bytes, swap.priority, swap.discard)
                .map(|(z, algorithm)| (z, algorithm, None))
        };
        let (z, algorithm, file) =
            setup.map_err(|e| failed(format!("swap device {}: {e}", swap.name)))?;
        let mut info = json!({
            "name": swap.name, "device": z.name(), "kind": "zram", "comp_algorithm": algorithm,
            "size_bytes": swap.size_bytes, "priority": swap.priority,
        });
        match &file {
            Some(file) => {
                eprintln!(
                    "  swap {}: {} on ext4 on {} ({algorithm})",
                    swap.name,
                    file.display(),
                    z.dev().display()
                );
                info["swap_file"] = json!(file.display().to_string());
                info["plays"] = json!(format!("{}=n", knobs::THP_SWAP_OPTION));
            }
            None => eprintln!("  swap {}: {} ({algorithm})", swap.name, z.dev().display()),
        }
        if swap.kind != SwapKind::Zram {
            info["substitutes"] = json!(kind_name(swap.kind));
        }
        swap_info.push(info);
        devices.push((swap.name.clone(), z));
    }
    let mut cgroups = Vec::new();
    for cg in &spec.scenario.cgroups {
        check_signal()?;
        let dir = session
            .add_cgroup(
                &host.hierarchy,
                &format!("{prefix}-{}", cg.name),
                cg.memory_max_bytes,
                spec.knobs.swappiness,
            )
            .map_err(failed)?;
        eprintln!("  cgroup {}: {}", cg.name, dir.display());
        cgroups.push((cg.name.clone(), dir));
    }
    // tasks outside every scenario cgroup still run confined, in a group without a limit ('@'
    // cannot appear in a scenario's names, so it cannot collide with one of theirs)
    let default_group = if spec.scenario.tasks.iter().any(|t| t.cgroup.is_none()) {
        let dir = session
            .add_cgroup(
                &host.hierarchy,
                &format!("{prefix}@default"),
                None,
                spec.knobs.swappiness,
            )
            .map_err(failed)?;
        eprintln!("  cgroup (tasks without one): {}", dir.display());
        Some(dir)
    } else {
        None
    };
    let scratch = std::env::temp_dir().join(&prefix);
    session.add_dir(&scratch).map_err(failed)?;
    Ok(Setup {
        changes,
        devices,
        swap_info,
        cgroups,
        default_group,
        scratch,
    })
}

/// The programs' records, exits and the sampled series.
struct Played {
    running: Vec<Running>,
    /// (time since start, process index, record).
    records: Vec<(u64, usize, Record)>,
    series: Series,
    elapsed_ns: u64,
}

/// Starts every program in its cgroup, reads their records (releasing barriers), samples the
/// series, and waits for all of them; on a signal, kills them.
fn play(
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
        for launch in bench::launches(index, task, &host.bin, &setup.scratch, spec.seed)
            .map_err(|e| unsupported(format!("task {}: {e}", task.name)))?
        {
            if let Some((file, text)) = &launch.ops_file {
                std::fs::write(setup.scratch.join(file), text)
                    .map_err(|e| failed(format!("cannot write {file}: {e}")))?;
            }
            launches.push(launch);
        }
    }
    let start = Instant::now();
    let (tx, rx) = mpsc::channel::<Line>();
    let mut running: Vec<Running> = Vec::new();
    for launch in launches {
        let cgroup = setup.group_of(&scenario.tasks[launch.task].cgroup).clone();
        // the shell joins the cgroup, then becomes the program: nothing runs outside it
        let spawned = Command::new("/bin/sh")
            .arg("-c")
            .arg("echo $$ > \"$1\" && shift && exec \"$@\"")
            .arg("sh")
            .arg(host.hierarchy.procs_file(&cgroup))
            .args(&launch.argv)
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
                return Err(failed(format!("cannot start {}: {e}", launch.argv[0])));
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
        let now_ns = start.elapsed().as_nanos() as u64;
        if let Some(sig) = signal::pending() {
            stop(&mut running);
            return Err(LiveError::Interrupted(sig));
        }
        if now_ns >= next_sample_ns {
            series.sample(now_ns, before, setup, zram_before, &host.hierarchy);
            next_sample_ns = now_ns + interval_ns;
        }
        match rx.recv_timeout(Duration::from_millis(5)) {
            Ok(Line::Text(index, text)) => match bench::parse_record(&text) {
                Some(record) => {
                    if record.kind == "barrier" {
                        arrive(
                            &mut running,
                            &mut arrived,
                            index,
                            record.get("name").unwrap_or(""),
                        );
                    }
                    records.push((now_ns, index, record));
                }
                None => eprintln!("{text}"),
            },
            Ok(Line::Eof(index)) => running[index].eof = true,
            Err(_) => {}
        }
        for r in running.iter_mut().filter(|r| r.exit.is_none()) {
            if let Ok(Some(status)) = r.child.try_wait() {
                r.exit = Some((status, start.elapsed().as_nanos() as u64));
            }
        }
    }
    let elapsed_ns = running
        .iter()
        .filter_map(|r| r.exit.map(|(_, t)| t))
        .max()
        .unwrap_or(0);
    Ok(Played {
        running,
        records,
        series,
        elapsed_ns,
    })
}

/// Kills and reaps the programs started so far (the cgroups' removal kills their children).
fn stop(running: &mut [Running]) {
    for r in running.iter_mut() {
        let _ = r.child.kill();
        let _ = r.child.wait();
    }
}

/// Process `index` reached barrier `name`: once every process whose program names it has
/// arrived, each gets its go-ahead line.
fn arrive(
    running: &mut [Running],
    arrived: &mut BTreeMap<String, Vec<usize>>,
    index: usize,
    name: &str,
) {
    let waiting = arrived.entry(name.to_string()).or_default();
    waiting.push(index);
    let participants = running
        .iter()
        .filter(|r| r.launch.barriers.iter().any(|b| b == name))
        .count();
    if waiting.len() >= participants {
        for i in std::mem::take(waiting) {
            if let Some(stdin) = running[i].child.stdin.as_mut() {
                let _ = stdin.write_all(b"go\n").and_then(|_| stdin.flush());
            }
        }
    }
}

fn run_in(
    host: &Host,
    spec: &RunSpec,
    serial: u32,
    session: &mut Session,
) -> Result<LiveRun, LiveError> {
    let setup = set_up(host, spec, serial, session)?;
    check_signal()?;
    let zram_before: Vec<Counters> = setup.devices.iter().map(|(_, z)| z.mm_stat()).collect();
    let before = Snapshot::take();
    let played = play(host, spec, &setup, &before, &zram_before)?;
    let after = Snapshot::take();
    let zram_after: Vec<Counters> = setup.devices.iter().map(|(_, z)| z.mm_stat()).collect();
    let memcg: BTreeMap<String, Counters> = setup
        .cgroups
        .iter()
        .map(|(name, dir)| (name.clone(), host.hierarchy.stats(dir)))
        .collect();
    let tasks = task_figures(&played.running, &played.records, &host.hierarchy)?;
    let iterations = played
        .records
        .iter()
        .filter(|(_, _, r)| r.kind == "iteration")
        .map(|(_, _, r)| iteration_figures(r))
        .collect();
    let vmstat: Counters = sys::delta(&before.vmstat, &after.vmstat)
        .into_iter()
        .filter(|(k, _)| !sys::is_vmstat_level(k))
        .collect();
    let empty = Counters::new();
    let mthp = after
        .mthp
        .iter()
        .map(|(size, c)| {
            let b = before.mthp.get(size).unwrap_or(&empty);
            (size.clone(), sys::delta(b, c))
        })
        .collect();
    // levels (the mkswap header, the allocator's own pages) are reported as what the run added
    let zram_delta: Vec<Counters> = zram_before
        .iter()
        .zip(&zram_after)
        .map(|(b, a)| {
            let mut c = sys::delta(b, a);
            let stored = c.get("orig_data_size").copied().unwrap_or(0) / 4096;
            c.insert("pages_stored".into(), stored);
            c
        })
        .collect();
    // the programs have exited, so what zram still holds is someone else's: pages that DAMON
    // or global reclaim swapped out to the run's device, counted in its swap counters
    let mut swap_info = setup.swap_info.clone();
    for (info, c) in swap_info.iter_mut().zip(&zram_delta) {
        info["pages_left_at_end"] = json!(c["pages_stored"]);
    }
    let zram = setup
        .devices
        .iter()
        .map(|(name, _)| name.clone())
        .zip(zram_delta)
        .collect();
    let knobs_written: Map<String, Value> = setup
        .changes
        .iter()
        .map(|c| (c.path.clone(), json!(c.value)))
        .collect();
    let info = json!({
        "kernel": host.release,
        "cpus": host.cpus,
        "memory_bytes": host.memory_bytes,
        "cgroup": match host.hierarchy.version { Version::V1 => "v1", Version::V2 => "v2" },
        "cgroup_parent": host.hierarchy.parent.display().to_string(),
        "swap": swap_info,
        "knobs_written": knobs_written,
        "elapsed_ns": played.elapsed_ns,
    });
    Ok(LiveRun {
        result: RunResult {
            profile: host.profile(),
            variant: spec.variant.clone(),
            seed: spec.seed,
            sim_time_ns: played.elapsed_ns,
            vmstat,
            mthp,
            memcg,
            zram,
            tasks,
            iterations,
            series: played.series.cols,
        },
        info,
    })
}

/// The tool's figures for one iteration, as the simulator reports them: fallback_pct rounded
/// to two decimals, null when nothing was swapped out.
pub fn iteration_figures(r: &Record) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("time_ns".into(), json!(r.number("time_ns").unwrap_or(0)));
    if let (Some(swpout), Some(fallback)) = (r.number("swpout_inc"), r.number("fallback_inc")) {
        m.insert("swpout_inc".into(), json!(swpout));
        m.insert("fallback_inc".into(), json!(fallback));
        let pct = (swpout + fallback > 0)
            .then(|| (fallback as f64 * 10_000.0 / (swpout + fallback) as f64).round() / 100.0);
        m.insert("fallback_pct".into(), json!(pct));
    }
    m
}

/// Per-task figures from the programs' `task` records; a process killed by a signal was
/// OOM-killed if its cgroup counted an OOM kill, and otherwise the run failed.
fn task_figures(
    running: &[Running],
    records: &[(u64, usize, Record)],
    hierarchy: &Hierarchy,
) -> Result<Vec<Map<String, Value>>, LiveError> {
    let mut tasks: Vec<(usize, Map<String, Value>)> = Vec::new();
    let killed = |index: usize, name: &str, sig: i32| -> Result<(), LiveError> {
        if hierarchy.oom_kills(&running[index].cgroup) > 0 {
            Ok(())
        } else {
            Err(LiveError::Failed(format!(
                "task {name} was killed by signal {sig} ({}) without an OOM kill in its cgroup",
                signal::name(sig)
            )))
        }
    };
    for (t_ns, index, r) in records.iter().filter(|(_, _, r)| r.kind == "task") {
        let name = r.get("name").unwrap_or("").to_string();
        let mut m = Map::new();
        m.insert("name".into(), json!(name));
        m.insert("exit_ns".into(), json!(t_ns));
        let mut oom_killed = false;
        if let Some(sig) = r.number("killed_by") {
            killed(*index, &name, sig as i32)?;
            oom_killed = true;
        }
        m.insert("oom_killed".into(), json!(oom_killed));
        for (k, v) in &r.fields {
            if k != "name" && k != "killed_by" {
                if let Ok(v) = v.parse::<u64>() {
                    m.insert(k.clone(), json!(v));
                }
            }
        }
        tasks.push((running[*index].launch.task, m));
    }
    for (index, r) in running.iter().enumerate() {
        let Some((status, t_ns)) = r.exit else {
            continue;
        };
        let name = r.launch.argv.get(1).cloned().unwrap_or_default();
        if status.success() {
            continue;
        }
        match std::os::unix::process::ExitStatusExt::signal(&status) {
            Some(sig) => {
                killed(index, &name, sig)?;
                if !tasks.iter().any(|(_, m)| m["name"] == json!(name)) {
                    let mut m = Map::new();
                    m.insert("name".into(), json!(name));
                    m.insert("exit_ns".into(), json!(t_ns));
                    m.insert("oom_killed".into(), json!(true));
                    tasks.push((r.launch.task, m));
                }
            }
            None => {
                return Err(LiveError::Failed(format!(
                    "task {name} ({}) exited with status {}",
                    r.launch.argv[0],
                    status.code().unwrap_or(-1)
                )))
            }
        }
    }
    // scenario task order, then the names' own order (usemem-2 before usemem-10)
    tasks.sort_by(|(a, ma), (b, mb)| {
        let key = |m: &Map<String, Value>| {
            let name = m["name"].as_str().unwrap_or("").to_string();
            let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            let (stem, number) = name.split_at(name.len() - digits);
            (stem.to_string(), number.parse::<u64>().unwrap_or(0))
        };
        (a, key(ma)).cmp(&(b, key(mb)))
    });
    Ok(tasks.into_iter().map(|(_, m)| m).collect())
}

/// The simulator's time-series columns, sampled from the live kernel.
#[derive(Default)]
struct Series {
    cols: BTreeMap<String, Vec<u64>>,
}

const SERIES_VMSTAT: &[&str] = &[
    "pgfault",
    "pswpout",
    "pswpin",
    "pgscan_direct",
    "pgscan_kswapd",
    "oom_kill",
];

impl Series {
    fn sample(
        &mut self,
        t_ns: u64,
        before: &Snapshot,
        setup: &Setup,
        zram_before: &[Counters],
        hierarchy: &Hierarchy,
    ) {
        let vmstat = sys::parse_name_values(&sys::read("/proc/vmstat").unwrap_or_default());
        let mut push = |name: String, v: u64| self.cols.entry(name).or_default().push(v);
        push("t_ns".into(), t_ns);
        push(
            "nr_free_pages".into(),
            vmstat.get("nr_free_pages").copied().unwrap_or(0),
        );
        for name in SERIES_VMSTAT {
            let v = vmstat.get(*name).copied().unwrap_or(0);
            push(
                name.to_string(),
                v.saturating_sub(before.vmstat.get(*name).copied().unwrap_or(0)),
            );
        }
        for (name, dir) in &setup.cgroups {
            push(
                format!("memcg:{name}:usage_pages"),
                hierarchy.usage_pages(dir),
            );
        }
        for ((name, z), b) in setup.devices.iter().zip(zram_before) {
            let used = z.mm_stat().get("mem_used_total").copied().unwrap_or(0);
            push(
                format!("zram:{name}:mem_used_total"),
                used.saturating_sub(b.get("mem_used_total").copied().unwrap_or(0)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_figures_match_the_simulators_rounding() {
        let r = bench::parse_record("iteration time_ns=7 swpout_inc=32 fallback_inc=192").unwrap();
        let m = iteration_figures(&r);
        assert_eq!(m["fallback_pct"], json!(85.71));
        assert_eq!(m["swpout_inc"], json!(32));
        assert_eq!(m["time_ns"], json!(7));
        let none = bench::parse_record("iteration time_ns=7 swpout_inc=0 fallback_inc=0").unwrap();
        assert_eq!(iteration_figures(&none)["fallback_pct"], Value::Null);
        let time_only = bench::parse_record("iteration time_ns=9").unwrap();
        assert_eq!(iteration_figures(&time_only).len(), 1);
    }
}
