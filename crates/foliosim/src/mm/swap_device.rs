//! Swap device models: brd and zram (synchronous, CPU time of the caller), SSD and HDD (a FIFO
//! device queue with latency and bandwidth; the caller only submits writes, and waits for reads).
//!
//! A rotational disk seeks only when a request does not start where the last one ended; a
//! submitter waits when its device already has BLKDEV_NR_REQUESTS writes queued.
//! Models the costs of drivers/block/brd.c, drivers/block/zram (same-filled pages stored without
//! compression; compressed size by content class), and an NVMe / rotational disk as a queue.
//! zram takes a bio apart into 4 KiB pages and stores or loads each through its own slot (v6.5+
//! zram_bio_write / zram_bio_read; before, __zram_make_request's loop over the bio's segments,
//! the same work per page in every version the generations model): the bio's overhead is
//! charged once per request, zram's slot, table and statistics work once per page
//! (`zram_page_write_ns`, `zram_page_read_ns`), besides each page's compression or same-filled
//! scan and fill; a freed slot's compressed object costs its zs_free (`zram_free_ns`), charged to
//! the task that freed the slot.
//! zram's figures follow its mm_stat, and the memory holding its compressed objects is taken from
//! the machine (whole pages, as zsmalloc packs objects; its fragmentation is not modelled). Left
//! out: zram's memory limit, writeback device and recompression; brd's own memory; request
//! merging, plugging and discard on block devices.

use super::folio::content;
use super::Kernel;
use super::TimeKind;
use crate::scenario::SwapKind;

#[derive(Clone, Copy, Debug, Default)]
pub struct ZramStat {
    /// Pages stored (including same-filled ones).
    pub pages_stored: u64,
    pub same_pages: u64,
    /// Bytes of compressed data held.
    pub compr_data_size: u64,
}

/// Compression time of a page of content class `c`: `typical_ns` is for class 128; LZO works
/// faster the more it finds to match, from a quarter of an incompressible page's time up.
pub(super) fn zram_compress_ns(typical_ns: u64, c: u8) -> u64 {
    let incompressible_ns = typical_ns * 8 / 5;
    incompressible_ns / 4 + incompressible_ns * 3 * c as u64 / (4 * 255)
}

/// Compressed size of a page of content class `c` (1 = compresses best, 255 = incompressible).
pub(super) fn zram_compressed_bytes(c: u8) -> u64 {
    (4096 * c as u64).div_ceil(255).max(64)
}

/// page_same_filled's scan of a page of class `c`: it reads until a word differs from the first,
/// the whole page for same-filled ones (and a sparse page whose data is at its end).
pub(super) fn same_filled_scan_ns(hw: &crate::machine::hw::HwCosts, c: u8) -> u64 {
    let reads_whole_page = matches!(
        c,
        content::ZERO | content::SAME_FILLED | content::SPARSE_TAIL
    );
    if reads_whole_page {
        hw.zram_same_page_ns
    } else {
        hw.dram_read_latency_ns
    }
}

impl super::swapfile::SwapInfo {
    /// SWP_SYNCHRONOUS_IO: the device finishes I/O inside the submitting call.
    pub fn synchronous(&self) -> bool {
        matches!(self.kind, SwapKind::Brd | SwapKind::Zram)
    }

    /// The slot is free again: zram forgets its object (zram_slot_free_notify), and zswap's
    /// entry for it is invalidated (its accounting is settled by `Kernel::zswap_settle`).
    pub fn slot_freed(&mut self, off: u32) {
        self.zram_free(off);
        if self.zswap.get(off as usize).is_some_and(Option::is_some) {
            self.zswap_freed.push(off);
        }
    }

    /// zram's slot-free notification: forget the stored object.
    fn zram_free(&mut self, off: u32) {
        if self.kind != SwapKind::Zram || !self.zram_stored[off as usize] {
            return;
        }
        self.zram_stored[off as usize] = false;
        let c = self.content[off as usize];
        let z = &mut self.zram;
        z.pages_stored -= 1;
        if c <= content::SAME_FILLED {
            z.same_pages -= 1;
        } else {
            z.compr_data_size -= zram_compressed_bytes(c);
            self.zram_frees_uncharged += 1;
        }
    }
}

/// Requests a block device queues before a submitter must wait (BLKDEV_DEFAULT_RQ).
pub const BLKDEV_NR_REQUESTS: usize = 128;

impl Kernel {
    /// A full request queue makes the submitter wait for the oldest write to finish.
    fn wait_for_request_slot(&mut self, dev: u32) {
        while self.swap[dev as usize].inflight.len() >= BLKDEV_NR_REQUESTS {
            let (done, _) = *self.swap[dev as usize]
                .inflight
                .front()
                .expect("queue is full");
            self.wait_until(TimeKind::IoWait, done);
            self.complete_swap_writeback();
        }
    }

