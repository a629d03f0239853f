//! Wire: headers, frames, the stream reader, the peer hello.

#[allow(unused_imports)]
use crate::{memory::*, metadata::*, partition::*, storage_boot::*, storage_logs::*, support::*, vsr_node::*};

// ---------------------------------------------------------------------------------------
// Wire: headers, frames, the stream reader, the peer hello
// ---------------------------------------------------------------------------------------

pub(crate) fn command() -> impl Strategy<Value = Command> {
    prop::sample::select(Command::ALL.to_vec())
}

/// A header with every field arbitrary within what a header may hold (sealing sets
/// `size` and the checksums): views, ops, commit points and timestamps are drawn up
/// to their bounds (`wire::VIEW_MAX` and the like), past which no header decodes.
pub(crate) fn header() -> impl Strategy<Value = Header> {
    (any::<[u128; 4]>(), any::<[u64; 9]>(), command(), any::<[u8; 3]>()).prop_map(|(wide, narrow, command, small)| {
        let mut header = Header::new(command);
        [header.parent, header.client, header.context, header.checksum_body] = wide;
        [
            header.cluster,
            header.group,
            header.view,
            header.op,
            header.commit,
            header.request,
            header.timestamp,
            header.log_view,
            header.nonce,
        ] = narrow;
        [header.replica, header.operation, header.flags] = small;
        header.view %= wire::VIEW_MAX + 1;
        header.log_view %= wire::VIEW_MAX + 1;
        header.op %= wire::OP_MAX + 1;
        header.commit %= wire::OP_MAX + 1;
        header.timestamp %= wire::TIMESTAMP_MAX_MICROS + 1;
        header.size = (HEADER_BYTES as u32).wrapping_add(narrow[0] as u32 % 4096);
        header
    })
}

/// A sealed frame and what it carries.
pub(crate) fn frame() -> impl Strategy<Value = (Vec<u8>, Header, Vec<u8>)> {
    (header(), bytes(600)).prop_map(|(header, body)| {
        let frame = wire::seal_header(header, &body);
        let (sealed, _) = wire::open(&frame).expect("a sealed frame opens");
        (frame, sealed, body)
    })
}

/// Where a header holds its frame's size (`wire/header.rs` layout).
pub(crate) const HEADER_SIZE_AT: usize = 152;

/// Give `bytes` (at least a header) a valid header checksum again, to reach the checks
/// behind it.
pub(crate) fn reseal_header(bytes: &mut [u8]) {
    let sum = wire::checksum(&bytes[16..HEADER_BYTES]);
    bytes[..16].copy_from_slice(&sum.to_le_bytes());
}

