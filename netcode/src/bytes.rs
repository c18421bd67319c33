//! Big-endian bytes: one bounds-checked reader for untrusted payloads, and the writes that
//! go with it. Snapshot frames, chunk headers, input batches and the migration messages read through
//! [`Reader`], so that none of them indexes a slice by hand.
//!
//! ```
//! use vimp_netcode::bytes::{Reader, WriteBe};
//!
//! let mut out = Vec::new();
//! out.put_u32(7);
//! out.push(2);
//! let mut r = Reader::new(&out);
//! assert_eq!((r.u32("epoch")?, r.u8("rank")?), (7, 2));
//! assert!(r.is_empty());
//! assert!(r.u16("more").is_err());
//! # Ok::<(), vimp_netcode::bytes::Truncated>(())
//! ```

/// A read past the end: where, of what, and how many bytes were missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("truncated at byte {at}: {what} needs {need} more byte(s)")]
pub struct Truncated {
    /// The offset of the read.
    pub at: usize,
    /// What was being read.
    pub what: &'static str,
    /// The bytes missing.
    pub need: usize,
}

/// A cursor over untrusted bytes: every read is bounds-checked.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    /// Whether everything has been read.
    pub fn is_empty(&self) -> bool {
        self.at >= self.bytes.len()
    }

    /// The bytes not read yet, counted.
    pub fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.at)
    }

    /// The offset of the next read.
    pub fn position(&self) -> usize {
        self.at
    }

    /// The next `N` bytes.
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], Truncated> {
        let end = self.at.checked_add(N).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(Truncated { at: self.at, what, need: N - self.remaining() });
        };
        let mut a = [0; N];
        a.copy_from_slice(&self.bytes[self.at..end]);
        self.at = end;
        Ok(a)
    }

    /// One byte.
    pub fn u8(&mut self, what: &'static str) -> Result<u8, Truncated> {
        self.array::<1>(what).map(|a| a[0])
    }

    /// A big-endian `u16`.
    pub fn u16(&mut self, what: &'static str) -> Result<u16, Truncated> {
        self.array(what).map(u16::from_be_bytes)
    }

    /// A big-endian `u32`.
    pub fn u32(&mut self, what: &'static str) -> Result<u32, Truncated> {
        self.array(what).map(u32::from_be_bytes)
    }

    /// A big-endian `u128`.
    pub fn u128(&mut self, what: &'static str) -> Result<u128, Truncated> {
        self.array(what).map(u128::from_be_bytes)
    }

    /// Everything not read yet (the reader is then at the end).
    pub fn rest(&mut self) -> &'a [u8] {
        let rest = &self.bytes[self.at.min(self.bytes.len())..];
        self.at = self.bytes.len();
        rest
    }
}

/// Big-endian writes onto a byte buffer.
pub trait WriteBe {
    /// Appends a big-endian `u16`.
    fn put_u16(&mut self, v: u16);
    /// Appends a big-endian `u32`.
    fn put_u32(&mut self, v: u32);
    /// Appends a big-endian `u128`.
    fn put_u128(&mut self, v: u128);
}

impl WriteBe for Vec<u8> {
    fn put_u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_be_bytes());
    }

    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes());
    }

    fn put_u128(&mut self, v: u128) {
        self.extend_from_slice(&v.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn what_is_written_reads_back(a in any::<u16>(), b in any::<u32>(), c in any::<u128>(), tail in proptest::collection::vec(any::<u8>(), 0..8)) {
            let mut out = Vec::new();
            out.put_u16(a);
            out.put_u32(b);
            out.put_u128(c);
            out.extend_from_slice(&tail);
            let mut r = Reader::new(&out);
            prop_assert_eq!((r.u16("a")?, r.u32("b")?, r.u128("c")?), (a, b, c));
            prop_assert_eq!(r.rest(), &tail[..]);
            prop_assert!(r.is_empty());
        }

        #[test]
        fn short_input_is_an_error_never_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut r = Reader::new(&bytes);
            let read = (|| Ok::<_, Truncated>((r.u8("a")?, r.u16("b")?, r.u32("c")?, r.u128("d")?)))();
            prop_assert_eq!(read.is_ok(), bytes.len() >= 23);
        }
    }

    #[test]
    fn a_short_read_says_where_and_how_much() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u8("x"), Ok(1));
        assert_eq!(r.u32("epoch"), Err(Truncated { at: 1, what: "epoch", need: 2 }));
        assert_eq!(r.position(), 1, "a failed read consumes nothing");
    }
}
