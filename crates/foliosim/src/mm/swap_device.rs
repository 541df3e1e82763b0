//! Swap device models: brd and zram (synchronous, CPU time of the caller), SSD and HDD (a FIFO
//! device queue with latency and bandwidth; the caller only submits writes, and waits for reads).
//!
//! A rotational disk seeks only when a request does not start where the last one ended; a
//! submitter waits when its device already has BLKDEV_NR_REQUESTS writes queued.
//! Models the costs of drivers/block/brd.c, drivers/block/zram (same-filled pages stored without
//! compression; compressed size by content class), and an NVMe / rotational disk as a queue.
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
                hw.block_io_overhead_ns + nr as u64 * hw.brd_page_write_ns,
                0,
            ),
            SwapKind::Zram => {
                let mut cpu = hw.block_io_overhead_ns;
                for s in off..off + nr {
                    let c = si.content[s as usize];
                    si.zram_stored[s as usize] = true;
                    si.zram.pages_stored += 1;
                    cpu += same_filled_scan_ns(hw, c);
                    if c <= content::SAME_FILLED {
                        si.zram.same_pages += 1;
                    } else {
                        si.zram.compr_data_size += zram_compressed_bytes(c);
                        cpu += zram_compress_ns(hw.zram_compress_ns, c);
                    }
                }
                (cpu, 0)
            }
            SwapKind::Ssd | SwapKind::File => {
                let service = Self::transfer_ns(bytes, hw.ssd_bandwidth_bytes_per_s);
                (
                    hw.block_io_overhead_ns,
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
                (hw.block_io_overhead_ns, si.queue.serve(now, service))
            }
        };
        self.charge_swap_cpu(dev, cpu_ns);
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
            SwapKind::Brd => (hw.block_io_overhead_ns + nr as u64 * hw.brd_page_read_ns, 0),
            SwapKind::Zram => {
                let same = (off..off + nr)
                    .filter(|&s| si.content[s as usize] <= content::SAME_FILLED)
                    .count() as u64;
                (
                    hw.block_io_overhead_ns
                        + same * hw.zram_same_page_ns
                        + (nr as u64 - same) * hw.zram_decompress_ns,
                    0,
                )
            }
            SwapKind::Ssd | SwapKind::File => {
                let service = Self::transfer_ns(bytes, hw.ssd_bandwidth_bytes_per_s);
                (
                    hw.block_io_overhead_ns,
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
                (hw.block_io_overhead_ns, si.queue.serve(now, service))
            }
        };
        self.charge_swap_cpu(dev, cpu_ns);
        done_ns.max(self.clock_ns)
    }

    /// The CPU time of one request to device `dev`: the bio's overhead (and brd's copies) is
    /// block I/O; on zram, the rest is compression.
    fn charge_swap_cpu(&mut self, dev: u32, cpu_ns: u64) {
        let rest = cpu_ns - self.hw.block_io_overhead_ns;
        let rest_kind = match self.swap[dev as usize].kind {
            SwapKind::Zram => TimeKind::Compression,
            _ => TimeKind::BlockIo,
        };
        self.spend(TimeKind::BlockIo, self.hw.block_io_overhead_ns);
        self.spend(rest_kind, rest);
    }
}
