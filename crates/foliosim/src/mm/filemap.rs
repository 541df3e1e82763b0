//! Files and the page cache: the buffered read path and folio_mark_accessed (whose promotion of
//! unmapped page-cache folios, `+pagecache_promotion`, is in mm/features/pagecache_promotion.rs).
//!
//! Models mm/filemap.c (v6.10–v6.18): filemap_read in read() calls of the buffer's size
//! (filemap_get_pages with the sync readahead on a miss and the async one on a PG_readahead
//! folio, a wait for folios whose I/O is still running, folio_mark_accessed once per folio and
//! not again for the first folio of a call when the previous call ended inside it
//! (pos_same_folio), copy_folio_to_iter), filemap_add_folio onto the inactive file LRU, and
//! __filemap_remove_folio when reclaim frees a clean folio. mm/swap.c folio_mark_accessed on the
//! classic LRU (referenced, then activated, then with `+pagecache_promotion` a promotion
//! candidate). The buffered write path
//! (generic_perform_write / iomap_write_iter, v6.12+): balance_dirty_pages_ratelimited before
//! each folio, write_begin's __filemap_get_folio(FGP_WRITEBEGIN | fgf_set_order(len)) with a
//! read of the pages a new folio gets only in part, the copy from user, folio_mark_dirty
//! (mm/page_writeback.rs has the dirty limits and the flusher); fsync.
//!
//! Cost model: a read() call costs a kernel entry (`fault_entry_ns`); copying a folio to the
//! user buffer costs, per 4 KiB, `copy_page_ns` plus one load latency of the folio's node (the
//! hardware prefetcher does not cross a 4 KiB page, so each page starts with a miss to the node
//! the data sits on). The file's device is the profile's SSD: latency plus size over bandwidth
//! per readahead I/O, queued FIFO; a folio is usable when its I/O completed. A folio is locked
//! from its page-cache insertion by readahead until the bio holding it (BIO_MAX_VECS folios)
//! completes, so reclaim cannot evict the window a readahead is still filling. Writeback shares
//! that queue (`blk_submit`). A write() copies like a read, reversed.
//!
//! The mmap side (v6.10–v6.18): filemap_fault (a page-cache miss counts pgmajfault, as the
//! kernel does, and not a wait for a read already in flight; it starts do_sync_mmap_readahead:
//! two PMD folios in a VM_HUGEPAGE VMA, else read-around of ra_pages centred on the fault until
//! mmap_miss passes MMAP_LOTSAMISS; a hit on a PG_readahead folio starts
//! do_async_mmap_readahead; then a wait for the folio's I/O), filemap_map_pages for fault-around
//! (uptodate folios not under readahead, PTE runs of large folios, a PMD for an aligned
//! PMD-sized folio, mmap_miss lowered by the pages seen).
//!
//! A file can start in the page cache, charged to the root memcg and active, as another
//! cgroup's two read() passes left it before the run (filemap_warm, for a trace task's
//! `warm_files`); a later reader hits it and charges nothing, as filemap_get_folio's hit does.
//!
//! A write past the end of a file extends it (i_size_write in write_end), its new pages
//! zeroed rather than read. Left out: per-block uptodate state (a folio is
//! read and written whole), truncation, VM_RAND_READ / VM_SEQ_READ advice, the v6.16 VM_EXEC
//! read-around (exec_folio_order), shadow entries and workingset refault detection (so
//! mmap_miss counts every page seen), the per-CPU lru_add batches, PG_idle, and MGLRU.
//! File folios are told from anonymous ones by PG_swapbacked; their `mapping` holds the file id
//! where an anonymous folio holds its anon_vma. shmem files (mm/shmem.rs) share the page cache
//! but their folios are swap-backed, marked MAPPING_SHMEM; read(), write() and faults on them go
//! to mm/shmem.rs.

use super::folio::{content, pg, FolioId, NIL};
use super::memory::{Gfp, Killed};
use super::readahead::FileRaState;
use super::vmstat::Vm;
use super::{Kernel, PAGE_SIZE};

pub type FileId = u32;

/// A file and its page cache (`struct address_space`).
#[derive(Clone, Debug)]
pub struct File {
    pub name: String,
    pub size_bytes: u64,
    pub nr_pages: u32,
    /// The page cache (the xarray): per page index, the head of the folio caching it, or NIL.
    pub cache: Vec<FolioId>,
    /// Shadow entries of evicted folios, by page index (mm/workingset.rs); empty until reclaim
    /// first evicts one of the file's folios.
    pub shadows: Vec<super::workingset::Shadow>,
    /// Pages in the page cache (`mapping->nrpages`).
    pub nrpages: u64,
    /// The backing device's readahead maximum, in pages (`bdi->ra_pages`).
    pub ra_pages: u32,
    /// The filesystem supports large page-cache folios (mapping_large_folio_support).
    pub large_folios: bool,
    /// The device queue: when its last I/O completes.
    pub io_busy_until_ns: u64,
    /// I/Os in flight: (first page, end page, completion time).
    pub io_pending: Vec<(u32, u32, u64)>,
    /// Dirty pages of the file.
    pub nr_dirty: u64,
    /// When the file went from clean to dirty (`inode->dirtied_when`); None while clean.
    pub dirtied_when_ns: Option<u64>,
    /// Where range-cyclic writeback goes on (`mapping->writeback_index`).
    pub writeback_index: u32,
    /// Write requests in flight, in completion order: (completion time, folio).
    pub wb_inflight: std::collections::VecDeque<(u64, FolioId)>,
    /// The VMAs mapping the file (`i_mmap`): (mm, first vpn of the VMA), in mmap order.
    pub i_mmap: Vec<(u32, u32)>,
    /// An shmem file (tmpfs, or shared anonymous memory): mm/shmem.rs.
    pub shmem: Option<super::shmem::ShmemInode>,
}

/// The completion time of a readahead batch whose I/O is not submitted yet.
const READ_NOT_SUBMITTED: u64 = u64::MAX;
/// Folios one bio holds (BIO_MAX_VECS: one bio_vec per folio, as mpage and iomap add them).
const BIO_MAX_VECS: u32 = 256;

impl File {
    /// Are folios of pages [first, end) locked for a read, in flight or still being assembled?
    pub fn read_locked(&self, first: u32, end: u32, now_ns: u64) -> bool {
        self.io_pending
            .iter()
            .any(|&(a, b, done)| done > now_ns && a < end && first < b)
    }

    pub fn new(name: String, size_bytes: u64, read_ahead_kb: u64, large_folios: bool) -> File {
        let nr_pages = size_bytes.div_ceil(PAGE_SIZE) as u32;
        File {
            name,
            size_bytes,
            nr_pages,
            cache: vec![NIL; nr_pages as usize],
            shadows: Vec::new(),
            nrpages: 0,
            ra_pages: (read_ahead_kb / 4).min(u32::MAX as u64) as u32,
            large_folios,
            io_busy_until_ns: 0,
            io_pending: Vec::new(),
            nr_dirty: 0,
            dirtied_when_ns: None,
            writeback_index: 0,
            wb_inflight: Default::default(),
            i_mmap: Vec::new(),
            shmem: None,
        }
    }
}

/// Progress through a FileRead operation: position, end, and the current read() call.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadState {
    pub started: bool,
    pub pos: u64,
    pub end: u64,
    /// End of the current read() call; equal to `pos` between calls.
    pub call_end: u64,
    /// The position where the previous call ended (`last_pos`), -1 before the first.
    pub last_pos: i64,
    /// No folio of the current call was read yet.
    pub first_in_call: bool,
}

impl ReadState {
    /// A FileRead over [pos, end) about to make its first read() call.
    pub fn start(pos: u64, end: u64) -> ReadState {
        ReadState {
            started: true,
            pos,
            end,
            call_end: pos,
            last_pos: -1,
            first_in_call: false,
        }
    }
}

// The read and write requests of file ops are plain scenario values (scenario/types.rs).
pub use crate::scenario::types::ReadRequest;

/// Progress through a FileWrite operation.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteState {
    pub started: bool,
    pub pos: u64,
    pub end: u64,
    /// End of the current write() call; equal to `pos` between calls.
    pub call_end: u64,
    /// balance_dirty_pages must look again, with this page count, before more is dirtied
    /// (its loop goes on after a pause at the limit).
    pub bdp_pages: u64,
}

impl WriteState {
    /// A FileWrite over [pos, end) about to make its first write() call.
    pub fn start(pos: u64, end: u64) -> WriteState {
        WriteState {
            started: true,
            pos,
            end,
            call_end: pos,
            bdp_pages: 0,
        }
    }
}

pub use crate::scenario::types::WriteRequest;

