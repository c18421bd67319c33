use proptest::prelude::*;

use super::*;

#[test]
fn the_rule_is_rtt_bucket_then_join_order_and_skips_the_ineligible() {
    let c = |peer, rtt_ms, joined, eligible| Candidate {
        peer: PeerKey(peer),
        rtt_ms,
        joined,
        eligible,
        reaches_all: peer != 7,
    };
    let ranked = rank(&[
        c(1, Some(55.0), 0, true),
        c(2, Some(12.0), 3, true),
        c(3, Some(19.9), 1, true),
        c(4, None, 2, true),
        c(5, Some(1.0), 4, false),
        c(6, Some(41.0), 5, true),
        c(7, Some(2.0), 6, true),
    ]);
    // 3 and 2 share the 0–20 ms bucket: 3 joined first; 1 and 6 share 40–60 ms: 1 joined
    // first; 4 has no sample yet; 5 may not succeed; 7 cannot reach everyone.
    assert_eq!(ranked, [PeerKey(3), PeerKey(2), PeerKey(1), PeerKey(6), PeerKey(4)]);
}

#[test]
fn a_candidate_reaches_all_when_its_report_names_every_other_remote_peer() {
    let k = PeerKey;
    let remote = [k(1), k(2), k(3)];
    assert!(reaches_all(k(1), Some(&[k(9), k(2), k(3)]), &remote), "itself and extra peers do not matter");
    assert!(!reaches_all(k(1), Some(&[k(9), k(2)]), &remote), "no link to 3");
    assert!(!reaches_all(k(1), None, &remote), "no report yet");
    assert!(!reaches_all(k(1), None, &[k(1)]), "alone, a client that never reports is no successor");
    assert!(reaches_all(k(1), Some(&[]), &[k(1)]), "alone, an empty report reaches everyone");
    assert!(reaches_all(k(1), Some(&[]), &[]));
}

#[test]
fn links_layout_is_as_documented() {
    let l = Links { peers: vec![PeerKey(5), PeerKey(u128::MAX)] };
    let bytes = l.encode();
    assert_eq!(bytes.len(), 33);
    assert_eq!((bytes[0], bytes[16], bytes[17]), (2, 5, 0xff));
    assert_eq!(Links::decode(&bytes), Ok(l));
    assert_eq!(Links::decode(&bytes[..32]), Err(MigrationError::BadLinks { len: 32 }));
    assert_eq!(Links::decode(&[]), Err(MigrationError::BadLinks { len: 0 }));
    assert_eq!(Links::decode(&[0]), Ok(Links::default()));
}

#[test]
fn change_host_vote_layouts_are_as_documented() {
    let v = HostVote { epoch: 0x0102_0304, caller: PeerKey(5), id: 0x0a0b_0c0d };
    let bytes = v.encode();
    assert_eq!(bytes.len(), 24);
    assert_eq!((&bytes[..4], bytes[19], &bytes[20..]), (&[1, 2, 3, 4][..], 5, &[10, 11, 12, 13][..]));
    assert_eq!(HostVote::decode(&bytes), Ok(v));
    assert_eq!(HostVote::decode(&bytes[..23]), Err(MigrationError::BadControl { len: 23 }));
    assert_ne!(HostVote::id_for(PeerKey(1), 1), HostVote::id_for(PeerKey(2), 1), "callers differ");
    assert_ne!(HostVote::id_for(PeerKey(1), 1), HostVote::id_for(PeerKey(1), 2), "calls differ");

    assert_eq!(HostBallot { id: 7, yes: true }.encode(), [0, 0, 0, 7, 1]);
    assert_eq!(HostBallot::decode(&[0, 0, 0, 7, 0]), Ok(HostBallot { id: 7, yes: false }));
    assert_eq!(HostBallot::decode(&[0, 0, 0, 7, 2]), Err(MigrationError::BadVote));
    assert_eq!(HostBallot::decode(&[0, 0, 7]), Err(MigrationError::BadControl { len: 3 }));

    let s = StepDown { id: 7, yes: 2, electorate: 3 };
    assert_eq!(s.encode(), [0, 0, 0, 7, 0, 2, 0, 3]);
    assert_eq!(StepDown::decode(&s.encode()), Ok(s));
    assert_eq!(StepDown::decode(&[0, 0, 0, 7, 0, 4, 0, 3]), Err(MigrationError::BadVote), "more yes than voters");
    assert_eq!(StepDown::decode(&[0, 0, 0, 7, 0, 0, 0, 0]), Err(MigrationError::BadVote), "nobody voted");
    assert_eq!(StepDown::decode(&[0; 9]), Err(MigrationError::BadControl { len: 9 }));
    assert_eq!(CHANGE_HOST_VOTE, "@changeHost");
}

