//! shmem: tmpfs files and shared anonymous memory (MAP_SHARED | MAP_ANONYMOUS).
//!
//! Models mm/shmem.c (v6.9–v6.18). An shmem file is a `File` whose folios are swap-backed: they
//! live on the anon LRU, reclaim writes them to swap (shmem_writeout: the folio leaves the page
//! cache, its swap entry takes its place in the mapping, and a later lookup swaps it back in),
//! and a never-written (clean) one is simply dropped. shmem_get_folio finds or allocates the
//! folio at an index: for a fault (shmem_fault, mapped by finish_fault, whole where the kernel
//! maps large shmem folios whole), for read() (a hole reads the zero page, nothing allocated),
//! and for write() (shmem_write_begin, with the write's end as the size hint). Large folios
//! come from shmem_allowable_huge_orders: a tmpfs mount's `huge=` option (PMD-sized folios, and
//! from v6.14 any size up to the write's length), the top-level `shmem_enabled` knob for shared
//! anonymous memory (and deny/force over every mount), and from v6.11 the per-size
//! `hugepages-<size>kB/shmem_enabled` knobs for shared anonymous memory; each order is tried
//! from the highest down with its shmem_alloc / shmem_fallback / shmem_fallback_charge counts.
//! Swap-out of a large folio is whole from v6.12 with CONFIG_THP_SWAP (split before, and when
//! no swap space of its size is left); swap-in is order 0 through the swap cache, and from
//! v6.14 (v6.18 here) the swapped entry's order from a synchronous device when zswap was never
//! enabled (shmem_swap_alloc_folio). Shared anonymous memory is freed with its last mapping.
//!
//! Left out: tmpfs size= and nr_inodes= limits (shmem_inode_acct_blocks), fallocate, truncation
//! and hole punching of tmpfs files, the huge-page shrinker beyond i_size (files do not grow
//! here), shared memory policies (the task's policy places folios), swap readahead of shmem
//! (shmem_swapin_cluster reads one page), MADV_PAGEOUT/MADV_COLD of shmem folios, SysV SHM and
//! memfd, the 8 KiB size (order 1), and the per-inode swaplist that swapoff walks.

use super::filemap::{FileId, ReadRequest, WriteRequest};
use super::folio::{content, pg, FolioId, MAPPING_SHMEM, NIL};
use super::memory::{highest_order, Gfp, Killed};
use super::vma::{HPAGE_PMD_NR, VM_HUGEPAGE, VM_NOHUGEPAGE, VM_SHARED, VM_WRITE};
use super::vmstat::{Memcg, Mthp, Vm};
use super::{Kernel, TimeKind, PAGE_SIZE};
use crate::scenario::knobs::{MthpShmem, ShmemHuge, PMD_ORDER, SHMEM_ORDERS};

/// No swap entry at this index (`File::shmem` swap entries).
const NO_SWAP: u32 = u32::MAX;

/// The shmem side of an inode (`struct shmem_inode_info`, with the mount's `huge=`).
#[derive(Clone, Debug)]
pub struct ShmemInode {
    /// The mount's huge= option; for shared anonymous memory the internal mount's, which
    /// follows the top-level shmem_enabled knob (read at each allocation).
    pub huge: ShmemHuge,
    /// Backs a shared anonymous mapping (vma_is_anon_shmem).
    pub anon: bool,
    /// Swap entries left in the mapping by swap-out, per page index (packed as the swap cache
    /// packs a folio's); empty until the first swap-out.
    pub swap: Vec<u32>,
    /// Per page index, the order of the swapped entry covering it (a large folio swapped out
    /// whole leaves one multi-index entry).
    pub swap_order: Vec<u8>,
    /// A folio was ever allocated for it, or it was mapped: shmem is in play in the run.
    pub used: bool,
}

impl ShmemInode {
    /// The swap entries (device, offset) the mapping holds.
    pub fn swap_entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.swap
            .iter()
            .filter(|&&e| e != NO_SWAP)
            .map(|&e| super::swap_state::unpack_swap_entry(e))
    }
}

/// What shmem_get_folio is asked for (`enum sgp_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sgp {
    /// read(): a hole stays a hole.
    Read,
    /// A fault: a hole gets a folio.
    Cache,
    /// write_begin: a hole gets a folio, sized by the write's end.
    Write,
}

/// Where an allocation for a fault lands: the VMA and the faulting page.
#[derive(Clone, Copy, Debug)]
pub struct FaultAt {
    pub mm: u32,
    pub vi: usize,
    pub vpn: u32,
}

impl super::filemap::File {
    /// An shmem file of `size_bytes`, empty (a hole): a tmpfs file with its mount's `huge=`, or
    /// (`anon`) the object behind a shared anonymous mapping.
    pub fn shmem(name: String, size_bytes: u64, huge: ShmemHuge, anon: bool) -> Self {
        let mut f = super::filemap::File::new(name, size_bytes, 0, true);
        f.shmem = Some(ShmemInode {
            huge,
            anon,
            swap: Vec::new(),
            swap_order: Vec::new(),
            used: false,
        });
        f
    }
}

