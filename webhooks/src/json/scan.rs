//! Searches over JSON text sixteen bytes at a time where SSE2 is built in (all of x86_64: no feature
//! detection), eight at a time elsewhere (SWAR: one `u64` per step), then byte by byte for the last few:
//! the string scans of the validator, the raw-pod reader and the JSON writer. No `unsafe` here: the SSE2
//! intrinsics come as safe functions from `safe_arch`.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `w` that is zero; exact for the lowest such byte (a borrow only runs
/// upwards, from a byte that is itself a hit).
#[inline]
fn zero_bytes(w: u64) -> u64 {
    w.wrapping_sub(ONES) & !w & HIGHS
}

/// High bit set in each byte of `w` equal to `c`; exact for the lowest such byte.
#[inline]
fn bytes_equal(w: u64, c: u8) -> u64 {
    zero_bytes(w ^ (ONES * u64::from(c)))
}

/// High bit set in each byte of `w` equal to `x` or to `y`; exact for the lowest such byte.
#[inline]
fn bytes_either(w: u64, [x, y]: [u8; 2]) -> u64 {
    bytes_equal(w, x) | bytes_equal(w, y)
}

/// High bit set in each byte of `w` below 0x20 (a control character); exact for the lowest such byte.
/// Bytes of 0x80 and above are never hits: `!w` clears their high bit.
#[inline]
fn control_bytes(w: u64) -> u64 {
    w.wrapping_sub(ONES * 0x20) & !w & HIGHS
}

/// Sixteen bytes at a time: the lanes of a 128-bit vector, compared and reduced to a bit mask
/// (`safe_arch`: the SSE2 intrinsics as safe functions).
#[cfg(target_feature = "sse2")]
mod lanes {
    use safe_arch::{
        bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, m128i, max_u8_m128i,
        move_mask_i8_m128i, set_splat_i8_m128i,
    };

    /// The vector form of a search: the lanes of sixteen bytes that are hits.
    pub(super) type Wide = m128i;

    #[inline(always)]
    pub(super) fn load(chunk: &[u8]) -> m128i {
        load_unaligned_m128i(chunk.try_into().expect("sixteen bytes"))
    }

    /// The lanes equal to `c`.
    #[inline(always)]
    pub(super) fn equal(v: m128i, c: u8) -> m128i {
        cmp_eq_mask_i8_m128i(v, set_splat_i8_m128i(c as i8))
    }

    /// The lanes below 0x20 (unsigned: bytes of 0x80 and above are not).
    #[inline(always)]
    pub(super) fn control(v: m128i) -> m128i {
        let limit = set_splat_i8_m128i(0x1F);
        cmp_eq_mask_i8_m128i(max_u8_m128i(v, limit), limit)
    }

    #[inline(always)]
    pub(super) fn or(a: m128i, b: m128i) -> m128i {
        bitor_m128i(a, b)
    }

    /// The lanes equal to `x` or to `y`.
    #[inline(always)]
    pub(super) fn either(v: m128i, [x, y]: [u8; 2]) -> m128i {
        or(equal(v, x), equal(v, y))
    }

    /// The lanes serde_json escapes in a string ([`super::is_json_escape`]).
    #[inline(always)]
    pub(super) fn json_escapes(v: m128i) -> m128i {
        or(either(v, [b'"', b'\\']), control(v))
    }

    /// One bit per lane, lane 0 lowest.
    #[inline(always)]
    pub(super) fn mask(v: m128i) -> u32 {
        move_mask_i8_m128i(v) as u32
    }
}

