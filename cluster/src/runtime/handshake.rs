//! Peer authentication: how a replica proves, on a fresh TCP connection, that it holds
//! the cluster's secret, before anything it sends is read as a VSR message.
//!
//! Models: a mutual challenge-response with HMAC-SHA-256 (RFC 2104) keyed by the
//! cluster secret, over a transcript that binds both sides' fresh nonces, the cluster
//! id and both replica indices. Three messages on the connection the dialler opened:
//!
//! ```text
//! dialler  -> acceptor  Hello     magic, cluster, replica, replicas, nonce_d (32 bytes)
//! acceptor -> dialler   Challenge nonce_a (32 bytes), HMAC(key, "acceptor" | hello | acceptor | nonce_a)
//! dialler  -> acceptor  Proof     HMAC(key, "dialler" | hello | acceptor | nonce_a)
//! ```
//!
//! The dialler checks the acceptor's MAC before it proves itself, so it never writes
//! a frame to a process that merely listens on a peer's address; the acceptor reads no
//! frame before the dialler's proof checks. Each proof is over both nonces (a recorded
//! handshake replays nothing: the other side's nonce is new), names which side made it
//! (a proof cannot be reflected back as the other side's), and names the acceptor (a
//! proof made for one node is no use at another). MACs are compared in constant time.
//!
//! Why this and not mutual TLS: TLS would also encrypt, but it asks every operator for a
//! certificate authority, a certificate per node and a rotation story; a shared secret
//! is one file, like Kafka's SASL/SCRAM between brokers or Redis' `masterauth`. Why
//! HMAC-SHA-256 from the RustCrypto crates (`hmac`, `sha2`): a standard construction,
//! pure Rust, maintained, with a constant-time `verify_slice`.
//!
//! Does not model: encryption (peer traffic is readable on the network), or the
//! integrity of frames *after* the handshake against an attacker who sits on the path
//! and can inject into an established TCP stream (frames carry checksums, not MACs).
//! Run the replica ports on a private network, or under a VPN such as WireGuard, where
//! that matters. Authenticated replicas are trusted (VSR tolerates crashes, not lies).

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// The magic bytes that open a replica connection: "VSRPEER" and the handshake version
/// (2: authenticated; version 1 was a bare hello and is refused).
pub const PEER_HELLO_MAGIC: [u8; 8] = *b"VSRPEER\x02";

/// Bytes of a nonce: 256 bits from the OS, so two handshakes never share one.
pub const NONCE_BYTES: usize = 32;

/// Bytes of an HMAC-SHA-256 tag.
pub const MAC_BYTES: usize = 32;

/// Bytes of a [`Hello`]: magic, cluster id, replica, replica count, zero padding, nonce.
pub const HELLO_BYTES: usize = 24 + NONCE_BYTES;

/// Bytes of the acceptor's challenge: its nonce and its proof.
pub const CHALLENGE_BYTES: usize = NONCE_BYTES + MAC_BYTES;

/// Bytes of the dialler's proof.
pub const PROOF_BYTES: usize = MAC_BYTES;

/// The fewest bytes a secret may have: 128 bits, if they were random. A shorter one
/// is refused at start rather than used.
pub const SECRET_BYTES_MIN: usize = 16;

/// The most bytes read from a secret file: a secret is a line of text, and a path that
/// names a huge file by mistake should be refused, not read whole.
pub const SECRET_BYTES_MAX: usize = 4_096;

/// The cluster's shared secret, as the key the handshake uses (SHA-256 of the secret's
/// bytes, so any length is one key size). Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterSecret {
    key: [u8; 32],
    insecure: bool,
}

impl fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterSecret")
            .field("key", &"<redacted>")
            .field("insecure", &self.insecure)
            .finish()
    }
}

impl ClusterSecret {
    /// A secret from the text of a secret file or variable: surrounding whitespace (a
    /// trailing newline) is not part of it. Refused if shorter than [`SECRET_BYTES_MIN`]
    /// or longer than [`SECRET_BYTES_MAX`].
    pub fn from_text(text: &[u8]) -> Result<Self, String> {
        let trimmed = text.trim_ascii();
        if trimmed.len() < SECRET_BYTES_MIN {
            return Err(format!(
                "the secret has {} bytes; at least {SECRET_BYTES_MIN} are required (e.g. `openssl rand -hex 32`)",
                trimmed.len()
            ));
        }
        if trimmed.len() > SECRET_BYTES_MAX {
            return Err(format!(
                "the secret has {} bytes; at most {SECRET_BYTES_MAX} are read",
                trimmed.len()
            ));
        }
        Ok(Self {
            key: Sha256::digest(trimmed).into(),
            insecure: false,
        })
    }

