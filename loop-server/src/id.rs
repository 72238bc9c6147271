//! Names for what the driver holds: a connection is a registry slot and
//! that slot's generation, so the id of a closed connection never reaches a
//! later one in the same slot (readiness reported for an fd number that was
//! closed and reused, an app's `send()` for a connection long gone).

/// One connection of a [`Driver`](crate::Driver).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnId {
    pub(crate) slot: u32,
    pub(crate) generation: u32,
}

/// One exchange (a request's life) of a connection; ids count up per
/// connection.
pub type ExchangeId = u64;

/// What the host registers an fd with and hands back with its readiness:
/// a connection or a listener, in one `usize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Token {
    Conn(ConnId),
    Listener(usize),
}

const LISTENER: usize = 1 << (usize::BITS - 1);

impl Token {
    pub fn to_usize(self) -> usize {
        match self {
            Token::Conn(id) => ((id.generation as usize) << 32) | id.slot as usize,
            Token::Listener(i) => LISTENER | i,
        }
    }

    pub fn from_usize(raw: usize) -> Token {
        if raw & LISTENER != 0 {
            Token::Listener(raw & !LISTENER)
        } else {
            Token::Conn(ConnId {
                slot: raw as u32,
                generation: ((raw >> 32) & 0x7fff_ffff) as u32,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        let conn = ConnId {
            slot: 7,
            generation: 0x7fff_fffe,
        };
        for t in [Token::Conn(conn), Token::Listener(3), Token::Listener(0)] {
            assert_eq!(Token::from_usize(t.to_usize()), t);
        }
    }
}
