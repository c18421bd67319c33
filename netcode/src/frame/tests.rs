use super::*;
use proptest::prelude::*;

/// A deterministic byte pattern of `len` bytes (no rng needed for content).
fn pattern(len: usize, salt: u64) -> Vec<u8> {
    let mut state = salt.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

/// A frame of `len` bytes with opcode `opcode`.
fn frame_of(opcode: u8, len: usize) -> Vec<u8> {
    let mut frame = Vec::new();
    encode(opcode, &pattern(len.saturating_sub(1), len as u64), &mut frame);
    frame
}

fn chunk(id: u32, index: u16, count: u16, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    Chunk { id, index, count, data }.encode(&mut out);
    out
}

/// Pushes every message, expecting `None` for all but the last, which completes.
fn reassemble(reassembler: &mut Reassembler, messages: &[Vec<u8>]) -> Vec<u8> {
    let (last, rest) = messages.split_last().expect("at least one message");
    for (i, message) in rest.iter().enumerate() {
        assert_eq!(reassembler.push(message), Ok(None), "message {i} must not complete the frame");
    }
    reassembler.push(last).expect("the last message is valid").expect("the last message completes the frame")
}

// ---- opcodes and channels ----

#[test]
fn opcodes_match_the_spec_ports() {
    let server = [
        op::CONFIG_DATA,
        op::AUTH_DATA,
        op::AUTH_RESULT,
        op::MAP_DATA,
        op::FIRST_SHOT_DATA,
        op::SHOT_DATA,
        op::SOUND_DATA,
        op::GAME_INFORM_DATA,
        op::TECH_INFORM_DATA,
        op::CLEAR,
        op::PANEL_DATA,
        op::STAT_DATA,
        op::CHAT_DATA,
        op::VOTE_DATA,
        op::KEYSET_DATA,
        op::ACCOLADES_DATA,
    ];
    assert_eq!(server, [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 13, 14, 15, 16, 17, 18]);
    let client = [op::client::AUTH_RESPONSE, op::client::KEYS_DATA, op::client::CHAT, op::client::VOTE];
    assert_eq!(client, [1, 5, 6, 7]);
    let engine = [
        op::HELLO,
        op::WELCOME,
        op::REJECT,
        op::PING,
        op::PONG,
        op::CLOSE,
        op::CHECKPOINT,
        op::INPUT_LOG,
        op::SUCCESSION,
        op::HANDOFF,
        op::CLAIM,
        op::CHUNK,
    ];
    assert_eq!(engine, [32, 33, 34, 35, 36, 37, 40, 41, 42, 43, 44, 255]);
    for code in engine {
        assert!(!server.contains(&code) && !client.contains(&code), "engine opcode {code} collides with a port");
    }
    // Host migration's data plane, client → host.
    let data_plane = [op::LINKS, op::CHECKPOINT_REQUEST];
    assert_eq!(data_plane, [45, 46]);
    for code in data_plane {
        assert!(!server.contains(&code) && !client.contains(&code) && !engine.contains(&code), "{code} collides");
    }
    // The `@changeHost` vote.
    let vote = [op::HOST_VOTE, op::HOST_BALLOT, op::STEP_DOWN];
    assert_eq!(vote, [47, 48, 49]);
    for code in vote.into_iter().chain([op::CHAT_HISTORY]) {
        let taken = server.contains(&code) || client.contains(&code) || engine.contains(&code);
        assert!(!taken && !data_plane.contains(&code), "{code} collides");
    }
    assert_eq!(op::CHAT_HISTORY, 50);
    // Before a claim, between clients.
    let check = [op::FRAME_ACK, op::HOST_CHECK, op::HOST_SEEN];
    assert_eq!(check, [51, 52, 53]);
    for code in check {
        let taken = server.contains(&code) || client.contains(&code) || engine.contains(&code);
        assert!(!taken && !data_plane.contains(&code) && !vote.contains(&code), "{code} collides");
    }
    // A round's end, host → clients.
    assert_eq!(op::ROUND_RESULTS, 54);
    let taken = server.contains(&op::ROUND_RESULTS) || client.contains(&op::ROUND_RESULTS);
    assert!(!taken && !engine.contains(&op::ROUND_RESULTS) && !check.contains(&op::ROUND_RESULTS));
    // Where the room is, host → clients.
    assert_eq!(op::ROOM, 55);
    let taken = server.contains(&op::ROOM) || client.contains(&op::ROOM) || engine.contains(&op::ROOM);
    assert!(!taken && !check.contains(&op::ROOM) && !vote.contains(&op::ROOM) && op::ROOM != op::ROUND_RESULTS);
}

#[test]
fn channel_ids() {
    assert_eq!(Channel::Reliable.id(), 0);
    assert_eq!(Channel::Unreliable.id(), 1);
    assert_eq!(Channel::from_id(0), Some(Channel::Reliable));
    assert_eq!(Channel::from_id(1), Some(Channel::Unreliable));
    assert_eq!(Channel::from_id(2), None);
    assert!(Channel::Reliable.is_reliable());
    assert!(!Channel::Unreliable.is_reliable());
    assert_eq!(Channel::ALL.map(Channel::id), [0, 1]);
}

// ---- frames ----

#[test]
fn encode_golden_bytes() {
    let mut out = vec![0xAA];
    encode(op::CHAT_DATA, b"hi", &mut out);
    assert_eq!(out, [0xAA, 15, b'h', b'i'], "encode appends");
    let mut empty_payload = Vec::new();
    Frame { opcode: op::PING, payload: &[] }.encode(&mut empty_payload);
    assert_eq!(empty_payload, [35]);
}

#[test]
fn parse_splits_opcode_and_payload() {
    assert_eq!(parse(&[5, 1, 2, 3]), Ok(Frame { opcode: 5, payload: &[1, 2, 3] }));
    assert_eq!(parse(&[36]), Ok(Frame { opcode: 36, payload: &[] }));
    assert_eq!(parse(&[36]).map(|f| f.len()), Ok(1));
    assert_eq!(parse(&[]), Err(FrameError::Empty));
    assert_eq!(parse(&vec![3; MAX_FRAME]).map(|f| f.payload.len()), Ok(MAX_FRAME - 1));
    assert_eq!(parse(&vec![3; MAX_FRAME + 1]), Err(FrameError::TooLarge { len: MAX_FRAME + 1 }));
}

// ---- chunk frames ----

#[test]
fn chunk_header_golden_bytes() {
    assert_eq!(CHUNK_HEADER_LEN, 9);
    assert_eq!(MAX_CHUNK_DATA, 65_527);
    assert_eq!(chunk(0x0102_0304, 2, 5, &[0xEE, 0xFF]), [255, 1, 2, 3, 4, 0, 2, 0, 5, 0xEE, 0xFF]);
    assert_eq!(chunk(0xFFFF_FFFE, 0x1234, 0xABCD, &[9]), [255, 0xFF, 0xFF, 0xFF, 0xFE, 0x12, 0x34, 0xAB, 0xCD, 9]);
    let bytes = [255, 0, 0, 0, 7, 0, 1, 0, 3, 42, 43];
    assert_eq!(Chunk::parse(&bytes), Ok(Chunk { id: 7, index: 1, count: 3, data: &[42, 43] }));
    assert_eq!(Chunk::parse(&[5, 0, 0, 0, 7, 0, 1, 0, 3, 42]), Err(FrameError::NotAChunk { opcode: 5 }));
    assert_eq!(Chunk::parse(&[]), Err(FrameError::Empty));
}

#[test]
fn split_golden_first_chunk() {
    let frame = frame_of(op::MAP_DATA, MAX_MESSAGE + 1);
    let messages = Chunker::with_first_id(0xDEAD_BEEF).split(&frame).expect("a valid frame");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0][..CHUNK_HEADER_LEN], [255, 0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 2]);
    assert_eq!(messages[1][..CHUNK_HEADER_LEN], [255, 0xDE, 0xAD, 0xBE, 0xEF, 0, 1, 0, 2]);
    assert_eq!(messages[0].len(), MAX_MESSAGE);
    assert_eq!(messages[1].len(), CHUNK_HEADER_LEN + (MAX_MESSAGE + 1 - MAX_CHUNK_DATA));
    assert_eq!(messages[0][CHUNK_HEADER_LEN], op::MAP_DATA, "the first chunk's data starts with the opcode");
}

