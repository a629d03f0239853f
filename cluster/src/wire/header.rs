//! The 256-byte header every frame starts with.
//!
//! Layout (little-endian), fixed so that disks and peers of one build agree:
//!
//! ```text
//!   0 checksum        u128  XXH3-128 of bytes 16..256
//!  16 checksum_body   u128  XXH3-128 of the body
//!  32 parent          u128  checksum of the previous op's prepare header (hash chain)
//!  48 client          u128  client id (0 for replica-originated messages)
//!  64 context         u128  message-specific: PrepareOk carries the prepare's checksum
//!  80 cluster         u64
//!  88 group           u64   which VSR group (0 = metadata)
//!  96 view            u64
//! 104 op              u64
//! 112 commit          u64
//! 120 request         u64   client request number
//! 128 timestamp       u64   microseconds, from the primary's injected clock
//! 136 log_view        u64
//! 144 nonce           u64   boot nonce (RequestStartView / StartView), entropy (Prepare)
//! 152 size            u32   header + body bytes
//! 156 command         u8
//! 157 replica         u8    sender
//! 158 operation       u8    state-machine operation code (Request, Prepare, Reply)
//! 159 flags           u8    message-specific bits
//! 160..256 reserved   zero
//! ```

use super::FrameError;

/// Bytes in a header.
pub const HEADER_BYTES: usize = 256;

/// Prepare header flag: the op belongs to a `persisted` topic, so every replica must
/// make it durable (publish its WAL frontier) before acknowledging it. The primary sets
/// it from its own node's view of the topic; a backup whose node has not yet applied a
/// durability change still honours it, since its PrepareOk is what lets the primary
/// acknowledge the client.
pub const PREPARE_FLAG_PERSISTED: u8 = 1;

/// The byte of a frame that holds its header's flags.
pub const FLAGS_OFFSET: usize = 159;

/// Whether `frame` (a sealed Prepare) demands durability before acknowledgement.
pub fn prepare_demands_persisted(frame: &[u8]) -> bool {
    frame
        .get(FLAGS_OFFSET)
        .is_some_and(|flags| flags & PREPARE_FLAG_PERSISTED != 0)
}
pub(crate) const SIZE_OFFSET: usize = 152;
pub(crate) const COMMAND_OFFSET: usize = 156;
pub(crate) const GROUP_OFFSET: usize = 88;
const VIEW_OFFSET: usize = 96;
const OP_OFFSET: usize = 104;
const COMMIT_OFFSET: usize = 112;
const TIMESTAMP_OFFSET: usize = 128;
const LOG_VIEW_OFFSET: usize = 136;
const RESERVED_OFFSET: usize = 160;

/// Message types. The numbering is part of the wire and disk format: append only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Command {
    /// A client asks for an operation.
    Request = 1,
    /// The primary replicates an op.
    Prepare = 2,
    /// A backup has journaled a prepare.
    PrepareOk = 3,
    /// The answer to a client request.
    Reply = 4,
    /// The primary's commit point (heartbeat).
    Commit = 5,
    /// A replica gives up on the current view.
    StartViewChange = 6,
    /// A replica's log summary, to the new primary.
    DoViewChange = 7,
    /// The new primary's log; the view starts.
    StartView = 8,
    /// A recovering replica asks who leads.
    RequestStartView = 9,
    /// A replica asks a peer for prepares in a range of ops.
    RequestPrepares = 10,
    /// A request refused by a replica that cannot take it (not primary, not Normal).
    Refused = 11,
    /// An answer to RequestPrepares: the body is one whole prepare frame.
    RepairPrepare = 12,
    /// An answer to RequestPrepares from a peer that evicted the start of the range:
    /// `op` is the oldest op it still holds, `commit` its checkpoint op.
    RangeEvicted = 13,
    /// A replica asks a peer for a chunk of its checkpoint (state transfer): `op` is
    /// the checkpoint op (0: the newest), `commit` the byte offset.
    RequestCheckpoint = 14,
    /// A chunk of a checkpoint: `op` the checkpoint op, `commit` the byte offset,
    /// `timestamp` the checkpoint's length, `context` its checksum; the body the bytes.
    CheckpointChunk = 15,
    /// A backup confirms a commit broadcast that asked for it (`request`: the
    /// primary's query round): it is Normal in that view (see `vsr::query`).
    CommitOk = 16,
    /// A Normal replica that hears no primary votes to leave `view` (see
    /// `vsr::leave_view`): a view change starts only on a view-change quorum of them.
    LeaveView = 17,
    /// Header-only frames of several groups from one node to another, carried as one
    /// frame (the body: the frames end to end, see `wire::batch`), so a node leading many
    /// groups sends one heartbeat message per peer, not one per group.
    Batch = 18,
    /// Echo plane: a client request.
    EchoRequest = 100,
    /// Echo plane: a replica's echo.
    EchoReply = 101,
    /// Echo plane: replica-to-replica heartbeat.
    EchoHeartbeat = 102,
}

