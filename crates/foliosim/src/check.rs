//! The invariant checker (`--check`, always on in tests). It reads the kernel's state and never
//! changes it:
//! - pages are conserved per node: free pages plus pages in folios equal the node's pages;
//! - every swap slot's count equals its swap PTEs and shmem swap entries, and its cache bit matches the swap cache (or
//!   the per-CPU slot cache);
//! - every folio is on at most one LRU list or lru_add batch, and a folio flagged PG_lru is on a
//!   list;
//! - no present PTE points into a free page, and mapcounts equal the PTEs that map each folio;
//! - mbind's policy ranges lie inside their VMA, sorted, disjoint and merged;
//! - nr_dirty and nr_writeback (and each file's dirty count) equal the dirty and writeback
//!   pages of the page cache, and every write in flight is of a cached folio under writeback;
//! - a mapped page-cache page is in its file's page cache, at the offset its VMA maps there.

use crate::mm::folio::{pg, NIL};
use crate::mm::pagetable as pt;
use crate::mm::swapfile::SWAP_HAS_CACHE;
use crate::mm::vmstat::Vm;
use crate::mm::Kernel;

pub fn check(k: &Kernel) -> Vec<String> {
    let mut out = Vec::new();
    let nr_pages = k.mem.pages.len();

    // Pages per node.
    for (n, z) in k.zones.iter().enumerate() {
        let mut in_use = 0u64;
        for pfn in z.start_pfn as usize..z.start_pfn as usize + z.nr_pages as usize {
            let p = &k.mem.pages[pfn];
            if p.is_head() {
                in_use += 1u64 << p.order();
            }
        }
        if in_use + z.nr_free_pages() != z.managed_pages() {
            out.push(format!(
                "node {n}: {in_use} pages in folios + {} free != {} pages",
                z.nr_free_pages(),
                z.managed_pages()
            ));
        }
        z.check(&k.mem, &mut out);
    }

    // LRU membership.
    let mut on_lru = vec![false; nr_pages];
    for (lv, vec) in k.lruvecs.iter().enumerate() {
        for (l, list) in vec.lists.iter().enumerate() {
            let (mut f, mut n, mut pages) = (list.head, 0u64, 0u64);
            while f != NIL {
                if on_lru[f as usize] {
                    out.push(format!(
                        "folio {f} is on more than one LRU list (lruvec {lv} list {l})"
                    ));
                    break;
                }
                on_lru[f as usize] = true;
                if !k.mem.test(f, pg::LRU) || !k.mem.pages[f as usize].is_head() {
                    out.push(format!(
                        "folio {f} on lruvec {lv} list {l} lacks PG_lru or is not a folio"
                    ));
                }
                n += 1;
                pages += k.mem.nr_pages(f) as u64;
                f = k.mem.pages[f as usize].lru_next;
            }
            if n != list.nr_folios || pages != list.nr_pages {
                out.push(format!(
                    "lruvec {lv} list {l}: counted {n} folios/{pages} pages, recorded {}/{}",
                    list.nr_folios, list.nr_pages
                ));
            }
        }
    }
    for (pfn, p) in k.mem.pages.iter().enumerate() {
        if p.test(pg::LRU) && !on_lru[pfn] {
            out.push(format!("folio {pfn} has PG_lru but is on no list"));
        }
    }
    for (cpu, batch) in k.lru_add_batches.iter().enumerate() {
        for &f in batch {
            if on_lru[f as usize]
                || !k.folio_in_lru_add_batch(f)
                || !k.mem.pages[f as usize].is_head()
            {
                out.push(format!(
                    "folio {f} in CPU {cpu}'s lru_add batch is on a list or not a folio"
                ));
            }
            on_lru[f as usize] = true;
        }
    }

    // Page tables against folios and swap.
    let mut mapcount = vec![0u32; nr_pages];
    let mut swap_refs: Vec<Vec<u8>> = k.swap.iter().map(|s| vec![0u8; s.max as usize]).collect();
    for (mi, mm) in k.mms.iter().enumerate() {
        for v in &mm.vmas {
            // mbind's ranges: inside the VMA, sorted, disjoint, equal neighbours merged.
            let mut prev: Option<&crate::mm::mempolicy::PolicyRange> = None;
            for r in &v.policies {
                let bad = r.start >= r.end
                    || r.start < v.start
                    || r.end > v.end()
                    || prev
                        .is_some_and(|p| p.end > r.start || (p.end == r.start && p.pol == r.pol));
                if bad {
                    out.push(format!(
                        "mm {mi} vma {}: bad policy range {}..{}",
                        v.start, r.start, r.end
                    ));
                }
                prev = Some(r);
            }
            for (i, &pte) in v.ptes.iter().enumerate() {
                if pt::is_present(pte) {
                    let pfn = pt::pfn(pte) as usize;
                    let head = k.mem.head_of(pfn as u32) as usize;
                    if !k.mem.pages[head].is_head() {
                        out.push(format!(
                            "mm {mi} vpn {} maps freed page {pfn}",
                            v.start + i as u32
                        ));
                        continue;
                    }
                    mapcount[head] += 1;
                    if !k.mem.pages[head].test(pg::SWAPBACKED) || k.mem.is_shmem(head as u32) {
                        // A page-cache page: cached by its file, and mapped by a VMA of that
                        // file at the page's own offset.
                        let (file, index) = (k.mem.anon_vma(head as u32), k.mem.index(head as u32));
                        let page_index = index + (pfn - head) as u32;
                        let cached = k
                            .files
                            .get(file as usize)
                            .and_then(|f| f.cache.get(page_index as usize))
                            == Some(&(head as u32));
                        let at = v.file.map(|vf| (vf.file, vf.pgoff + i as u32));
                        if !cached || at != Some((file, page_index)) {
                            out.push(format!(
                                "mm {mi} vpn {} maps page {page_index} of file {file}, which is \
                                 not in its page cache or not what the VMA maps there",
                                v.start + i as u32
                            ));
                        }
                    }
                } else if pt::is_swap(pte) {
                    let (d, o) = (pt::swap_device(pte) as usize, pt::swap_offset(pte) as usize);
                    swap_refs[d][o] = swap_refs[d][o].saturating_add(1);
                }
            }
        }
    }
    // shmem mappings hold a reference on each swap entry they keep
    for f in &k.files {
        for (d, o) in f.shmem.iter().flat_map(|s| s.swap_entries()) {
            swap_refs[d as usize][o as usize] = swap_refs[d as usize][o as usize].saturating_add(1);
        }
    }
    for (pfn, p) in k.mem.pages.iter().enumerate() {
        if p.is_head() && k.mem.mapcount(pfn as u32) != mapcount[pfn] {
            out.push(format!(
                "folio {pfn}: mapcount {} but {} PTEs map it",
                k.mem.mapcount(pfn as u32),
                mapcount[pfn]
            ));
        }
    }
    let mut slot_cached: Vec<Vec<bool>> =
        k.swap.iter().map(|s| vec![false; s.max as usize]).collect();
    for c in &k.slot_cache.cpus {
        for &(d, o) in c.slots.iter().chain(&c.slots_ret) {
            slot_cached[d as usize][o as usize] = true;
        }
    }
    for (d, si) in k.swap.iter().enumerate() {
        for off in 1..si.max as usize {
            let m = si.swap_map[off];
            if m == crate::mm::swapfile::SWAP_MAP_BAD {
                let list = si.clusters[off / 512].list;
                if list != crate::mm::swapfile::LIST_DISCARD {
                    out.push(format!(
                        "swap {} slot {off}: SWAP_MAP_BAD outside a cluster being discarded",
                        si.name
                    ));
                }
                continue;
            }
            if m & 0x3f != swap_refs[d][off] {
                out.push(format!(
                    "swap {} slot {off}: count {} but {} swap PTEs",
                    si.name,
                    m & 0x3f,
                    swap_refs[d][off]
                ));
            }
            // A slot the slot cache holds is marked SWAP_HAS_CACHE with no folio behind it.
            let cached = si.cache[off] != NIL || slot_cached[d][off];
            if cached != (m & SWAP_HAS_CACHE != 0) {
                out.push(format!(
                    "swap {} slot {off}: SWAP_HAS_CACHE {} but swap cache {}",
                    si.name,
                    m & SWAP_HAS_CACHE != 0,
                    cached
                ));
            }
        }
        let used = si.swap_map[1..]
            .iter()
            .filter(|&&m| m != 0 && m != crate::mm::swapfile::SWAP_MAP_BAD)
            .count() as u64;
        if used != si.inuse_pages {
            out.push(format!(
                "swap {}: {used} slots in use but inuse_pages {}",
                si.name, si.inuse_pages
            ));
        }
    }
    let (mut total_dirty, mut total_writeback) = (0u64, 0u64);
    // The page cache: every entry names the head of a file folio of that file covering the
    // index, and nrpages counts the entries.
    for (fi, f) in k.files.iter().enumerate() {
        let mut cached = 0u64;
        for (i, &folio) in f.cache.iter().enumerate() {
            if folio == NIL {
                continue;
            }
            cached += 1;
            let p = &k.mem.pages[folio as usize];
            let start = p.index as usize;
            let ok = p.is_head()
                && p.test(pg::SWAPBACKED) == f.shmem.is_some()
                && k.mem.anon_vma(folio) as usize == fi
                && (start..start + (1usize << p.order())).contains(&i);
            if !ok {
                out.push(format!(
                    "file {fi} page {i}: cached folio {folio} is not a folio of it at that index"
                ));
                break;
            }
        }
        if cached != f.nrpages {
            out.push(format!(
                "file {fi}: {cached} pages cached but nrpages {}",
                f.nrpages
            ));
        }
        // Dirty and writeback pages of the file; its dirty count and dirtied_when agree.
        let (mut dirty, mut writeback) = (0u64, 0u64);
        for (i, &folio) in f.cache.iter().enumerate() {
            // shmem has no dirty accounting (its folios are dirty until swapped out)
            if folio != NIL && k.mem.index(folio) as usize == i && f.shmem.is_none() {
                let nr = k.mem.nr_pages(folio) as u64;
                dirty += nr * k.mem.test(folio, pg::DIRTY) as u64;
                writeback += nr * k.mem.test(folio, pg::WRITEBACK) as u64;
            }
        }
        if dirty != f.nr_dirty || f.dirtied_when_ns.is_some() != (dirty > 0) {
            out.push(format!(
                "file {fi}: {dirty} dirty pages but nr_dirty {} (dirtied_when {:?})",
                f.nr_dirty, f.dirtied_when_ns
            ));
        }
        total_dirty += dirty;
        total_writeback += writeback;
        // A folio under writeback stays in the page cache until its write completes.
        for &(_, folio) in &f.wb_inflight {
            let p = &k.mem.pages[folio as usize];
            if !p.is_head()
                || !p.test(pg::WRITEBACK)
                || f.cache.get(p.index as usize) != Some(&folio)
            {
                out.push(format!(
                    "file {fi}: folio {folio} in flight but not a cached folio under writeback"
                ));
            }
        }
        let in_flight: u64 = f
            .wb_inflight
            .iter()
            .map(|&(_, folio)| k.mem.nr_pages(folio) as u64)
            .sum();
        if in_flight != writeback {
            out.push(format!(
                "file {fi}: {writeback} pages under writeback but {in_flight} in flight"
            ));
        }
    }
    for (item, counted) in [
        (Vm::NrDirty, total_dirty),
        (Vm::NrWriteback, total_writeback),
    ] {
        if k.stat.get(item) != counted {
            out.push(format!(
                "{} is {} but the page cache holds {counted}",
                item.name(),
                k.stat.get(item)
            ));
        }
    }

    // Each cgroup's page counter: its folios (a migrated source kept by MIGRC gave its charge to
    // the destination), its page tables, its stocked pages and the pages of zswap's compressed
    // data charged to it.
    let mut charged = vec![0u64; k.memcgs.len()];
    for (pfn, p) in k.mem.pages.iter().enumerate() {
        if p.is_head() {
            charged[k.mem.memcg(pfn as u32) as usize] += 1u64 << p.order();
        }
    }
    for &f in &k.migrc.folios {
        charged[k.mem.memcg(f) as usize] -= k.mem.nr_pages(f) as u64;
    }
    for m in &k.mms {
        charged[m.memcg as usize] += m.page_tables.nr_pages();
    }
    for (m, cg) in k.memcgs.iter().enumerate().skip(1) {
        let stocked = k.stocked_pages(m as u16);
        charged[m] += k.zswap.memcg[m].charged_pages();
        if cg.usage_pages != charged[m] + stocked {
            out.push(format!(
                "memcg {}: usage {} pages but {} in folios + {stocked} stocked",
                cg.name, cg.usage_pages, charged[m]
            ));
        }
    }
    out.truncate(50);
    out
}