#[test]
fn small_frames_pass_through_whole() {
    let mut chunker = Chunker::new();
    for len in [1, 2, 1000, MAX_MESSAGE] {
        let frame = frame_of(op::SHOT_DATA, len);
        assert_eq!(chunker.split(&frame), Ok(vec![frame.clone()]), "a {len}-byte frame is sent whole");
        assert_eq!(Reassembler::new().push(&frame), Ok(Some(frame)));
    }
    assert_eq!(chunker.next_id(), 0, "whole frames use no id");
}

#[test]
fn frame_of_200_000_bytes_in_4_chunks_any_order() {
    let frame = frame_of(op::CHECKPOINT, 200_000);
    let messages = Chunker::new().split(&frame).expect("a valid frame");
    assert_eq!(messages.len(), 4);
    for (i, message) in messages.iter().enumerate() {
        assert!(message.len() <= MAX_MESSAGE, "chunk {i} is {} bytes", message.len());
        assert_eq!(message[0], op::CHUNK);
    }
    let lens: Vec<usize> = messages.iter().map(Vec::len).collect();
    assert_eq!(lens, [65_536, 65_536, 65_536, 200_000 - 3 * MAX_CHUNK_DATA + CHUNK_HEADER_LEN]);
    // Every permutation of the four chunks.
    let mut orders = Vec::new();
    permutations(&mut vec![0, 1, 2, 3], 0, &mut orders);
    assert_eq!(orders.len(), 24);
    let mut reassembler = Reassembler::new();
    for order in orders {
        let shuffled: Vec<Vec<u8>> = order.iter().map(|&i| messages[i].clone()).collect();
        assert!(reassemble(&mut reassembler, &shuffled) == frame, "order {order:?} reassembles byte-exact");
        assert_eq!(reassembler.partials(), 0);
        assert_eq!(reassembler.buffered_bytes(), 0);
    }
}