/// The page cache.
impl Kernel {
    /// Creates a file (empty page cache, contents on disk). Returns its id.
    pub fn create_file(&mut self, file: File) -> FileId {
        self.files.push(file);
        (self.files.len() - 1) as FileId
    }

    /// Is this a file folio (on the file LRU)? `folio_is_file_lru`. shmem folios are not: they
    /// are swap-backed and live on the anon LRU.
    #[inline]
    pub fn folio_is_file_lru(&self, folio: FolioId) -> bool {
        !self.mem.test(folio, pg::SWAPBACKED)
    }

    /// Is this an anonymous folio (`folio_test_anon`)? Not a page-cache folio, shmem included.
    #[inline]
    pub fn folio_test_anon(&self, folio: FolioId) -> bool {
        self.mem.test(folio, pg::SWAPBACKED) && !self.mem.is_shmem(folio)
    }

    /// filemap_alloc_folio + filemap_add_folio: a new folio of `order` at `index`, placed by the
    /// current task's memory policy (as for every non-shmem file), charged to its memcg, in the
    /// page cache and on the inactive file LRU.
    pub fn filemap_alloc_folio(
        &mut self,
        file: FileId,
        index: u32,
        order: u32,
        gfp: Gfp,
    ) -> Option<FolioId> {
        self.filemap_alloc_folio_for(file, index, order, gfp, false)
    }

    /// filemap_alloc_folio for a read (`write` false) or for write_begin (__GFP_WRITE: a
    /// shadow it replaces is not taken for a refault).
    pub(super) fn filemap_alloc_folio_for(
        &mut self,
        file: FileId,
        index: u32,
        order: u32,
        gfp: Gfp,
        write: bool,
    ) -> Option<FolioId> {
        let pfn = self.alloc_pages_task_policy(gfp, order)?;
        let memcg = self.tasks[self.current as usize].memcg;
        let nr = 1u32 << order;
        self.mem.prep_folio(pfn, order, file, memcg, index);
        for i in 0..nr {
            self.mem.pages[(pfn + i) as usize].content = content::DATA_DEFAULT;
        }
        if self.mem_cgroup_charge(pfn, memcg, gfp).is_err() {
            self.mem.clear_folio(pfn);
            self.free_pages(pfn, order);
            return None;
        }
        let f = &mut self.files[file as usize];
        for i in index..index + nr {
            f.cache[i as usize] = pfn;
        }
        f.nrpages += nr as u64;
        self.workingset_refault_file(pfn, file, index, nr, write);
        self.folio_add_lru(pfn);
        Some(pfn)
    }

    /// The page cache of a file another cgroup read before the run (a scenario's `warm_files`,
    /// docs/replay.md): every page of `file` cached on `node`, charged to the root memcg, as two
    /// read() passes by a task outside the run's cgroups leave it (the live harness warms the
    /// same files that way). filemap_add_folio charged each folio to the reader's memcg
    /// (mem_cgroup_charge; the root has no limit to reclaim for), and it stays charged there
    /// when another cgroup later reads or maps it: a hit charges nothing. The second pass's
    /// folio_mark_accessed activated every folio (referenced, then active and unreferenced), so
    /// they start on the root lruvec's active file list, clean and uptodate; only global
    /// reclaim scans that lruvec. Folios: the largest order that is aligned at the index, fits
    /// before the end of the file and is at most the readahead window's (ilog2 of ra_pages),
    /// as a sequential read's readahead makes them once its window is full; order 0 without
    /// large folios. Before the run: no counters, no time. A page the node cannot give without
    /// going under its high watermark is left on disk (the kernel would have reclaimed it).
    /// `lru` is the file list they go on (the inactive one for a cache read once, as a node's
    /// resident `Inactive(file)`, mm/resident_cache.rs). Returns the pages cached.
    pub fn filemap_warm(&mut self, file: FileId, node: u32, lru: super::vmscan::Lru) -> u64 {
        const ROOT_MEMCG: u16 = 0;
        let f = &self.files[file as usize];
        if f.shmem.is_some() {
            // tmpfs pages are shmem's (mm/shmem.rs), never read from a disk
            return 0;
        }
        let nr_pages = f.nr_pages;
        let max_order = if f.large_folios && f.ra_pages > 1 {
            f.ra_pages
                .ilog2()
                .min(super::readahead::MAX_PAGECACHE_ORDER)
        } else {
            0
        };
        let zone = node as usize;
        let mut cached = 0;
        let mut index = 0;
        while index < nr_pages {
            if self.files[file as usize].cache[index as usize] != NIL {
                index += 1;
                continue;
            }
            let mut order = max_order.min(index.trailing_zeros());
            while order > 0
                && (index + (1 << order) > nr_pages
                    || (index..index + (1 << order))
                        .any(|i| self.files[file as usize].cache[i as usize] != NIL))
            {
                order -= 1;
            }
            let high = self.zones[zone].wmark_high;
            if !self.zones[zone].watermark_ok(order, high) {
                break;
            }
            let Some(pfn) = self.zones[zone].alloc(&mut self.mem, order) else {
                break;
            };
            let nr = 1u32 << order;
            self.mem.prep_folio(pfn, order, file, ROOT_MEMCG, index);
            for i in 0..nr {
                self.mem.pages[(pfn + i) as usize].content = content::DATA_DEFAULT;
            }
            self.memcgs[ROOT_MEMCG as usize].usage_pages += nr as u64;
            let f = &mut self.files[file as usize];
            for i in index..index + nr {
                f.cache[i as usize] = pfn;
            }
            f.nrpages += nr as u64;
            if lru == super::vmscan::Lru::ActiveFile {
                self.mem.set(pfn, pg::ACTIVE);
            }
            let lv = self.lruvec_index(ROOT_MEMCG, node);
            self.list_add(lv, lru, pfn, false);
            cached += nr as u64;
            index += nr;
        }
        cached
    }

    /// __filemap_remove_folio: takes a folio out of its file's page cache.
    pub fn filemap_remove_folio(&mut self, folio: FolioId) {
        self.filemap_remove_folio_shadow(folio, super::workingset::Shadow::NONE);
    }

    /// __filemap_remove_folio leaving `shadow` at the folio's indices (reclaim's eviction).
    /// folio_trylock's view of a page-cache folio: locked while a read of it is in flight.
    pub fn filemap_folio_read_locked(&self, folio: FolioId) -> bool {
        let f = &self.files[self.mem.anon_vma(folio) as usize];
        let index = self.mem.index(folio);
        !f.io_pending.is_empty()
            && f.read_locked(index, index + self.mem.nr_pages(folio), self.clock_ns)
    }

    pub fn filemap_remove_folio_shadow(
        &mut self,
        folio: FolioId,
        shadow: super::workingset::Shadow,
    ) {
        debug_assert!(!self.mem.test(folio, pg::DIRTY) && !self.mem.test(folio, pg::WRITEBACK));
        let file = self.mem.anon_vma(folio) as usize;
        let index = self.mem.index(folio);
        let nr = self.mem.nr_pages(folio);
        let f = &mut self.files[file];
        for i in index..index + nr {
            debug_assert_eq!(f.cache[i as usize], folio);
            f.cache[i as usize] = NIL;
            if shadow.is_some() {
                if f.shadows.is_empty() {
                    f.shadows = vec![super::workingset::Shadow::NONE; f.cache.len()];
                }
                f.shadows[i as usize] = shadow;
            }
        }
        f.nrpages -= nr as u64;
    }

    /// folio_migrate_mapping for a page-cache folio: the cache points at the copy.
    pub fn filemap_replace_folio(&mut self, src: FolioId, dst: FolioId) {
        let file = self.mem.anon_vma(dst) as usize;
        let index = self.mem.index(dst);
        let nr = self.mem.nr_pages(dst);
        let f = &mut self.files[file];
        for i in index..index + nr {
            debug_assert_eq!(f.cache[i as usize], src);
            f.cache[i as usize] = dst;
        }
    }

    /// The device's time to transfer `pages` pages.
    fn ssd_transfer_ns(&self, pages: u64) -> u64 {
        pages * PAGE_SIZE * 1_000_000_000 / self.hw.ssd_bandwidth_bytes_per_s
    }

    /// submit_bio to the file's device, reads and writes alike: one request of `pages` pages,
    /// served FIFO (latency, then size over bandwidth after what is queued). Returns its
    /// completion time.
    pub fn blk_submit(&mut self, file: FileId, pages: u64, latency_ns: u64) -> u64 {
        let transfer_ns = self.ssd_transfer_ns(pages);
        let now = self.clock_ns;
        self.spend(super::TimeKind::BlockIo, self.hw.block_io_overhead_ns);
        let f = &mut self.files[file as usize];
        let done = (now + latency_ns).max(f.io_busy_until_ns) + transfer_ns;
        f.io_busy_until_ns = done;
        done
    }