    /// zs_free of the compressed objects zram forgot since the last charge, charged to the task
    /// that freed their slots.
    pub fn charge_zram_frees(&mut self, dev: u32) {
        let freed = std::mem::take(&mut self.swap[dev as usize].zram_frees_uncharged);
        self.spend(TimeKind::SwapFree, freed * self.hw.zram_free_ns);
    }

    /// Grows or shrinks the pages zram holds to what its compressed data needs. Growing may fail
    /// when memory is short; zram then runs over (its writes are not refused here).
    pub fn zram_sync_memory(&mut self, dev: u32) {
        let d = dev as usize;
        if self.swap[d].kind != SwapKind::Zram {
            return;
        }
        let need = self.swap[d].zram.compr_data_size.div_ceil(super::PAGE_SIZE) as usize;
        while self.zram_pages[d].len() > need {
            let pfn = self.zram_pages[d].pop().expect("non-empty");
            self.mem.clear_folio(pfn);
            self.free_pages(pfn, 0);
        }
        let gfp = super::memory::Gfp {
            direct_reclaim: false,
            kswapd_reclaim: true,
            retry: false,
            noretry: false,
        };
        while self.zram_pages[d].len() < need {
            let Some(pfn) = self.alloc_pages(0, 0, gfp) else {
                break;
            };
            self.mem.prep_folio(pfn, 0, 0, 0, 0);
            self.zram_pages[d].push(pfn);
        }
    }

    fn transfer_ns(bytes: u64, bandwidth_bytes_per_s: u64) -> u64 {
        bytes * 1_000_000_000 / bandwidth_bytes_per_s.max(1)
    }

    /// Writes `nr` slots from `off`; returns when the data is on the device.
    pub fn swap_device_write(&mut self, dev: u32, off: u32, nr: u32) -> u64 {
        let hw = &self.hw;
        let bytes = nr as u64 * super::PAGE_SIZE;
        let si = &mut self.swap[dev as usize];
        let now = self.clock_ns;
        let (cpu_ns, done_ns) = match si.kind {
            SwapKind::Brd => (
                SwapCpu::block_io(hw.block_io_overhead_ns + nr as u64 * hw.brd_page_write_ns),
                0,
            ),
            SwapKind::Zram => {
                // zram_write_page for each 4 KiB of the bio
                let mut compression = 0;
                for s in off..off + nr {
                    let c = si.content[s as usize];
                    si.zram_stored[s as usize] = true;
                    si.zram.pages_stored += 1;
                    compression += same_filled_scan_ns(hw, c);
                    if c <= content::SAME_FILLED {
                        si.zram.same_pages += 1;
                    } else {
                        si.zram.compr_data_size += zram_compressed_bytes(c);
                        compression += zram_compress_ns(hw.zram_compress_ns, c);
                    }
                }
                let cpu = SwapCpu {
                    block_io_ns: hw.block_io_overhead_ns + nr as u64 * hw.zram_page_write_ns,
                    compression_ns: compression,
                };
                (cpu, 0)
            }
            SwapKind::Ssd | SwapKind::File => {
                let service = Self::transfer_ns(bytes, hw.ssd_bandwidth_bytes_per_s);
                (
                    SwapCpu::block_io(hw.block_io_overhead_ns),
                    si.queue.serve(now, service) + hw.ssd_write_latency_ns,
                )
            }
            SwapKind::Hdd => {
                let seek = if si.head_pos == off {
                    0
                } else {
                    hw.hdd_seek_ns
                };
                si.head_pos = off + nr;
                let service = seek + Self::transfer_ns(bytes, hw.hdd_bandwidth_bytes_per_s);
                (
                    SwapCpu::block_io(hw.block_io_overhead_ns),
                    si.queue.serve(now, service),
                )
            }
        };
        self.charge_swap_cpu(cpu_ns);
        self.zram_sync_memory(dev);
        self.wait_for_request_slot(dev);
        done_ns.max(self.clock_ns)
    }