/// Large-folio policy.
impl Kernel {
    /// shmem_allowable_huge_orders: the orders above 0 a new folio of `file` at `index` may
    /// have, as a bitmask. `vma_flags` for a fault (None for read/write), `write_end_bytes`
    /// the write's end (0 when not a write).
    pub fn shmem_allowable_huge_orders(
        &self,
        file: FileId,
        vma_flags: Option<u8>,
        index: u32,
        write_end_bytes: u64,
    ) -> u32 {
        let sh = self.files[file as usize]
            .shmem
            .as_ref()
            .expect("an shmem file");
        if vma_flags.is_some_and(|v| v & VM_NOHUGEPAGE != 0) {
            return 0;
        }
        let global = self.shmem_huge_global_enabled(file, index, write_end_bytes, vma_flags);
        // tmpfs, a read() or write(), or a kernel without per-size shmem knobs: the mount decides
        if !sh.anon || vma_flags.is_none() || !self.generation().has_shmem_mthp_knobs() {
            return global;
        }
        // Shared anonymous memory (v6.11+): the per-size knobs, PMD's inherit by default.
        match self.spec.knobs.shmem_enabled {
            ShmemHuge::Deny => return 0,
            ShmemHuge::Force => return self.mthp_shmem_orders(MthpShmem::Inherit),
            _ => {}
        }
        let madvised = vma_flags.is_some_and(|v| v & VM_HUGEPAGE != 0);
        let within = self.mthp_shmem_orders(MthpShmem::WithinSize);
        let mut mask = self.mthp_shmem_orders(MthpShmem::Always)
            | self.shmem_orders_within_size(file, within, index, 0);
        if madvised {
            mask |= self.mthp_shmem_orders(MthpShmem::Advise);
        }
        if global != 0 {
            mask |= self.mthp_shmem_orders(MthpShmem::Inherit);
        }
        mask
    }

    /// The orders whose per-size shmem_enabled knob holds `value`.
    fn mthp_shmem_orders(&self, value: MthpShmem) -> u32 {
        SHMEM_ORDERS
            .filter(|&o| self.spec.knobs.mthp_shmem_enabled[o] == value)
            .fold(0, |m, o| m | 1 << o)
    }

    /// shmem_huge_global_enabled: the mount's policy (for shared anonymous memory, the
    /// top-level knob's, which sets the internal mount's) and the deny/force overrides.
    fn shmem_huge_global_enabled(
        &self,
        file: FileId,
        index: u32,
        write_end_bytes: u64,
        vma_flags: Option<u8>,
    ) -> u32 {
        let sh = self.files[file as usize]
            .shmem
            .as_ref()
            .expect("an shmem file");
        let pmd = 1u32 << PMD_ORDER;
        let knob = self.spec.knobs.shmem_enabled;
        match knob {
            ShmemHuge::Deny => return 0,
            ShmemHuge::Force => return pmd,
            _ => {}
        }
        let huge = if sh.anon { knob } else { sh.huge };
        // From v6.14 a tmpfs write asks for folios as large as the write (mmap faults still
        // get PMD-sized ones, having no size hint).
        let sized = self.generation().tmpfs_sizes_folios_by_write() && vma_flags.is_none();
        let size_orders = |end: u64| {
            if sized {
                shmem_mapping_size_orders(index, end)
            } else {
                pmd
            }
        };
        let advised = vma_flags.is_some_and(|v| v & VM_HUGEPAGE != 0);
        match huge {
            ShmemHuge::Always => size_orders(write_end_bytes),
            ShmemHuge::WithinSize => {
                let within = self.shmem_orders_within_size(
                    file,
                    size_orders(write_end_bytes),
                    index,
                    write_end_bytes,
                );
                if within != 0 {
                    within
                } else if advised {
                    pmd
                } else {
                    0
                }
            }
            ShmemHuge::Advise if advised => pmd,
            _ => 0,
        }
    }

    /// shmem_get_orders_within_size: the orders of `orders` from the highest down, from the
    /// first whose aligned range ends inside the file (its size, or the write's end).
    fn shmem_orders_within_size(
        &self,
        file: FileId,
        orders: u32,
        index: u32,
        write_end_bytes: u64,
    ) -> u32 {
        let size_pages = self.files[file as usize]
            .size_bytes
            .max(write_end_bytes)
            .div_ceil(PAGE_SIZE);
        let mut rest = orders;
        while rest != 0 {
            let order = highest_order(rest);
            let aligned_end = (index as u64 + 1).next_multiple_of(1 << order);
            if size_pages >= aligned_end {
                return rest;
            }
            rest &= !(1 << order);
        }
        0
    }
}

/// shmem_mapping_size_orders: every order up to the one the write's length from `index` asks
/// for (filemap_get_order), lowered to the index's alignment.
fn shmem_mapping_size_orders(index: u32, write_end_bytes: u64) -> u32 {
    let start = index as u64 * PAGE_SIZE;
    if write_end_bytes <= start {
        return 0;
    }
    let size = write_end_bytes - start;
    let mut order = if size >= 2 * PAGE_SIZE {
        (size.ilog2() - PAGE_SIZE.ilog2()).min(PMD_ORDER as u32)
    } else {
        0
    };
    if index & ((1 << order) - 1) != 0 {
        order = index.trailing_zeros();
    }
    if order == 0 {
        0
    } else {
        (1 << (order + 1)) - 1
    }
}

/// Finding, allocating and swapping in folios.
impl Kernel {
    /// shmem_get_folio_gfp: the folio at `index` of shmem file `file`, swapped in if it was
    /// swapped out, allocated for a hole unless `sgp` is Read (then None).
    pub fn shmem_get_folio(
        &mut self,
        file: FileId,
        index: u32,
        sgp: Sgp,
        fault: Option<FaultAt>,
        write_end_bytes: u64,
    ) -> Result<Option<FolioId>, Killed> {
        let folio = self.files[file as usize].cache[index as usize];
        if folio != NIL {
            if sgp == Sgp::Write {
                self.folio_mark_accessed(folio);
            }
            return Ok(Some(folio));
        }
        if self.shmem_swap_entry(file, index).is_some() {
            return self.shmem_swapin_folio(file, index, sgp, fault).map(Some);
        }
        if sgp == Sgp::Read {
            return Ok(None);
        }
        self.shmem_alloc_and_add_folio(file, index, fault, write_end_bytes)
            .map(Some)
    }

