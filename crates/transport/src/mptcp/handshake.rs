//! Keys, tokens and HMACs of the MP-TCP handshakes (RFC 8684 §3.1 MP_CAPABLE, §3.2
//! MP_JOIN), as deterministic placeholders: the model has no randomness and no
//! cryptography. A key is drawn from the seed the caller passes; the token and the HMACs
//! are a 64-bit mix (SplitMix64's finaliser) of what RFC 8684 feeds to SHA-256 and
//! HMAC-SHA256, so they differ between connections and subflows as the real ones do, but
//! they prove nothing. Only the token is checked (it names the connection, §3.2); the HMACs
//! are carried, not verified.

use millinet_wire::mptcp::{CapableFlags, CapableForm, MpCapable, MpJoin};

/// SplitMix64's finaliser: a bijective mix of 64 bits.
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

/// The token naming the connection at the key's owner (§3.2: the top 32 bits of the
/// key's hash).
pub fn token(key: u64) -> u32 {
    (mix(key) >> 32) as u32
}

/// Stand-in for HMAC(key_a || key_b, nonce_a || nonce_b) (§3.2).
fn hmac(key_a: u64, key_b: u64, nonce_a: u32, nonce_b: u32) -> u64 {
    mix(key_a ^ mix(key_b ^ mix((u64::from(nonce_a) << 32) | u64::from(nonce_b))))
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

/// MP_JOIN on the SYN of subflow `address_id`, to the connection whose peer has `remote_key`.
pub(super) fn join_syn(address_id: u8, remote_key: u64, nonce: u32) -> MpJoin {
    MpJoin::Syn { backup: false, address_id, receiver_token: token(remote_key), sender_random_number: nonce }
}

/// MP_JOIN on the SYN/ACK: the truncated HMAC of the listener (§3.2, Figure 6).
pub(super) fn join_syn_ack(address_id: u8, local_key: u64, remote_key: u64, local_nonce: u32, remote_nonce: u32) -> MpJoin {
    MpJoin::SynAck {
        backup: false,
        address_id,
        sender_truncated_hmac: hmac(local_key, remote_key, local_nonce, remote_nonce),
        sender_random_number: local_nonce,
    }
}

/// MP_JOIN on the third ACK: the initiator's full HMAC (§3.2, Figure 7), 160 bits.
pub(super) fn join_ack(local_key: u64, remote_key: u64, local_nonce: u32, remote_nonce: u32) -> MpJoin {
    let h = hmac(local_key, remote_key, local_nonce, remote_nonce);
    let mut sender_hmac = [0; 20];
    for (i, chunk) in sender_hmac.chunks_mut(8).enumerate() {
        let word = mix(h ^ i as u64).to_be_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
    MpJoin::Ack { sender_hmac }
}