    /// Reads `nr` slots from `off`; returns when the data has arrived.
    pub fn swap_device_read(&mut self, dev: u32, off: u32, nr: u32) -> u64 {
        let hw = &self.hw;
        let bytes = nr as u64 * super::PAGE_SIZE;
        let si = &mut self.swap[dev as usize];
        let now = self.clock_ns;
        let (cpu_ns, done_ns) = match si.kind {
            SwapKind::Brd => (
                SwapCpu::block_io(hw.block_io_overhead_ns + nr as u64 * hw.brd_page_read_ns),
                0,
            ),
            SwapKind::Zram => {
                // zram_read_page for each 4 KiB of the bio: a same-filled slot is filled, any
                // other decompressed
                let same = (off..off + nr)
                    .filter(|&s| si.content[s as usize] <= content::SAME_FILLED)
                    .count() as u64;
                let cpu = SwapCpu {
                    block_io_ns: hw.block_io_overhead_ns + nr as u64 * hw.zram_page_read_ns,
                    compression_ns: same * hw.zram_same_page_ns
                        + (nr as u64 - same) * hw.zram_decompress_ns,
                };
                (cpu, 0)
            }
            SwapKind::Ssd | SwapKind::File => {
                let service = Self::transfer_ns(bytes, hw.ssd_bandwidth_bytes_per_s);
                (
                    SwapCpu::block_io(hw.block_io_overhead_ns),
                    si.queue.serve(now, service) + hw.ssd_read_latency_ns,
                )
            }
            SwapKind::Hdd => {
                let seek = if si.head_pos == off {
                    0
                } else {
                    hw.hdd_seek_ns
                };
                si.head_pos = off + nr;
                let service = seek + Self::transfer_ns(bytes, hw.hdd_bandwidth_bytes_per_s);
                (
                    SwapCpu::block_io(hw.block_io_overhead_ns),
                    si.queue.serve(now, service),
                )
            }
        };
        self.charge_swap_cpu(cpu_ns);
        done_ns.max(self.clock_ns)
    }

    /// The CPU time of one request, block I/O first (the bio is set up before the driver works
    /// on its pages).
    fn charge_swap_cpu(&mut self, cpu: SwapCpu) {
        self.spend(TimeKind::BlockIo, cpu.block_io_ns);
        self.spend(TimeKind::Compression, cpu.compression_ns);
    }
}

/// The CPU time of one request to a swap device, by kind: the bio's overhead, brd's copies and
/// zram's per-page slot work are block I/O; zram's compression, decompression and same-filled
/// scans and fills are compression.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SwapCpu {
    block_io_ns: u64,
    compression_ns: u64,
}

impl SwapCpu {
    fn block_io(ns: u64) -> SwapCpu {
        SwapCpu {
            block_io_ns: ns,
            compression_ns: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boot_zram() -> (Kernel, u32) {
        let toml = r#"
name = "t"
[machine]
hardware = "x86-server"
[[machine.node]]
memory = "256M"
cpus = 2
[[swap]]
name = "zram0"
kind = "zram"
size = "64M"
[[task]]
name = "t"
ops = [{ op = "mmap", region = "a", size = "2M" }]
"#;
        let (k, t) = crate::mm::boot_for_test(toml, "v6.18");
        (k, t)
    }

    /// A 16-page request to zram costs one bio and 16 pages of zram's slot work, whatever the
    /// pages hold; the content decides only the compression side.
    #[test]
    fn zram_charges_its_slot_work_per_page_and_the_bio_once() {
        let (mut k, t) = boot_zram();
        let nr = 16u32;
        for s in 0..nr {
            k.swap[0].content[s as usize] = content::SAME_FILLED;
        }
        for s in nr..2 * nr {
            k.swap[0].content[s as usize] = content::DATA_DEFAULT;
        }
        let hw = k.hw.clone();
        let time = |k: &Kernel, kind| k.tasks[t as usize].time.get(kind);
        let per_request = hw.block_io_overhead_ns;
        let (io0, comp0) = (time(&k, TimeKind::BlockIo), time(&k, TimeKind::Compression));

        k.swap_device_write(0, 0, nr);
        assert_eq!(
            time(&k, TimeKind::BlockIo) - io0,
            per_request + nr as u64 * hw.zram_page_write_ns
        );
        assert_eq!(
            time(&k, TimeKind::Compression) - comp0,
            nr as u64 * hw.zram_same_page_ns
        );

        let (io1, comp1) = (time(&k, TimeKind::BlockIo), time(&k, TimeKind::Compression));
        k.swap_device_write(0, nr, nr);
        assert_eq!(
            time(&k, TimeKind::BlockIo) - io1,
            per_request + nr as u64 * hw.zram_page_write_ns
        );
        let compress = same_filled_scan_ns(&hw, content::DATA_DEFAULT)
            + zram_compress_ns(hw.zram_compress_ns, content::DATA_DEFAULT);
        assert_eq!(
            time(&k, TimeKind::Compression) - comp1,
            nr as u64 * compress
        );

        // reading back: one bio, zram's work per page, a fill or a decompression per page
        let (io2, comp2) = (time(&k, TimeKind::BlockIo), time(&k, TimeKind::Compression));
        k.swap_device_read(0, nr / 2, nr);
        assert_eq!(
            time(&k, TimeKind::BlockIo) - io2,
            per_request + nr as u64 * hw.zram_page_read_ns
        );
        assert_eq!(
            time(&k, TimeKind::Compression) - comp2,
            (nr / 2) as u64 * (hw.zram_same_page_ns + hw.zram_decompress_ns)
        );
    }
}
