//! Memory tiers from each node's performance, the top tier, and demotion targets.
//!
//! Models mm/memory-tiers.c (v6.7–v6.18): abstract distance (MEMTIER_ADISTANCE_DRAM = 576, and
//! for other memory the HMAT/CDAT scaling by read+write latency and bandwidth relative to DRAM),
//! tiers of MEMTIER_CHUNK_SIZE = 128, the top tier as the fastest tier holding a node with CPUs
//! (and everything faster), and establish_demotion_targets (each node demotes to the nodes of the
//! next lower tier). Left out: node distances (the first lower-tier node is the preferred target),
//! dax/kmem registration, hotplug and the sysfs tier devices.

use crate::machine::hw::HwCosts;
use crate::scenario::Tier;

pub const MEMTIER_CHUNK_BITS: u32 = 7;
pub const MEMTIER_ADISTANCE_DRAM: u32 = (4 << MEMTIER_CHUNK_BITS) + (1 << (MEMTIER_CHUNK_BITS - 1));

#[derive(Clone, Debug, Default)]
pub struct MemoryTiers {
    pub adistance: Vec<u32>,
    pub toptier: Vec<bool>,
    /// next_demotion_node: the preferred lower-tier node of each node, if any.
    pub demotion_target: Vec<Option<u32>>,
}

/// The abstract distance of a node of this kind of memory (mt_perf_to_adistance).
pub fn adistance(tier: Tier, hw: &HwCosts) -> u32 {
    match tier {
        Tier::Dram => MEMTIER_ADISTANCE_DRAM,
        Tier::Cxl => {
            // Reads and writes are taken to cost the same; the formula's sums then reduce to these
            // ratios.
            let lat = hw.cxl_read_latency_ns as f64 / hw.dram_read_latency_ns as f64;
            let bw = hw.dram_bandwidth_bytes_per_s as f64 / hw.cxl_bandwidth_bytes_per_s as f64;
            (MEMTIER_ADISTANCE_DRAM as f64 * lat * bw) as u32
        }
    }
}

impl MemoryTiers {
    /// `nodes`: (tier kind, has CPUs) per node.
    pub fn build(nodes: &[(Tier, bool)], hw: &HwCosts) -> MemoryTiers {
        let adistance: Vec<u32> = nodes.iter().map(|&(t, _)| adistance(t, hw)).collect();
        let chunk = |a: u32| a >> MEMTIER_CHUNK_BITS;
        let top_chunk = nodes
            .iter()
            .zip(&adistance)
            .filter(|((_, cpus), _)| *cpus)
            .map(|(_, &a)| chunk(a))
            .min();
        let toptier = adistance
            .iter()
            .map(|&a| top_chunk.is_none_or(|t| chunk(a) <= t))
            .collect();
        let demotion_target = adistance
            .iter()
            .map(|&a| {
                let next = adistance
                    .iter()
                    .map(|&b| chunk(b))
                    .filter(|&c| c > chunk(a))
                    .min()?;
                adistance
                    .iter()
                    .position(|&b| chunk(b) == next)
                    .map(|n| n as u32)
            })
            .collect();
        MemoryTiers {
            adistance,
            toptier,
            demotion_target,
        }
    }

    pub fn node_is_toptier(&self, node: u32) -> bool {
        self.toptier[node as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hw() -> HwCosts {
        crate::machine::hw::profile("x86-server")
            .unwrap()
            .costs
            .clone()
    }

    #[test]
    fn cxl_node_is_a_lower_tier_and_the_demotion_target() {
        let t = MemoryTiers::build(&[(Tier::Dram, true), (Tier::Cxl, false)], &hw());
        assert_eq!(t.adistance[0], 576);
        assert!(t.adistance[1] > 576 + 127);
        assert_eq!(t.toptier, vec![true, false]);
        assert_eq!(t.demotion_target, vec![Some(1), None]);
    }

    #[test]
    fn cpuless_dram_node_shares_the_top_tier_and_nothing_demotes() {
        let t = MemoryTiers::build(&[(Tier::Dram, true), (Tier::Dram, false)], &hw());
        assert_eq!(t.toptier, vec![true, true]);
        assert_eq!(t.demotion_target, vec![None, None]);
    }
}
