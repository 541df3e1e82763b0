//! vm-scalability `usemem`: N processes start together, each mmaps SIZE of private anonymous
//! memory, writes every 8-byte word once in order, reports its throughput, munmaps and exits.
//!
//! Throughput is computed as usemem prints it: (SIZE/8 + SIZE) bytes · 10^6 / 1024 / Δt_us KB/s,
//! with Δt from the start signal to the end of the child's write loop (spec swap.md §G).

use crate::machine::hw::HwCosts;
use crate::mm::folio::content;
use crate::scenario::Op;

/// Index of the write loop in the program; its end time is the end of Δt.
pub const WRITE_OP: usize = 2;
/// Index of the start barrier; its release time is the start of Δt.
pub const START_OP: usize = 0;
const WORDS_PER_PAGE: u64 = crate::mm::PAGE_SIZE / 8;

pub fn program(task_name: &str, size_bytes: u64, hw: &HwCosts) -> Vec<Op> {
    vec![
        Op::Barrier {
            name: format!("{task_name}:start"),
        },
        Op::Mmap {
            region: "buf".into(),
            size_bytes,
        },
        Op::sequential_write(
            "buf",
            0,
            None,
            content::DATA_DEFAULT,
            WORDS_PER_PAGE * hw.word_write_ns_x1000 / 1000,
        ),
        Op::Munmap {
            region: "buf".into(),
        },
        Op::Exit,
    ]
}

/// usemem's reported figures: (bytes, usecs, KB/s).
pub fn throughput(size_bytes: u64, start_ns: u64, end_ns: u64) -> (u64, u64, u64) {
    let bytes = size_bytes / 8 + size_bytes;
    let usecs = ((end_ns.saturating_sub(start_ns)) / 1000).max(1);
    (bytes, usecs, bytes * 1_000_000 / 1024 / usecs)
}

#[cfg(test)]
mod tests {
    #[test]
    fn throughput_matches_usemem_arithmetic() {
        // 1 GiB in 2 s: (1 GiB/8 + 1 GiB) * 1e6 / 1024 / 2e6 us
        let (bytes, usecs, kbps) = super::throughput(1 << 30, 0, 2_000_000_000);
        assert_eq!(bytes, 1_207_959_552);
        assert_eq!(usecs, 2_000_000);
        assert_eq!(kbps, 589_824);
    }
}