    /// The memcg a new folio is charged to: the faulting mm's, or for read() and write() the
    /// calling task's.
    fn shmem_charge_memcg(&self, fault: Option<FaultAt>) -> u16 {
        match fault {
            Some(f) => self.mms[f.mm as usize].memcg,
            None => self.tasks[self.current as usize].memcg,
        }
    }

    /// The swap entry (device, offset) left at `index`, if the page there is swapped out.
    fn shmem_swap_entry(&self, file: FileId, index: u32) -> Option<(u32, u32)> {
        let sh = self.files[file as usize].shmem.as_ref()?;
        match sh.swap.get(index as usize) {
            Some(&e) if e != NO_SWAP => Some(super::swap_state::unpack_swap_entry(e)),
            _ => None,
        }
    }

    /// shmem_alloc_and_add_folio (with shmem_suitable_orders): the allowable orders from the
    /// highest down whose aligned range is free in the mapping (and, for a fault, lies in the
    /// VMA and lines up with it); an order whose allocation fails counts a fallback, one whose
    /// charge fails ends the large attempt; then order 0.
    fn shmem_alloc_and_add_folio(
        &mut self,
        file: FileId,
        index: u32,
        fault: Option<FaultAt>,
        write_end_bytes: u64,
    ) -> Result<FolioId, Killed> {
        let vma_flags = fault.map(|f| self.mms[f.mm as usize].vmas[f.vi].flags);
        let orders = self.shmem_allowable_huge_orders(file, vma_flags, index, write_end_bytes);
        let memcg = self.shmem_charge_memcg(fault);
        let mut suitable = self.shmem_suitable_orders(file, index, fault, orders);
        let gfp = self.thp_gfp(vma_flags.unwrap_or(0));
        while suitable != 0 {
            let order = highest_order(suitable);
            suitable &= !(1 << order);
            let aligned = index & !((1 << order) - 1);
            let Some(pfn) = self.alloc_pages_task_policy(gfp, order) else {
                if order as usize == PMD_ORDER {
                    self.stat.count(Vm::ThpFileFallback, 1);
                }
                self.stat.count_mthp(order, Mthp::ShmemFallback);
                continue;
            };
            if self.shmem_charge_and_add(pfn, order, file, aligned, memcg, gfp) {
                if order as usize == PMD_ORDER {
                    self.stat.count(Vm::ThpFileAlloc, 1);
                }
                self.stat.count_mthp(order, Mthp::ShmemAlloc);
                return Ok(pfn);
            }
            if order as usize == PMD_ORDER {
                self.stat.count(Vm::ThpFileFallback, 1);
                self.stat.count(Vm::ThpFileFallbackCharge, 1);
            }
            self.stat.count_mthp(order, Mthp::ShmemFallback);
            self.stat.count_mthp(order, Mthp::ShmemFallbackCharge);
            break;
        }
        let Some(pfn) = self.alloc_pages_task_policy(Gfp::USER, 0) else {
            return Err(Killed);
        };
        if self.shmem_charge_and_add(pfn, 0, file, index, memcg, Gfp::USER) {
            Ok(pfn)
        } else {
            Err(Killed)
        }
    }

    /// shmem_suitable_orders: of `orders`, from the highest down, those from the first whose
    /// aligned range holds neither a folio nor a swap entry; for a fault only orders whose
    /// aligned range lies inside the VMA at an address aligned alike (thp_vma_suitable_order).
    fn shmem_suitable_orders(
        &self,
        file: FileId,
        index: u32,
        fault: Option<FaultAt>,
        mut orders: u32,
    ) -> u32 {
        if let Some(f) = fault {
            let v = &self.mms[f.mm as usize].vmas[f.vi];
            let pgoff = v.file.map_or(0, |vf| vf.pgoff);
            orders &= (1..=PMD_ORDER as u32)
                .filter(|&o| {
                    let nr = 1u32 << o;
                    let base = f.vpn & !(nr - 1);
                    (v.start.wrapping_sub(pgoff)) % nr == 0
                        && base >= v.start
                        && base + nr <= v.end()
                })
                .fold(0, |m, o| m | 1 << o);
        }
        let fi = &self.files[file as usize];
        let sh = fi.shmem.as_ref().expect("an shmem file");
        while orders != 0 {
            let order = highest_order(orders);
            let nr = 1usize << order;
            let aligned = index as usize & !(nr - 1);
            let end = aligned + nr;
            let free = end <= fi.cache.len()
                && fi.cache[aligned..end].iter().all(|&c| c == NIL)
                && (sh.swap.is_empty() || sh.swap[aligned..end].iter().all(|&e| e == NO_SWAP));
            if free {
                return orders;
            }
            orders &= !(1 << order);
        }
        0
    }

    /// The charge, then shmem_add_to_page_cache and folio_add_lru. False when the charge failed
    /// (the pages go back to the allocator).
    fn shmem_charge_and_add(
        &mut self,
        pfn: FolioId,
        order: u32,
        file: FileId,
        index: u32,
        memcg: u16,
        gfp: Gfp,
    ) -> bool {
        self.mem
            .prep_folio(pfn, order, file | MAPPING_SHMEM, memcg, index);
        let nr = 1u32 << order;
        for i in 0..nr {
            self.mem.pages[(pfn + i) as usize].content = content::ZERO;
        }
        self.mem.set(pfn, pg::SWAPBACKED);
        if self.mem_cgroup_charge(pfn, memcg, gfp).is_err() {
            self.mem.clear_folio(pfn);
            self.free_pages(pfn, order);
            return false;
        }
        // clear_highpage of each page of the new folio
        self.spend(TimeKind::Zeroing, nr as u64 * self.hw.zero_page_ns);
        if let Some(sh) = self.files[file as usize].shmem.as_mut() {
            sh.used = true;
        }
        self.shmem_add_to_page_cache(pfn);
        self.folio_add_lru(pfn);
        true
    }

