//! Frames on a byte stream: how the wire format the simulator carries travels over TCP.
//!
//! A frame is self-delimiting: its 256-byte header holds the frame's size, and the
//! header is covered by its own checksum. So a reader takes exactly one header, checks
//! its checksum *before* trusting the size in it (a corrupted length never makes us
//! allocate or wait for bytes that are not coming), bounds the size by
//! [`FRAME_BYTES_MAX`], then reads the body and checks the body checksum. The length
//! prefix is the header's `size` field; there is no second, unchecked length.
//!
//! After a header that fails its checksum the stream has lost its framing (we cannot
//! know where the next frame starts), so the connection must be closed. A body that
//! fails its checksum leaves the framing intact, but it also means the peer or the
//! path is broken; the callers close on every error and count it.

use std::fmt;
use std::io;

use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

use crate::wire::{self, FRAME_BYTES_MAX, FrameError, HEADER_BYTES, Header};

/// Why a frame could not be read from a stream.
#[derive(Debug)]
pub enum ReadFrameError {
    /// The peer closed the stream cleanly between frames.
    Closed,
    /// The stream ended inside a frame (after `received` of its bytes).
    Truncated {
        /// Bytes of the frame that arrived.
        received: usize,
    },
    /// The operating system reported an error.
    Io(io::Error),
    /// The frame failed verification (checksum, size, unknown command).
    Invalid(FrameError),
    /// The frame is for another cluster.
    WrongCluster {
        /// The cluster id it carries.
        cluster: u64,
    },
    /// The stream was too slow: no frame started, or a started one did not finish, in time.
    TimedOut {
        /// What was waited for.
        what: &'static str,
        /// The limit, in milliseconds.
        limit_ms: u64,
    },
}

impl fmt::Display for ReadFrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Closed => write!(f, "connection closed"),
            Self::Truncated { received } => write!(f, "connection closed {received} bytes into a frame"),
            Self::Io(error) => write!(f, "{error}"),
            Self::Invalid(error) => write!(f, "invalid frame: {error}"),
            Self::WrongCluster { cluster } => write!(f, "frame for cluster {cluster:#018x}, not this one"),
            Self::TimedOut { what, limit_ms } => write!(f, "waited {limit_ms} ms for {what}"),
        }
    }
}

impl std::error::Error for ReadFrameError {}

impl ReadFrameError {
    /// Whether this is bad input from the peer (as opposed to the stream ending or
    /// failing): what the "frames rejected" counters count.
    pub fn is_rejection(&self) -> bool {
        matches!(
            self,
            Self::Truncated { .. } | Self::Invalid(_) | Self::WrongCluster { .. }
        )
    }
}

/// How long a reader waits, for a frame to start and for a started one to finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    /// The longest wait for the first byte of the next frame; `None`: no limit (a
    /// replica's connection, quiet while its group is).
    pub idle_ms: Option<u64>,
    /// The longest a frame may take from its first byte to its last.
    pub frame_ms: u64,
}

impl ReadLimits {
    /// No time limit at all: for a reader that bounds time itself (the client library,
    /// whose every exchange has its own deadline) or that reads from memory.
    pub const UNBOUNDED: Self = Self {
        idle_ms: None,
        frame_ms: u64::MAX,
    };
}

/// Read one verified frame of cluster `cluster` (header and body) from `stream`.
///
/// Memory follows the bytes that arrived, never the size a header declares: the body
/// is appended as it comes in, so a peer that declares a 1 MiB body and sends 100
/// bytes of it costs 100 bytes (and the `Vec`'s doubling), not a megabyte
/// (found by a slow-loris of 1,000 such connections, which took a node from 5 MB to
/// 1.09 GB). With [`ReadLimits`], a stream that starts no frame for `idle_ms`, or
/// takes longer than `frame_ms` over one, fails with [`ReadFrameError::TimedOut`].
pub async fn read_frame_within<R: AsyncBufRead + Unpin>(
    stream: &mut R,
    cluster: u64,
    limits: ReadLimits,
) -> Result<Vec<u8>, ReadFrameError> {
    // Wait for the next frame's first byte without taking it.
    let first = stream.fill_buf();
    let started = match limits.idle_ms {
        Some(idle_ms) => tokio::time::timeout(Duration::from_millis(idle_ms), first)
            .await
            .map_err(|_| ReadFrameError::TimedOut {
                what: "the next frame to start",
                limit_ms: idle_ms,
            })?,
        None => first.await,
    };
    if started.map_err(ReadFrameError::Io)?.is_empty() {
        return Err(ReadFrameError::Closed);
    }
    if limits.frame_ms == u64::MAX {
        return read_started_frame(stream, cluster).await;
    }
    tokio::time::timeout(
        Duration::from_millis(limits.frame_ms),
        read_started_frame(stream, cluster),
    )
    .await
    .map_err(|_| ReadFrameError::TimedOut {
        what: "a started frame to arrive whole",
        limit_ms: limits.frame_ms,
    })?
}

/// [`read_frame_within`] without time limits.
pub async fn read_frame<R: AsyncBufRead + Unpin>(stream: &mut R, cluster: u64) -> Result<Vec<u8>, ReadFrameError> {
    read_frame_within(stream, cluster, ReadLimits::UNBOUNDED).await
}