/// Read frames from `stream` until it ends or one fails: the frames, then how it ended.
pub(crate) fn read_stream(stream: &[u8], cluster: u64) -> (Vec<Vec<u8>>, ReadFrameError) {
    let mut reader = stream;
    let mut frames = Vec::new();
    loop {
        match now(read_frame(&mut reader, cluster)) {
            Ok(frame) => frames.push(frame),
            Err(error) => return (frames, error),
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_bytes_never_open_as_a_frame(input in bytes(2048)) {
        // A header checksum (XXH3-128) that random bytes match is not a thing a test sees.
        prop_assert!(wire::open(&input).is_err());
    }

    #[test]
    fn a_sealed_frame_opens_to_its_header_and_body((frame, header, body) in frame()) {
        let (opened, opened_body) = wire::open(&frame).expect("a sealed frame opens");
        prop_assert_eq!(opened, header);
        prop_assert_eq!(opened_body, &body[..]);
        prop_assert_eq!(opened.size as usize, frame.len());
    }

    #[test]
    fn a_frame_with_any_bit_flipped_or_cut_never_opens(
        (frame, header, body) in frame(),
        (donor, donor_header, donor_body) in frame(),
        damage in damage(),
    ) {
        let damaged = damage.apply(&frame, &donor);
        match wire::open(&damaged) {
            Ok((opened, opened_body)) => {
                prop_assert!(!damage.is_flip_or_cut(), "{damage:?} went unnoticed");
                // A splice can only ever leave the frame itself or put the donor in its place.
                prop_assert!(
                    (opened == header && opened_body == &body[..])
                        || (opened == donor_header && opened_body == &donor_body[..]),
                    "a spliced frame opened to a third frame"
                );
            }
            Err(error) => prop_assert!(damaged != frame, "the intact frame failed: {error}"),
        }
    }

    #[test]
    fn random_batch_bodies_never_panic_and_every_piece_lies_inside_the_body(input in bytes(2048)) {
        // A batch's body comes from a peer: sizes are read before any checksum, so a
        // lying size may only cut the body wrongly, never reach past it or allocate.
        if let Ok(frames) = wire::batch::unpack(&input) {
            prop_assert_eq!(frames.iter().map(|frame| frame.len()).sum::<usize>(), input.len());
            prop_assert!(frames.iter().all(|frame| frame.len() >= HEADER_BYTES));
            prop_assert!(frames.iter().all(|frame| wire::peek_command(frame) != Command::Batch as u8));
        }
    }

    #[test]
    fn a_packed_batch_unpacks_to_exactly_its_frames(
        frames in prop::collection::vec(header(), 1..20),
        cluster in any::<u64>(),
    ) {
        let frames: Vec<Vec<u8>> = frames
            .into_iter()
            .filter(|header| header.command != Command::Batch)
            .map(|header| wire::seal_header(header, &[]))
            .collect();
        prop_assume!(!frames.is_empty());
        let batch = wire::batch::pack(cluster, frames.iter().map(Vec::as_slice));
        let (header, body) = wire::open(&batch).expect("a sealed batch opens");
        prop_assert_eq!((header.command, header.cluster), (Command::Batch, cluster));
        let inner = wire::batch::unpack(body).expect("a packed body unpacks");
        prop_assert_eq!(inner, frames.iter().map(Vec::as_slice).collect::<Vec<_>>());
    }

    #[test]
    fn random_bytes_never_panic_the_header_decoders(input in bytes(600)) {
        // Unverified decoding checks only the command and the reserved bytes: what it
        // returns must be exactly those 256 bytes again.
        if let Ok(decoded) = Header::decode(&input) {
            prop_assert!(input.len() >= HEADER_BYTES);
            let mut again = [0u8; HEADER_BYTES];
            decoded.encode_into(&mut again);
            prop_assert_eq!(&again[16..], &input[16..HEADER_BYTES]);
            prop_assert_eq!(&decoded.checksum.to_le_bytes()[..], &input[..16]);
        }
        prop_assert!(Header::decode_verified(&input).is_err());
    }

    #[test]
    fn a_header_with_any_bit_flipped_never_verifies(header in header(), damage in damage(), donor in header()) {
        let bytes = header.to_bytes();
        let verified = Header::decode_verified(&bytes).expect("a header's own bytes verify");
        prop_assert_eq!(Header { checksum: 0, ..verified }, header);
        prop_assert_eq!(verified.checksum, header.compute_checksum());
        let damaged = damage.apply(&bytes, &donor.to_bytes());
        match Header::decode_verified(&damaged) {
            Ok(decoded) => {
                prop_assert!(!damage.is_flip_or_cut(), "{damage:?} went unnoticed");
                let decoded = Header { checksum: 0, ..decoded };
                prop_assert!(decoded == header || decoded == donor);
            }
            Err(_) => prop_assert!(damaged.get(..HEADER_BYTES) != Some(&bytes[..])),
        }
    }

    #[test]
    fn a_frame_size_beyond_frame_bytes_max_is_refused_before_any_allocation(
        (frame, _, _) in frame(),
        size in (FRAME_BYTES_MAX as u32 + 1)..=u32::MAX,
    ) {
        // FRAME_BYTES_MAX bounds what a size field can make a receiver allocate.
        let mut claim = frame[..HEADER_BYTES].to_vec();
        claim[HEADER_SIZE_AT..HEADER_SIZE_AT + 4].copy_from_slice(&size.to_le_bytes());
        reseal_header(&mut claim);
        prop_assert_eq!(wire::open(&claim), Err(FrameError::TooLarge { size: size as usize }));
        let cluster = Header::decode(&claim).expect("decodes").cluster;
        let (frames, error) = read_stream(&claim, cluster);
        prop_assert!(frames.is_empty());
        prop_assert!(
            matches!(error, ReadFrameError::Invalid(FrameError::TooLarge { size: got }) if got == size as usize),
            "{error}"
        );
    }

    #[test]
    fn a_stream_of_frames_reads_back_whole_and_damage_ends_it_with_a_typed_error(
        frames in prop::collection::vec(frame(), 1..4),
        damage in damage(),
        (donor, _, _) in frame(),
    ) {
        // Every frame on one connection carries its cluster's id.
        let cluster = frames[0].1.cluster;
        let frames: Vec<Vec<u8>> = frames
            .into_iter()
            .map(|(_, header, body)| wire::seal_header(Header { cluster, ..header }, &body))
            .collect();
        let stream = frames.concat();
        let (read, end) = read_stream(&stream, cluster);
        prop_assert_eq!(&read, &frames);
        prop_assert!(matches!(end, ReadFrameError::Closed), "{end}");

        let damaged = damage.apply(&stream, &donor);
        let (read, end) = read_stream(&damaged, cluster);
        for frame in &read {
            prop_assert!(wire::open(frame).is_ok(), "the reader returned a frame that does not open");
        }
        // Frames wholly before the damage come back as they were sent.
        let mut start = 0;
        let first_damaged = frames
            .iter()
            .position(|frame| {
                let end = start + frame.len();
                let intact = damaged.get(start..end) == Some(&frame[..]);
                start = end;
                !intact
            })
            .unwrap_or(frames.len());
        prop_assert!(read.len() >= first_damaged, "an intact frame before the damage was refused");
        prop_assert_eq!(&read[..first_damaged], &frames[..first_damaged]);
        if let Some(at) = damage.flipped_at(stream.len()) {
            // The frame holding the flipped bit, and nothing after it, is refused.
            let holder = frames
                .iter()
                .scan(0, |end, frame| {
                    *end += frame.len();
                    Some(*end)
                })
                .position(|end| at < end)
                .expect("the flip lands in a frame");
            prop_assert_eq!(read.len(), holder);
            prop_assert!(end.is_rejection(), "{end}");
        }
        if let Some(len) = damage.cut_to(stream.len()) {
            let whole = frames
                .iter()
                .scan(0, |end, frame| {
                    *end += frame.len();
                    Some(*end)
                })
                .take_while(|end| *end <= len)
                .count();
            prop_assert_eq!(read.len(), whole);
            let at_boundary = frames.iter().take(whole).map(Vec::len).sum::<usize>() == len;
            if at_boundary {
                prop_assert!(matches!(end, ReadFrameError::Closed), "{end}");
            } else {
                prop_assert!(matches!(end, ReadFrameError::Truncated { .. }), "{end}");
            }
        }
    }

    #[test]
    fn random_bytes_on_a_stream_never_panic_the_frame_reader(input in bytes(4096), cluster in any::<u64>()) {
        let (read, end) = read_stream(&input, cluster);
        prop_assert!(read.is_empty(), "random bytes read as a frame");
        prop_assert!(input.is_empty() == matches!(end, ReadFrameError::Closed), "{end}");
    }

    #[test]
    fn a_peer_hello_round_trips_and_random_ones_decode_canonically(
        cluster in any::<u64>(),
        replica in any::<u8>(),
        replicas in any::<u8>(),
        nonce in any::<[u8; NONCE_BYTES]>(),
        input in prop::collection::vec(any::<u8>(), PEER_HELLO_BYTES),
        flip in 0..PEER_HELLO_BYTES * 8,
    ) {
        let hello = PeerHello { cluster, replica, replicas, nonce };
        let mut random = [0u8; PEER_HELLO_BYTES];
        random.copy_from_slice(&input);
        let input = random;
        let bytes = hello.encode();
        prop_assert_eq!(PeerHello::decode(&bytes), Ok(hello));
        // The hello has no checksum: a flipped bit is refused (magic, padding) or gives
        // another hello whose encoding is exactly the flipped bytes.
        let mut flipped = bytes;
        flipped[flip / 8] ^= 1 << (flip % 8);
        for candidate in [flipped, input] {
            if let Ok(decoded) = PeerHello::decode(&candidate) {
                prop_assert_eq!(decoded.encode(), candidate);
            }
        }
    }
}
