pub mod compare;
pub mod report;
pub mod result;
pub mod vmstat;

pub use vmstat::{Memcg, Mthp, Vm, VmStat};