fn permutations(items: &mut Vec<usize>, k: usize, out: &mut Vec<Vec<usize>>) {
    if k == items.len() {
        out.push(items.clone());
        return;
    }
    for i in k..items.len() {
        items.swap(k, i);
        permutations(items, k + 1, out);
        items.swap(k, i);
    }
}

#[test]
fn largest_frame_is_accepted_one_more_byte_refused_by_both_sides() {
    let mut chunker = Chunker::new();
    let frame = frame_of(op::CHECKPOINT, MAX_FRAME);
    let messages = chunker.split(&frame).expect("exactly MAX_FRAME is allowed");
    assert_eq!(messages.len(), 5);
    assert!(messages.iter().all(|m| m.len() <= MAX_MESSAGE));
    assert!(reassemble(&mut Reassembler::new(), &messages) == frame);

    let too_big = frame_of(op::CHECKPOINT, MAX_FRAME + 1);
    assert_eq!(chunker.split(&too_big), Err(FrameError::TooLarge { len: MAX_FRAME + 1 }));
    assert_eq!(chunker.next_id(), 1, "a refused frame uses no id");

    // A whole message above the limit.
    let mut reassembler = Reassembler::new();
    assert_eq!(reassembler.push(&too_big), Err(FrameError::TooLarge { len: MAX_FRAME + 1 }));
    // The same bytes chunked by a peer that does not check: refused at the chunk that
    // goes over, before it is buffered.
    let forged: Vec<Vec<u8>> =
        too_big.chunks(MAX_CHUNK_DATA).enumerate().map(|(i, data)| chunk(9, i as u16, 5, data)).collect();
    assert_eq!(forged.len(), 5);
    for message in &forged[..4] {
        assert_eq!(reassembler.push(message), Ok(None));
    }
    assert_eq!(reassembler.push(&forged[4]), Err(FrameError::TooLarge { len: MAX_FRAME + 1 }));
    assert_eq!(reassembler.partials(), 0, "the refused frame is discarded");
}

#[test]
fn chunk_ids_increase_and_wrap() {
    let frame = frame_of(op::MAP_DATA, MAX_MESSAGE + 1);
    let mut chunker = Chunker::with_first_id(u32::MAX);
    let ids: Vec<[u8; 4]> = (0..3)
        .map(|_| {
            let messages = chunker.split(&frame).expect("valid");
            messages[0][1..5].try_into().expect("4 bytes")
        })
        .collect();
    assert_eq!(ids, [[0xFF; 4], [0, 0, 0, 0], [0, 0, 0, 1]]);
    assert_eq!(chunker.next_id(), 2);
}

#[test]
fn interleaved_messages_reassemble() {
    let a = frame_of(op::MAP_DATA, 150_000);
    let b = frame_of(op::CHECKPOINT, 70_000);
    let mut chunker = Chunker::new();
    let ma = chunker.split(&a).expect("valid");
    let mb = chunker.split(&b).expect("valid");
    assert_eq!((ma.len(), mb.len()), (3, 2));
    let mut reassembler = Reassembler::new();
    assert_eq!(reassembler.push(&ma[2]), Ok(None));
    assert_eq!(reassembler.push(&mb[1]), Ok(None));
    assert_eq!(reassembler.push(&ma[0]), Ok(None));
    assert_eq!(reassembler.partials(), 2);
    assert_eq!(reassembler.push(&[op::PING, 1]), Ok(Some(vec![op::PING, 1])), "whole frames pass in between");
    assert!(reassembler.push(&mb[0]) == Ok(Some(b.clone())));
    assert!(reassembler.push(&ma[1]) == Ok(Some(a.clone())));
    assert_eq!(reassembler.partials(), 0);
}

