//! Which side of the proxy an address is on: the UE side is a set of IPv4 networks (the
//! operator's UE address pools); every other address is on the server side.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// An IPv4 network, `a.b.c.d/len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Network {
    pub address: Ipv4Addr,
    pub prefix_len: u8,
}

impl Ipv4Network {
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let mask = u32::MAX.checked_shl(32 - self.prefix_len as u32).unwrap_or(0);
        u32::from(ip) & mask == u32::from(self.address) & mask
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkParseError {
    pub given: String,
}

impl fmt::Display for NetworkParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' is not an IPv4 network; expected ADDRESS/PREFIX_LEN with a prefix length 0..=32, e.g. 10.45.0.0/16", self.given)
    }
}

impl std::error::Error for NetworkParseError {}

impl FromStr for Ipv4Network {
    type Err = NetworkParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || NetworkParseError { given: s.to_string() };
        let (address, prefix_len) = s.split_once('/').ok_or_else(err)?;
        let address: Ipv4Addr = address.parse().map_err(|_| err())?;
        let prefix_len: u8 = prefix_len.parse().map_err(|_| err())?;
        if prefix_len > 32 {
            return Err(err());
        }
        Ok(Ipv4Network { address, prefix_len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_and_parse_errors() {
        let n: Ipv4Network = "10.45.0.0/16".parse().unwrap();
        assert!(n.contains(Ipv4Addr::new(10, 45, 200, 1)));
        assert!(!n.contains(Ipv4Addr::new(10, 46, 0, 1)));
        let all: Ipv4Network = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(Ipv4Addr::new(192, 0, 2, 1)));
        let host: Ipv4Network = "10.0.0.1/32".parse().unwrap();
        assert!(host.contains(Ipv4Addr::new(10, 0, 0, 1)) && !host.contains(Ipv4Addr::new(10, 0, 0, 2)));
        for bad in ["10.0.0.0", "10.0.0.0/33", "10.0.0/8", "x/8", "10.0.0.0/-1"] {
            let e = bad.parse::<Ipv4Network>().unwrap_err();
            assert!(e.to_string().contains(bad) && e.to_string().contains("0..=32"), "{e}");
        }
    }
}
