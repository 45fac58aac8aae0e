//! Packet bytes: parse → emit → parse.

use millinet_wire::mptcp::MptcpOption;
use millinet_wire::{emit, parse, Transport};

/// Whatever `parse` accepts, `emit` writes back, and the bytes it writes parse (with valid
/// checksums; another protocol than TCP and UDP keeps its own, in its payload) to the same
/// packet and payload. The bytes themselves may differ: DSCP and the
/// urgent pointer are not kept, and options are laid out as `emit` lays them out. The same
/// bytes also go to the MP-TCP option decoder, whose accepted options must encode and
/// decode back to themselves.
pub fn packet_round_trip(data: &[u8]) {
    for verify_checksums in [false, true] {
        let Ok((packet, payload)) = parse(data, verify_checksums) else { continue };
        assert_eq!(packet.payload_bytes as usize, payload.len());
        let mut buf = vec![0u8; packet.wire_bytes() as usize];
        let n = emit(&packet, payload, &mut buf).unwrap_or_else(|e| panic!("{packet:?} parsed but does not emit: {e}"));
        assert_eq!(n, buf.len(), "emit wrote other than wire_bytes()");
        // emit computes TCP's and UDP's checksums; another protocol's is in its message, the
        // payload, carried as it came.
        let verify_again = verify_checksums || !matches!(packet.transport, Transport::Other(_));
        let again = parse(&buf, verify_again).unwrap_or_else(|e| panic!("{packet:?} emitted bytes that do not parse: {e}"));
        assert_eq!(again, (packet, payload));
    }
    if let Ok(option) = MptcpOption::decode(data) {
        let encoded = option.encode();
        assert_eq!(MptcpOption::decode(encoded.as_bytes()), Ok(option), "MP-TCP option changed over encode/decode");
    }
}