#[test]
fn single_chunk_message_completes_at_once() {
    let mut reassembler = Reassembler::new();
    assert_eq!(reassembler.push(&chunk(3, 0, 1, &[op::SHOT_DATA, 1, 2])), Ok(Some(vec![5, 1, 2])));
    assert_eq!(reassembler.partials(), 0);
}

// ---- errors ----

#[test]
fn split_refuses_empty_and_chunk_opcode_frames() {
    let mut chunker = Chunker::new();
    assert_eq!(chunker.split(&[]), Err(FrameError::Empty));
    assert_eq!(chunker.split(&[255, 1, 2]), Err(FrameError::NestedChunk));
    assert_eq!(chunker.split(&frame_of(op::CHUNK, 100_000)), Err(FrameError::NestedChunk));
}

#[test]
fn empty_message_is_an_error() {
    assert_eq!(Reassembler::new().push(&[]), Err(FrameError::Empty));
}

#[test]
fn truncated_chunk_header() {
    let mut reassembler = Reassembler::new();
    for len in 1..CHUNK_HEADER_LEN {
        let bytes = &[255, 0, 0, 0, 1, 0, 0, 0][..len];
        assert_eq!(reassembler.push(bytes), Err(FrameError::TruncatedChunk { len }));
    }
}

#[test]
fn zero_count() {
    assert_eq!(Reassembler::new().push(&chunk(1, 0, 0, &[1])), Err(FrameError::ZeroCount { id: 1, index: 0 }));
}

#[test]
fn index_out_of_range() {
    assert_eq!(
        Reassembler::new().push(&chunk(1, 3, 3, &[1])),
        Err(FrameError::IndexOutOfRange { id: 1, index: 3, count: 3 })
    );
    assert_eq!(
        Reassembler::new().push(&chunk(1, u16::MAX, 2, &[1])),
        Err(FrameError::IndexOutOfRange { id: 1, index: u16::MAX, count: 2 })
    );
}

#[test]
fn empty_chunk_data() {
    assert_eq!(Reassembler::new().push(&chunk(4, 1, 2, &[])), Err(FrameError::EmptyChunk { id: 4, index: 1 }));
}

#[test]
fn count_mismatch() {
    let mut reassembler = Reassembler::new();
    assert_eq!(reassembler.push(&chunk(1, 0, 3, &[7])), Ok(None));
    assert_eq!(
        reassembler.push(&chunk(1, 1, 4, &[8])),
        Err(FrameError::CountMismatch { id: 1, index: 1, expected: 3, got: 4 })
    );
    assert_eq!(reassembler.partials(), 0, "the frame in progress is discarded");
}

#[test]
fn duplicate_chunk() {
    let mut reassembler = Reassembler::new();
    assert_eq!(reassembler.push(&chunk(1, 1, 3, &[7])), Ok(None));
    assert_eq!(reassembler.push(&chunk(1, 1, 3, &[7])), Err(FrameError::DuplicateChunk { id: 1, index: 1 }));
}

#[test]
fn too_many_partials() {
    let mut reassembler = Reassembler::new();
    for id in 0..MAX_PARTIALS as u32 {
        assert_eq!(reassembler.push(&chunk(id, 0, 2, &[1])), Ok(None));
    }
    assert_eq!(reassembler.push(&chunk(99, 0, 2, &[1])), Err(FrameError::TooManyPartials { id: 99 }));
    assert_eq!(reassembler.partials(), MAX_PARTIALS, "frames in progress are kept");
    // Chunks of frames already in progress and single-chunk frames still pass.
    assert_eq!(reassembler.push(&chunk(0, 1, 2, &[2])), Ok(Some(vec![1, 2])));
    assert_eq!(reassembler.push(&chunk(98, 0, 1, &[3])), Ok(Some(vec![3])));
    assert_eq!(reassembler.push(&chunk(99, 0, 2, &[1])), Ok(None), "room again once one completes");
}

#[test]
fn reassembled_frame_must_not_be_a_chunk() {
    let mut reassembler = Reassembler::new();
    assert_eq!(reassembler.push(&chunk(1, 0, 1, &[255, 0])), Err(FrameError::NestedChunk));
    assert_eq!(reassembler.push(&chunk(2, 0, 2, &[255, 0])), Err(FrameError::NestedChunk));
    assert_eq!(reassembler.partials(), 0);
}