    /// shmem_add_to_page_cache: the folio takes its indices in the mapping.
    fn shmem_add_to_page_cache(&mut self, folio: FolioId) {
        let file = self.mem.anon_vma(folio) as usize;
        let (index, nr) = (self.mem.index(folio), self.mem.nr_pages(folio));
        let f = &mut self.files[file];
        for i in index..index + nr {
            f.cache[i as usize] = folio;
        }
        f.nrpages += nr as u64;
    }

    /// shmem_swapin_folio: the page at `index` comes back from swap: from the swap cache if a
    /// folio is still there, else read into a new folio (a major fault when `fault`), of the
    /// swapped entry's order where shmem_swap_alloc_folio allows it, else of one page (the
    /// rest of a large entry stays swapped, split into single entries). The folio joins the
    /// page cache, dirty, and its swap space is freed.
    fn shmem_swapin_folio(
        &mut self,
        file: FileId,
        index: u32,
        sgp: Sgp,
        fault: Option<FaultAt>,
    ) -> Result<FolioId, Killed> {
        let (dev, off) = self.shmem_swap_entry(file, index).expect("a swapped page");
        let sh = self.files[file as usize]
            .shmem
            .as_ref()
            .expect("an shmem file");
        let entry_order = sh.swap_order[index as usize] as u32;
        let memcg = self.shmem_charge_memcg(fault);
        let (folio, first_index, first_off) = match self.swap_cache_lookup(dev, off) {
            Some((folio, _)) => {
                let (_, foff) = self.folio_swap_entry(folio);
                let findex = index - (off - foff);
                self.delete_from_swap_cache(folio);
                (folio, findex, foff)
            }
            None => {
                if let Some(f) = fault {
                    self.stat.count(Vm::Pgmajfault, 1);
                    let cg = self.mms[f.mm as usize].memcg as usize;
                    self.memcgs[cg].count(Memcg::Pgmajfault, 1);
                }
                let large = self.generation().swaps_in_large_shmem_folios()
                    && self.swap[dev as usize].synchronous()
                    && !self.zswap.ever_enabled;
                let mut order = if large { entry_order } else { 0 };
                let folio = loop {
                    let nr = 1u32 << order;
                    let aligned = index & !(nr - 1);
                    let gfp = if order == 0 {
                        Gfp::USER
                    } else {
                        self.thp_gfp(fault.map_or(0, |f| self.mms[f.mm as usize].vmas[f.vi].flags))
                    };
                    if let Some(pfn) = self.alloc_pages_task_policy(gfp, order) {
                        let mapping = file | MAPPING_SHMEM;
                        if self.charge_new_folio(pfn, order, mapping, memcg, aligned, gfp) {
                            break pfn;
                        }
                    }
                    if order == 0 {
                        return Err(Killed);
                    }
                    // shmem counts no swpin_fallback (anonymous swap-in does)
                    order = 0;
                };
                let nr = self.mem.nr_pages(folio);
                let findex = self.mem.index(folio);
                let foff = off - (index - findex);
                self.mem.set(folio, pg::SWAPBACKED);
                let shadow = self.swap[dev as usize].shadows[foff as usize];
                let from_zswap = self.swap_read_folio(folio, dev, foff, nr);
                if order > 0 {
                    self.stat.count_mthp(order, Mthp::Swpin);
                }
                if !from_zswap {
                    self.memcgs[memcg as usize].count(Memcg::Pswpin, nr as u64);
                }
                if shadow.is_some() {
                    self.workingset_refault(folio, shadow);
                }
                self.folio_add_lru(folio);
                (folio, findex, foff)
            }
        };
        let nr = self.mem.nr_pages(folio);
        let f = &mut self.files[file as usize];
        let sh = f.shmem.as_mut().expect("an shmem file");
        for i in first_index..first_index + nr {
            sh.swap[i as usize] = NO_SWAP;
            sh.swap_order[i as usize] = 0;
        }
        if nr < 1 << entry_order {
            // shmem_split_large_entry: the rest of the large entry stays swapped, page by page.
            let base = index & !((1 << entry_order) - 1);
            for i in base..base + (1 << entry_order) {
                sh.swap_order[i as usize] = 0;
            }
        }
        self.shmem_add_to_page_cache(folio);
        self.memcg_add_swap(memcg, -(nr as i64));
        if sgp == Sgp::Write {
            self.folio_mark_accessed(folio);
        }
        self.mem.set(folio, pg::DIRTY);
        for i in 0..nr {
            self.swap_free(dev, first_off + i);
        }
        Ok(folio)
    }
}

/// What shmem_writeout did with a folio reclaim wants to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShmemWrite {
    /// In the swap cache, out of the page cache, written (or on its way): reclaim goes on as
    /// for an anonymous folio after swap_writepage.
    Swapped(super::swap_state::SwapWrite),
    /// Kept in the page cache, dirty (AOP_WRITEPAGE_ACTIVATE: no swap space).
    Redirty,
}

