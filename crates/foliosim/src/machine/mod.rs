//! The simulated machine: NUMA nodes with their tier and CPUs, and hardware cost profiles.

pub mod hw;