    /// The development stand-in: a key anyone can derive from the cluster's name. The
    /// handshake still runs (so the code path is the production one), but it proves
    /// nothing; a node that uses it says so in its log.
    pub fn insecure_development(cluster_name: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"insecure development secret for cluster ");
        hasher.update(cluster_name.as_bytes());
        Self {
            key: hasher.finalize().into(),
            insecure: true,
        }
    }

    /// Whether this is the [`ClusterSecret::insecure_development`] stand-in.
    pub fn is_insecure(&self) -> bool {
        self.insecure
    }

    fn mac(&self, label: &[u8], parts: &[&[u8]]) -> Hmac<Sha256> {
        // HMAC takes a key of any length; a 32-byte one never fails.
        let mut mac = match <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key) {
            Ok(mac) => mac,
            Err(_) => unreachable!("HMAC accepts keys of every length"),
        };
        mac.update(label);
        for part in parts {
            mac.update(part);
        }
        mac
    }

    fn tag(&self, label: &[u8], parts: &[&[u8]]) -> [u8; MAC_BYTES] {
        self.mac(label, parts).finalize().into_bytes().into()
    }

    fn verify(&self, label: &[u8], parts: &[&[u8]], tag: &[u8]) -> bool {
        self.mac(label, parts).verify_slice(tag).is_ok()
    }
}

const ACCEPTOR_LABEL: &[u8] = b"vsr peer handshake v2: acceptor";
const DIALLER_LABEL: &[u8] = b"vsr peer handshake v2: dialler";

/// The first bytes on a replica connection: who is dialling, and its nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    /// The cluster id (the header's `cluster`).
    pub cluster: u64,
    /// The dialling replica.
    pub replica: u8,
    /// How many replicas it believes the cluster has.
    pub replicas: u8,
    /// The dialler's fresh nonce.
    pub nonce: [u8; NONCE_BYTES],
}

impl Hello {
    /// `[magic 8][cluster u64 LE][replica u8][replicas u8][zero 6][nonce 32]`.
    pub fn encode(&self) -> [u8; HELLO_BYTES] {
        let mut bytes = [0u8; HELLO_BYTES];
        bytes[..8].copy_from_slice(&PEER_HELLO_MAGIC);
        bytes[8..16].copy_from_slice(&self.cluster.to_le_bytes());
        bytes[16] = self.replica;
        bytes[17] = self.replicas;
        bytes[24..].copy_from_slice(&self.nonce);
        bytes
    }

    /// Parse a hello; the reason if it is not one.
    pub fn decode(bytes: &[u8; HELLO_BYTES]) -> Result<Self, String> {
        if bytes[..7] == PEER_HELLO_MAGIC[..7] && bytes[7] != PEER_HELLO_MAGIC[7] {
            return Err(format!(
                "the peer speaks handshake version {}, this node version {} (upgrade every node)",
                bytes[7], PEER_HELLO_MAGIC[7]
            ));
        }
        if bytes[..8] != PEER_HELLO_MAGIC {
            return Err("the connection did not open with the replica hello".to_owned());
        }
        if bytes[18..24].iter().any(|byte| *byte != 0) {
            return Err("the hello's padding is not zero".to_owned());
        }
        let mut cluster = [0u8; 8];
        cluster.copy_from_slice(&bytes[8..16]);
        let mut nonce = [0u8; NONCE_BYTES];
        nonce.copy_from_slice(&bytes[24..]);
        Ok(Self {
            cluster: u64::from_le_bytes(cluster),
            replica: bytes[16],
            replicas: bytes[17],
            nonce,
        })
    }
}

/// The acceptor's answer to `hello`: its nonce and its proof, for acceptor `acceptor`.
pub fn challenge(
    secret: &ClusterSecret,
    hello: &[u8; HELLO_BYTES],
    acceptor: u8,
    nonce: [u8; NONCE_BYTES],
) -> [u8; CHALLENGE_BYTES] {
    let tag = secret.tag(ACCEPTOR_LABEL, &[hello, &[acceptor], &nonce]);
    let mut bytes = [0u8; CHALLENGE_BYTES];
    bytes[..NONCE_BYTES].copy_from_slice(&nonce);
    bytes[NONCE_BYTES..].copy_from_slice(&tag);
    bytes
}

/// The dialler's side: check the acceptor's `challenge` to `hello` (it must come from
/// replica `acceptor` of a cluster that holds the secret); the dialler's proof if it does.
pub fn answer(
    secret: &ClusterSecret,
    hello: &[u8; HELLO_BYTES],
    acceptor: u8,
    challenge: &[u8; CHALLENGE_BYTES],
) -> Result<[u8; PROOF_BYTES], String> {
    let (nonce, tag) = challenge.split_at(NONCE_BYTES);
    if !secret.verify(ACCEPTOR_LABEL, &[hello, &[acceptor], nonce], tag) {
        return Err(format!(
            "the node at replica {acceptor}'s address did not prove it holds the cluster secret \
             (a different secret, or not a replica of this cluster)"
        ));
    }
    Ok(secret.tag(DIALLER_LABEL, &[hello, &[acceptor], nonce]))
}