/// Reclaim.
impl Kernel {
    /// shmem_writeout: a dirty, unmapped shmem folio goes to swap. A large one is split first
    /// before v6.12 or without CONFIG_THP_SWAP, or when no swap space of its size is left (its
    /// other pages join `list`).
    pub fn shmem_writeout(&mut self, folio: FolioId, list: &mut Vec<FolioId>) -> ShmemWrite {
        if self.swap.iter().all(|s| s.pages() == 0) {
            return ShmemWrite::Redirty;
        }
        let large = self.mem.order(folio) > 0;
        if large && (!self.generation().shmem_swaps_out_large_folios() || !self.spec.knobs.thp_swap)
        {
            if !self.split_folio_to_list(folio, list) {
                return ShmemWrite::Redirty;
            }
        }
        if !self.add_to_swap(folio) {
            if self.mem.order(folio) == 0 || !self.split_folio_to_list(folio, list) {
                return ShmemWrite::Redirty;
            }
            if !self.add_to_swap(folio) {
                return ShmemWrite::Redirty;
            }
        }
        // shmem_delete_from_page_cache: the swap entry takes the folio's place.
        let (dev, off) = self.folio_swap_entry(folio);
        let file = self.mem.anon_vma(folio) as usize;
        let (index, nr) = (self.mem.index(folio), self.mem.nr_pages(folio));
        let order = self.mem.order(folio) as u8;
        let f = &mut self.files[file];
        f.nrpages -= nr as u64;
        let sh = f.shmem.as_mut().expect("an shmem folio's file");
        if sh.swap.is_empty() {
            sh.swap = vec![NO_SWAP; f.cache.len()];
            sh.swap_order = vec![0; f.cache.len()];
        }
        for i in 0..nr {
            f.cache[(index + i) as usize] = NIL;
            sh.swap[(index + i) as usize] = super::swap_state::pack_swap_entry(dev, off + i);
            sh.swap_order[(index + i) as usize] = order;
        }
        // the mapping's reference on each slot (folio_dup_swap)
        for i in 0..nr {
            self.swap_duplicate(dev, off + i);
        }
        let memcg = self.mem.memcg(folio);
        self.memcg_add_swap(memcg, nr as i64);
        let written = self.swap_writepage(folio);
        if written == super::swap_state::SwapWrite::Activate {
            // zswap refused it and may not write back: back into the page cache, the swap
            // space given up (AOP_WRITEPAGE_ACTIVATE).
            let sh = self.files[file].shmem.as_mut().expect("shmem");
            for i in 0..nr {
                sh.swap[(index + i) as usize] = NO_SWAP;
                sh.swap_order[(index + i) as usize] = 0;
            }
            self.memcg_add_swap(memcg, -(nr as i64));
            self.delete_from_swap_cache(folio);
            for i in 0..nr {
                self.swap_free(dev, off + i);
            }
            self.shmem_add_to_page_cache(folio);
            self.mem.set(folio, pg::DIRTY);
            return ShmemWrite::Redirty;
        }
        ShmemWrite::Swapped(written)
    }

    /// shmem_evict_inode's truncation: every folio and swap entry of the file is freed (shared
    /// anonymous memory whose last mapping went).
    pub fn shmem_truncate(&mut self, file: FileId) {
        let len = self.files[file as usize].cache.len();
        let mut i = 0;
        while i < len {
            let folio = self.files[file as usize].cache[i];
            if folio != NIL {
                let end = (self.mem.index(folio) + self.mem.nr_pages(folio)) as usize;
                debug_assert_eq!(self.mem.mapcount(folio), 0);
                self.mem.clear(folio, pg::DIRTY);
                self.filemap_remove_folio(folio);
                self.free_folio(folio);
                i = end;
                continue;
            }
            if let Some((dev, off)) = self.shmem_swap_entry(file, i as u32) {
                let sh = self.files[file as usize].shmem.as_mut().expect("shmem");
                sh.swap[i] = NO_SWAP;
                sh.swap_order[i] = 0;
                let memcg = self.tasks[self.current as usize].memcg;
                self.memcg_add_swap(memcg, -1);
                self.free_swap_and_cache(dev, off);
            }
            i += 1;
        }
    }

    /// The memcg's count of swapped-out pages, and its footprint peak with it.
    pub fn memcg_add_swap(&mut self, memcg: u16, delta: i64) {
        let cg = &mut self.memcgs[memcg as usize];
        cg.swap_pages = (cg.swap_pages as i64 + delta) as u64;
        cg.note_footprint();
    }
}

/// Faults, read() and write().
impl Kernel {
    /// shmem_fault: the folio at the faulting page's index, found, swapped in or allocated.
    pub fn shmem_fault(&mut self, mm: u32, vi: usize, vpn: u32) -> Result<FolioId, Killed> {
        let v = &self.mms[mm as usize].vmas[vi];
        let file = v.file.expect("a file VMA").file;
        let index = v.linear_page_index(vpn);
        let fault = FaultAt { mm, vi, vpn };
        let folio = self.shmem_get_folio(file, index, Sgp::Cache, Some(fault), 0)?;
        if !self.tasks[self.current as usize].is_running() {
            return Err(Killed);
        }
        Ok(folio.expect("a fault allocates"))
    }

    /// finish_fault's page count for an shmem folio: the whole folio when it lies inside the
    /// VMA and one page table and nothing maps its range yet (v6.11 for shared anonymous
    /// memory, v6.14 for tmpfs), else the one page. Returns (first vpn, first page, pages).
    pub fn shmem_finish_fault_range(
        &self,
        mm: u32,
        vi: usize,
        vpn: u32,
        folio: FolioId,
    ) -> (u32, u32, u32) {
        let v = &self.mms[mm as usize].vmas[vi];
        let index = v.linear_page_index(vpn);
        let page = folio + (index - self.mem.index(folio));
        let nr = self.mem.nr_pages(folio);
        let anon = self.files[v.file.expect("a file VMA").file as usize]
            .shmem
            .as_ref()
            .is_some_and(|s| s.anon);
        let whole = if anon {
            self.generation().maps_anon_shmem_folios_whole()
        } else {
            self.generation().maps_tmpfs_folios_whole()
        };
        if nr == 1 || !whole {
            return (vpn, page, 1);
        }
        let idx = index - self.mem.index(folio);
        let first = vpn as i64 - idx as i64;
        let (start, end) = (v.start as i64, v.end() as i64);
        let pte_off = (vpn % HPAGE_PMD_NR) as i64;
        if first < start
            || first + nr as i64 > end
            || pte_off < idx as i64
            || pte_off - idx as i64 + nr as i64 > HPAGE_PMD_NR as i64
        {
            return (vpn, page, 1);
        }
        let from = (first - start) as usize;
        if v.ptes[from..from + nr as usize]
            .iter()
            .any(|&p| p != super::pagetable::PTE_NONE)
        {
            return (vpn, page, 1);
        }
        (first as u32, folio, nr)
    }

