//! The result of one run, in the JSON shape of DESIGN.md. Maps are ordered so output is byte-stable.

use serde::Serialize;
use std::collections::BTreeMap;

use crate::scenario::Counters;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunResult {
    pub profile: String,
    pub variant: Option<String>,
    pub seed: u64,
    pub sim_time_ns: u64,
    /// /proc/vmstat names.
    pub vmstat: Counters,
    /// hugepages-<size>/stats names, by size ("64kB").
    pub mthp: BTreeMap<String, Counters>,
    /// memory.stat names, by cgroup name.
    pub memcg: BTreeMap<String, Counters>,
    /// zram mm_stat fields, by device name.
    pub zram: BTreeMap<String, Counters>,
    /// zswap's debugfs figures (pool_total_size, stored_pages, written_back_pages, reject_*),
    /// for runs with zswap enabled; absent otherwise.
    #[serde(default, skip_serializing_if = "Counters::is_empty")]
    pub zswap: Counters,
    /// Per-task figures (name first).
    pub tasks: Vec<serde_json::Map<String, serde_json::Value>>,
    /// Per-iteration figures of generators that report iterations.
    pub iterations: Vec<serde_json::Map<String, serde_json::Value>>,
    /// Time series: "t_ns" and one column per sampled counter.
    pub series: BTreeMap<String, Vec<u64>>,
    /// The series' interval when it reached MAX_SERIES_ROWS (stats/report.rs) and was thinned
    /// to a longer one than the scenario's `sample_interval`; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series_interval_ns: Option<u64>,
}