/// The index of the first byte of `b` at or after `from` that is a hit: sixteen bytes a step with `wide`
/// (SSE2), then eight with `hits` (high bit of each flagged byte; exact for the lowest), then the last
/// bytes with `is_hit`; `b.len()` when none.
#[inline(always)]
fn first(
    b: &[u8],
    from: usize,
    #[cfg(target_feature = "sse2")] wide: impl Fn(lanes::Wide) -> lanes::Wide,
    hits: impl Fn(u64) -> u64,
    is_hit: impl Fn(u8) -> bool,
) -> usize {
    let mut j = from;
    #[cfg(target_feature = "sse2")]
    while let Some(chunk) = b.get(j..j + 16) {
        let found = lanes::mask(wide(lanes::load(chunk)));
        if found != 0 {
            return j + found.trailing_zeros() as usize;
        }
        j += 16;
    }
    while let Some(chunk) = b.get(j..j + 8) {
        let found = hits(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
        if found != 0 {
            return j + (found.trailing_zeros() / 8) as usize;
        }
        j += 8;
    }
    b.get(j..)
        .and_then(|rest| rest.iter().position(|&c| is_hit(c)))
        .map_or(b.len(), |p| j + p)
}

/// The index of the first byte of `b` at or after `from` that is `x` or `y` (`b.len()` when none).
#[inline(always)]
fn first_of(b: &[u8], from: usize, [x, y]: [u8; 2]) -> usize {
    first(
        b,
        from,
        #[cfg(target_feature = "sse2")]
        |v| lanes::either(v, [x, y]),
        |w| bytes_either(w, [x, y]),
        |c| c == x || c == y,
    )
}

/// The index of the first `"` or `\` in `b` at or after `from` (`b.len()` when none).
pub(crate) fn quote_or_backslash(b: &[u8], from: usize) -> usize {
    first_of(b, from, [b'"', b'\\'])
}

/// Whether JSON text `b` may spell `word`: it has it, or has a `\` (an escape could spell any of it). A
/// test before decoding, for texts that rarely hold the word.
pub(crate) fn may_spell(b: &[u8], word: &[u8]) -> bool {
    let Some((&first, rest)) = word.split_first() else {
        return true;
    };
    let mut i = 0;
    loop {
        i = first_of(b, i, [first, b'\\']);
        match b.get(i) {
            None => return false,
            Some(b'\\') => return true,
            Some(_) if b[i + 1..].starts_with(rest) => return true,
            Some(_) => i += 1,
        }
    }
}

/// Whether serde_json escapes `c` in a string: `"`, `\`, a control character.
#[inline]
pub(crate) fn is_json_escape(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// The index of the first byte serde_json escapes in a string ([`is_json_escape`]) in `b` at or after
/// `from` (`b.len()` when none).
pub(crate) fn json_escape(b: &[u8], from: usize) -> usize {
    first(
        b,
        from,
        #[cfg(target_feature = "sse2")]
        lanes::json_escapes,
        |w| bytes_either(w, [b'"', b'\\']) | control_bytes(w),
        is_json_escape,
    )
}

/// The bytes of `b` from `start` that serde_json escapes in a string ([`is_json_escape`]), as bits (bit `k` for
/// `b[start + k]`) over the 64 bytes from `start`; bytes past the end of `b` are not hits. One mask serves all
/// the strings of a block: a validator moving forward through a text computes each block's once.
pub(crate) fn json_escapes_in_block(b: &[u8], start: usize) -> u64 {
    match b.get(start..start + 64) {
        Some(block) => escapes_in(block.try_into().expect("64 bytes")),
        None => {
            // The last block, padded with spaces (not hits).
            let mut block = [b' '; 64];
            let rest = b.get(start..).unwrap_or_default();
            block[..rest.len()].copy_from_slice(rest);
            escapes_in(&block)
        }
    }
}

/// [`json_escapes_in_block`] of 64 bytes.
#[inline(always)]
fn escapes_in(block: &[u8; 64]) -> u64 {
    let mut mask = 0;
    #[cfg(target_feature = "sse2")]
    for (k, chunk) in block.chunks_exact(16).enumerate() {
        let hits = lanes::json_escapes(lanes::load(chunk));
        mask |= u64::from(lanes::mask(hits)) << (16 * k);
    }
    #[cfg(not(target_feature = "sse2"))]
    for (k, &c) in block.iter().enumerate() {
        mask |= u64::from(is_json_escape(c)) << k;
    }
    mask
}

/// The index of the first `~` or `/` in `b` at or after `from` (`b.len()` when none): the bytes a JSON
/// pointer encodes (RFC 6901 §3).
pub(crate) fn pointer_escape(b: &[u8], from: usize) -> usize {
    first_of(b, from, [b'~', b'/'])
}

/// Whether any byte of `b` satisfies `is_hit`, for long texts where the answer is almost always no: a
/// fold without early exit, which the compiler vectorizes.
#[inline(always)]
pub(crate) fn any(b: &[u8], is_hit: impl Fn(u8) -> bool) -> bool {
    b.iter().fold(false, |found, &c| found | is_hit(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    type Search = fn(&[u8], usize) -> usize;

    /// `may_spell` finds the word at every offset and in overlapping near misses, says yes to any backslash,
    /// and no otherwise (a first byte alone, a word cut at the end).
    #[test]
    fn may_spell_finds_the_word_or_an_escape() {
        let word = b"kruise";
        for len in 0..40 {
            for at in 0..=len {
                let mut text = vec![b'k'; len];
                assert!(!may_spell(&text, word), "{len} bytes of k");
                if at + word.len() <= len {
                    text[at..at + word.len()].copy_from_slice(word);
                    assert!(may_spell(&text, word), "at {at} of {len}");
                }
                let mut text = vec![b'x'; len];
                if at < len {
                    text[at] = b'\\';
                    assert!(may_spell(&text, word), "backslash at {at} of {len}");
                }
            }
        }
        for (text, found) in [
            (&b"kruis"[..], false),
            (b"krkruise", true),
            (b"kruisekruis", true),
            (b"KRUISE", false),
            (b"", false),
        ] {
            assert_eq!(
                may_spell(text, word),
                found,
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
        assert!(may_spell(b"", b""), "the empty word is everywhere");
    }

    /// Every search, on texts of every length below 40 (the sixteen-byte, eight-byte and byte steps) with
    /// one stop at every offset, from every start: the bytes before the stop are near misses (one bit off a
    /// stop, 0x20, 0x7F, non-ASCII).
    #[test]
    fn stops_are_found_at_every_offset_and_near_misses_are_not_stops() {
        let cases: [(Search, &[u8], &[u8]); 3] = [
            (quote_or_backslash, b"\"\\", b"#]\x02\x1f\xe2\xa2\x5d"),
            (
                pointer_escape,
                b"~/",
                b".\x7f\x7c\xfe\x3e\x6e\x2d\x6f\xaf\x0f\x3f",
            ),
            (
                json_escape,
                b"\"\\\x00\x01\x08\x0a\x1f",
                b"#] \x7f\xe2\xa2\x80\xff\x5d\x9f",
            ),
        ];
        for (search, stops, near) in cases {
            for &stop in stops {
                for len in 0..40 {
                    for at in 0..=len {
                        let mut text: Vec<u8> = (0..len).map(|i| near[i % near.len()]).collect();
                        if at < len {
                            text[at] = stop;
                        }
                        for from in 0..=at {
                            assert_eq!(search(&text, from), at, "{text:?} from {from}");
                        }
                    }
                }
            }
        }
    }

    /// The block masks flag exactly the bytes `is_json_escape` flags, in whole blocks and in the last,
    /// padded one, whatever the text's length; past the end nothing is flagged.
    #[test]
    fn block_masks_flag_the_escapes_of_their_block() {
        let alphabet = b"\"\\ a\x00\x1f\x20\x7f\x80\xe2\xff}";
        for len in [0, 1, 15, 16, 63, 64, 65, 127, 128, 130, 200] {
            let text: Vec<u8> = (0..len)
                .map(|i| alphabet[(i * 7 + i / 3) % alphabet.len()])
                .collect();
            for start in (0..=len + 64).step_by(64) {
                let expected = (0..64).fold(0u64, |mask, k| {
                    let hit = text.get(start + k).is_some_and(|&c| is_json_escape(c));
                    mask | (u64::from(hit) << k)
                });
                assert_eq!(
                    json_escapes_in_block(&text, start),
                    expected,
                    "{len} from {start}"
                );
            }
        }
    }

    #[test]
    fn a_start_past_the_end_finds_nothing() {
        assert_eq!(quote_or_backslash(b"ab", 2), 2);
        assert_eq!(json_escape(b"ab", 5), 2);
        assert_eq!(pointer_escape(b"ab", 3), 2);
    }
}
