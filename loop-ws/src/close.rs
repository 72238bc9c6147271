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

    /// May this code appear in a close frame sent by an endpoint?
    pub fn is_sendable(self) -> bool {
        todo!("loop-ws: close code rules")
    }
}
