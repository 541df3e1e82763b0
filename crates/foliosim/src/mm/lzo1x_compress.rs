//! The length of LZO1X-1's output for a page of a data class: lib/lzo/lzo1x_compress.c
//! (lzo1x_1_compress, and lzorle1x_1_compress with its zero-run instruction, v5.1+), as zswap
//! calls it for its "lzo" and "lzo-rle" compressors.
//!
//! A page of data class c (4..=255) is what kernel-bench's fill_page writes: its first
//! (4096·c/255) & ~7 bytes (at least 8) random, the rest zeros. The compressor finds nothing to
//! match in random bytes, and probes them ever more sparsely (it skips 1 + run/32 bytes after
//! each miss), so the literal run it emits reaches past the end of the random bytes into the
//! zeros: to the second probe that lands in zeros (the first records the zero word in its
//! dictionary, the second matches it) for lzo, to the first for lzo-rle (which encodes the zero
//! run at once). The zeros after are one match (or one run), the page's last bytes a literal.
//! The model follows the probe positions and the instruction encodings, not the bytes: random
//! data is taken to have no 4-byte repeat the dictionary would find.
//! Left out: the classes below 4 (zero, same-filled, sparse pages), for which the zram model's
//! estimate stands.

const PAGE_BYTES: usize = 4096;
/// do_compress stops probing 20 bytes before the end (ip_end); the rest is a literal.
const TAIL_BYTES: usize = 20;
/// M2: a match of at most 8 bytes within 2 KiB; M3: within 16 KiB, 33 bytes before the length
/// takes extra bytes (lzodefs.h).
const M2_MAX_LEN: usize = 8;
const M2_MAX_OFFSET: usize = 0x0800;
const M3_MAX_LEN: usize = 33;
/// lzo-rle's longest zero run in one instruction (MAX_ZERO_RUN_LENGTH).
const MAX_ZERO_RUN_LENGTH: usize = 2047 + 4;

/// The random bytes kernel-bench's fill_page writes at the start of a page of data class `c`.
pub fn random_bytes(c: u8) -> usize {
    ((PAGE_BYTES * c as usize / 255) & !7).max(8)
}

/// Bytes of a literal run of `t` bytes: its length code (none for up to 3 after a match, one
/// byte up to 18, then a zero byte, a zero byte per 255 more and the rest) and the bytes.
fn literal_bytes(t: usize) -> usize {
    let code = match t {
        0..=3 => 0,
        4..=18 => 1,
        _ => 2 + (t - 18 - 1) / 255,
    };
    code + t
}

/// Bytes of a match of `len` bytes at distance `off` (within 16 KiB, as in a page).
fn match_bytes(len: usize, off: usize) -> usize {
    if len <= M2_MAX_LEN && off <= M2_MAX_OFFSET {
        2
    } else if len <= M3_MAX_LEN {
        3
    } else {
        // marker, a zero byte per 255, the remainder, and the two offset bytes
        1 + (len - M3_MAX_LEN - 1) / 255 + 1 + 2
    }
}

/// The compressed length of a page whose first `random` bytes do not repeat and whose other
/// bytes are zero; `rle` for lzo-rle.
pub fn compressed_bytes(random: usize, rle: bool) -> usize {
    let ip_end = PAGE_BYTES - TAIL_BYTES;
    let mut out = if rle { 2 } else { 0 }; // lzo-rle's version header (17, 1)
    let mut literal_start = 0;
    let mut ip = 4;
    let mut zero_word_at = None;
    // after an instruction the next probe is where it ended (goto next), else past a skip
    let mut skip = true;
    loop {
        if skip {
            ip += 1 + ((ip - literal_start) >> 5);
        }
        skip = true;
        if ip >= ip_end {
            break;
        }
        if ip < random {
            continue; // a word of random bytes: no match, another probe
        }
        if rle {
            // the zeros from here, up to ip_end, in one run instruction of 4 bytes
            let run = (ip_end - ip).min(MAX_ZERO_RUN_LENGTH);
            out += literal_bytes(ip - literal_start) + 4;
            ip += run;
            literal_start = ip;
            skip = false;
            continue;
        }
        let Some(prev) = zero_word_at else {
            // the dictionary's slot for the zero word held nothing (it points at the page's
            // random start): remember this one and probe on
            zero_word_at = Some(ip);
            continue;
        };
        // match the zero word seen at `prev`: it extends 8 bytes at a time until past ip_end
        let len = 4 + (ip_end - ip).saturating_sub(4).div_ceil(8).max(1) * 8;
        out += literal_bytes(ip - literal_start) + match_bytes(len, ip - prev);
        ip += len;
        literal_start = ip;
        break;
    }
    let tail = PAGE_BYTES - literal_start.min(PAGE_BYTES);
    let tail_bytes = if literal_start == 0 && tail <= 238 {
        1 + tail
    } else {
        literal_bytes(tail)
    };
    // and the end-of-stream instruction
    out + tail_bytes + 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_half_random_page_compresses_to_what_the_vm_s_zram_stored() {
        // Class 128: 2,056 random bytes. Probes at 2,109 and 2,175 land in the zeros, so lzo
        // emits 2,175 literals (10 bytes of length code), a match of 1,908 zeros (11 bytes), a
        // 13-byte literal tail (14) and the end (3): 2,213 bytes, what zram's mm_stat showed
        // per page on this VM (compr_data_size 56,050,945 for 25,329 pages of class 128, lzo).
        assert_eq!(random_bytes(128), 2056);
        assert_eq!(compressed_bytes(2056, false), 2213);
        // lzo-rle: its header, 2,109 literals, a 4-byte zero run to ip_end and a 20-byte tail.
        assert_eq!(compressed_bytes(2056, true), 2 + 2109 + 10 + 4 + 22 + 3);
    }

    #[test]
    fn an_incompressible_page_grows_past_a_page() {
        // all random: one literal run of 4,096 bytes with a 17-byte length code, and the end
        assert_eq!(compressed_bytes(random_bytes(255), false), 4096 + 17 + 3);
        // the more random bytes, the longer, for every class
        let sizes: Vec<usize> = (4..=255)
            .map(|c| compressed_bytes(random_bytes(c), false))
            .collect();
        assert!(sizes.windows(2).all(|w| w[0] <= w[1]), "{sizes:?}");
        // lzo-rle encodes the zeros from its first probe in them: never more than its header
        // longer than lzo
        for c in 4..=255 {
            let r = random_bytes(c);
            assert!(
                compressed_bytes(r, true) <= compressed_bytes(r, false) + 2,
                "class {c}"
            );
        }
    }
}