    /// Whether a fault in this VMA maps shmem pages writable on a read (a shared writable
    /// mapping: shmem wants no write notification, having no dirty accounting).
    pub fn shmem_maps_writable(&self, mm: u32, vi: usize) -> bool {
        let v = &self.mms[mm as usize].vmas[vi];
        v.flags & (VM_SHARED | VM_WRITE) == VM_SHARED | VM_WRITE
            && v.file
                .is_some_and(|vf| self.files[vf.file as usize].shmem.is_some())
    }

    /// shmem_file_read_iter for a FileRead of task `t` until the quantum ends: each folio's
    /// part of the call copied (marked accessed when read from its start), a hole read from the
    /// zero page, a swapped page swapped in (not counted as a fault).
    pub fn shmem_file_read_op(
        &mut self,
        t: u32,
        req: &ReadRequest,
        quantum_end_ns: u64,
    ) -> Result<bool, Killed> {
        let file = req.file;
        let mut st = self.tasks[t as usize].file_read;
        if !st.started {
            let (pos, end) = self.file_op_range(file, req.offset_bytes, req.len_bytes);
            st = super::filemap::ReadState::start(pos, end);
        }
        let result = loop {
            if st.pos >= st.end {
                break Ok(true);
            }
            if self.clock_ns >= quantum_end_ns {
                break Ok(false);
            }
            if st.pos == st.call_end {
                st.call_end = (st.pos + req.buffer_bytes.max(1)).min(st.end);
                self.spend(TimeKind::FaultEntry, self.hw.fault_entry_ns);
            }
            let index = (st.pos / PAGE_SIZE) as u32;
            match self.shmem_get_folio(file, index, Sgp::Read, None, 0) {
                Err(k) => break Err(k),
                Ok(Some(folio)) => {
                    let start = self.mem.index(folio) as u64 * PAGE_SIZE;
                    if st.pos == start {
                        self.folio_mark_accessed(folio);
                    }
                    st.pos = self.copy_folio_iter(t, folio, st.pos, st.call_end);
                }
                Ok(None) => {
                    // copy_page_to_iter(ZERO_PAGE(0)): the hole's page, one at a time
                    let to = ((index as u64 + 1) * PAGE_SIZE).min(st.call_end);
                    let bytes = to - st.pos;
                    let per_page = self.hw.copy_page_ns + self.hw.dram_read_latency_ns;
                    self.spend(TimeKind::Copying, bytes * per_page / PAGE_SIZE);
                    self.tasks[t as usize].touches += bytes.div_ceil(PAGE_SIZE);
                    st.pos = to;
                }
            }
        };
        self.tasks[t as usize].file_read = if matches!(result, Ok(false)) {
            st
        } else {
            Default::default()
        };
        result
    }

    /// generic_perform_write with shmem_write_begin / shmem_write_end for a FileWrite of task
    /// `t`: per chunk (a PMD's worth; shmem does no dirty throttling) the folio at the
    /// position, allocated with the chunk's end as the size hint, the copy, then dirty.
    pub fn shmem_file_write_op(
        &mut self,
        t: u32,
        req: &WriteRequest,
        quantum_end_ns: u64,
    ) -> Result<bool, Killed> {
        let file = req.file;
        let mut st = self.tasks[t as usize].file_write;
        if !st.started {
            let (pos, end) = self.file_op_range(file, req.offset_bytes, req.len_bytes);
            st = super::filemap::WriteState::start(pos, end);
        }
        let chunk = PAGE_SIZE << PMD_ORDER;
        let result = loop {
            if st.pos >= st.end {
                break Ok(true);
            }
            if self.clock_ns >= quantum_end_ns {
                break Ok(false);
            }
            if st.pos == st.call_end {
                st.call_end = (st.pos + req.buffer_bytes.max(1)).min(st.end);
                self.spend(TimeKind::FaultEntry, self.hw.fault_entry_ns);
            }
            let offset = st.pos & (chunk - 1);
            let len = (chunk - offset).min(st.call_end - st.pos);
            let index = (st.pos / PAGE_SIZE) as u32;
            let folio = match self.shmem_get_folio(file, index, Sgp::Write, None, st.pos + len) {
                Ok(f) => f.expect("a write allocates"),
                Err(k) => break Err(k),
            };
            if self.files[file as usize].cache[index as usize] != folio {
                continue;
            }
            st.pos = self.copy_folio_from_user(t, folio, st.pos, st.call_end, req.data);
        };
        self.tasks[t as usize].file_write = if matches!(result, Ok(false)) {
            st
        } else {
            Default::default()
        };
        result
    }

    /// mmap(MAP_SHARED | MAP_ANONYMOUS) of `nr_pages`: a new shmem object of that size
    /// (shmem_zero_setup), mapped shared and writable. Returns the first vpn.
    pub fn mmap_shared_anon(&mut self, mm: u32, nr_pages: u32) -> u32 {
        let name = format!("dev/zero (shared, mm {mm})");
        let huge = self.spec.knobs.shmem_enabled;
        let mut f = super::filemap::File::shmem(name, nr_pages as u64 * PAGE_SIZE, huge, true);
        if let Some(sh) = f.shmem.as_mut() {
            sh.used = true;
        }
        let file = self.create_file(f);
        self.mmap_file(mm, file, 0, nr_pages, VM_SHARED | VM_WRITE)
    }
}

/// Counters read from the page caches at report time (the kernel keeps them as node stats).
impl Kernel {
    /// Whether shmem was in play in the run (its counters are reported only then).
    pub fn has_shmem(&self) -> bool {
        self.files
            .iter()
            .any(|f| f.shmem.as_ref().is_some_and(|s| s.used))
    }

