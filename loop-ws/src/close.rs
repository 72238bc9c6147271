//! Close codes (RFC 6455 §7.4).

/// A close status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CloseCode(pub u16);

impl CloseCode {
    pub const NORMAL: CloseCode = CloseCode(1000);
    pub const GOING_AWAY: CloseCode = CloseCode(1001);
    pub const PROTOCOL_ERROR: CloseCode = CloseCode(1002);
    pub const UNSUPPORTED_DATA: CloseCode = CloseCode(1003);
    /// Never on the wire: the close frame had no code.
    pub const NO_STATUS: CloseCode = CloseCode(1005);
    /// Never on the wire: the connection ended without a close frame.
    pub const ABNORMAL: CloseCode = CloseCode(1006);
    pub const INVALID_DATA: CloseCode = CloseCode(1007);
    pub const POLICY_VIOLATION: CloseCode = CloseCode(1008);
    pub const TOO_BIG: CloseCode = CloseCode(1009);
    pub const INTERNAL_ERROR: CloseCode = CloseCode(1011);
    pub const SERVICE_RESTART: CloseCode = CloseCode(1012);

    /// May this code appear in a close frame sent by an endpoint? RFC 6455
    /// §7.4.1 and the IANA registry: 1000–1003 and 1007–1014 (1004 is
    /// reserved, 1005, 1006 and 1015 are never on the wire), and 3000–4999
    /// for libraries and applications. The same rule decides which codes a
    /// received close frame may carry (others fail the session with 1002).
    pub fn is_sendable(self) -> bool {
        matches!(self.0, 1000..=1003 | 1007..=1014 | 3000..=4999)
    }
}

#[cfg(test)]
mod tests {
    use super::CloseCode;

    #[test]
    fn sendable_codes() {
        let ok = [
            1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999,
            4000, 4999,
        ];
        for c in ok {
            assert!(CloseCode(c).is_sendable(), "{c}");
        }
        let bad = [
            0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535,
        ];
        for c in bad {
            assert!(!CloseCode(c).is_sendable(), "{c}");
        }
    }
}