/// Append bytes from `stream` to `frame` until it holds `len` bytes; `Ok(false)` if the
/// stream ended first. Grows `frame` only by what arrived.
async fn append_until<R: AsyncBufRead + Unpin>(stream: &mut R, frame: &mut Vec<u8>, len: usize) -> io::Result<bool> {
    while frame.len() < len {
        let available = match stream.fill_buf().await {
            Ok(available) => available,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            return Ok(false);
        }
        let take = available.len().min(len - frame.len());
        frame.extend_from_slice(&available[..take]);
        stream.consume(take);
    }
    Ok(true)
}

/// The least a body read grows the frame by: small next to any buffer, large enough
/// that a big body is read in few system calls.
pub const BODY_STEP_MIN_BYTES: usize = 4 * 1024;

/// Read a body into `frame` until it holds `size` bytes; `Ok(false)` if the stream
/// ended first. Each step asks for at most what has arrived so far (doubling from
/// [`BODY_STEP_MIN_BYTES`]), so the frame's allocation is never more than twice the
/// bytes received plus that step, whatever size the header declared; a step larger
/// than the reader's buffer is read straight into the frame, in one system call.
async fn read_body<R: AsyncBufRead + Unpin>(stream: &mut R, frame: &mut Vec<u8>, size: usize) -> io::Result<bool> {
    while frame.len() < size {
        let step = (size - frame.len()).min(frame.len().max(BODY_STEP_MIN_BYTES));
        frame.reserve_exact(step);
        match (&mut *stream).take(step as u64).read_buf(frame).await {
            Ok(0) => return Ok(false),
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(true)
}

async fn read_started_frame<R: AsyncBufRead + Unpin>(stream: &mut R, cluster: u64) -> Result<Vec<u8>, ReadFrameError> {
    let mut frame = Vec::with_capacity(HEADER_BYTES);
    if !append_until(stream, &mut frame, HEADER_BYTES)
        .await
        .map_err(ReadFrameError::Io)?
    {
        return Err(if frame.is_empty() {
            ReadFrameError::Closed
        } else {
            ReadFrameError::Truncated { received: frame.len() }
        });
    }
    let header = Header::decode_verified(&frame).map_err(ReadFrameError::Invalid)?;
    let size = header.size as usize;
    if size > FRAME_BYTES_MAX {
        return Err(ReadFrameError::Invalid(FrameError::TooLarge { size }));
    }
    if size < HEADER_BYTES {
        return Err(ReadFrameError::Invalid(FrameError::SizeMismatch {
            claimed: size,
            received: HEADER_BYTES,
        }));
    }
    if header.cluster != cluster {
        return Err(ReadFrameError::WrongCluster {
            cluster: header.cluster,
        });
    }
    if !read_body(stream, &mut frame, size).await.map_err(ReadFrameError::Io)? {
        return Err(ReadFrameError::Truncated { received: frame.len() });
    }
    wire::open(&frame).map_err(ReadFrameError::Invalid)?;
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::run_local;
    use crate::wire::Command;

    fn frame(cluster: u64, body: &[u8]) -> Vec<u8> {
        let mut header = Header::new(Command::Request);
        header.cluster = cluster;
        header.client = 9;
        wire::seal_header(header, body)
    }

    fn read_all(bytes: Vec<u8>) -> Vec<Result<Vec<u8>, String>> {
        run_local(async move {
            let mut stream: &[u8] = &bytes;
            let mut out = Vec::new();
            loop {
                match read_frame(&mut stream, 7).await {
                    Ok(frame) => out.push(Ok(frame)),
                    Err(ReadFrameError::Closed) => break,
                    Err(error) => {
                        out.push(Err(error.to_string()));
                        break;
                    }
                }
            }
            out
        })
        .expect("runtime")
    }

    #[test]
    fn frames_back_to_back_come_out_whole_and_in_order() {
        let (a, b) = (frame(7, b"first"), frame(7, &[0u8; 5000]));
        let got = read_all([a.clone(), b.clone()].concat());
        assert_eq!(got, vec![Ok(a), Ok(b)]);
    }

    #[test]
    fn truncated_corrupted_oversized_and_foreign_frames_are_rejected_with_a_reason() {
        let good = frame(7, b"payload");
        let truncated = good[..good.len() - 2].to_vec();
        assert!(
            read_all(truncated)[0]
                .as_ref()
                .is_err_and(|e| e.contains("bytes into a frame"))
        );
        let mut body_flipped = good.clone();
        *body_flipped.last_mut().expect("body") ^= 1;
        assert!(
            read_all(body_flipped)[0]
                .as_ref()
                .is_err_and(|e| e.contains("body checksum"))
        );
        let mut header_flipped = good.clone();
        header_flipped[40] ^= 1;
        assert!(
            read_all(header_flipped)[0]
                .as_ref()
                .is_err_and(|e| e.contains("header checksum"))
        );
        assert!(read_all(b"GET / HTTP/1.1\r\n\r\n".to_vec())[0].as_ref().is_err());
        assert!(
            read_all(frame(8, b"x"))[0]
                .as_ref()
                .is_err_and(|e| e.contains("cluster"))
        );
        assert!(read_all(Vec::new()).is_empty(), "a clean close is not an error");
    }
}
