//! The result of a run: the document `--json` writes (result.rs), built from the machine's state
//! at the end (report.rs), and the published-figure comparisons of `reproduce` (compare.rs). The
//! counters themselves are kept inside mm (mm/vmstat.rs), as the kernel keeps them.

pub mod compare;
pub mod document;
pub mod report;
pub mod result;
