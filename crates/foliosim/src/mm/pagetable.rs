//! Page-table entries: one `u64` per virtual page of a VMA.
//!
//! Models the x86-64 PTE states reclaim and faults care about (arch/x86/include/asm/pgtable_types.h,
//! include/linux/swapops.h): none, present (with accessed/dirty/write bits, pointing at a PFN) and
//! swap entries (device, offset). A PMD-mapped THP is stored as its 512 PTEs with the `PMD` bit set,
//! so that per-page lookups stay one array index; the PMD-level state is derived from that bit.
//! NUMA hinting PTEs (PAGE_NONE set by change_prot_numa) keep PRESENT and add PROTNONE, as
//! pte_present() is true for them in the kernel; only pte_accessible() tells them apart.
//! On arm64 the contiguous bit (PTE_CONT) marks PTEs folded into a contpte block.
//! Left out: migration/device entries (migration here is atomic under the simulator), soft-dirty,
//! uffd bits, protection keys.

pub type Pte = u64;

pub const PTE_NONE: Pte = 0;
const PRESENT: u64 = 1 << 0;
pub const YOUNG: u64 = 1 << 1;
pub const DIRTY: u64 = 1 << 2;
pub const WRITE: u64 = 1 << 3;
/// Part of a PMD mapping of a PMD-order folio.
pub const PMD: u64 = 1 << 4;
/// PAGE_NONE protection of a NUMA hinting fault: present but not accessible.
pub const PROTNONE: u64 = 1 << 5;
/// arm64 PTE_CONT: one of 16 naturally aligned PTEs that map 16 contiguous pages of one folio
/// with the same attributes (mm/contpte.rs). Never set on x86.
pub const CONT: u64 = 1 << 6;
const SWAP: u64 = 1 << 8;
/// Read-only mapping of the shared zero page: not present as far as folios go.
pub const ZERO_PAGE: Pte = 1 << 9;
const DEV_SHIFT: u32 = 16;
const PAYLOAD_SHIFT: u32 = 32;

#[inline]
pub fn mk_present(pfn: u32, flags: u64) -> Pte {
    ((pfn as u64) << PAYLOAD_SHIFT) | PRESENT | flags
}
#[inline]
pub fn mk_swap(device: u32, offset: u32) -> Pte {
    ((offset as u64) << PAYLOAD_SHIFT) | ((device as u64) << DEV_SHIFT) | SWAP
}
#[inline]
pub fn is_present(pte: Pte) -> bool {
    pte & PRESENT != 0
}
/// pte_accessible (without a concurrent change_protection): the TLB may cache it.
#[inline]
pub fn is_accessible(pte: Pte) -> bool {
    pte & (PRESENT | PROTNONE) == PRESENT
}
#[inline]
pub fn is_swap(pte: Pte) -> bool {
    pte & SWAP != 0
}
#[inline]
pub fn is_zero_page(pte: Pte) -> bool {
    pte & ZERO_PAGE != 0
}
#[inline]
pub fn pfn(pte: Pte) -> u32 {
    (pte >> PAYLOAD_SHIFT) as u32
}
/// A present PTE mapping one of the pages [first, end) (a folio's, in the rmap walks).
#[inline]
pub fn maps_pfn_in(pte: Pte, first: u32, end: u32) -> bool {
    is_present(pte) && (first..end).contains(&pfn(pte))
}
#[inline]
pub fn swap_device(pte: Pte) -> u32 {
    ((pte >> DEV_SHIFT) & 0xff) as u32
}
#[inline]
pub fn swap_offset(pte: Pte) -> u32 {
    (pte >> PAYLOAD_SHIFT) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn present_and_swap_entries_are_distinct_and_round_trip() {
        let p = mk_present(0xdead_beef, YOUNG | WRITE);
        assert!(is_present(p) && !is_swap(p));
        assert_eq!(pfn(p), 0xdead_beef);
        assert!(p & YOUNG != 0 && p & DIRTY == 0);
        let s = mk_swap(3, 123_456);
        assert!(is_swap(s) && !is_present(s));
        assert_eq!((swap_device(s), swap_offset(s)), (3, 123_456));
        assert!(!is_present(PTE_NONE) && !is_swap(PTE_NONE));
    }
}
