//! zsmalloc's size classes, as zswap's pool fills them: mm/zsmalloc.c (v6.9–v6.18, with
//! CONFIG_ZSMALLOC_CHAIN_SIZE = 8, the default and this VM's).
//!
//! An object of n bytes takes n + ZS_HANDLE_SIZE (the handle kept in the object) rounded up to a
//! 16-byte class; a class holds its objects in zspages of 1–8 pages, the chain size that wastes
//! the fewest bytes (calculate_zspage_chain_size); and zs_create_pool merges each class into the
//! next larger one when both have the same pages per zspage and objects per zspage, so an object
//! takes the largest size of its merged run. The pool's size (zs_get_total_pages) is its zspages'
//! pages, and a zspage is allocated when its class is full and freed when it is empty. Objects
//! are counted per class, packed densely: fragmentation across zspages and compaction are left
//! out (zswap frees its entries about in the order it stored them), as are huge-class handles.

/// ZS_MIN_ALLOC_SIZE and ZS_SIZE_CLASS_DELTA for 4 KiB pages; ZS_MAX_ALLOC_SIZE is a page.
const ZS_MIN_ALLOC_SIZE: u32 = 32;
const ZS_SIZE_CLASS_DELTA: u32 = 16;
const ZS_MAX_ALLOC_SIZE: u32 = 4096;
const ZS_SIZE_CLASSES: usize =
    ((ZS_MAX_ALLOC_SIZE - ZS_MIN_ALLOC_SIZE) / ZS_SIZE_CLASS_DELTA + 1) as usize;
/// CONFIG_ZSMALLOC_CHAIN_SIZE (default 8): the most pages a zspage may chain.
const ZS_MAX_PAGES_PER_ZSPAGE: u32 = 8;
/// The handle zs_malloc keeps at the head of each object (an unsigned long).
const ZS_HANDLE_SIZE: u32 = 8;
const PAGE_BYTES: u32 = 4096;

/// One size class after merging.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeClass {
    pub size: u32,
    pub pages_per_zspage: u32,
    pub objs_per_zspage: u32,
}

/// A zsmalloc pool's classes and how many objects each holds.
pub struct ZsPool {
    /// Per class index, the index of the class it was merged into.
    merged_into: Vec<u16>,
    classes: Vec<SizeClass>,
    objects: Vec<u64>,
}

/// calculate_zspage_chain_size: the page count (1 to the chain size) that leaves the fewest
/// bytes unused at the end of a zspage, the first such; a power-of-two size takes one page.
fn zspage_chain_size(size: u32) -> u32 {
    if size.is_power_of_two() {
        return 1;
    }
    let mut best = (u32::MAX, 1);
    for pages in 1..=ZS_MAX_PAGES_PER_ZSPAGE {
        let waste = pages * PAGE_BYTES % size;
        if waste < best.0 {
            best = (waste, pages);
        }
    }
    best.1
}

impl Default for ZsPool {
    fn default() -> ZsPool {
        ZsPool::new()
    }
}

impl ZsPool {
    /// zs_create_pool: the classes from the largest down, each merged into the one above it
    /// when they would hold the same objects in the same pages (can_merge).
    pub fn new() -> ZsPool {
        let mut classes = Vec::with_capacity(ZS_SIZE_CLASSES);
        let mut merged_into = vec![0u16; ZS_SIZE_CLASSES];
        let mut prev: Option<usize> = None;
        for i in (0..ZS_SIZE_CLASSES).rev() {
            let size = (ZS_MIN_ALLOC_SIZE + i as u32 * ZS_SIZE_CLASS_DELTA).min(ZS_MAX_ALLOC_SIZE);
            let pages_per_zspage = zspage_chain_size(size);
            let objs_per_zspage = pages_per_zspage * PAGE_BYTES / size;
            if let Some(p) = prev {
                let c: &SizeClass = &classes[p];
                if c.pages_per_zspage == pages_per_zspage && c.objs_per_zspage == objs_per_zspage {
                    merged_into[i] = p as u16;
                    continue;
                }
            }
            classes.push(SizeClass {
                size,
                pages_per_zspage,
                objs_per_zspage,
            });
            prev = Some(classes.len() - 1);
            merged_into[i] = prev.unwrap() as u16;
        }
        let objects = vec![0; classes.len()];
        ZsPool {
            merged_into,
            classes,
            objects,
        }
    }

    /// The class zs_malloc puts an object of `length` bytes (at most a page) in.
    pub fn class_of(&self, length: u64) -> usize {
        let size = length as u32 + ZS_HANDLE_SIZE;
        let index = size
            .saturating_sub(ZS_MIN_ALLOC_SIZE)
            .div_ceil(ZS_SIZE_CLASS_DELTA) as usize;
        self.merged_into[index.min(ZS_SIZE_CLASSES - 1)] as usize
    }

    pub fn class(&self, class: usize) -> SizeClass {
        self.classes[class]
    }

    /// Pages a new object of `class` needs allocated first: a new zspage when every zspage of
    /// the class is full, else 0.
    pub fn pages_to_add(&self, class: usize) -> u32 {
        let c = self.classes[class];
        if self.objects[class] % c.objs_per_zspage as u64 == 0 {
            c.pages_per_zspage
        } else {
            0
        }
    }

    pub fn add(&mut self, class: usize) {
        self.objects[class] += 1;
    }

    /// zs_free: the object goes; returns the pages freed (its zspage's, when it became empty).
    pub fn remove(&mut self, class: usize) -> u32 {
        self.objects[class] -= 1;
        let c = self.classes[class];
        if self.objects[class] % c.objs_per_zspage as u64 == 0 {
            c.pages_per_zspage
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_take_the_largest_size_of_their_merged_class_with_the_handle() {
        let pool = ZsPool::new();
        // A half-compressible page (2,057 bytes) plus its handle is 2,065: the 2,080 class,
        // merged up to 2,176 (15 objects in 8 pages, as every class from 2,064 to 2,176).
        let c = pool.class(pool.class_of(2057));
        assert_eq!(
            c,
            SizeClass {
                size: 2176,
                pages_per_zspage: 8,
                objs_per_zspage: 15
            }
        );
        // 2,200 bytes: 11 objects in 6 pages (the 2,224 class).
        let c = pool.class(pool.class_of(2200));
        assert_eq!(
            (c.size, c.pages_per_zspage, c.objs_per_zspage),
            (2224, 6, 11)
        );
        // 2,040 bytes plus the handle is exactly 2,048: two to a page, unmerged.
        let c = pool.class(pool.class_of(2040));
        assert_eq!(
            (c.size, c.pages_per_zspage, c.objs_per_zspage),
            (2048, 1, 2)
        );
        // A page kept as it is: the huge class, one page each.
        let c = pool.class(pool.class_of(4096));
        assert_eq!(
            (c.size, c.pages_per_zspage, c.objs_per_zspage),
            (4096, 1, 1)
        );
    }

    #[test]
    fn a_zspage_is_allocated_when_its_class_is_full_and_freed_when_empty() {
        let mut pool = ZsPool::new();
        let class = pool.class_of(2057);
        let mut pages = 0;
        for _ in 0..16 {
            pages += pool.pages_to_add(class);
            pool.add(class);
        }
        assert_eq!(pages, 16, "two zspages of 8 pages for 16 objects");
        let freed: u32 = (0..16).map(|_| pool.remove(class)).sum();
        assert_eq!(freed, 16);
    }
}
