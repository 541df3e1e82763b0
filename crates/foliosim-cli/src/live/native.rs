//! The native speed of a traced program beside its live run. A task that replays a trace with
//! `user_time = "native"` charges each instruction the user time its native run took when the
//! trace was recorded; this machine's speed drifts by tens of percent over hours (a VM on a
//! shared host), and with it which phase of the program a periodic event such as the memcg
//! statistics flush falls in. So after each live run, with the variant's knobs still set and
//! outside the run's cgroups (no memory limit), the task's command is run natively a few times,
//! and the median user time goes into the run's notes as `native_user_ns`, for
//! `--set <task>/native_user_ns=` (validate passes it on itself).

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use foliosim::scenario::command::LiveCommand;
use foliosim::scenario::{RunSpec, TaskSpec};
use foliosim::workload::trace_replay::recorded_native_user_ns;
use serde_json::{json, Map, Value};

use super::{check_signal, sys, LiveError};

/// Native runs per live run: their median is kept, their range shown.
pub const NATIVE_RUNS: usize = 5;

/// A native run of `command`: its env and cwd, no input, its output to /dev/null, its errors
/// shown (also `foliosim trace record`'s native runs).
pub(crate) fn native_command(command: &LiveCommand) -> Command {
    let mut native = Command::new(&command.argv[0]);
    native
        .args(&command.argv[1..])
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    if let Some(dir) = &command.cwd {
        native.current_dir(dir);
    }
    native
}

/// The median of native user times (the upper middle one of an even count), 0 for none.
pub(crate) fn median_ns(values: &[u64]) -> u64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or(0)
}

/// The command of a task that a live run times natively: one that replays a trace at its
/// program's native speed (`user_time = "native"`) and runs that program live.
pub(crate) fn natively_timed(task: &TaskSpec) -> Option<&LiveCommand> {
    task.command
        .as_ref()
        .filter(|_| recorded_native_user_ns(task).is_some())
}

/// Adds `native_user_ns` ({task: median}) and `native_user_ns_runs` ({task: [each run]}) to
/// the run's notes for its native-timed tasks with a command (nothing when it has none). A
/// native run that cannot start or is killed fails the run, naming the task.
pub(super) fn time_native_runs(spec: &RunSpec, info: &mut Value) -> Result<(), LiveError> {
    let (mut medians, mut runs) = (Map::new(), Map::new());
    for task in &spec.scenario.tasks {
        let Some(command) = natively_timed(task) else {
            continue;
        };
        let mut user_ns = Vec::with_capacity(NATIVE_RUNS);
        for _ in 0..NATIVE_RUNS {
            check_signal()?;
            let child = native_command(command).spawn().map_err(|e| {
                LiveError::Failed(format!(
                    "task {}: cannot run {} natively: {e}",
                    task.name, command.argv[0]
                ))
            })?;
            match sys::wait_with_usage(&child, true) {
                Some((status, (user, _))) if status.signal().is_none() => user_ns.push(user),
                _ => {
                    return Err(LiveError::Failed(format!(
                        "task {}: its native run ({}) was killed",
                        task.name, command.argv[0]
                    )))
                }
            }
        }
        medians.insert(task.name.clone(), json!(median_ns(&user_ns)));
        runs.insert(task.name.clone(), json!(user_ns));
    }
    if !medians.is_empty() {
        info["native_user_ns"] = json!(medians);
        info["native_user_ns_runs"] = json!(runs);
    }
    Ok(())
}