    /// The start of a readahead batch over [first, end): filemap_add_folio inserts each new
    /// folio locked, and the lock is held until its read completes, so reclaim (run by the
    /// batch's own memcg charges) cannot evict the window it is filling. read_pages ends it.
    pub fn read_batch_begin(&mut self, file: FileId, first: u32, end: u32) {
        let f = &mut self.files[file as usize];
        f.io_pending.push((first, end, READ_NOT_SUBMITTED));
    }

    /// read_pages: submits the read of the `pages` new pages in [first, end) to the file's
    /// device, one request, replacing the batch read_batch_begin opened. The filesystem builds
    /// a bio of at most BIO_MAX_VECS folios at a time and each bio's folios unlock when it
    /// completes, so the request's folios unlock in bio-sized steps as the device transfers
    /// them.
    pub fn read_pages(&mut self, file: FileId, first: u32, end: u32, pages: u64) {
        let now = self.clock_ns;
        let f = &mut self.files[file as usize];
        f.io_pending
            .retain(|&(_, _, d)| d > now && d != READ_NOT_SUBMITTED);
        if pages == 0 {
            return;
        }
        let done = self.blk_submit(file, pages, self.hw.ssd_read_latency_ns);
        // The whole request's transfer ends at `done`; bio i ends once the pages up to its end
        // are through.
        let start = done - self.ssd_transfer_ns(pages);
        let f = &self.files[file as usize];
        let mut bios = Vec::new();
        let (mut bio_first, mut index, mut folios, mut through) = (first, first, 0, 0u64);
        while index < end {
            let folio = f.cache[index as usize];
            let nr = if folio == NIL {
                1
            } else {
                self.mem.index(folio) + self.mem.nr_pages(folio) - index
            };
            index += nr;
            through += nr as u64;
            folios += 1;
            if folios == BIO_MAX_VECS || index >= end {
                bios.push((
                    bio_first,
                    index.min(end),
                    (start + self.ssd_transfer_ns(through.min(pages))).min(done),
                ));
                (bio_first, folios) = (index, 0);
            }
        }
        self.files[file as usize].io_pending.extend(bios);
        self.stat.count(Vm::Pgpgin, pages * PAGE_SIZE / 1024);
    }

    /// folio_wait_locked on a folio whose read is in flight: the task waits for the device.
    pub(super) fn filemap_wait_uptodate(&mut self, file: FileId, index: u32) {
        let now = self.clock_ns;
        let f = &mut self.files[file as usize];
        if f.io_pending.is_empty() {
            return;
        }
        let done = f
            .io_pending
            .iter()
            .filter(|&&(a, b, d)| d != READ_NOT_SUBMITTED && (a..b).contains(&index))
            .map(|&(_, _, d)| d)
            .max()
            .unwrap_or(0);
        f.io_pending.retain(|&(_, _, d)| d > now.max(done));
        if done > now {
            self.wait_until(super::TimeKind::IoWait, done);
        }
    }
}

/// The read path.
impl Kernel {
    /// Runs a FileRead operation of task `t` until the quantum ends. Ok(true) once complete.
    pub fn file_read_op(
        &mut self,
        t: u32,
        req: &ReadRequest,
        quantum_end_ns: u64,
    ) -> Result<bool, Killed> {
        let file = req.file;
        if self.files[file as usize].shmem.is_some() {
            return self.shmem_file_read_op(t, req, quantum_end_ns);
        }
        if !self.tasks[t as usize].file_read.started {
            let (pos, end) = self.file_op_range(file, req.offset_bytes, req.len_bytes);
            self.tasks[t as usize].file_read = ReadState::start(pos, end);
        }
        let task = &mut self.tasks[t as usize];
        if task.ra.len() <= file as usize {
            task.ra.resize(file as usize + 1, FileRaState::default());
        }
        let mut ra = task.ra[file as usize];
        let mut st = task.file_read;
        let result = loop {
            if st.pos >= st.end {
                break Ok(true);
            }
            if self.clock_ns >= quantum_end_ns {
                break Ok(false);
            }
            if st.pos == st.call_end {
                // A new read() call.
                st.call_end = (st.pos + req.buffer_bytes.max(1)).min(st.end);
                st.last_pos = ra.prev_pos;
                st.first_in_call = true;
                self.spend(super::TimeKind::FaultEntry, self.hw.fault_entry_ns);
            }
            let index = (st.pos / PAGE_SIZE) as u32;
            let last_index = ((st.call_end - 1) / PAGE_SIZE) as u32;
            let mut folio = self.files[file as usize].cache[index as usize];
            if folio == NIL {
                self.page_cache_sync_ra(file, &mut ra, index, last_index - index + 1);
                folio = self.files[file as usize].cache[index as usize];
                if folio == NIL {
                    // filemap_create_folio: one page, read alone.
                    match self.filemap_alloc_folio(file, index, 0, Gfp::USER) {
                        Some(f) => {
                            self.read_pages(file, index, index + 1, 1);
                            folio = f;
                        }
                        None => break Err(Killed),
                    }
                }
            }
            let findex = self.mem.index(folio);
            if self.mem.test(folio, pg::RECLAIM) {
                self.page_cache_async_ra(file, &mut ra, folio, findex);
            }
            self.filemap_wait_uptodate(file, findex);
            if self.files[file as usize].cache[index as usize] != folio {
                // Readahead's allocations reclaimed this folio (the kernel's reference would
                // have kept it): look it up again.
                continue;
            }
            let nr = self.mem.nr_pages(folio);
            let same_folio = st.first_in_call
                && st.last_pos >= 1
                && ((st.last_pos - 1) as u64 / PAGE_SIZE) as u32 >= findex
                && (((st.last_pos - 1) as u64 / PAGE_SIZE) as u32) < findex + nr;
            if !same_folio {
                self.folio_mark_accessed(folio);
            }
            st.first_in_call = false;
            // copy_folio_to_iter
            st.pos = self.copy_folio_iter(t, folio, st.pos, st.call_end);
            if st.pos == st.call_end {
                // The call returns: ra->prev_pos, then the task work on the way to user mode.
                ra.prev_pos = st.pos as i64;
                self.tasks[t as usize].file_read = st;
                self.task_numa_promotion_work(t);
            }
        };
        let task = &mut self.tasks[t as usize];
        task.ra[file as usize] = ra;
        task.file_read = if matches!(result, Ok(false)) {
            st
        } else {
            ReadState::default()
        };
        if result.is_err() {
            // The read fails; the task work still runs on the way out of the call.
            self.task_numa_promotion_work(t);
        }
        result
    }

    /// The byte range [pos, end) a FileRead or FileWrite of `len_bytes` at `offset_bytes`
    /// covers: files do not grow here, so a write past the end is cut at it, as a read is.
    pub(super) fn file_op_range(
        &self,
        file: FileId,
        offset_bytes: u64,
        len_bytes: u64,
    ) -> (u64, u64) {
        let size = self.files[file as usize].size_bytes;
        (
            offset_bytes.min(size),
            offset_bytes.saturating_add(len_bytes).min(size),
        )
    }

    /// The copy between a folio and the user buffer of task `t` (copy_folio_to_iter, and
    /// copy_folio_from_iter_atomic for a write), from `pos` to the folio's end or `call_end`,
    /// whichever comes first: per 4 KiB `copy_page_ns` plus one load latency of the folio's
    /// node. Returns where the copy ended.
    pub(super) fn copy_folio_iter(
        &mut self,
        t: u32,
        folio: FolioId,
        pos: u64,
        call_end: u64,
    ) -> u64 {
        let folio_end =
            (self.mem.index(folio) as u64 + self.mem.nr_pages(folio) as u64) * PAGE_SIZE;
        let to = folio_end.min(call_end);
        let bytes = to - pos;
        let node = self.pfn_node(folio);
        let per_page = self.hw.copy_page_ns + self.node_latency_ns(node);
        self.spend(super::TimeKind::Copying, bytes * per_page / PAGE_SIZE);
        self.tasks[t as usize].touches += bytes.div_ceil(PAGE_SIZE);
        to
    }

    /// copy_folio_from_iter_atomic (the read copy, reversed) and write_end's folio_mark_dirty:
    /// the pages the write covers whole take its content class. Returns where the copy ended.
    pub(super) fn copy_folio_from_user(
        &mut self,
        t: u32,
        folio: FolioId,
        pos: u64,
        call_end: u64,
        data: u8,
    ) -> u64 {
        let to = self.copy_folio_iter(t, folio, pos, call_end);
        let findex = self.mem.index(folio);
        for p in pos.div_ceil(PAGE_SIZE)..to / PAGE_SIZE {
            self.mem.pages[(folio + p as u32 - findex) as usize].content = data;
        }
        self.folio_mark_dirty(folio);
        to
    }

