//! Kernel generations. mm/ never compares generations: where the kernel's behaviour changed
//! between them, it asks one of the named predicates below (or, for the swap-slot allocator,
//! uses the generation's own type chosen at swapon).

/// A mainline kernel generation, oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Generation {
    V6_9,
    V6_10,
    V6_12,
    V6_18,
}