    /// (nr_shmem pages, nr_shmem_hugepages in PMD folios, per memcg shmem pages).
    pub fn shmem_stats(&self) -> (u64, u64, Vec<u64>) {
        let (mut pages, mut huge) = (0, 0);
        let mut per_memcg = vec![0; self.memcgs.len()];
        for f in self.files.iter().filter(|f| f.shmem.is_some()) {
            for (i, &folio) in f.cache.iter().enumerate() {
                if folio == NIL || self.mem.index(folio) as usize != i {
                    continue;
                }
                let nr = self.mem.nr_pages(folio) as u64;
                pages += nr;
                huge += (nr == HPAGE_PMD_NR as u64) as u64;
                per_memcg[self.mem.memcg(folio) as usize] += nr;
            }
        }
        (pages, huge, per_memcg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::folio::content;
    use crate::mm::pagetable as pt;
    use crate::mm::vmscan::ScanControl;

    fn boot(profile: &str, knobs: &str) -> (Kernel, u32) {
        crate::mm::boot_zram_for_test(profile, None, knobs)
    }

    /// The shmem file's pages that are out on swap.
    fn swapped(k: &Kernel, file: FileId) -> usize {
        k.files[file as usize]
            .shmem
            .as_ref()
            .unwrap()
            .swap_entries()
            .count()
    }

    fn folio_at(k: &Kernel, mm: u32, vpn: u32) -> FolioId {
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        let v = &k.mms[mm as usize].vmas[vi];
        k.mem.head_of(pt::pfn(v.ptes[(vpn - v.start) as usize]))
    }

    fn file_of(k: &Kernel, mm: u32, vpn: u32) -> FileId {
        let vi = k.mms[mm as usize].find_vma(vpn).unwrap();
        k.mms[mm as usize].vmas[vi].file.unwrap().file
    }

    /// Reclaim of exactly this folio, as shrink_inactive_list would.
    fn evict(k: &mut Kernel, folio: FolioId) -> u64 {
        k.lru_add_drain();
        k.lruvec_del_folio(folio);
        let mut sc = ScanControl::new(u64::MAX, false);
        sc.ignore_references = true;
        k.shrink_folio_list(&mut vec![folio], &mut sc)
    }

    fn assert_consistent(k: &Kernel) {
        let errors = crate::check::check(k);
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn shared_anonymous_memory_is_swap_backed_on_the_anon_lru_and_a_fork_child_maps_the_same_folio()
    {
        let (mut k, mm) = boot("v6.18", "");
        let start = k.mmap_shared_anon(mm, 16);
        k.touch(mm, start + 3, true, content::DATA_DEFAULT).unwrap();
        k.lru_add_drain();
        let folio = folio_at(&k, mm, start + 3);
        assert!(k.mem.test(folio, pg::SWAPBACKED) && k.mem.is_shmem(folio));
        assert!(!k.folio_is_file_lru(folio), "on the anon LRU");
        assert!(!k.folio_test_anon(folio), "in a page cache, not anonymous");
        assert!(k.mem.test(folio, pg::LRU));
        let child_task = k.fork_task(k.current, "c".into());
        let child = k.tasks[child_task as usize].mm.unwrap();
        // the child's shared mapping starts empty and faults the same folio in, writable
        k.touch(child, start + 3, true, content::DATA_DEFAULT)
            .unwrap();
        assert_eq!(folio_at(&k, child, start + 3), folio, "shared, not copied");
        assert_eq!(k.mem.mapcount(folio), 2);
        assert_consistent(&k);
    }

    #[test]
    fn reclaim_swaps_a_dirty_shmem_folio_out_and_a_fault_brings_it_back_dirty() {
        let (mut k, mm) = boot("v6.18", "");
        let start = k.mmap_shared_anon(mm, 4);
        k.touch(mm, start, true, content::DATA_DEFAULT).unwrap();
        let file = file_of(&k, mm, start);
        let folio = folio_at(&k, mm, start);
        assert_eq!(evict(&mut k, folio), 1);
        assert_eq!(k.stat.get(Vm::Pswpout), 1);
        assert_eq!(
            k.files[file as usize].cache[0], NIL,
            "out of the page cache"
        );
        assert_eq!(swapped(&k, file), 1);
        assert_consistent(&k);
        let majfaults = k.stat.get(Vm::Pgmajfault);
        k.touch(mm, start, false, 0).unwrap();
        assert_eq!(k.stat.get(Vm::Pgmajfault), majfaults + 1);
        assert_eq!(k.stat.get(Vm::Pswpin), 1);
        let back = folio_at(&k, mm, start);
        assert_eq!(k.files[file as usize].cache[0], back);
        assert!(
            k.mem.test(back, pg::DIRTY),
            "dirty again: its swap copy is gone"
        );
        assert_eq!(k.mem.pages[back as usize].content, content::DATA_DEFAULT);
        assert_eq!(swapped(&k, file), 0);
        assert_consistent(&k);
    }

    #[test]
    fn a_clean_shmem_folio_is_dropped_not_swapped() {
        let (mut k, mm) = boot("v6.18", "");
        let start = k.mmap_shared_anon(mm, 4);
        // a read fault of a hole allocates a zeroed folio that nothing wrote
        k.touch(mm, start + 1, false, 0).unwrap();
        let file = file_of(&k, mm, start);
        let folio = folio_at(&k, mm, start + 1);
        assert!(!k.mem.test(folio, pg::DIRTY));
        assert_eq!(evict(&mut k, folio), 1);
        assert_eq!(k.stat.get(Vm::Pswpout), 0);
        assert_eq!(k.files[file as usize].cache[1], NIL);
        assert_eq!(swapped(&k, file), 0);
        assert_consistent(&k);
    }

    #[test]
    fn huge_orders_follow_the_mount_and_the_knobs_per_generation() {
        let anon = |profile: &str, knobs: &str, flags: u8| {
            let (mut k, mm) = boot(profile, knobs);
            let start = k.mmap_shared_anon(mm, 1024);
            let file = file_of(&k, mm, start);
            k.shmem_allowable_huge_orders(file, Some(flags), 0, 0)
        };
        let pmd = 1 << PMD_ORDER;
        let w = VM_SHARED | VM_WRITE;
        assert_eq!(anon("v6.18", "", w), 0, "shmem_enabled defaults to never");
        let always = r#""/sys/kernel/mm/transparent_hugepage/shmem_enabled" = "always""#;
        assert_eq!(anon("v6.18", always, w), pmd, "PMD inherits the top level");
        let advise = r#""/sys/kernel/mm/transparent_hugepage/shmem_enabled" = "advise""#;
        assert_eq!(anon("v6.18", advise, w), 0);
        assert_eq!(anon("v6.18", advise, w | VM_HUGEPAGE), pmd);
        let k64 =
            r#""/sys/kernel/mm/transparent_hugepage/hugepages-64kB/shmem_enabled" = "always""#;
        assert_eq!(anon("v6.18", k64, w), 1 << 4);
        assert_eq!(
            anon("v6.9", k64, w),
            0,
            "no per-size shmem knobs before v6.11"
        );
        let deny =
            format!("{k64}\n\"/sys/kernel/mm/transparent_hugepage/shmem_enabled\" = \"deny\"");
        assert_eq!(anon("v6.18", &deny, w), 0, "deny turns every size off");
        assert_eq!(anon("v6.18", always, w | crate::mm::vma::VM_NOHUGEPAGE), 0);

        // tmpfs huge=always: a write asks for folios up to its length from v6.14, PMD before
        let tmpfs = |profile: &str, index: u32, end: u64| {
            let (mut k, _) = boot(profile, "");
            let file = k.create_file(crate::mm::filemap::File::shmem(
                "t".into(),
                8 << 20,
                ShmemHuge::Always,
                false,
            ));
            k.shmem_allowable_huge_orders(file, None, index, end)
        };
        assert_eq!(tmpfs("v6.18", 0, 64 << 10) & !1, 0b11110, "up to 64K");
        assert_eq!(
            tmpfs("v6.18", 2, (2 << 12) + (64 << 10)) & !1,
            0b10,
            "lowered to index 2's alignment"
        );
        assert_eq!(tmpfs("v6.12", 0, 64 << 10), pmd);
    }

    #[test]
    fn a_large_shmem_folio_is_split_for_swap_before_v6_12_and_swapped_whole_after() {
        for (profile, split) in [("v6.9", true), ("v6.18", false)] {
            let always = r#""/sys/kernel/mm/transparent_hugepage/shmem_enabled" = "always""#;
            let (mut k, mm) = boot(profile, always);
            let start = k.mmap_shared_anon(mm, 512);
            let file = file_of(&k, mm, start);
            k.touch(mm, start, true, content::DATA_DEFAULT).unwrap();
            let folio = folio_at(&k, mm, start);
            assert_eq!(k.mem.order(folio) as usize, PMD_ORDER, "{profile}");
            assert_eq!(k.stat.get(Vm::ThpFileAlloc), 1);
            // write every page so that each subpage is worth swapping
            for i in 0..512 {
                k.touch(mm, start + i, true, content::DATA_DEFAULT).unwrap();
            }
            // the split's other pages join the list and are swapped out in the same pass
            let freed = evict(&mut k, folio);
            assert_eq!(freed, 512, "{profile}");
            let sh = k.files[file as usize].shmem.as_ref().unwrap();
            assert_eq!(k.stat.get(Vm::ThpSplitPage), split as u64, "{profile}");
            if split {
                assert!(sh.swap_order.iter().all(|&o| o == 0));
                assert_eq!(k.stat.get(Vm::Pswpout), 512);
            } else {
                assert_eq!(k.stat.mthp[PMD_ORDER][Mthp::Swpout as usize], 1);
                assert_eq!(sh.swap_order[0] as usize, PMD_ORDER);
                // and from a synchronous device (zswap never on) it comes back whole
                k.touch(mm, start + 7, false, 0).unwrap();
                assert_eq!(k.mem.order(folio_at(&k, mm, start + 7)) as usize, PMD_ORDER);
                assert_eq!(k.stat.mthp[PMD_ORDER][Mthp::Swpin as usize], 1);
            }
            assert_consistent(&k);
        }
    }

    #[test]
    fn the_last_unmap_frees_shared_anonymous_memory_and_a_tmpfs_file_keeps_its_pages() {
        let (mut k, mm) = boot("v6.18", "");
        let free = k.nr_free_pages();
        let start = k.mmap_shared_anon(mm, 64);
        for i in 0..64 {
            k.touch(mm, start + i, true, content::DATA_DEFAULT).unwrap();
        }
        let file = file_of(&k, mm, start);
        let first = folio_at(&k, mm, start);
        evict(&mut k, first);
        assert_eq!(swapped(&k, file), 1);
        k.munmap(mm, start);
        assert_eq!(k.files[file as usize].nrpages, 0);
        assert_eq!(swapped(&k, file), 0);
        assert!(k.nr_free_pages() >= free - 1, "the pages went back");
        assert_consistent(&k);

        let tmpfs = k.create_file(crate::mm::filemap::File::shmem(
            "t".into(),
            64 << 12,
            ShmemHuge::Never,
            false,
        ));
        let m = k.mmap_file(mm, tmpfs, 0, 64, VM_SHARED | VM_WRITE);
        k.touch(mm, m, true, content::DATA_DEFAULT).unwrap();
        k.munmap(mm, m);
        assert_eq!(
            k.files[tmpfs as usize].nrpages, 1,
            "a file outlives its mappings"
        );
        assert_consistent(&k);
    }
}
