//! One TCP connection from a client to one node: a write half the client writes whole
//! frames to, and a reader task that reads verified frames (`runtime::framing`) and
//! hands them to the client's single inbox, tagged with the node and the connection's
//! generation. Every connection of a client feeds the same inbox, so a late answer on
//! a connection the client has moved away from is still seen, as the simulated client
//! sees every frame addressed to it.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::runtime::framing::{ReadFrameError, read_frame};

/// Bytes of read buffer per connection: a few typical replies (a poll answer can be
/// up to a frame, 1 MiB, and is read through it in pieces), so a reply header and
/// small body usually take one system call.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// What a reader task tells the client.
#[derive(Debug)]
pub(super) enum Inbound {
    /// A verified frame (header and body checksums good, this cluster's id).
    Frame {
        /// The roster index of the node it came from.
        node: usize,
        /// The frame.
        frame: Vec<u8>,
    },
    /// The connection ended: closed by the peer, failed, or a frame failed
    /// verification (after which the stream's framing cannot be trusted).
    Closed {
        /// The roster index of the node.
        node: usize,
        /// Which connection to that node (a newer one may already be open).
        generation: u64,
        /// Why.
        error: ReadFrameError,
    },
}

/// An open connection. Dropping it stops its reader task and closes the socket.
#[derive(Debug)]
pub(super) struct Connection {
    /// Distinguishes this connection from earlier and later ones to the same node.
    pub(super) generation: u64,
    writer: OwnedWriteHalf,
    reader: JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Connection {
    /// Connect to `address` within `timeout` and start the reader task (on the
    /// current tokio runtime).
    pub(super) async fn dial(
        address: SocketAddr,
        node: usize,
        generation: u64,
        cluster: u64,
        timeout: Duration,
        inbox: mpsc::Sender<Inbound>,
    ) -> io::Result<Connection> {
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(address)).await {
            Ok(stream) => stream?,
            Err(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no connection within {} ms", timeout.as_millis()),
                ));
            }
        };
        // One request in flight: Nagle's delay would only add latency.
        stream.set_nodelay(true)?;
        let (read, writer) = stream.into_split();
        let reader = tokio::spawn(async move {
            let mut read = BufReader::with_capacity(READ_BUFFER_BYTES, read);
            loop {
                match read_frame(&mut read, cluster).await {
                    Ok(frame) => {
                        if inbox.send(Inbound::Frame { node, frame }).await.is_err() {
                            return;
                        }
                    }
                    Err(error) => {
                        // The client may be gone; nothing else to tell then.
                        let _ = inbox
                            .send(Inbound::Closed {
                                node,
                                generation,
                                error,
                            })
                            .await;
                        return;
                    }
                }
            }
        });
        Ok(Connection {
            generation,
            writer,
            reader,
        })
    }

    /// Write one whole frame within `timeout`. After an error the connection must be
    /// dropped: part of the frame may have gone out.
    pub(super) async fn write(&mut self, frame: &[u8], timeout: Duration) -> io::Result<()> {
        match tokio::time::timeout(timeout, self.writer.write_all(frame)).await {
            Ok(result) => result,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("frame not written within {} ms", timeout.as_millis()),
            )),
        }
    }
}
