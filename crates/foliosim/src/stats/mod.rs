pub mod compare;
pub mod report;
pub mod result;

// The counters live in mm/vmstat.rs, as in the kernel. This re-export is only for
// workload/task.rs's `iteration_start` (helper "pipeline" is moving it) and code of branches not
// merged yet; remove it once nothing names `crate::stats::{Vm, Mthp, Memcg, VmStat}`.
pub use crate::mm::vmstat::{Memcg, Mthp, Vm, VmStat};