#[test]
fn reassembler_stays_usable_after_errors() {
    let frame = frame_of(op::MAP_DATA, 100_000);
    let messages = Chunker::with_first_id(5).split(&frame).expect("valid");
    let mut reassembler = Reassembler::new();
    assert_eq!(reassembler.push(&messages[0]), Ok(None));
    // Errors on other ids leave frame 5 alone.
    assert!(reassembler.push(&chunk(6, 0, 0, &[1])).is_err());
    assert!(reassembler.push(&[255, 0]).is_err());
    assert!(reassembler.push(&[]).is_err());
    assert!(reassembler.push(&messages[1]) == Ok(Some(frame.clone())));
    // An error on id 5 drops it; the id can then start over.
    assert_eq!(reassembler.push(&messages[0]), Ok(None));
    assert!(reassembler.push(&chunk(5, 9, 2, &[1])).is_err());
    assert_eq!(reassembler.partials(), 0);
    assert_eq!(reassembler.push(&messages[1]), Ok(None));
    assert!(reassembler.push(&messages[0]) == Ok(Some(frame)));
}

#[test]
fn error_messages_read_well() {
    assert_eq!(FrameError::Empty.to_string(), "empty frame: no opcode");
    assert_eq!(
        FrameError::TooLarge { len: 262_145 }.to_string(),
        "frame of 262145 bytes or more exceeds the 262144-byte limit"
    );
    assert_eq!(
        FrameError::TooManyPartials { id: 9 }.to_string(),
        "message 9 would be chunked message 5 in progress, at most 4 are"
    );
}

// ---- properties ----

/// A message that looks like a chunk often enough to reach every check.
fn message() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..32),
        (0u32..6, 0u16..5, 0u16..5, proptest::collection::vec(any::<u8>(), 0..8))
            .prop_map(|(id, index, count, data)| chunk(id, index, count, &data)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn split_then_reassemble_round_trip(len in 0..=MAX_FRAME, opcode in 0u8..255, salt in any::<u64>()) {
        let frame = if len == 0 { Vec::new() } else {
            let mut frame = Vec::with_capacity(len);
            encode(opcode, &pattern(len - 1, salt), &mut frame);
            frame
        };
        let mut chunker = Chunker::new();
        let messages = match chunker.split(&frame) {
            Ok(messages) => messages,
            Err(error) => {
                prop_assert_eq!(len, 0);
                prop_assert_eq!(error, FrameError::Empty);
                return Ok(());
            }
        };
        prop_assert_eq!(messages.len(), if len <= MAX_MESSAGE { 1 } else { len.div_ceil(MAX_CHUNK_DATA) });
        prop_assert!(messages.iter().all(|m| m.len() <= MAX_MESSAGE));
        // Reverse order on odd salts, to cover out-of-order arrival.
        let mut messages = messages;
        if salt % 2 == 1 {
            messages.reverse();
        }
        let mut reassembler = Reassembler::new();
        let whole = reassemble(&mut reassembler, &messages);
        prop_assert!(whole == frame);
        prop_assert_eq!(parse(&whole).map(|f| f.opcode), Ok(opcode));
    }
}

proptest! {
    #[test]
    fn random_messages_never_panic_the_reassembler(messages in proptest::collection::vec(message(), 0..64)) {
        let mut reassembler = Reassembler::new();
        for message in &messages {
            if let Ok(Some(frame)) = reassembler.push(message) {
                prop_assert!(!frame.is_empty() && frame.len() <= MAX_FRAME);
                prop_assert_ne!(frame[0], op::CHUNK);
            }
            prop_assert!(reassembler.partials() <= MAX_PARTIALS);
            prop_assert!(reassembler.buffered_bytes() <= MAX_PARTIALS * MAX_FRAME);
        }
    }

    #[test]
    fn random_bytes_never_panic_parse(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        match parse(&bytes) {
            Ok(frame) => {
                let mut again = Vec::new();
                frame.encode(&mut again);
                prop_assert_eq!(&again, &bytes);
            }
            Err(error) => prop_assert_eq!(error, FrameError::Empty),
        }
        if let Ok(chunk) = Chunk::parse(&bytes) {
            let mut again = Vec::new();
            chunk.encode(&mut again);
            prop_assert_eq!(&again, &bytes);
        }
    }

    #[test]
    fn chunk_round_trip(id in any::<u32>(), count in 1u16.., index_seed in any::<u16>(),
                        data in proptest::collection::vec(any::<u8>(), 1..64)) {
        let index = index_seed % count;
        let bytes = chunk(id, index, count, &data);
        prop_assert_eq!(Chunk::parse(&bytes), Ok(Chunk { id, index, count, data: &data }));
    }
}