impl Command {
    /// Every command, for tables and tests.
    pub const ALL: [Command; 21] = [
        Command::Request,
        Command::Prepare,
        Command::PrepareOk,
        Command::Reply,
        Command::Commit,
        Command::StartViewChange,
        Command::DoViewChange,
        Command::StartView,
        Command::RequestStartView,
        Command::RequestPrepares,
        Command::Refused,
        Command::RepairPrepare,
        Command::RangeEvicted,
        Command::RequestCheckpoint,
        Command::CheckpointChunk,
        Command::CommitOk,
        Command::LeaveView,
        Command::Batch,
        Command::EchoRequest,
        Command::EchoReply,
        Command::EchoHeartbeat,
    ];

    /// The command for a byte, if any.
    pub fn from_byte(byte: u8) -> Option<Command> {
        Command::ALL.into_iter().find(|command| *command as u8 == byte)
    }
}

/// A decoded header. `checksum` and `size` are filled in by sealing and opening.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Checksum of this header (bytes 16..256).
    pub checksum: u128,
    /// Checksum of the body.
    pub checksum_body: u128,
    /// Checksum of the previous op's prepare header.
    pub parent: u128,
    /// Client id.
    pub client: u128,
    /// Message-specific 128-bit value.
    pub context: u128,
    /// Cluster id.
    pub cluster: u64,
    /// VSR group.
    pub group: u64,
    /// View.
    pub view: u64,
    /// Op number.
    pub op: u64,
    /// Commit number.
    pub commit: u64,
    /// Client request number.
    pub request: u64,
    /// Timestamp, microseconds since the Unix epoch.
    pub timestamp: u64,
    /// Log view.
    pub log_view: u64,
    /// Nonce or entropy.
    pub nonce: u64,
    /// Frame size, header included.
    pub size: u32,
    /// Message type.
    pub command: Command,
    /// Sender replica.
    pub replica: u8,
    /// State-machine operation code.
    pub operation: u8,
    /// Message-specific flags.
    pub flags: u8,
}

fn u128_at(bytes: &[u8], offset: usize) -> u128 {
    let mut raw = [0u8; 16];
    raw.copy_from_slice(&bytes[offset..offset + 16]);
    u128::from_le_bytes(raw)
}

fn u64_at(bytes: &[u8], offset: usize) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(raw)
}

impl Header {
    /// A header for `command` with every other field zero.
    pub fn new(command: Command) -> Self {
        Self {
            checksum: 0,
            checksum_body: 0,
            parent: 0,
            client: 0,
            context: 0,
            cluster: 0,
            group: 0,
            view: 0,
            op: 0,
            commit: 0,
            request: 0,
            timestamp: 0,
            log_view: 0,
            nonce: 0,
            size: 0,
            command,
            replica: 0,
            operation: 0,
            flags: 0,
        }
    }

    /// A `command` header from `replica` answering `request`: the request's cluster,
    /// group, client, request number and operation, which the client matches an answer
    /// to what it asked by; every other field zero.
    pub fn answering(command: Command, request: &Header, replica: u8) -> Self {
        let mut header = Self::new(command);
        header.cluster = request.cluster;
        header.group = request.group;
        header.client = request.client;
        header.request = request.request;
        header.operation = request.operation;
        header.replica = replica;
        header
    }

