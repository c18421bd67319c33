//! Rigid-body tags: the `u128` every body carries in rapier's `user_data`, its kind byte and payload.
//!
//! # Layout
//!
//! ```text
//!  bit 127 ............ 72 | 71 ................. 8 | 7 ..... 0
//!  reserved (zero)         | payload (u64)          | kind (u8)
//! ```
//!
//! * **kind** (low byte) says what the body is. Kind [`UNTAGGED_KIND`] (0) is rapier's
//!   default `user_data`: a body nobody tagged. Kind [`MAP_OBJECT_KIND`] (1) is reserved by
//!   the engine for the bodies of the map. A game numbers its own kinds from
//!   [`FIRST_GAME_KIND`] (2) up.
//! * **payload** is free for the kind's owner: a game packs an entity id, a team, an owner
//!   into it ([`encode_tag`], [`tag_payload`]).
//!
//! # Map bodies
//!
//! The engine's map bodies all have kind 1 and differ by payload:
//!
//! | body                               | tag                              | [`map_object_index`] |
//! |------------------------------------|----------------------------------|----------------------|
//! | static wall block                  | [`MAP_OBJECT_TAG`] (payload 0)   | `None`               |
//! | dynamic object `physicsDynamic[i]` | [`encode_map_object_at`]`(i)`: payload `i + 1` | `Some(i)` |
//!
//! The dynamic index is stored **plus one** so that payload 0 keeps meaning "static, no
//! index" and `user_data == MAP_OBJECT_TAG` stays true for static blocks only. Test "is
//! this a map body" with [`is_map_object`] (it reads the kind byte), never with
//! `user_data == MAP_OBJECT_TAG`, which misses every dynamic body.

/// Number of low bits that hold the kind.
pub const KIND_BITS: u32 = 8;

/// The kind of a body nobody tagged (rapier's default `user_data` is 0).
pub const UNTAGGED_KIND: u8 = 0;

/// The kind the engine reserves for map bodies (static wall blocks and dynamic objects).
pub const MAP_OBJECT_KIND: u8 = 1;

/// The first kind a game may use for its own bodies; kinds 0 and 1 belong to the engine.
pub const FIRST_GAME_KIND: u8 = 2;

/// The tag of a static map body (a merged wall block): kind 1, payload 0, no index.
pub const MAP_OBJECT_TAG: u128 = MAP_OBJECT_KIND as u128;

/// Builds a tag from a kind and a payload (`payload << 8 | kind`); bits 72 and up stay zero.
pub const fn encode_tag(kind: u8, payload: u64) -> u128 {
    ((payload as u128) << KIND_BITS) | kind as u128
}

/// The kind of a tag: its low byte.
pub const fn tag_kind(tag: u128) -> u8 {
    tag as u8
}

/// The payload of a tag: bits 8 to 71 (the bits a [`encode_tag`] call put there).
pub const fn tag_payload(tag: u128) -> u64 {
    (tag >> KIND_BITS) as u64
}

/// Whether the tag belongs to a map body, static or dynamic (its kind is [`MAP_OBJECT_KIND`]).
pub const fn is_map_object(tag: u128) -> bool {
    tag_kind(tag) == MAP_OBJECT_KIND
}

/// The tag of the dynamic map body built from `physicsDynamic[i]`: kind 1, index + 1 above it.
///
/// Computed in `u128`, so it cannot overflow for any `usize`.
pub const fn encode_map_object_at(i: usize) -> u128 {
    ((i as u128 + 1) << KIND_BITS) | MAP_OBJECT_TAG
}

/// The `physicsDynamic` index of a dynamic map body's tag; `None` for a static map body
/// ([`MAP_OBJECT_TAG`]) and for any tag that is not a map body's.
pub const fn map_object_index(tag: u128) -> Option<usize> {
    if !is_map_object(tag) {
        return None;
    }
    let stored = tag >> KIND_BITS;
    if stored == 0 || stored - 1 > usize::MAX as u128 {
        return None;
    }
    Some((stored - 1) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_object_tags_have_the_documented_bits() {
        assert_eq!(MAP_OBJECT_TAG, 0x1);
        assert_eq!(encode_map_object_at(0), 0x101, "index 0 is stored as 1 above the kind byte");
        assert_eq!(encode_map_object_at(3), 0x401);
        assert_eq!(encode_map_object_at(255), 0x1_0001);
    }

    #[test]
    fn dynamic_index_round_trips_and_static_has_none() {
        for i in [0, 1, 2, 41, 255, 256, 65_535, 1 << 40, usize::MAX - 1, usize::MAX] {
            assert_eq!(map_object_index(encode_map_object_at(i)), Some(i), "index {i}");
            assert!(is_map_object(encode_map_object_at(i)), "index {i}");
        }
        assert_eq!(map_object_index(MAP_OBJECT_TAG), None);
        assert!(is_map_object(MAP_OBJECT_TAG));
    }

    #[test]
    fn game_tags_are_not_map_objects_even_with_a_payload() {
        assert_eq!(map_object_index(0), None, "untagged body");
        assert!(!is_map_object(0));
        // Kind 2 with payload 1 has the same payload as encode_map_object_at(0) (0x101 vs 0x102).
        assert_eq!(encode_tag(FIRST_GAME_KIND, 1), 0x102);
        assert!(!is_map_object(0x102));
        assert_eq!(map_object_index(0x102), None);
        assert!(!is_map_object(encode_tag(0xFF, u64::MAX)));
        // A tag with kind 1 in the low byte is a map object whatever lies above it.
        assert!(is_map_object(0x00AB_CD01));
    }

    #[test]
    fn a_game_kind_and_a_crate_tell_apart() {
        const SHOT: u8 = FIRST_GAME_KIND + 1;
        let shot = encode_tag(SHOT, 42);
        assert_eq!((tag_kind(shot), tag_payload(shot)), (SHOT, 42));
        assert!(!is_map_object(shot));
        let crate_tag = encode_map_object_at(3);
        assert_eq!(tag_kind(crate_tag), MAP_OBJECT_KIND);
        assert_eq!(tag_payload(crate_tag), 4, "the payload is the index plus one");
    }

    #[test]
    fn kind_and_payload_are_packed_as_documented() {
        let tag = encode_tag(7, 0x1234_5678_9ABC_DEF0);
        assert_eq!(tag, (0x1234_5678_9ABC_DEF0 << 8) | 0x07);
        assert_eq!(tag_kind(tag), 7);
        assert_eq!(tag_payload(tag), 0x1234_5678_9ABC_DEF0);
        assert_eq!(encode_tag(2, 0), 2);
        assert_eq!(tag_payload(encode_tag(9, u64::MAX)), u64::MAX);
        assert_eq!(encode_tag(9, u64::MAX) >> 72, 0, "bits 72 and up stay zero");
    }

    #[test]
    fn payload_reads_bits_8_to_71_only() {
        let tag = (0xFFu128 << 72) | (5u128 << 8) | 3;
        assert_eq!(tag_payload(tag), 5);
        assert_eq!(tag_kind(tag), 3);
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn encode_tag_round_trips(kind: u8, payload: u64) {
                let tag = encode_tag(kind, payload);
                prop_assert_eq!(tag_kind(tag), kind);
                prop_assert_eq!(tag_payload(tag), payload);
                prop_assert_eq!(is_map_object(tag), kind == MAP_OBJECT_KIND);
            }

            #[test]
            fn map_index_round_trips(i: usize) {
                prop_assert_eq!(map_object_index(encode_map_object_at(i)), Some(i));
            }
        }
    }
}