    /// folio_mark_accessed on the classic LRU (mm/swap.c): inactive,unreferenced ->
    /// inactive,referenced -> active,unreferenced -> active,referenced; then the hook of
    /// `+pagecache_promotion`.
    pub fn folio_mark_accessed(&mut self, folio: FolioId) {
        if !self.mem.test(folio, pg::REFERENCED) {
            self.mem.set(folio, pg::REFERENCED);
        } else if !self.mem.test(folio, pg::ACTIVE) {
            // folio_activate; a folio off the LRU is activated only in this CPU's lru_add
            // batch (mm/swap.rs), an isolated one is left alone.
            if self.mem.test(folio, pg::LRU) {
                self.lruvec_del_folio(folio);
                self.mem.set(folio, pg::ACTIVE);
                self.lruvec_add_folio(folio);
                self.stat
                    .count(Vm::Pgactivate, self.mem.nr_pages(folio) as u64);
            } else {
                self.lru_cache_activate_folio(folio);
            }
            self.mem.clear(folio, pg::REFERENCED);
            self.workingset_activation(folio);
        } else {
            self.pagecache_promotion_hook_mark_accessed(folio);
        }
    }
}

/// The buffered write path (generic_perform_write, iomap_write_iter).
impl Kernel {
    /// Runs a FileWrite operation of task `t` until the quantum ends or the task must sleep
    /// (`sleep_ns`, a dirty-throttling pause). Ok(true) once complete.
    pub fn file_write_op(
        &mut self,
        t: u32,
        req: &WriteRequest,
        quantum_end_ns: u64,
    ) -> Result<bool, Killed> {
        let file = req.file;
        if self.files[file as usize].shmem.is_some() {
            return self.shmem_file_write_op(t, req, quantum_end_ns);
        }
        let mut st = self.tasks[t as usize].file_write;
        if !st.started {
            let pos = req.offset_bytes.min(MAX_FILE_BYTES);
            let end = req
                .offset_bytes
                .saturating_add(req.len_bytes)
                .min(MAX_FILE_BYTES);
            self.file_extend_index(file, end);
            st = WriteState::start(pos, end);
        }
        let chunk = if self.files[file as usize].large_folios {
            PAGE_SIZE << super::readahead::MAX_PAGECACHE_ORDER
        } else {
            PAGE_SIZE
        };
        let result = loop {
            if st.pos >= st.end {
                break Ok(true);
            }
            if self.clock_ns >= quantum_end_ns {
                break Ok(false);
            }
            if st.pos == st.call_end {
                // A new write() call.
                st.call_end = (st.pos + req.buffer_bytes.max(1)).min(st.end);
                self.spend(super::TimeKind::FaultEntry, self.hw.fault_entry_ns);
            }
            // Each folio starts with balance_dirty_pages_ratelimited, or with balance_dirty_pages
            // itself while its loop goes on after a pause at the limit.
            let (pages, pause) = match st.bdp_pages {
                0 => {
                    let pages = self.tasks[t as usize].nr_dirtied;
                    (pages, self.balance_dirty_pages_ratelimited(t))
                }
                pages => (pages, self.balance_dirty_pages(t, pages)),
            };
            st.bdp_pages = if pause.again { pages.max(1) } else { 0 };
            if pause.pause_ns > 0 {
                self.tasks[t as usize].sleep_ns = pause.pause_ns;
                break Ok(false);
            }
            let offset = st.pos & (chunk - 1);
            let len = (chunk - offset).min(st.call_end - st.pos);
            let index = (st.pos / PAGE_SIZE) as u32;
            let folio = match self.files[file as usize].cache[index as usize] {
                NIL => match self.write_begin_new_folio(file, st.pos, len) {
                    Some(f) => f,
                    None => break Err(Killed),
                },
                f => {
                    // The folio lock waits for a read still in flight.
                    self.filemap_wait_uptodate(file, self.mem.index(f));
                    f
                }
            };
            if self.files[file as usize].cache[index as usize] != folio {
                continue;
            }
            st.pos = self.copy_folio_from_user(t, folio, st.pos, st.call_end, req.data);
            // write_end: a copy past the end of the file moves it (i_size_write).
            let f = &mut self.files[file as usize];
            f.size_bytes = f.size_bytes.max(st.pos);
        };
        self.tasks[t as usize].file_write = if matches!(result, Ok(false)) {
            st
        } else {
            WriteState::default()
        };
        result
    }

    /// Makes the page cache's index reach the page holding byte `end_bytes - 1`, for a write
    /// that may extend the file (the xarray has no fixed size; `nr_pages` is its length here).
    /// The file's size (i_size) moves only as the write's copies pass it.
    fn file_extend_index(&mut self, file: FileId, end_bytes: u64) {
        let f = &mut self.files[file as usize];
        let nr_pages = end_bytes.div_ceil(PAGE_SIZE) as u32;
        if nr_pages <= f.nr_pages {
            return;
        }
        f.nr_pages = nr_pages;
        f.cache.resize(nr_pages as usize, NIL);
        if !f.shadows.is_empty() {
            f.shadows
                .resize(nr_pages as usize, super::workingset::Shadow::NONE);
        }
    }

    /// write_begin for a folio not in the page cache: __filemap_get_folio(FGP_WRITEBEGIN |
    /// fgf_set_order(len)) creates a folio at pos's page of the largest order that fits `len`,
    /// is aligned, lies inside the file and overlaps no cached folio, smaller ones if the
    /// allocation fails. Pages the write covers only in part are read first (the block layer's
    /// partial-block read of iomap / __block_write_begin; the other pages are overwritten
    /// whole, so a full-folio write reads nothing), unless they start at or past the end of the
    /// file: those have no blocks on disk and are zeroed, not read (iomap_block_needs_zeroing's
    /// `pos >= i_size`, a new block's buffer_new in __block_write_begin).
    fn write_begin_new_folio(&mut self, file: FileId, pos: u64, len: u64) -> Option<FolioId> {
        let index = (pos / PAGE_SIZE) as u32;
        let f = &self.files[file as usize];
        let mut order = if f.large_folios && len > PAGE_SIZE {
            (len.ilog2() - PAGE_SIZE.ilog2()).min(super::readahead::MAX_PAGECACHE_ORDER)
        } else {
            0
        };
        if index & ((1 << order) - 1) != 0 {
            order = index.trailing_zeros();
        }
        let overlaps = |order: u32| {
            let end = index as usize + (1 << order);
            end > f.cache.len() || f.cache[index as usize..end].iter().any(|&c| c != NIL)
        };
        while order > 0 && overlaps(order) {
            order -= 1;
        }
        let folio = loop {
            // Orders above 0 are tried with __GFP_NORETRY.
            let gfp = match order {
                0 => Gfp::USER,
                _ => Gfp {
                    retry: false,
                    noretry: true,
                    ..Gfp::USER
                },
            };
            match self.filemap_alloc_folio_for(file, index, order, gfp, true) {
                Some(folio) => break folio,
                None if order > 0 => order -= 1,
                None => return None,
            }
        };
        let nr = 1u32 << order;
        let end = (pos + len).min((index + nr) as u64 * PAGE_SIZE);
        // Pages [index, first_full) and [last_full, index + nr) are written in part.
        let first_full = pos.div_ceil(PAGE_SIZE) as u32;
        let last_full = ((end / PAGE_SIZE) as u32).max(first_full);
        let on_disk_end = self.files[file as usize].size_bytes.div_ceil(PAGE_SIZE) as u32;
        for (a, b) in [(index, first_full), (last_full, index + nr)] {
            let b = b.min(on_disk_end);
            if a < b {
                self.read_pages(file, a, b, (b - a) as u64);
                self.filemap_wait_uptodate(file, a);
            }
        }
        Some(folio)
    }
}

/// MMAP_LOTSAMISS: past this many faults that missed the page cache (net of hits), mmap
/// read-around stops.
const MMAP_LOTSAMISS: u32 = 100;

/// The largest file a write may make: the page cache's index is a u32 page number here.
const MAX_FILE_BYTES: u64 = crate::scenario::MAX_MAPPING_BYTES;

