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

use tokio::io::{AsyncRead, AsyncReadExt};

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
}

impl fmt::Display for ReadFrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Closed => write!(f, "connection closed"),
            Self::Truncated { received } => write!(f, "connection closed {received} bytes into a frame"),
            Self::Io(error) => write!(f, "{error}"),
            Self::Invalid(error) => write!(f, "invalid frame: {error}"),
            Self::WrongCluster { cluster } => write!(f, "frame for cluster {cluster:#018x}, not this one"),
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

/// Fill `buf` from `stream`; `Ok(n)` with `n < buf.len()` only when the stream ended.
async fn read_full<R: AsyncRead + Unpin>(stream: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match stream.read(&mut buf[filled..]).await {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// Read one verified frame of cluster `cluster` (header and body) from `stream`.
pub async fn read_frame<R: AsyncRead + Unpin>(stream: &mut R, cluster: u64) -> Result<Vec<u8>, ReadFrameError> {
    let mut frame = vec![0u8; HEADER_BYTES];
    let got = read_full(stream, &mut frame).await.map_err(ReadFrameError::Io)?;
    if got == 0 {
        return Err(ReadFrameError::Closed);
    }
    if got < HEADER_BYTES {
        return Err(ReadFrameError::Truncated { received: got });
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
    frame.resize(size, 0);
    let got = read_full(stream, &mut frame[HEADER_BYTES..])
        .await
        .map_err(ReadFrameError::Io)?;
    if got < size - HEADER_BYTES {
        return Err(ReadFrameError::Truncated {
            received: HEADER_BYTES + got,
        });
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