#[test]
fn a_claim_beats_an_older_epoch_or_a_worse_rank_only() {
    let c = Claim { epoch: 2, rank: 1, tick: 0x0102_0304, evidence: Evidence { lost: 2, answered: 3 } };
    assert!(c.beats(1, 0), "a newer epoch beats any rank");
    assert!(c.beats(2, 3), "the same epoch and a better rank");
    assert!(!c.beats(2, 1) && !c.beats(2, 0), "an equal or better host stays");
    assert!(!c.beats(3, 9), "a stale epoch never beats");
    // Rivals at one epoch: the better rank, then the lower key; each side agrees.
    let (ann, bob) = (PeerKey(7), PeerKey(9));
    assert!(c.precedes(ann, 1, bob) && !c.precedes(bob, 1, ann), "the lower key at the same rank");
    assert!(c.precedes(bob, 2, ann), "a better rank whatever the keys");
    assert!(!c.precedes(ann, 0, bob), "a worse rank whatever the keys");
    assert!(!c.precedes(ann, 1, ann), "not before itself");
    assert_eq!(c.encode(), [0, 0, 0, 2, 1, 1, 2, 3, 4, 2, 3]);
    assert!(c.evidence.holds_the_room(), "2 of 3");
    assert!(!Evidence { lost: 1, answered: 2 }.holds_the_room(), "a tie is no majority");
    assert!(!Evidence::default().holds_the_room(), "nothing is no majority");
    assert!(Evidence { lost: 1, answered: 1 }.holds_the_room(), "the only member that answered");
    let bare = Claim::decode(&[0, 0, 0, 2, 1, 1, 2, 3, 4]).expect("a claim without its evidence");
    assert_eq!(bare, Claim::new(2, 1, 0x0102_0304), "rests on nothing");
    assert_eq!(Claim::decode(&[0, 0, 0, 2, 1, 1, 2, 3, 4, 2]), Err(MigrationError::BadControl { len: 10 }));
    assert_eq!(Claim::decode(&[0, 0, 2]), Err(MigrationError::BadControl { len: 3 }));
    assert_eq!(Claim::decode(&[0, 0, 0, 2, 1]), Err(MigrationError::BadControl { len: 5 }), "the tick is due");
    assert_eq!(Handoff::decode(&[0; 19]), Err(MigrationError::BadControl { len: 19 }));
    assert_eq!(Handoff { epoch: 7, to: PeerKey(9) }.encode().len(), 20);
}

#[test]
fn succession_layout_is_as_documented() {
    let s = Succession { epoch: 0x0102_0304, peers: vec![PeerKey(5)], voters: None };
    let bytes = s.encode();
    assert_eq!(&bytes[..5], [1, 2, 3, 4, 1]);
    assert_eq!(bytes.len(), 21);
    assert_eq!(bytes[20], 5);
    assert_eq!(Succession::decode(&bytes), Ok(s));
    assert_eq!(Succession::decode(&bytes[..20]), Err(MigrationError::BadSuccession { len: 20 }));
    let s = Succession { epoch: 1, peers: vec![PeerKey(5)], voters: Some(vec![PeerKey(5), PeerKey(6)]) };
    let bytes = s.encode();
    assert_eq!((bytes.len(), bytes[21], bytes[37], bytes[53]), (54, 2, 5, 6));
    assert_eq!(Succession::decode(&bytes), Ok(s));
    assert_eq!(Succession::decode(&bytes[..53]), Err(MigrationError::BadSuccession { len: 53 }));
    let none = Succession { epoch: 1, peers: vec![], voters: Some(vec![]) };
    assert_eq!(Succession::decode(&none.encode()), Ok(none), "nobody answers checks");
    assert_eq!(Succession::decode(&[0, 0, 0, 0, 200]), Err(MigrationError::TooManySuccessors { n: 200 }));
}

#[test]
fn a_big_checkpoint_goes_in_parts_and_comes_back() {
    let bytes: Vec<u8> = (0..(2 * PART_DATA + 10)).map(|i| (i % 251) as u8).collect();
    let parts = checkpoint_parts(9, &bytes).expect("parts");
    assert_eq!(parts.len(), 3);
    assert!(parts.iter().all(|p| p.len() <= PART_HEADER_LEN + PART_DATA));
    let mut a = CheckpointAssembler::new();
    assert_eq!(a.push(&parts[0]), Ok(None));
    assert_eq!(a.push(&parts[1]), Ok(None));
    assert_eq!(a.push(&parts[2]), Ok(Some(bytes.clone())));
    // Out of order: refused, and the next index 0 starts afresh.
    assert_eq!(a.push(&parts[1]), Err(MigrationError::OutOfOrder { id: 9, index: 1 }));
    assert_eq!(a.push(&parts[0]), Ok(None));
    assert_eq!(a.push(&parts[2]), Err(MigrationError::OutOfOrder { id: 9, index: 2 }));
    // A checkpoint left incomplete is dropped by the next one.
    let small = checkpoint_parts(10, b"tiny").expect("parts");
    assert_eq!(a.push(&parts[0]), Ok(None));
    assert_eq!(a.push(&small[0]), Ok(Some(b"tiny".to_vec())));
    assert_eq!(checkpoint_parts(1, b"").map(|p| p.len()), Ok(1));
    assert_eq!(CheckpointAssembler::new().push(&checkpoint_parts(1, b"").expect("parts")[0]), Ok(Some(vec![])));
}

