//! Keys, tokens, initial data sequence numbers and HMACs of the MP-TCP handshakes (RFC 8684
//! §3.1 MP_CAPABLE, §3.2 MP_JOIN), with SHA-256 and HMAC-SHA256 as the RFC specifies. The
//! model has no randomness: a key is drawn from the seed the caller passes (so are the
//! subflows' initial sequence numbers and the MP_JOIN nonces), everything else follows from
//! the keys. Keys and nonces enter the hashes in network byte order.

use hmac::{Hmac, KeyInit, Mac};
use millinet_wire::mptcp::{CapableFlags, CapableForm, MpCapable, MpJoin};
use sha2::{Digest, Sha256};

/// SplitMix64's finaliser: a bijective mix of 64 bits, to draw values from the seed.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The key of an endpoint (RFC 8684 §3.1) drawn from the caller's seed.
pub(super) fn key_from_seed(seed: u64) -> u64 {
    mix(seed ^ 0x6d70_7463_705f_6b65)
}

/// A per-subflow value derived from the seed: initial sequence numbers and MP_JOIN nonces.
pub(super) fn subflow_value(seed: u64, index: usize, salt: u64) -> u64 {
    mix(key_from_seed(seed) ^ mix(index as u64 ^ salt))
}

fn key_hash(key: u64) -> [u8; 32] {
    Sha256::digest(key.to_be_bytes()).into()
}

/// The token naming the connection at the key's owner (§3.2: the most significant 32 bits
/// of the SHA-256 of the key).
pub fn token(key: u64) -> u32 {
    let hash = key_hash(key);
    u32::from_be_bytes([hash[0], hash[1], hash[2], hash[3]])
}

/// The initial data sequence number of the key's owner (§3.1: the least significant 64 bits
/// of the SHA-256 of the key); its first data byte is IDSN + 1.
pub fn idsn(key: u64) -> u64 {
    let hash = key_hash(key);
    let mut low = [0; 8];
    low.copy_from_slice(&hash[24..]);
    u64::from_be_bytes(low)
}

/// HMAC-SHA256 with Key = (`key_a` + `key_b`), Msg = (`nonce_a` + `nonce_b`): §3.2 writes
/// the sender's key and nonce first.
fn hmac(key_a: u64, key_b: u64, nonce_a: u32, nonce_b: u32) -> [u8; 32] {
    let mut key = [0; 16];
    key[..8].copy_from_slice(&key_a.to_be_bytes());
    key[8..].copy_from_slice(&key_b.to_be_bytes());
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes keys of any length");
    mac.update(&nonce_a.to_be_bytes());
    mac.update(&nonce_b.to_be_bytes());
    mac.finalize().into_bytes().into()
}

/// The leftmost 64 bits of an HMAC: what the SYN/ACK carries (§3.2, Figure 6).
fn truncated(hmac: [u8; 32]) -> u64 {
    let mut left = [0; 8];
    left.copy_from_slice(&hmac[..8]);
    u64::from_be_bytes(left)
}

/// The leftmost 160 bits of an HMAC: what the third ACK carries (§3.2, Figure 7).
fn leftmost_160(hmac: [u8; 32]) -> [u8; 20] {
    let mut left = [0; 20];
    left.copy_from_slice(&hmac[..20]);
    left
}

/// MP_CAPABLE without checksums (A clear), "HMAC-SHA256" (H) as RFC 8684 §3.1 requires.
fn capable(form: CapableForm) -> MpCapable {
    MpCapable { flags: CapableFlags::H, form }
}

pub(super) fn capable_syn() -> MpCapable {
    capable(CapableForm::Syn)
}

pub(super) fn capable_syn_ack(local_key: u64) -> MpCapable {
    capable(CapableForm::SynAck { sender_key: local_key })
}

pub(super) fn capable_ack(local_key: u64, remote_key: u64) -> MpCapable {
    capable(CapableForm::Ack { sender_key: local_key, receiver_key: remote_key })
}

/// MP_CAPABLE on a data segment while the peer may lack our key (§3.1): both keys and the
/// length of the data mapped from IDSN + 1.
pub(super) fn capable_data(local_key: u64, remote_key: u64, data_level_length: u16) -> MpCapable {
    capable(CapableForm::Data { sender_key: local_key, receiver_key: remote_key, data_level_length, checksum: None })
}

