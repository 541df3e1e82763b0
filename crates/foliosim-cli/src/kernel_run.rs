//! `foliosim kernel-run`: a scenario's runs played on the running kernel by the kernel-bench
//! programs (see `live`), printed as `run` prints simulated runs, and written as the same JSON
//! document with the profile `live-<kernel release>` and a `live` field of notes per run.

use foliosim::scenario::parse;
use foliosim::workload::trace_replay::recorded_native_user_ns;
use foliosim::{RunResult, RunSpec, Scenario};

use crate::args::LiveArgs;
use crate::live::{self, LiveError, LiveRun};
use crate::run::{header, resolve_all, variants_and_sets, Loader};
use crate::{output, scenarios, table, Failure};

/// The runs a command asks for, resolved under `profile` (a live run uses the resolved knobs,
/// swap devices, cgroups and programs; the profile matters only to the simulator).
pub fn resolve(
    scenario: &Scenario,
    args: &LiveArgs,
    profile: &str,
) -> Result<Vec<RunSpec>, Failure> {
    let (variants, sets) = variants_and_sets(scenario, &args.variants, &args.sets, &args.json)?;
    Ok(resolve_all(
        scenario,
        &[profile.to_string()],
        &variants,
        &sets,
        args.seed,
        false,
    )?)
}

/// The profile modelling the running kernel, or the error saying there is none.
pub fn kernel_profile() -> Result<String, Failure> {
    let release = live::sys::os_release();
    live::sys::profile_for_release(&release).map_err(|m| Failure::Live {
        message: format!("{m}; name one with --profile"),
        status: 3,
    })
}

fn live_failure(e: LiveError) -> Failure {
    match e {
        LiveError::Unsupported(message) => Failure::Live { message, status: 3 },
        LiveError::Failed(message) => Failure::Live {
            message: format!("{message} (knobs restored, what the run made removed)"),
            status: 1,
        },
        LiveError::Dirty(message) => Failure::Live {
            message: format!("{message}; undo that by hand (see kernel-bench/README.md)"),
            status: 1,
        },
        LiveError::Interrupted(sig) => Failure::Live {
            message: format!(
                "interrupted by {}: knobs restored, what the run made removed",
                live::signal::name(sig)
            ),
            status: 128 + sig,
        },
    }
}

/// Checks everything the runs need before anything is changed (and builds the programs).
pub fn preflight(specs: &[RunSpec]) -> Result<live::Host, Failure> {
    live::preflight(specs).map_err(live_failure)
}

/// Plays each run in turn; the first failure stops the rest.
pub fn live_runs(
    scenario: &Scenario,
    host: &live::Host,
    specs: &[RunSpec],
) -> Result<Vec<LiveRun>, Failure> {
    let handlers = live::signal::Handlers::install();
    let mut runs = Vec::with_capacity(specs.len());
    for (index, spec) in specs.iter().enumerate() {
        let label = match &spec.variant {
            Some(v) => format!("{} {}/{v}", scenario.name, host.profile()),
            None => format!("{} {}", scenario.name, host.profile()),
        };
        eprintln!("[{}/{}] {label}: live run", index + 1, specs.len());
        runs.push(live::run(host, spec, index as u32).map_err(live_failure)?);
    }
    drop(handlers);
    Ok(runs)
}

/// The JSON text of live runs, each with its notes.
pub fn live_json(runs: &[LiveRun]) -> Result<Vec<String>, String> {
    runs.iter()
        .map(|r| output::run_json(&r.result, Some(("live", &r.info))))
        .collect()
}

