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

use foliosim::scenario::RunSpec;
use foliosim::workload::trace_replay::recorded_native_user_ns;
use serde_json::{json, Map, Value};

use super::{check_signal, sys, LiveError};

/// Native runs per live run: their median is kept, their range shown.
pub const NATIVE_RUNS: usize = 5;

/// Adds `native_user_ns` ({task: median}) and `native_user_ns_runs` ({task: [each run]}) to
/// the run's notes for its native-timed tasks with a command (nothing when it has none). A
/// native run that cannot start or is killed fails the run, naming the task.
pub(super) fn time_native_runs(spec: &RunSpec, info: &mut Value) -> Result<(), LiveError> {
    let (mut medians, mut runs) = (Map::new(), Map::new());
    for task in &spec.scenario.tasks {
        let Some(command) = task
            .command
            .as_ref()
            .filter(|_| recorded_native_user_ns(task).is_some())
        else {
            continue;
        };
        let mut user_ns = Vec::with_capacity(NATIVE_RUNS);
        for _ in 0..NATIVE_RUNS {
            check_signal()?;
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
            let child = native.spawn().map_err(|e| {
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
        let mut sorted = user_ns.clone();
        sorted.sort_unstable();
        medians.insert(task.name.clone(), json!(sorted[sorted.len() / 2]));
        runs.insert(task.name.clone(), json!(user_ns));
    }
    if !medians.is_empty() {
        info["native_user_ns"] = json!(medians);
        info["native_user_ns_runs"] = json!(runs);
    }
    Ok(())
}
