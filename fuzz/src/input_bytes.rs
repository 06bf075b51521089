//! The byte reader every decoder of `src/*_model.rs` uses, included by each model with
//! `#[path]` (so it names no crate-local paths). Reading past the end gives `None`: a
//! truncated op ends the case, which makes every byte string a valid input.
#![allow(dead_code)]

/// A cursor over fuzzer bytes.
pub(crate) struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Bytes<'a> {
        Bytes { data, pos: 0 }
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    /// Two bytes, little-endian.
    pub(crate) fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes([self.u8()?, self.u8()?]))
    }

    /// Four bytes, little-endian.
    pub(crate) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes([
            self.u8()?,
            self.u8()?,
            self.u8()?,
            self.u8()?,
        ]))
    }
}

/// Decodes ops with `op` until the bytes run out or `max` ops were read (the bound on
/// the work one input can ask for).
pub(crate) fn decode_ops<T>(
    data: &[u8],
    max: usize,
    mut op: impl FnMut(&mut Bytes<'_>) -> Option<T>,
) -> Vec<T> {
    let mut b = Bytes::new(data);
    let mut ops = Vec::new();
    while ops.len() < max {
        let Some(o) = op(&mut b) else { break };
        ops.push(o);
    }
    ops
}

/// Whether decoders steer around the known, not yet fixed deviations (their
/// `known_open_*` functions). `UPROC_FUZZ_NO_STEER=1` turns that off, to reproduce the
/// inputs kept in `fuzz/regressions/` or to check whether a fix landed.
#[allow(dead_code)] // no deviation is open now; a new `known_open_*` function calls it
pub(crate) fn steer_around_known_bugs() -> bool {
    static STEER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *STEER.get_or_init(|| std::env::var_os("UPROC_FUZZ_NO_STEER").is_none())
}