/// The mmap side: page faults on file VMAs.
impl Kernel {
    /// filemap_fault: the page-cache folio holding the file page that `vpn` maps in VMA `vi`,
    /// read from the file first if it is not cached. Waits for its I/O.
    pub fn filemap_fault(&mut self, mm: u32, vi: usize, vpn: u32) -> Result<FolioId, Killed> {
        let v = &self.mms[mm as usize].vmas[vi];
        let vf = v.file.expect("a file VMA");
        if self.files[vf.file as usize].shmem.is_some() {
            return self.shmem_fault(mm, vi, vpn);
        }
        let (file, flags) = (vf.file, v.flags);
        let index = v.linear_page_index(vpn);
        let mut ra = vf.ra;
        let folio = loop {
            let mut folio = self.files[file as usize].cache[index as usize];
            if folio != NIL {
                self.do_async_mmap_readahead(file, &mut ra, folio, index);
            } else {
                // No folio in the page cache at all: a major fault.
                self.stat.count(Vm::Pgmajfault, 1);
                let memcg = self.mms[mm as usize].memcg as usize;
                self.memcgs[memcg].count(super::vmstat::Memcg::Pgmajfault, 1);
                self.do_sync_mmap_readahead(file, &mut ra, index, flags);
                folio = self.files[file as usize].cache[index as usize];
                if folio == NIL {
                    // __filemap_get_folio(FGP_CREAT) and filemap_read_folio: one page.
                    folio = match self.filemap_alloc_folio(file, index, 0, Gfp::USER) {
                        Some(f) => f,
                        None => break Err(Killed),
                    };
                    self.read_pages(file, index, index + 1, 1);
                }
            }
            self.filemap_wait_uptodate(file, self.mem.index(folio));
            // Readahead's allocations may have reclaimed it (a reference would have kept it).
            if self.files[file as usize].cache[index as usize] == folio {
                break Ok(folio);
            }
        };
        // Readahead's allocations may have ended in the OOM killer choosing this task: its
        // address space is gone, and the fault ends as a fatal signal's would.
        if !self.tasks[self.current as usize].is_running() {
            return Err(Killed);
        }
        if let Some(vf) = self.mms[mm as usize].vmas[vi].file.as_mut() {
            vf.ra = ra;
        }
        folio
    }

    /// do_sync_mmap_readahead: a fault missed the page cache at `index`.
    fn do_sync_mmap_readahead(
        &mut self,
        file: FileId,
        ra: &mut FileRaState,
        index: u32,
        flags: u8,
    ) {
        let ra_pages = self.files[file as usize].ra_pages;
        if flags & super::vma::VM_HUGEPAGE != 0 {
            // Used even without readahead: two PMD folios from the aligned index.
            let nr = super::vma::HPAGE_PMD_NR;
            ra.start = index & !(nr - 1);
            ra.size = 2 * nr;
            ra.async_size = nr;
            self.page_cache_ra_order(file, ra, super::readahead::MAX_PAGECACHE_ORDER);
            return;
        }
        if ra_pages == 0 {
            return;
        }
        if ra.mmap_miss < MMAP_LOTSAMISS * 10 {
            ra.mmap_miss += 1;
        }
        if ra.mmap_miss > MMAP_LOTSAMISS {
            return;
        }
        // mmap read-around: the window centred on the fault, order 0 from v6.16 (2 before).
        ra.start = index.saturating_sub(ra_pages / 2);
        ra.size = ra_pages;
        ra.async_size = ra_pages / 4;
        ra.order = 0;
        let order = self.readahead_order_step(ra.order);
        self.page_cache_ra_order(file, ra, order);
    }

    /// do_async_mmap_readahead: a fault found `folio` cached at `index`.
    fn do_async_mmap_readahead(
        &mut self,
        file: FileId,
        ra: &mut FileRaState,
        folio: FolioId,
        index: u32,
    ) {
        if self.files[file as usize].ra_pages == 0 {
            return;
        }
        ra.mmap_miss = ra.mmap_miss.saturating_sub(1);
        if self.mem.test(folio, pg::RECLAIM) {
            self.page_cache_async_ra(file, ra, folio, index);
        }
    }