/// Notes under a table: the live machine, and what stood in for what.
pub fn notes(scenario: &Scenario, host: &live::Host, runs: &[LiveRun]) -> String {
    let mut text = format!(
        "\nlive: kernel {}, {} CPUs, {} MiB; scenario machine {} CPUs, {} MiB; cgroup {}\n",
        host.release,
        host.cpus,
        host.memory_bytes >> 20,
        scenario.machine.nr_cpus(),
        scenario.machine.memory_bytes() >> 20,
        runs.first()
            .and_then(|r| r.info["cgroup"].as_str())
            .unwrap_or("-"),
    );
    if let Some(load) = &host.loadavg {
        text.push_str(&format!(
            "live: load average before the runs {load} on {} CPUs (other work on them stretches \
             the runs' timeline, and with it what reclaim finds)\n",
            host.cpus
        ));
    }
    for node in &host.meminfo {
        text.push_str(&format!(
            "live: node {} before the runs: Active(file) {} MiB, Inactive(file) {} MiB of {} MiB \
             (the root's page cache, which a refault after global reclaim or MADV_PAGEOUT is \
             judged against)\n",
            node.node,
            node.active_file_bytes >> 20,
            node.inactive_file_bytes >> 20,
            node.mem_total_bytes >> 20
        ));
    }
    let kdamonds = live::sys::damon_pageout_kdamonds();
    if !kdamonds.is_empty() {
        text.push_str(&format!(
            "live: DAMON runs a pageout scheme (kdamond pid {}): it may also swap out other processes' idle memory\n",
            kdamonds.join(", ")
        ));
    }
    if live::sys::zswap_was_enabled() {
        text.push_str(
            "live: zswap has been enabled since boot (\"zswap: loaded\" in the kernel log): from \
             then on this kernel swaps in no large folio (do_swap_page and shmem fall back to \
             order 0 once zswap was ever enabled); validate plays the same in the simulator \
             (zswap_enabled_since_boot = 1), kernel-run's figures differ from a fresh boot's\n",
        );
    }
    if live::sys::virtio_balloon() {
        text.push_str(
            "live: a virtio balloon is bound: each run first touched the memory it can use, so the \
             host backs it, and held free page reporting off until its cleanup (the result's \
             page_reporting and prefault notes)\n",
        );
    }
    for run in runs {
        for swap in run.info["swap"].as_array().into_iter().flatten() {
            let left = swap["pages_left_at_end"].as_u64().unwrap_or(0);
            if left > 0 {
                // a tmpfs file outlives its writer: its swapped-out pages stay until the unmount
                let whose = if run.info.get("tmpfs").is_some() {
                    "the run's tmpfs files (kept until cleanup unmounts them), or other \
                     processes' memory swapped out there"
                } else {
                    "other processes' memory swapped out there"
                };
                text.push_str(&format!(
                    "live: {}: {left} pages were still on {} after the programs exited: \
                     {whose}, counted in its swap counters\n",
                    table::run_label(&run.result),
                    swap["name"].as_str().unwrap_or("")
                ));
            }
        }
    }
    for run in runs {
        let label = table::run_label(&run.result);
        if let Some(why) = run.info["memcg_stats_flushes_not_recorded"].as_str() {
            text.push_str(&format!(
                "live: {label}: when the memcg statistics flusher ran was not recorded: {why}\n"
            ));
        }
        let Some(first_us) = run.info["memcg_stats_flush_first_us"].as_u64() else {
            continue;
        };
        let elapsed_us = run.result.sim_time_ns / 1000;
        let during: Vec<String> = run.info["memcg_stats_flushes_us"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_i64)
            .filter(|t| (0..=elapsed_us as i64).contains(t))
            .map(|t| format!("{} ms", t / 1000))
            .collect();
        let when = if during.is_empty() {
            format!(
                "did not run during it (the next at about {} ms)",
                first_us / 1000
            )
        } else {
            format!("ran at {} of the run", during.join(", "))
        };
        text.push_str(&format!(
            "live: {label}: the memcg statistics flusher {when}; reclaim and refault \
             detection read the statistics as last flushed, and `--set \
             memcg_stats_flush_first_us={first_us}` simulates this phase\n"
        ));
    }
    for run in runs {
        let label = table::run_label(&run.result);
        for task in &scenario.tasks {
            let Some(ns) = run.info["native_user_ns"][&task.name].as_u64() else {
                continue;
            };
            let each: Vec<String> = run.info["native_user_ns_runs"][&task.name]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(serde_json::Value::as_u64)
                .map(|ns| format!("{:.0}", ns as f64 / 1e6))
                .collect();
            let recorded = recorded_native_user_ns(task).unwrap_or(0);
            text.push_str(&format!(
                "live: {label}: {}'s command run natively after it (no memory limit, the \
                 variant's knobs): {:.0} ms of user time, the median of {} ms; its trace was \
                 recorded at {:.0} ms, and `--set {}/native_user_ns={ns}` simulates at this \
                 speed\n",
                task.name,
                ns as f64 / 1e6,
                each.join(", "),
                recorded as f64 / 1e6,
                task.name,
            ));
        }
    }
    let mut swap_lines: Vec<String> = Vec::new();
    for run in runs {
        for swap in run.info["swap"].as_array().into_iter().flatten() {
            let substitutes = swap["substitutes"].as_str().map_or(String::new(), |k| {
                format!(", standing in for the scenario's {k}")
            });
            let (on, plays) = match swap["plays"].as_str() {
                Some(option) => (
                    "a swap file on ext4 on ",
                    format!(
                        " in {}, playing {option} (a swap file takes no large swap entries)",
                        table::run_label(&run.result)
                    ),
                ),
                None => ("", String::new()),
            };
            let line = format!(
                "live: swap {} is {on}{} ({}){substitutes}{plays}\n",
                swap["name"].as_str().unwrap_or(""),
                swap["device"].as_str().unwrap_or(""),
                swap["comp_algorithm"].as_str().unwrap_or(""),
            );
            if !swap_lines.contains(&line) {
                swap_lines.push(line);
            }
        }
    }
    text.extend(swap_lines);
    text
}

/// The scenario and the resolved runs of `kernel-run`, before anything on the machine is
/// looked at or changed.
pub fn plan(args: &LiveArgs, load: &Loader) -> Result<(Scenario, Vec<RunSpec>), Failure> {
    let scenario = load(&scenarios::find("kernel-run", &args.scenario)?)?;
    // the profile only resolves the scenario here; fall back to the newest when none matches
    let profile = kernel_profile().unwrap_or_else(|_| parse::DEFAULT_PROFILE.to_string());
    let specs = resolve(&scenario, args, &profile)?;
    Ok((scenario, specs))
}

pub fn kernel_run(args: &LiveArgs) -> Result<(), Failure> {
    let (scenario, specs) = plan(args, &Scenario::load)?;
    let host = preflight(&specs)?;
    let runs = live_runs(&scenario, &host, &specs)?;
    if let Some(json) = &args.json {
        let encoded = live_json(&runs).map_err(|m| crate::json_error(json, m))?;
        let document =
            output::document_of(&scenario, &encoded).map_err(|m| crate::json_error(json, m))?;
        output::write_atomically(json, &document)?;
    }
    let results: Vec<RunResult> = runs.iter().map(|r| r.result.clone()).collect();
    let mut text = header(&scenario, args.seed, &[], None);
    let mut comparison = table::comparison(&scenario, &results);
    // a live run's time is wall-clock time
    if let Some(first) = comparison.rows.first_mut() {
        first.0 = "run time (ms)".into();
    }
    text.push_str(&table::render(&comparison));
    text.push_str(&notes(&scenario, &host, &runs));
    crate::print_stdout(&text);
    Ok(())
}