/// The acceptor's side: check the dialler's `proof` for the handshake it took part in.
pub fn check_proof(
    secret: &ClusterSecret,
    hello: &[u8; HELLO_BYTES],
    acceptor: u8,
    challenge: &[u8; CHALLENGE_BYTES],
    proof: &[u8; PROOF_BYTES],
) -> Result<(), String> {
    let nonce = &challenge[..NONCE_BYTES];
    if secret.verify(DIALLER_LABEL, &[hello, &[acceptor], nonce], proof) {
        Ok(())
    } else {
        Err("the dialler did not prove it holds the cluster secret (a different secret, or not a replica)".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(text: &str) -> ClusterSecret {
        ClusterSecret::from_text(text.as_bytes()).expect("a long enough secret")
    }

    fn hello(nonce: u8) -> [u8; HELLO_BYTES] {
        Hello {
            cluster: 0xabcd,
            replica: 2,
            replicas: 3,
            nonce: [nonce; NONCE_BYTES],
        }
        .encode()
    }

    #[test]
    fn replicas_holding_the_same_secret_prove_themselves_to_each_other() {
        let shared = secret("correct horse battery staple\n");
        let hello = hello(1);
        let challenge = challenge(&shared, &hello, 0, [7; NONCE_BYTES]);
        let proof = answer(&shared, &hello, 0, &challenge).expect("the acceptor proves itself");
        assert_eq!(check_proof(&shared, &hello, 0, &challenge, &proof), Ok(()));
        assert_eq!(
            ClusterSecret::from_text(b"  correct horse battery staple  "),
            Ok(shared),
            "surrounding whitespace is not part of the secret"
        );
    }

    #[test]
    fn a_party_without_the_secret_proves_nothing_either_way() {
        let shared = secret("correct horse battery staple");
        let other = secret("a different secret, same length!");
        let hello = hello(1);
        // An impostor listening on a peer's address cannot answer the dialler.
        let forged = challenge(&other, &hello, 0, [7; NONCE_BYTES]);
        assert!(answer(&shared, &hello, 0, &forged).is_err_and(|why| why.contains("did not prove")));
        // A dialler without the secret cannot answer the acceptor.
        let real = challenge(&shared, &hello, 0, [7; NONCE_BYTES]);
        let guessed = answer(&other, &hello, 0, &forged).expect("the impostor trusts itself");
        assert!(check_proof(&shared, &hello, 0, &real, &guessed).is_err());
    }

    #[test]
    fn a_recorded_proof_is_useless_on_another_connection_node_or_direction() {
        let shared = secret("correct horse battery staple");
        let hello = hello(1);
        let first = challenge(&shared, &hello, 0, [7; NONCE_BYTES]);
        let proof = answer(&shared, &hello, 0, &first).expect("proves");
        // Replayed against a fresh nonce: refused.
        let second = challenge(&shared, &hello, 0, [8; NONCE_BYTES]);
        assert!(check_proof(&shared, &hello, 0, &second, &proof).is_err());
        // Replayed at another acceptor: refused.
        assert!(check_proof(&shared, &hello, 1, &first, &proof).is_err());
        // The acceptor's own tag reflected back as a dialler's proof: refused.
        let mut reflected = [0u8; PROOF_BYTES];
        reflected.copy_from_slice(&first[NONCE_BYTES..]);
        assert!(check_proof(&shared, &hello, 0, &first, &reflected).is_err());
    }

    #[test]
    fn short_secrets_and_foreign_hellos_are_refused_with_a_reason() {
        assert!(ClusterSecret::from_text(b"short\n").is_err_and(|why| why.contains("at least 16")));
        assert!(ClusterSecret::from_text(&[b'x'; SECRET_BYTES_MAX + 1]).is_err());
        let insecure = ClusterSecret::insecure_development("demo");
        assert!(insecure.is_insecure() && !secret("correct horse battery staple").is_insecure());
        assert!(
            !format!("{insecure:?}").contains(&format!("{:?}", insecure.key)),
            "never printed"
        );
        let hello = Hello {
            cluster: 1,
            replica: 0,
            replicas: 3,
            nonce: [9; NONCE_BYTES],
        };
        assert_eq!(Hello::decode(&hello.encode()), Ok(hello));
        let mut old = hello.encode();
        old[7] = 1;
        assert!(Hello::decode(&old).is_err_and(|why| why.contains("version 1")));
        let mut padding = hello.encode();
        padding[20] = 1;
        assert!(Hello::decode(&padding).is_err_and(|why| why.contains("padding")));
        let mut http = hello.encode();
        http[..4].copy_from_slice(b"GET ");
        assert!(Hello::decode(&http).is_err_and(|why| why.contains("did not open")));
    }
}