/// MP_JOIN on the SYN of subflow `address_id`, to the connection whose peer has `remote_key`.
pub(super) fn join_syn(address_id: u8, remote_key: u64, nonce: u32) -> MpJoin {
    MpJoin::Syn { backup: false, address_id, receiver_token: token(remote_key), sender_random_number: nonce }
}

/// MP_JOIN on the SYN/ACK: the listener's truncated HMAC (§3.2, Figure 6).
pub(super) fn join_syn_ack(address_id: u8, local_key: u64, remote_key: u64, local_nonce: u32, remote_nonce: u32) -> MpJoin {
    MpJoin::SynAck {
        backup: false,
        address_id,
        sender_truncated_hmac: truncated(hmac(local_key, remote_key, local_nonce, remote_nonce)),
        sender_random_number: local_nonce,
    }
}

/// MP_JOIN on the third ACK: the initiator's HMAC, 160 bits (§3.2, Figure 7).
pub(super) fn join_ack(local_key: u64, remote_key: u64, local_nonce: u32, remote_nonce: u32) -> MpJoin {
    MpJoin::Ack { sender_hmac: leftmost_160(hmac(local_key, remote_key, local_nonce, remote_nonce)) }
}

/// Whether the truncated HMAC of the peer's SYN/ACK is the one its key and nonce give.
pub(super) fn syn_ack_hmac_valid(received: u64, local_key: u64, remote_key: u64, local_nonce: u32, remote_nonce: u32) -> bool {
    received == truncated(hmac(remote_key, local_key, remote_nonce, local_nonce))
}

/// Whether the HMAC of the peer's third ACK is the one its key and nonce give.
pub(super) fn ack_hmac_valid(received: [u8; 20], local_key: u64, remote_key: u64, local_nonce: u32, remote_nonce: u32) -> bool {
    received == leftmost_160(hmac(remote_key, local_key, remote_nonce, local_nonce))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: u64 = 0x0102_0304_0506_0708;
    const KEY_B: u64 = 0x8877_6655_4433_2211;
    const R_A: u32 = 0x1122_3344;
    const R_B: u32 = 0x5566_7788;

    /// Expected values from Python's hashlib and hmac, independent of the crates used here:
    /// python3 -c "import hashlib; print(hashlib.sha256((0x0102030405060708).to_bytes(8, 'big')).hexdigest())"
    /// (token: its first 8 hex digits, IDSN: its last 16).
    #[test]
    fn token_and_idsn_are_the_ends_of_the_keys_sha256() {
        assert_eq!(token(KEY_A), 0x6684_0dda);
        assert_eq!(idsn(KEY_A), 0xf5a1_01d3_d29d_6f72);
    }

    /// python3 -c "import hashlib, hmac; kb, ka = (0x8877665544332211).to_bytes(8, 'big'),
    /// (0x0102030405060708).to_bytes(8, 'big'); rb, ra = (0x55667788).to_bytes(4, 'big'),
    /// (0x11223344).to_bytes(4, 'big'); print(hmac.new(kb + ka, rb + ra, hashlib.sha256).hexdigest()[:16],
    /// hmac.new(ka + kb, ra + rb, hashlib.sha256).hexdigest()[:40])"
    #[test]
    fn join_hmacs_are_hmac_sha256_of_the_keys_and_nonces_sender_first() {
        let MpJoin::SynAck { sender_truncated_hmac, .. } = join_syn_ack(1, KEY_B, KEY_A, R_B, R_A) else { unreachable!() };
        assert_eq!(sender_truncated_hmac, 0x7b44_2328_4683_1be8);
        let MpJoin::Ack { sender_hmac } = join_ack(KEY_A, KEY_B, R_A, R_B) else { unreachable!() };
        let expected =
            [0x52, 0x6c, 0x04, 0x7c, 0xf1, 0xe4, 0x5b, 0x87, 0x04, 0x62, 0x25, 0xb1, 0x59, 0xd3, 0x50, 0x1e, 0x01, 0x75, 0x53, 0xb1];
        assert_eq!(sender_hmac, expected);
        assert!(syn_ack_hmac_valid(sender_truncated_hmac, KEY_A, KEY_B, R_A, R_B));
        assert!(!syn_ack_hmac_valid(sender_truncated_hmac ^ 1, KEY_A, KEY_B, R_A, R_B));
        assert!(ack_hmac_valid(sender_hmac, KEY_B, KEY_A, R_B, R_A));
        assert!(!ack_hmac_valid(sender_hmac, KEY_B, KEY_A, R_B, R_A ^ 1), "another nonce, another HMAC");
    }
}