    /// Write every field except `checksum` into `bytes[..256]` (the checksum slot is
    /// zeroed; sealing fills it).
    pub fn encode_into(&self, bytes: &mut [u8]) {
        assert!(bytes.len() >= HEADER_BYTES, "header buffer too short");
        let bytes = &mut bytes[..HEADER_BYTES];
        bytes.fill(0);
        bytes[16..32].copy_from_slice(&self.checksum_body.to_le_bytes());
        bytes[32..48].copy_from_slice(&self.parent.to_le_bytes());
        bytes[48..64].copy_from_slice(&self.client.to_le_bytes());
        bytes[64..80].copy_from_slice(&self.context.to_le_bytes());
        for (offset, value) in [
            (80, self.cluster),
            (GROUP_OFFSET, self.group),
            (VIEW_OFFSET, self.view),
            (OP_OFFSET, self.op),
            (COMMIT_OFFSET, self.commit),
            (120, self.request),
            (TIMESTAMP_OFFSET, self.timestamp),
            (LOG_VIEW_OFFSET, self.log_view),
            (144, self.nonce),
        ] {
            bytes[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
        }
        bytes[SIZE_OFFSET..SIZE_OFFSET + 4].copy_from_slice(&self.size.to_le_bytes());
        bytes[COMMAND_OFFSET] = self.command as u8;
        bytes[157] = self.replica;
        bytes[158] = self.operation;
        bytes[FLAGS_OFFSET] = self.flags;
    }

    /// The header as 256 bytes with its checksum computed (what `parent` of the next
    /// op refers to, and what a DoViewChange carries).
    pub fn to_bytes(&self) -> [u8; HEADER_BYTES] {
        let mut bytes = [0u8; HEADER_BYTES];
        self.encode_into(&mut bytes);
        let sum = super::checksum(&bytes[16..]);
        bytes[..16].copy_from_slice(&sum.to_le_bytes());
        bytes
    }

    /// This header's checksum as sealing would compute it.
    pub fn compute_checksum(&self) -> u128 {
        let mut bytes = [0u8; HEADER_BYTES];
        self.encode_into(&mut bytes);
        super::checksum(&bytes[16..])
    }

    /// Decode a header whose checksum has already been verified (or verify it with
    /// [`Header::decode_verified`]).
    pub fn decode(bytes: &[u8]) -> Result<Self, FrameError> {
        if bytes.len() < HEADER_BYTES {
            return Err(FrameError::Truncated { len: bytes.len() });
        }
        let command_byte = bytes[COMMAND_OFFSET];
        let command = Command::from_byte(command_byte).ok_or(FrameError::UnknownCommand { command: command_byte })?;
        // OR-folded rather than `any`: without an early exit the loop vectorises, and a
        // header is decoded at every hop (this was most of `decode`'s cost).
        if bytes[RESERVED_OFFSET..HEADER_BYTES]
            .iter()
            .fold(0u8, |seen, &byte| seen | byte)
            != 0
        {
            return Err(FrameError::ReservedNotZero);
        }
        let mut size = [0u8; 4];
        size.copy_from_slice(&bytes[SIZE_OFFSET..SIZE_OFFSET + 4]);
        Ok(Self {
            checksum: u128_at(bytes, 0),
            checksum_body: u128_at(bytes, 16),
            parent: u128_at(bytes, 32),
            client: u128_at(bytes, 48),
            context: u128_at(bytes, 64),
            cluster: u64_at(bytes, 80),
            group: u64_at(bytes, GROUP_OFFSET),
            view: u64_at(bytes, VIEW_OFFSET),
            op: u64_at(bytes, OP_OFFSET),
            commit: u64_at(bytes, COMMIT_OFFSET),
            request: u64_at(bytes, 120),
            timestamp: u64_at(bytes, TIMESTAMP_OFFSET),
            log_view: u64_at(bytes, LOG_VIEW_OFFSET),
            nonce: u64_at(bytes, 144),
            size: u32::from_le_bytes(size),
            command,
            replica: bytes[157],
            operation: bytes[158],
            flags: bytes[FLAGS_OFFSET],
        })
    }

    /// Decode 256 bytes and check their header checksum (for headers carried inside a
    /// body, such as a DoViewChange's), and that its numbers are ones an honest frame
    /// can hold ([`check_bounds`]).
    pub fn decode_verified(bytes: &[u8]) -> Result<Self, FrameError> {
        if bytes.len() < HEADER_BYTES {
            return Err(FrameError::Truncated { len: bytes.len() });
        }
        if u128_at(bytes, 0) != super::checksum(&bytes[16..HEADER_BYTES]) {
            return Err(FrameError::HeaderChecksum);
        }
        check_bounds(bytes)?;
        Self::decode(bytes)
    }
}

/// Refuse numbers no honest header can hold, read straight from the header's bytes
/// (`bytes` holds at least [`HEADER_BYTES`]). Checked wherever a header is verified
/// (every header that enters: from a peer, a client, a body or a disk), so the core's
/// `view + 1` and `op + 1` never overflow on a number from outside; a header decoded
/// again at a later hop was checked when it was verified. It reads the bytes rather
/// than a decoded [`Header`] so that `decode` stays the tail of `decode_verified` and
/// the header is built once in place (checking a decoded copy cost a 200-byte move
/// per frame, 0.5% of a simulated run's instructions).
pub(crate) fn check_bounds(bytes: &[u8]) -> Result<(), FrameError> {
    // Straight-line compares for the path every honest frame takes; the loop that
    // names the field runs only for a refusal.
    let within = u64_at(bytes, VIEW_OFFSET) <= super::VIEW_MAX
        && u64_at(bytes, LOG_VIEW_OFFSET) <= super::VIEW_MAX
        && u64_at(bytes, OP_OFFSET) <= super::OP_MAX
        && u64_at(bytes, COMMIT_OFFSET) <= super::OP_MAX
        && u64_at(bytes, TIMESTAMP_OFFSET) <= super::TIMESTAMP_MAX_MICROS;
    if within { Ok(()) } else { Err(out_of_range(bytes)) }
}

/// The first field of `bytes` past its bound, as an error ([`check_bounds`] found one).
#[cold]
fn out_of_range(bytes: &[u8]) -> FrameError {
    let fields = [
        ("view", VIEW_OFFSET, super::VIEW_MAX),
        ("log_view", LOG_VIEW_OFFSET, super::VIEW_MAX),
        ("op", OP_OFFSET, super::OP_MAX),
        ("commit", COMMIT_OFFSET, super::OP_MAX),
        ("timestamp", TIMESTAMP_OFFSET, super::TIMESTAMP_MAX_MICROS),
    ];
    for (field, offset, max) in fields {
        let value = u64_at(bytes, offset);
        if value > max {
            return FrameError::OutOfRange { field, value, max };
        }
    }
    unreachable!("out_of_range is called only when a field is past its bound")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_round_trips_through_bytes() {
        let header = Header {
            checksum: 0,
            checksum_body: 1,
            parent: 2,
            client: 3,
            context: 4,
            cluster: 5,
            group: 6,
            view: 7,
            op: 8,
            commit: 9,
            request: 10,
            timestamp: 11,
            log_view: 12,
            nonce: 13,
            size: 14,
            command: Command::DoViewChange,
            replica: 15,
            operation: 16,
            flags: 17,
        };
        let bytes = header.to_bytes();
        let decoded = Header::decode_verified(&bytes).expect("valid");
        assert_eq!(decoded.checksum, header.compute_checksum());
        assert_eq!(Header { checksum: 0, ..decoded }, header);
    }

    #[test]
    fn numbers_no_honest_frame_holds_are_refused_with_the_field_named() {
        let mut header = Header::new(Command::StartViewChange);
        header.view = super::super::VIEW_MAX;
        assert!(
            Header::decode_verified(&header.to_bytes()).is_ok(),
            "the bound itself is allowed"
        );
        for (field, set) in [
            ("view", (|h: &mut Header| h.view = u64::MAX) as fn(&mut Header)),
            ("log_view", |h| h.log_view = super::super::VIEW_MAX + 1),
            ("op", |h| h.op = u64::MAX),
            ("commit", |h| h.commit = super::super::OP_MAX + 1),
            ("timestamp", |h| h.timestamp = u64::MAX),
        ] {
            let mut header = Header::new(Command::StartViewChange);
            set(&mut header);
            let refused = Header::decode_verified(&header.to_bytes()).expect_err(field);
            assert!(
                matches!(refused, FrameError::OutOfRange { field: named, .. } if named == field),
                "{field}: {refused:?}"
            );
            assert!(refused.to_string().contains(field), "{refused}");
        }
    }

    #[test]
    fn command_bytes_are_distinct_and_round_trip() {
        for command in Command::ALL {
            assert_eq!(Command::from_byte(command as u8), Some(command));
        }
        assert_eq!(Command::from_byte(0), None);
        assert_eq!(Command::from_byte(255), None);
    }
}