    /// filemap_map_pages over file pages [start_pgoff, end_pgoff] for VMA `vi`: maps each page
    /// of an uptodate folio not under readahead whose PTE is none, or a whole aligned PMD-sized
    /// first folio with a PMD. Returns whether the page at `fault_vpn` got mapped.
    pub fn filemap_map_pages(
        &mut self,
        mm: u32,
        vi: usize,
        start_pgoff: u32,
        end_pgoff: u32,
        fault_vpn: u32,
    ) -> bool {
        let v = &self.mms[mm as usize].vmas[vi];
        let vf = v.file.expect("a file VMA");
        let (file, vstart) = (vf.file, v.start);
        let end_pgoff = end_pgoff.min(self.files[file as usize].nr_pages - 1);
        let now = self.clock_ns;
        let mut mapped_fault = false;
        let mut seen = 0u32;
        let mut first = true;
        let mut index = start_pgoff;
        while index <= end_pgoff {
            let folio = self.files[file as usize].cache[index as usize];
            if folio == NIL {
                index += 1;
                continue;
            }
            let findex = self.mem.index(folio);
            let fend = findex + self.mem.nr_pages(folio);
            // next_uptodate_folio: skip folios under I/O (locked) or marked for readahead.
            let busy = self.files[file as usize].read_locked(findex, fend, now);
            if busy || self.mem.test(folio, pg::RECLAIM) {
                index = fend;
                continue;
            }
            if first && self.do_set_pmd(mm, vi, folio, false) {
                // filemap_map_pmd: the fault's whole PMD is mapped; mmap_miss is left alone.
                return true;
            }
            first = false;
            // filemap_map_folio_range: runs of none PTEs get one set_pte_range each.
            let last = (fend - 1).min(end_pgoff);
            let mut run_start = None;
            for i in index..=last + 1 {
                let none = i <= last
                    && self.mms[mm as usize].vmas[vi].ptes[(i - vf.pgoff) as usize]
                        == super::pagetable::PTE_NONE;
                if i <= last {
                    seen += 1;
                }
                match (none, run_start) {
                    (true, None) => run_start = Some(i),
                    (false, Some(s)) => {
                        let vpn = vstart + s - vf.pgoff;
                        self.set_pte_range(mm, vi, vpn, folio + (s - findex), i - s, false);
                        mapped_fault |= (vpn..vpn + (i - s)).contains(&fault_vpn);
                        run_start = None;
                    }
                    _ => {}
                }
            }
            index = fend;
        }
        if let Some(vf) = self.mms[mm as usize].vmas[vi].file.as_mut() {
            vf.ra.mmap_miss = vf.ra.mmap_miss.saturating_sub(seen);
        }
        mapped_fault
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::mm::mempolicy::{Mempolicy, MpolMode};
    use crate::mm::vmscan::Lru;

    /// Node 0: DRAM with a CPU; node 1: CPU-less CXL. One user task is current on CPU 0.
    pub(crate) fn boot(profile: &str, tiering: bool) -> Kernel {
        let toml = r#"
name = "t"
[[machine.node]]
memory = "256M"
cpus = 1
[[machine.node]]
memory = "256M"
cpus = 0
tier = "cxl"
[[task]]
name = "t"
ops = [{ op = "sleep", time = "1ms" }]
"#;
        let (mut k, _) = crate::mm::boot_for_test(toml, profile);
        if tiering {
            k.spec.knobs.numa_balancing = 2;
            k.spec.knobs.pagecache_promotion_enabled = true;
        }
        k
    }

    pub(crate) fn new_file(k: &mut Kernel, size: u64, read_ahead_kb: u64, large: bool) -> FileId {
        k.create_file(File::new("f".into(), size, read_ahead_kb, large))
    }

    /// Reads the whole file in calls of `buffer` bytes; returns the time it took.
    /// MPOL_BIND to `node` for the current task (MPOL_DEFAULT for None).
    fn bind(k: &mut Kernel, node: Option<u32>) {
        k.do_set_mempolicy(node.map(|n| Mempolicy {
            mode: MpolMode::Bind,
            nodes: 1 << n,
            flags: 0,
        }));
    }

    /// A page-cache folio allocated under MPOL_BIND to `node`.
    fn alloc_on(k: &mut Kernel, f: FileId, index: u32, order: u32, node: u32) -> Option<FolioId> {
        bind(k, Some(node));
        let folio = k.filemap_alloc_folio(f, index, order, Gfp::USER);
        bind(k, None);
        folio
    }

    /// Reads the whole file in calls of `buffer` bytes, its page cache bound to `node` if any;
    /// returns the time it took.
    fn read_all(k: &mut Kernel, file: FileId, buffer: u64, node: Option<u32>) -> u64 {
        let t = k.current;
        let start = k.clock_ns;
        let req = ReadRequest {
            file,
            offset_bytes: 0,
            len_bytes: k.files[file as usize].size_bytes,
            buffer_bytes: buffer,
        };
        bind(k, node);
        while !k.file_read_op(t, &req, u64::MAX).unwrap() {}
        bind(k, None);
        k.clock_ns - start
    }

    /// (first index, order) of each folio of the file's page cache, in file order.
    fn folios(k: &Kernel, file: FileId) -> Vec<(u32, u32)> {
        let f = &k.files[file as usize];
        let mut out = Vec::new();
        let mut i = 0;
        while i < f.nr_pages {
            let folio = f.cache[i as usize];
            assert_ne!(folio, NIL, "page {i} not cached");
            assert_eq!(k.mem.index(folio), i);
            out.push((i, k.mem.order(folio)));
            i += k.mem.nr_pages(folio);
        }
        out
    }

    fn lru_pages(k: &Kernel, node: u32, lru: Lru) -> u64 {
        k.lruvecs[k.lruvec_index(0, node)].lists[lru as usize].nr_pages
    }

    #[test]
    fn readahead_grows_folio_order_by_two_per_window_up_to_the_window() {
        // before v6.16 the order grows from the marker folio's
        let mut k = boot("v6.12", false);
        // read_ahead_kb = 128: a 32-page window. Orders 2, then 4, then ilog2(32) = 5.
        let f = new_file(&mut k, 1 << 20, 128, true);
        read_all(&mut k, f, 1 << 20, None);
        let orders = folios(&k, f);
        let want: Vec<(u32, u32)> = (0..8)
            .map(|i| (i * 4, 2))
            .chain([(32, 4), (48, 4)])
            .chain((2..8).map(|w| (w * 32, 5)))
            .collect();
        assert_eq!(orders, want);
        assert!(
            crate::check::check(&k).is_empty(),
            "{:?}",
            crate::check::check(&k)
        );
        assert_eq!(k.stat.get(Vm::Pgpgin), 1024);
    }

    #[test]
    fn readahead_reaches_pmd_folios_with_a_large_window_and_order_0_without_large_folios() {
        let mut k = boot("v6.12", false);
        // 2 MiB window: 2, 4, 6, 8, then 9 = MAX_PAGECACHE_ORDER, never more.
        let f = new_file(&mut k, 16 << 20, 2048, true);
        read_all(&mut k, f, 1 << 20, None);
        let orders = folios(&k, f);
        let max = orders.iter().map(|&(_, o)| o).max().unwrap();
        assert_eq!(max, super::super::readahead::MAX_PAGECACHE_ORDER);
        let mut seen: Vec<u32> = orders.iter().map(|&(_, o)| o).collect();
        seen.dedup();
        assert_eq!(seen, vec![2, 4, 6, 8, 9]);
        // Every folio is aligned to its size in the file.
        assert!(orders.iter().all(|&(i, o)| i % (1 << o) == 0));
        let g = new_file(&mut k, 1 << 20, 2048, false);
        read_all(&mut k, g, 1 << 20, None);
        assert!(folios(&k, g).iter().all(|&(_, o)| o == 0));
    }

    #[test]
    fn readahead_keeps_its_order_and_aligns_the_window_from_v6_16() {
        // 6.18.44, a dd of a 16 MiB file in 4 KiB reads on ext4 with read_ahead_kb 8192
        // (tracefs mm_filemap_add_to_page_cache): this sequence of (first page, order)
        let mut k = boot("v6.18", false);
        let f = new_file(&mut k, 16 << 20, 8192, true);
        read_all(&mut k, f, 4096, None);
        let live: Vec<(u32, u32)> = [(0, 0), (1, 0), (2, 0), (3, 0)]
            .into_iter()
            .chain((4..24).step_by(4).map(|i| (i, 2)))
            .chain([(24, 3), (32, 4), (48, 4), (64, 4), (80, 4), (96, 5)])
            .chain([
                (128, 6),
                (192, 6),
                (256, 6),
                (320, 6),
                (384, 7),
                (512, 8),
                (768, 8),
            ])
            .chain((1024..4096).step_by(512).map(|i| (i, 9)))
            .collect();
        assert_eq!(folios(&k, f), live);
        // the old rule on the same read never gets past order 4: its windows start at 20, 84,
        // 340, ... and the marker folio at such a start is small
        let mut old = boot("v6.12", false);
        let g = new_file(&mut old, 16 << 20, 8192, true);
        read_all(&mut old, g, 4096, None);
        assert_eq!(folios(&old, g).iter().map(|&(_, o)| o).max(), Some(4));
    }

    #[test]
    fn mark_accessed_references_then_activates_then_stays() {
        let mut k = boot("v6.18", false);
        let f = new_file(&mut k, 64 << 10, 0, false);
        let folio = k.filemap_alloc_folio(f, 0, 0, Gfp::USER).expect("memory");
        k.lru_add_drain();
        let test = |k: &Kernel| {
            (
                k.mem.test(folio, pg::REFERENCED),
                k.mem.test(folio, pg::ACTIVE),
            )
        };
        assert_eq!(test(&k), (false, false));
        assert_eq!(lru_pages(&k, 0, Lru::InactiveFile), 1);
        k.folio_mark_accessed(folio);
        assert_eq!(test(&k), (true, false));
        assert_eq!(lru_pages(&k, 0, Lru::InactiveFile), 1);
        k.folio_mark_accessed(folio);
        assert_eq!(test(&k), (false, true));
        assert_eq!(lru_pages(&k, 0, Lru::InactiveFile), 0);
        assert_eq!(lru_pages(&k, 0, Lru::ActiveFile), 1);
        assert_eq!(k.stat.get(Vm::Pgactivate), 1);
        k.folio_mark_accessed(folio);
        assert_eq!(test(&k), (true, true));
        k.folio_mark_accessed(folio);
        assert_eq!(test(&k), (true, true));
        assert_eq!(k.stat.get(Vm::Pgactivate), 1);
        assert!(k.mem.test(folio, pg::LRU));
        assert_eq!(lru_pages(&k, 0, Lru::ActiveAnon), 0);
    }

    #[test]
    fn a_call_starting_inside_the_folio_the_last_one_ended_in_does_not_mark_it_again() {
        let mut k = boot("v6.18", false);
        let f = new_file(&mut k, 128 << 10, 0, true);
        let folio = k.filemap_alloc_folio(f, 0, 4, Gfp::USER).unwrap();
        let other = k.filemap_alloc_folio(f, 16, 4, Gfp::USER).unwrap();
        let t = k.current;
        let read = |k: &mut Kernel, offset: u64, len: u64| {
            let req = ReadRequest {
                file: f,
                offset_bytes: offset,
                len_bytes: len,
                buffer_bytes: len,
            };
            while !k.file_read_op(t, &req, u64::MAX).unwrap() {}
        };
        // Two calls inside one 64 KiB folio: the second is pos_same_folio, no second mark.
        read(&mut k, 0, 8192);
        read(&mut k, 8192, 8192);
        assert!(k.mem.test(folio, pg::REFERENCED) && !k.mem.test(folio, pg::ACTIVE));
        // Nor does a call from its start, as the last one ended inside it.
        read(&mut k, 0, 4096);
        assert!(!k.mem.test(folio, pg::ACTIVE));
        // Once a call ended in another folio, the next call's first folio is marked: activated.
        read(&mut k, 65536, 4096);
        assert!(k.mem.test(other, pg::REFERENCED));
        read(&mut k, 0, 4096);
        assert!(k.mem.test(folio, pg::ACTIVE));
    }

    /// A 16-page folio on the CXL node, marked accessed `n` times.
    fn cxl_folio(k: &mut Kernel, n: u32) -> FolioId {
        let f = new_file(k, 64 << 10, 0, true);
        let folio = alloc_on(k, f, 0, 4, 1).expect("memory");
        assert_eq!(k.pfn_node(folio), 1);
        for _ in 0..n {
            k.folio_mark_accessed(folio);
        }
        folio
    }

    #[test]
    fn the_fourth_access_makes_a_lower_tier_folio_a_candidate() {
        let mut k = boot("v6.18+pagecache_promotion", true);
        let folio = cxl_folio(&mut k, 3);
        let t = k.current as usize;
        assert!(k.tasks[t].promo_list.is_empty());
        assert_eq!(k.stat.get(Vm::NumaHintPageCache), 0);
        k.folio_mark_accessed(folio);
        assert_eq!(k.tasks[t].promo_list, vec![folio]);
        assert_eq!(k.tasks[t].promo_count, 16);
        assert!(!k.mem.test(folio, pg::LRU), "isolated from the LRU");
        assert_eq!(k.stat.get(Vm::NumaHintPageCache), 1);
        assert_eq!(k.stat.get(Vm::NumaHintPageCacheLocal), 0);
        // An isolated folio is not a candidate twice.
        k.folio_mark_accessed(folio);
        assert_eq!(k.tasks[t].promo_list.len(), 1);
        // The task work on return to user mode promotes it; the page cache follows.
        k.task_numa_promotion_work(t as u32);
        let new = k.files[0].cache[0];
        assert_ne!(new, folio);
        assert_eq!(k.pfn_node(new), 0);
        assert_eq!(k.mem.order(new), 4);
        assert!(k.mem.test(new, pg::ACTIVE) && k.mem.test(new, pg::LRU));
        assert_eq!(lru_pages(&k, 0, Lru::ActiveFile), 16);
        assert_eq!(lru_pages(&k, 1, Lru::ActiveFile), 0);
        assert_eq!(k.stat.get(Vm::PgpromoteSuccess), 16);
        assert_eq!(k.stat.get(Vm::NumaPagesMigrated), 16);
        assert_eq!(k.tasks[t].promo_count, 0);
        assert!(k.tasks[t].promo_list.is_empty());
        assert!(
            crate::check::check(&k).is_empty(),
            "{:?}",
            crate::check::check(&k)
        );
    }

    #[test]
    fn no_candidate_without_the_feature_the_knob_tiering_or_a_lower_tier() {
        for (profile, tiering, knob) in [
            ("v6.18", true, true),
            ("v6.18+pagecache_promotion", false, false),
            ("v6.18+pagecache_promotion", true, false),
        ] {
            let mut k = boot(profile, tiering);
            k.spec.knobs.pagecache_promotion_enabled = knob;
            cxl_folio(&mut k, 6);
            assert!(
                k.tasks[k.current as usize].promo_list.is_empty(),
                "{profile} {tiering} {knob}"
            );
            assert_eq!(k.stat.get(Vm::NumaHintPageCache), 0);
        }
        // Numa balancing in mode 1 only (no tiering bit): no candidate.
        let mut k = boot("v6.18+pagecache_promotion", true);
        k.spec.knobs.numa_balancing = 1;
        cxl_folio(&mut k, 6);
        assert!(k.tasks[k.current as usize].promo_list.is_empty());
        // A top-tier folio is left before numa_migrate_check counts anything.
        let mut k = boot("v6.18+pagecache_promotion", true);
        let f = new_file(&mut k, 64 << 10, 0, true);
        let folio = alloc_on(&mut k, f, 0, 0, 0).unwrap();
        for _ in 0..6 {
            k.folio_mark_accessed(folio);
        }
        assert!(k.tasks[k.current as usize].promo_list.is_empty());
        assert_eq!(k.stat.get(Vm::NumaHintPageCache), 0);
    }

    #[test]
    fn the_per_task_cap_stops_candidates_unless_removed_and_dirty_folios_stay() {
        let mut k = boot("v6.18+pagecache_promotion", true);
        let t = k.current as usize;
        k.tasks[t].promo_count = k.spec.knobs.promote_rate_limit_mbps;
        cxl_folio(&mut k, 4);
        assert!(k.tasks[t].promo_list.is_empty());
        assert_eq!(k.stat.get(Vm::NumaHintPageCache), 0);
        // One page under the cap: the folio joins (the list may pass the cap by one folio).
        k.tasks[t].promo_count = k.spec.knobs.promote_rate_limit_mbps - 1;
        let f = new_file(&mut k, 64 << 10, 0, true);
        let folio = alloc_on(&mut k, f, 0, 4, 1).unwrap();
        for _ in 0..4 {
            k.folio_mark_accessed(folio);
        }
        assert_eq!(k.tasks[t].promo_list.len(), 1);
        // Without the cap, a task past it still adds candidates.
        let mut k = boot("v6.18+pagecache_promotion", true);
        k.spec.knobs.pagecache_promotion_task_cap = false;
        k.tasks[t].promo_count = 1 << 40;
        cxl_folio(&mut k, 4);
        assert_eq!(k.tasks[t].promo_list.len(), 1);
        // A dirty file folio is refused by migrate_misplaced_folio_prepare.
        let mut k = boot("v6.18+pagecache_promotion", true);
        let folio = cxl_folio(&mut k, 3);
        k.mem.set(folio, pg::DIRTY);
        k.folio_mark_accessed(folio);
        assert!(k.tasks[t].promo_list.is_empty());
        assert!(k.mem.test(folio, pg::LRU));
    }

    #[test]
    fn a_full_top_tier_refuses_the_candidate_and_wakes_its_kswapd() {
        let mut k = boot("v6.18+pagecache_promotion", true);
        let folio = cxl_folio(&mut k, 3);
        // Take node 0's free memory down to its min watermark.
        while k.alloc_pages_thisnode(0, 0, false).is_some() {}
        let kswapd = k.nodes[0].kswapd as usize;
        assert_eq!(k.tasks[kswapd].state, crate::mm::task::TaskState::Blocked);
        k.folio_mark_accessed(folio);
        assert!(k.tasks[k.current as usize].promo_list.is_empty());
        assert!(k.mem.test(folio, pg::LRU), "not isolated");
        assert_eq!(k.stat.get(Vm::NumaHintPageCache), 1);
        assert_eq!(k.tasks[kswapd].state, crate::mm::task::TaskState::Runnable);
    }

    #[test]
    fn read_copies_cost_more_from_cxl_and_cold_reads_wait_for_the_disk() {
        let mut k = boot("v6.18", false);
        let d = new_file(&mut k, 8 << 20, 128, true);
        let c = new_file(&mut k, 8 << 20, 128, true);
        let cold = read_all(&mut k, d, 1 << 20, Some(0));
        read_all(&mut k, c, 1 << 20, Some(1));
        assert!(folios(&k, c)
            .iter()
            .all(|&(i, _)| k.pfn_node(k.files[1].cache[i as usize]) == 1));
        let pgpgin = k.stat.get(Vm::Pgpgin);
        // The second reads activate every folio (LRU work); the third ones only copy.
        read_all(&mut k, d, 1 << 20, None);
        read_all(&mut k, c, 1 << 20, None);
        let dram = read_all(&mut k, d, 1 << 20, None);
        let cxl = read_all(&mut k, c, 1 << 20, None);
        assert_eq!(k.stat.get(Vm::Pgpgin), pgpgin, "cached reads do no I/O");
        // Per page: copy_page_ns plus one load latency of the node.
        let pages = 2048;
        let entry = 8 * k.hw.fault_entry_ns;
        assert_eq!(
            dram,
            pages * (k.hw.copy_page_ns + k.hw.dram_read_latency_ns) + entry
        );
        assert_eq!(
            cxl,
            pages * (k.hw.copy_page_ns + k.hw.cxl_read_latency_ns) + entry
        );
        assert!(cold > dram + k.hw.ssd_read_latency_ns);
    }

    /// write() calls of `buffer` bytes over [offset, offset + len) of the file, as the current
    /// task; no sleeping here (these tests stay below the dirty limits).
    pub(crate) fn write(k: &mut Kernel, file: FileId, offset: u64, len: u64, buffer: u64) {
        let t = k.current;
        let req = WriteRequest {
            file,
            offset_bytes: offset,
            len_bytes: len,
            buffer_bytes: buffer,
            data: content::DATA_DEFAULT,
        };
        while !k.file_write_op(t, &req, u64::MAX).unwrap() {
            assert_eq!(k.tasks[t as usize].sleep_ns, 0, "throttled");
        }
    }

    /// (first index, order) of each cached folio, and whether it is dirty, in file order.
    fn cached(k: &Kernel, file: FileId) -> Vec<(u32, u32, bool)> {
        let f = &k.files[file as usize];
        let mut out = Vec::new();
        for (i, &folio) in f.cache.iter().enumerate() {
            if folio != NIL && k.mem.index(folio) as usize == i {
                out.push((i as u32, k.mem.order(folio), k.mem.test(folio, pg::DIRTY)));
            }
        }
        out
    }

    #[test]
    fn a_write_dirties_exactly_the_written_folios_in_folios_sized_to_the_write() {
        let mut k = boot("v6.18", false);
        let f = new_file(&mut k, 1 << 20, 0, true);
        // 256 KiB at 64 KiB: fgf_set_order(len) capped by the index's alignment gives
        // 64 KiB at page 16, 128 KiB at page 32 and the last 64 KiB at page 64.
        write(&mut k, f, 64 << 10, 256 << 10, 256 << 10);
        assert_eq!(
            cached(&k, f),
            vec![(16, 4, true), (32, 5, true), (64, 4, true)]
        );
        assert_eq!(k.stat.get(Vm::NrDirty), 64);
        assert_eq!(k.stat.get(Vm::NrDirtied), 64);
        assert_eq!(k.files[0].nr_dirty, 64);
        assert_eq!(
            k.stat.get(Vm::Pgpgin),
            0,
            "whole pages overwritten: nothing read"
        );
        // A write into a clean cached folio dirties that folio, whole, and reads nothing.
        let g = new_file(&mut k, 1 << 20, 0, true);
        let clean = k.filemap_alloc_folio(g, 0, 4, Gfp::USER).unwrap();
        let other = k.filemap_alloc_folio(g, 16, 4, Gfp::USER).unwrap();
        write(&mut k, g, 4096 + 100, 10, 4096);
        assert!(k.mem.test(clean, pg::DIRTY) && !k.mem.test(other, pg::DIRTY));
        assert_eq!(k.stat.get(Vm::NrDirty), 80);
        assert_eq!(k.stat.get(Vm::Pgpgin), 0);
        // Writing it again dirties nothing more.
        write(&mut k, g, 0, 8192, 8192);
        assert_eq!(k.stat.get(Vm::NrDirtied), 80);
        assert!(
            crate::check::check(&k).is_empty(),
            "{:?}",
            crate::check::check(&k)
        );
    }

    #[test]
    fn a_partial_write_of_an_uncached_folio_reads_it_first_and_a_full_overwrite_does_not() {
        let mut k = boot("v6.18", false);
        let f = new_file(&mut k, 1 << 20, 0, false);
        let start = k.clock_ns;
        write(&mut k, f, 100, 100, 4096);
        assert_eq!(k.stat.get(Vm::Pgpgin), 4, "one page read (KiB)");
        assert!(
            k.clock_ns - start > k.hw.ssd_read_latency_ns,
            "the write waited"
        );
        write(&mut k, f, 8192, 4096, 4096);
        assert_eq!(
            k.stat.get(Vm::Pgpgin),
            4,
            "a whole page overwritten is not read"
        );
        // Unaligned across two pages: both ends are read.
        write(&mut k, f, 5 * 4096 + 1, 4096, 4096);
        assert_eq!(k.stat.get(Vm::Pgpgin), 12);
        assert_eq!(
            cached(&k, f),
            vec![(0, 0, true), (2, 0, true), (5, 0, true), (6, 0, true)]
        );
        // With large folios, a 64 KiB write starting 1 KiB into its first page reads only the
        // two pages it covers in part.
        let g = new_file(&mut k, 1 << 20, 0, true);
        write(&mut k, g, 1024, 64 << 10, 64 << 10);
        assert_eq!(k.stat.get(Vm::Pgpgin), 12 + 8);
    }

    #[test]
    fn reclaim_frees_clean_file_folios_and_empties_their_page_cache_entries() {
        let mut k = boot("v6.18", false);
        let f = new_file(&mut k, 32 << 20, 128, true);
        read_all(&mut k, f, 1 << 20, Some(0));
        let cached = k.files[0].nrpages;
        assert_eq!(cached, 8192);
        let reclaimed = k.try_to_free_pages(0, 0b11);
        assert!(reclaimed > 0);
        assert_eq!(k.stat.get(Vm::PgstealFile), reclaimed);
        assert_eq!(k.stat.get(Vm::PgstealAnon), 0);
        assert_eq!(k.files[0].nrpages, cached - reclaimed);
        // Reclaim takes the oldest: the first pages read are gone.
        assert_eq!(k.files[0].cache[0], NIL);
        assert!(
            crate::check::check(&k).is_empty(),
            "{:?}",
            crate::check::check(&k)
        );
    }

    #[test]
    fn reclaim_keeps_folios_locked_for_a_read_being_assembled_or_in_flight() {
        let mut k = boot("v6.18", false);
        let f = new_file(&mut k, 1 << 20, 128, false);
        // A readahead batch being assembled: its folios are in the page cache and on the LRU,
        // locked, and its read is not submitted yet.
        k.read_batch_begin(f, 0, 32);
        for i in 0..32 {
            k.filemap_alloc_folio(f, i, 0, Gfp::USER).unwrap();
        }
        k.memcg_stats_flush();
        assert_eq!(k.try_to_free_pages(0, 0b11), 0);
        assert_eq!(
            k.files[f as usize].nrpages, 32,
            "reclaim skipped every folio"
        );
        assert!(k.stat.get(Vm::PgscanFile) > 0);
        // Submitted: the folios of each bio stay locked until that bio completes.
        k.read_pages(f, 0, 32, 32);
        assert_eq!(k.try_to_free_pages(0, 0b11), 0);
        let done = k.files[f as usize]
            .io_pending
            .iter()
            .map(|p| p.2)
            .max()
            .unwrap();
        assert!(done > k.clock_ns && done != READ_NOT_SUBMITTED);
        // Read: unlocked, and reclaim takes them.
        k.clock_ns = done;
        let mut reclaimed = 0;
        for _ in 0..4 {
            reclaimed += k.try_to_free_pages(0, 0b11);
        }
        assert_eq!(reclaimed, 32);
        assert_eq!(k.files[f as usize].nrpages, 0);
    }

    #[test]
    fn a_read_unlocks_its_folios_bio_by_bio() {
        let mut k = boot("v6.18", false);
        let f = new_file(&mut k, 4 << 20, 4096, false);
        k.read_batch_begin(f, 0, 600);
        for i in 0..600 {
            k.filemap_alloc_folio(f, i, 0, Gfp::USER).unwrap();
        }
        k.read_pages(f, 0, 600, 600);
        // 600 order-0 folios: bios of 256, 256 and 88 folios, completing in that order as the
        // device transfers them; the last at the request's completion.
        let pending = k.files[f as usize].io_pending.clone();
        let ranges: Vec<_> = pending.iter().map(|p| (p.0, p.1)).collect();
        assert_eq!(ranges, vec![(0, 256), (256, 512), (512, 600)]);
        assert!(pending[0].2 < pending[1].2 && pending[1].2 < pending[2].2);
        assert_eq!(pending[2].2, k.files[f as usize].io_busy_until_ns);
        let fl = k.files[f as usize].cache[300];
        k.clock_ns = pending[0].2;
        assert!(!k.filemap_folio_read_locked(k.files[f as usize].cache[0]));
        assert!(k.filemap_folio_read_locked(fl));
    }

    #[test]
    fn a_warm_file_is_cached_active_in_the_root_memcg_without_counters_or_time_and_global_reclaim_can_take_it(
    ) {
        let mut k = boot("v6.18", false);
        // 100 pages, a 128 KiB readahead window: folios of up to 32 pages, aligned, fitting
        let f = new_file(&mut k, 100 * 4096 - 100, 128, true);
        let (clock, free) = (k.clock_ns, k.zones[0].nr_free_pages());
        assert_eq!(k.filemap_warm(f, 0, Lru::ActiveFile), 100);
        assert_eq!(
            folios(&k, f),
            vec![(0, 5), (32, 5), (64, 5), (96, 2)],
            "the largest aligned order that fits, at most the window's"
        );
        assert_eq!(k.files[f as usize].nrpages, 100);
        assert_eq!(k.zones[0].nr_free_pages(), free - 100);
        assert_eq!(k.memcgs[0].usage_pages, 100);
        assert_eq!(lru_pages(&k, 0, Lru::ActiveFile), 100);
        assert_eq!(lru_pages(&k, 0, Lru::InactiveFile), 0);
        assert_eq!(k.clock_ns, clock, "the state before the run: no time");
        assert_eq!(k.stat.get(Vm::Pgpgin) + k.stat.get(Vm::Pgalloc), 0);
        // a read hits every page: nothing read from disk, nothing more allocated
        read_all(&mut k, f, 1 << 20, None);
        assert_eq!(k.stat.get(Vm::Pgpgin), 0);
        assert_eq!(k.memcgs[0].usage_pages, 100);
        // warming again finds it cached; without large folios, order-0 pages
        assert_eq!(k.filemap_warm(f, 0, Lru::ActiveFile), 0);
        let g = new_file(&mut k, 3 * 4096, 128, false);
        assert_eq!(k.filemap_warm(g, 0, Lru::ActiveFile), 3);
        assert_eq!(folios(&k, g), vec![(0, 0), (1, 0), (2, 0)]);
        assert!(
            crate::check::check(&k).is_empty(),
            "{:?}",
            crate::check::check(&k)
        );
        // global reclaim scans the root's lists (once the statistics it reads, flushed, show
        // them): it deactivates, then frees them
        k.memcg_stats_flush();
        let mut reclaimed = 0;
        for _ in 0..8 {
            reclaimed += k.try_to_free_pages(0, 0b11);
        }
        assert!(reclaimed > 0 && k.files[f as usize].nrpages < 100);
    }
}
