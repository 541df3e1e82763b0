//! `run --explain-time`: each task's simulated time by mechanism (the result's
//! `time_breakdown_ns`, crates/foliosim/src/mm/cputime.rs), with the share of the task's user +
//! sys time and the hardware profile's costs behind each category (docs/hardware.md).

use comfy_table::{presets, CellAlignment, Table};
use foliosim::machine::hw::HwProfile;
use foliosim::mm::cputime::TimeKind;
use foliosim::RunResult;

use crate::table::run_label;

/// One table per task of each run, with the values of `hw`'s costs; categories with no time are
/// left out.
pub fn render(runs: &[RunResult], hw: &HwProfile) -> String {
    let values = hw.costs.values();
    let value_of = |cost: &str| {
        values
            .iter()
            .find(|(f, _)| *f == cost)
            .map_or(0, |(_, v)| *v)
    };
    let mut text = String::new();
    for run in runs {
        for task in &run.tasks {
            let ns = |key: &str| task.get(key).and_then(|v| v.as_u64()).unwrap_or(0);
            let of = |kind: TimeKind| breakdown_ns(task, kind);
            let run_ns = ns("user_ns") + ns("sys_ns");
            let name = task.get("name").and_then(|v| v.as_str()).unwrap_or("?");
            text.push_str(&format!(
                "\n{}  task {name}: user + sys {} ns (hardware {})\n",
                run_label(run),
                thousands(run_ns),
                hw.costs.name
            ));
            let mut table = Table::new();
            table
                .load_style(presets::NOTHING)
                .force_no_tty()
                .set_header(["time", "ns", "share", "profile costs"]);
            for kind in TimeKind::ALL {
                let spent = of(kind);
                if spent == 0 {
                    continue;
                }
                // waiting for a CPU or a device is not part of user + sys
                let share = if kind.is_wait() || run_ns == 0 {
                    "-".to_string()
                } else {
                    format!("{:.1} %", spent as f64 * 100.0 / run_ns as f64)
                };
                let costs = if kind.costs().is_empty() {
                    "(scheduling: other tasks on the CPU)".to_string()
                } else {
                    let costs: Vec<String> = kind
                        .costs()
                        .iter()
                        .map(|c| format!("{c} {}", value_of(c)))
                        .collect();
                    costs.join(", ")
                };
                table.add_row([kind.name().to_string(), thousands(spent), share, costs]);
            }
            for (index, column) in table.column_iter_mut().enumerate() {
                column.set_padding((2, 0));
                if index == 1 || index == 2 {
                    column.set_cell_alignment(CellAlignment::Right);
                }
            }
            for line in table.lines() {
                text.push_str(line.trim_end());
                text.push('\n');
            }
        }
    }
    text
}

/// A result task's simulated time of `kind` (its `time_breakdown_ns`), 0 when it has none.
pub(crate) fn breakdown_ns(task: &crate::table::ResultTask, kind: TimeKind) -> u64 {
    task.get("time_breakdown_ns")
        .and_then(|b| b.get(kind.name()))
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// 1234567 as 1,234,567.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(12_345_678), "12,345,678");
    }
}