#[test]
fn an_answer_says_alive_only_of_the_host_asked_about_or_a_join_heard_within_100_ms() {
    let seen = |following, silence_ms| HostSeen { asked: 4, following, silence_ms };
    assert!(seen(4, 0).alive());
    assert!(seen(4, 99).alive());
    assert!(!seen(4, 100).alive(), "100 ms of silence is the line");
    assert!(!seen(4, u32::MAX).alive());
    assert!(!seen(5, 0).alive(), "a newer host: the one asked about is gone");
    assert!(!seen(3, 0).alive(), "an older host says nothing of this one");
    assert!(seen(0, 99).alive(), "still joining, linked 99 ms ago: too soon to tell");
    assert!(!seen(0, 100).alive(), "still joining, and no hello answered in 100 ms");
    assert_eq!(HostCheck::decode(&[0, 0, 0]), Err(MigrationError::BadControl { len: 3 }));
    assert_eq!(HostSeen::decode(&[0; 13]), Err(MigrationError::BadControl { len: 13 }));
}

proptest! {
    #[test]
    fn successions_round_trip(
        epoch in any::<u32>(),
        peers in proptest::collection::vec(any::<u128>(), 0..MAX_SUCCESSORS),
        voters in proptest::option::of(proptest::collection::vec(any::<u128>(), 0..40)),
    ) {
        let voters = voters.map(|v| v.into_iter().map(PeerKey).collect());
        let s = Succession { epoch, peers: peers.into_iter().map(PeerKey).collect(), voters };
        prop_assert_eq!(Succession::decode(&s.encode()), Ok(s));
    }

    #[test]
    fn parts_round_trip(id in any::<u32>(), bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let mut a = CheckpointAssembler::new();
        let mut out = None;
        for part in checkpoint_parts(id, &bytes).expect("parts") {
            out = a.push(&part).expect("in order");
        }
        prop_assert_eq!(out, Some(bytes));
    }

    #[test]
    fn links_round_trip(peers in proptest::collection::vec(any::<u128>(), 0..MAX_LINKS)) {
        let l = Links { peers: peers.into_iter().map(PeerKey).collect() };
        prop_assert_eq!(Links::decode(&l.encode()), Ok(l));
    }

    #[test]
    fn claims_and_handoffs_round_trip(epoch in any::<u32>(), rank in any::<u8>(), tick in any::<u32>(), to in any::<u128>()) {
        let c = Claim { epoch, rank, tick, evidence: Evidence { lost: rank, answered: rank.wrapping_mul(3) } };
        prop_assert_eq!(Claim::decode(&c.encode()), Ok(c));
        let h = Handoff { epoch, to: PeerKey(to) };
        prop_assert_eq!(Handoff::decode(&h.encode()), Ok(h));
    }

    #[test]
    fn change_host_votes_round_trip(
        epoch in any::<u32>(),
        caller in any::<u128>(),
        id in any::<u32>(),
        yes in any::<bool>(),
        counts in (1..=u16::MAX).prop_flat_map(|n| (0..=n, Just(n))),
    ) {
        let v = HostVote { epoch, caller: PeerKey(caller), id };
        prop_assert_eq!(HostVote::decode(&v.encode()), Ok(v));
        let b = HostBallot { id, yes };
        prop_assert_eq!(HostBallot::decode(&b.encode()), Ok(b));
        let s = StepDown { id, yes: counts.0, electorate: counts.1 };
        prop_assert_eq!(StepDown::decode(&s.encode()), Ok(s));
    }

    #[test]
    fn host_checks_round_trip(asked in any::<u32>(), passes in any::<bool>(), following in any::<u32>(), silence_ms in any::<u32>()) {
        let c = HostCheck { epoch: asked, passes };
        prop_assert_eq!(HostCheck::decode(&c.encode()), Ok(c));
        // A client of an earlier build sends the epoch alone: it does not pass.
        prop_assert_eq!(HostCheck::decode(&asked.to_be_bytes()), Ok(HostCheck { epoch: asked, passes: false }));
        let seen = HostSeen { asked, following, silence_ms };
        prop_assert_eq!(HostSeen::decode(&seen.encode()), Ok(seen));
    }

    #[test]
    fn garbage_never_panics(frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8)) {
        let mut a = CheckpointAssembler::new();
        for f in &frames {
            let _ = Succession::decode(f);
            let _ = Claim::decode(f);
            let _ = Handoff::decode(f);
            let _ = Links::decode(f);
            let _ = HostVote::decode(f);
            let _ = HostBallot::decode(f);
            let _ = StepDown::decode(f);
            let _ = HostCheck::decode(f);
            let _ = HostSeen::decode(f);
            let _ = a.push(f);
        }
    }
}
