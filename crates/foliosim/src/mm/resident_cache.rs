//! The page cache a machine already holds when the run starts: clean pages of files that no task
//! of the scenario opens, read by programs that ran before it (a `[[machine.node]]`'s
//! `"Active(file)"` and `"Inactive(file)"`, in the node meminfo's names; `foliosim validate`
//! sets them from the live host's /proc/meminfo).
//!
//! Not a kernel mechanism but the state the kernel's mechanisms start from. It matters to them
//! through the root cgroup: global reclaim scans these lists, and a shadow entry left by an
//! eviction whose target is the root (global reclaim, MADV_PAGEOUT's reclaim_pages) is judged
//! against the root lruvec's workingset size, whose file part on a long-running machine is
//! mostly this cache (mm/workingset.rs, workingset_test_recent). Each node's pages are
//! order-0 folios of one file per list, charged to the root cgroup, the active ones on the
//! active file list and the others on the inactive one, the whole node's cache older than
//! anything the run adds; the memcg statistics are flushed after them, as the kernel's periodic
//! flusher has long since done on a machine that has been up. Left out: dirty and writeback
//! pages (all are clean here: a live host's dirty cache is written back within
//! dirty_expire_centisecs), mapped file pages, large page-cache folios, PG_referenced. The
//! cache stops at the zone's high watermark, as a host's cache stops where kswapd keeps it.

use super::filemap::File;
use super::vmscan::Lru;
use super::Kernel;

impl Kernel {
    /// Caches each node's `Active(file)` and `Inactive(file)`, charged to the root cgroup, then
    /// flushes the memcg statistics if anything was cached. Returns the pages cached.
    pub fn warm_resident_page_cache(&mut self) -> u64 {
        let mut cached = 0;
        for node in 0..self.nodes.len() {
            let spec = &self.spec.scenario.machine.nodes[node];
            let lists = [
                (
                    Lru::InactiveFile,
                    spec.inactive_file_bytes,
                    "Inactive(file)",
                ),
                (Lru::ActiveFile, spec.active_file_bytes, "Active(file)"),
            ];
            for (lru, bytes, name) in lists {
                if bytes == 0 {
                    continue;
                }
                // order-0 folios (a file without large folios), on the root's `lru`, up to the
                // high watermark
                let name = format!("resident page cache: node {node} {name}");
                let file = self.create_file(File::new(name, bytes, 0, false));
                cached += self.filemap_warm(file, node as u32, lru);
            }
        }
        if cached > 0 {
            self.memcg_stats_flush();
        }
        cached
    }
}

#[cfg(test)]
mod tests {
    use crate::mm::folio::content;
    use crate::mm::vmscan::Lru;
    use crate::mm::vmstat::Vm;

    /// One node of 256 MiB, 64 MiB of zram, a task in an unlimited cgroup, and `cache` (lines
    /// of the node's table).
    fn boot(cache: &str) -> (crate::mm::Kernel, u32) {
        let toml = format!(
            r#"
name = "t"
[[machine.node]]
memory = "256M"
cpus = 1
{cache}
[[swap]]
name = "z"
kind = "zram"
size = "64M"
[[cgroup]]
name = "bench"
[[task]]
name = "t"
cgroup = "bench"
ops = [{{ op = "sleep", time = "1ms" }}]
"#
        );
        crate::mm::boot_for_test(&toml, "v6.18")
    }

    #[test]
    fn the_nodes_cache_is_on_the_roots_file_lists_and_in_its_flushed_statistics() {
        let (k, _) = boot("\"Active(file)\" = \"8M\"\n\"Inactive(file)\" = \"24M\"");
        let root = k.lruvec_index(0, 0);
        let lists = &k.lruvecs[root].lists;
        assert_eq!(lists[Lru::ActiveFile as usize].nr_pages, 2048);
        assert_eq!(lists[Lru::InactiveFile as usize].nr_pages, 6144);
        let flushed = &k.lruvecs[root].flushed.lru;
        assert_eq!(flushed[Lru::ActiveFile as usize], 2048);
        assert_eq!(flushed[Lru::InactiveFile as usize], 6144);
        assert_eq!(k.memcgs[0].usage_pages, 8192);
        assert_eq!(
            k.clock_ns, 0,
            "the cache is there before the run, at no cost"
        );
    }

    /// A refault of a page MADV_PAGEOUT evicted is judged against the root's workingset (the
    /// reclaim target of reclaim_pages): the machine's page cache makes it recent.
    fn activations_after_pageout(cache: &str) -> u64 {
        let (mut k, t) = boot(cache);
        let mm = k.tasks[t as usize].mm.unwrap();
        let start = k.mmap_anon(mm, 64);
        for i in 0..64 {
            k.touch(mm, start + i, true, content::DATA_DEFAULT).unwrap();
        }
        let vi = k.mms[mm as usize].find_vma(start).unwrap();
        k.madvise_cold_or_pageout(mm, vi, 0, 64, true);
        assert_eq!(k.stat.get(Vm::Pswpout), 64);
        // zram completes each write at once, and folio_end_writeback counts it written
        assert_eq!(k.stat.get(Vm::NrWritten), 64);
        // the statistics as they are now, whenever the periodic flush falls
        k.memcg_stats_flush();
        for i in 0..64 {
            k.touch(mm, start + i, false, 0).unwrap();
        }
        assert_eq!(k.stat.get(Vm::WorkingsetRefaultAnon), 64);
        k.stat.get(Vm::WorkingsetActivateAnon)
    }

    #[test]
    fn global_pressure_reclaims_the_cache_and_leaves_a_shadow_for_each_page() {
        // 200 of the node's 256 MiB cached: 150 MiB of anonymous memory outside any limit
        // needs most of it back
        let toml = r#"
name = "t"
[[machine.node]]
memory = "256M"
cpus = 1
"Inactive(file)" = "200M"
[[task]]
name = "t"
ops = [{ op = "sleep", time = "1ms" }]
"#;
        let (mut k, t) = crate::mm::boot_for_test(toml, "v6.18");
        let root = k.lruvec_index(0, 0);
        let cached =
            |k: &crate::mm::Kernel| k.lruvecs[root].lists[Lru::InactiveFile as usize].nr_pages;
        assert_eq!(cached(&k), 51200);
        let mm = k.tasks[t as usize].mm.unwrap();
        let start = k.mmap_anon(mm, 38400);
        for i in 0..38400 {
            k.touch(mm, start + i, true, content::DATA_DEFAULT).unwrap();
        }
        let evicted = 51200 - cached(&k);
        // at least what the anonymous pages need beyond the 56 MiB left free
        assert!(
            evicted >= 38400 - 14336,
            "the cache made room: {evicted} pages evicted"
        );
        assert_eq!(
            k.stat.get(Vm::Pswpout),
            0,
            "no swap device: only the cache can go"
        );
        let shadows = k
            .files
            .iter()
            .flat_map(|f| &f.shadows)
            .filter(|s| s.is_some())
            .count();
        assert_eq!(shadows as u64, evicted, "each evicted page left its shadow");
    }

    #[test]
    fn a_pageout_refault_is_activated_when_the_roots_page_cache_holds_its_distance() {
        // no page cache: the root's workingset is the cgroup's active anon, none
        assert_eq!(activations_after_pageout(""), 0);
        // 64 pages of cache: every distance (at most the 64 evictions) is inside it
        assert_eq!(
            activations_after_pageout("\"Inactive(file)\" = \"256K\""),
            64
        );
        // 32 pages: only the pages evicted last (distances of at most 32) come back active
        assert_eq!(activations_after_pageout("\"Active(file)\" = \"128K\""), 32);
    }
}
