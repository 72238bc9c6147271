//! One request/response exchange: the request's body as the app reads it
//! and the response as the app writes it, with the ordering rules between
//! them (`100 Continue`, a response that must start before its body, the
//! trailers it declared).

use crate::{
    BodyFraming, DefaultHeaders, RequestHead, RequestInfo, ResponseEncoder, ResponseError,
};

/// Why the app's response message was refused. Nothing of a refused
/// message is written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SendError {
    /// The connection is gone, or the exchange was ended for the app (an
    /// error response went out instead).
    #[error("the client disconnected")]
    Disconnected,
    #[error("the response is already complete")]
    Completed,
    #[error("the response has not started")]
    NotStarted,
    #[error("the response has already started")]
    AlreadyStarted,
    #[error("trailers were not declared when the response started")]
    TrailersNotDeclared,
    #[error("the declared trailers are expected next")]
    ExpectedTrailers,
    /// `101 Switching Protocols` to a request that asked for no upgrade.
    #[error("101 Switching Protocols answers only a request with Upgrade")]
    NoUpgrade,
    #[error("invalid HTTP response: {0}")]
    Invalid(#[from] ResponseError),
}

/// One message of the app's response.
pub enum ResponsePart<'a, H> {
    Start {
        status: u16,
        headers: H,
        /// Trailers follow the body (chunked responses only).
        trailers: bool,
    },
    Body {
        data: &'a [u8],
        more: bool,
    },
    Trailers {
        headers: H,
        more: bool,
    },
    /// `len` body bytes the caller writes itself after what this appends
    /// (a file sent with `sendfile`); `len` from
    /// [`ServerConnection::file_len`](super::ServerConnection::file_len).
    /// The body goes on: a final `Body` ends it once they are written.
    File {
        len: u64,
    },
}

/// What the app gets when it asks for request body.
#[derive(Debug, PartialEq, Eq)]
pub enum BodyRead {
    /// The exchange is over for the app (`http.disconnect` in ASGI).
    Disconnect,
    /// Body bytes (maybe none) and whether more follow.
    Data(Vec<u8>, bool),
    /// Nothing yet: [`Step::Deliver`](super::Step::Deliver) says when.
    /// `continue_written`: a `100 Continue` was appended to the output.
    Wait { continue_written: bool },
}

pub(super) enum ResponseState {
    NotStarted,
    Started(ResponseEncoder),
    /// Body complete; trailers declared and not all sent yet.
    Trailers(ResponseEncoder, Vec<(Vec<u8>, Vec<u8>)>),
    Done,
}

/// The current exchange of a [`ServerConnection`](super::ServerConnection).
pub struct Exchange {
    id: u64,
    head: RequestHead,
    info: RequestInfo,
    pub(super) expect_continue: bool,
    /// `100 Continue` went out.
    pub(super) continue_sent: bool,
    /// The app asked for the body: with `Expect: 100-continue` it is read
    /// only from then on.
    pub(super) body_wanted: bool,
    /// Body received, not yet taken by the app.
    pub(super) body: Vec<u8>,
    pub(super) body_done: bool,
    /// The final (`more: false`) body went to the app.
    final_delivered: bool,
    /// The app waits for body ([`BodyRead::Wait`]).
    pub(super) reader_waiting: bool,
    pub(super) response: ResponseState,
    trailers_declared: bool,
    status: u16,
    /// Ended for the app before its response completed: the connection
    /// went away or answered with an error itself.
    pub(super) abandoned: bool,
    /// Seconds spent waiting for body bytes (the body-rate rule).
    pub(super) body_wait: f64,
    /// When the last timer check saw the connection waiting for body;
    /// `None` while it is not (the first check of a wait credits nothing,
    /// so the rule never fires before its grace period).
    pub(super) body_checked_at: Option<f64>,
}

impl Exchange {
    #[inline]
    pub(super) fn new(id: u64, head: RequestHead) -> Self {
        let info = RequestInfo::of(&head);
        let body_done = matches!(head.body, BodyFraming::Empty);
        Exchange {
            id,
            expect_continue: head.expect_continue && !body_done,
            info,
            head,
            continue_sent: false,
            body_wanted: false,
            body: Vec::new(),
            body_done,
            final_delivered: false,
            reader_waiting: false,
            response: ResponseState::NotStarted,
            trailers_declared: false,
            status: 0,
            abandoned: false,
            body_wait: 0.0,
            body_checked_at: None,
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn head(&self) -> &RequestHead {
        &self.head
    }

    /// The response status (0 before the response started).
    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn response_started(&self) -> bool {
        !matches!(self.response, ResponseState::NotStarted)
    }

    /// The connection closes after this response (a draining server): a
    /// response not started yet says so with `connection: close`.
    pub(super) fn last_on_connection(&mut self) {
        if !self.response_started() {
            self.info.keep_alive = false;
        }
    }

    /// How many of a file's `available` bytes a [`ResponsePart::File`]
    /// may carry now (see `ResponseEncoder::file_len`).
    pub(super) fn file_len(&self, available: u64) -> u64 {
        match &self.response {
            ResponseState::Started(enc) => enc.file_len(available),
            _ => available,
        }
    }

    pub fn response_complete(&self) -> bool {
        matches!(self.response, ResponseState::Done)
    }

    /// The exchange is over for the app: `receive()` says disconnect.
    pub fn is_over(&self) -> bool {
        self.abandoned || self.response_complete()
    }

    pub fn is_abandoned(&self) -> bool {
        self.abandoned
    }

    /// Body the parser has and the app may take now without waiting for
    /// the `100 Continue` it has not asked for.
    #[inline]
    pub(super) fn may_read_body(&self, body_buffer: usize) -> bool {
        !self.body_done
            && self.body.len() < body_buffer
            && (!self.expect_continue || self.body_wanted)
    }

    /// An error response replaced the app's: the exchange is over for it.
    pub(super) fn answered_by_server(&mut self, status: u16) {
        self.status = status;
        self.response = ResponseState::Done;
        self.abandoned = true;
    }

    /// Take what body there is for the app.
    #[inline]
    pub(super) fn take_body(&mut self) -> (Vec<u8>, bool) {
        let more = !self.body_done;
        if !more {
            self.final_delivered = true;
        }
        (std::mem::take(&mut self.body), more)
    }

    /// Whether a read finds something now.
    #[inline]
    pub(super) fn has_body_for_app(&self) -> bool {
        !self.body.is_empty() || (self.body_done && !self.final_delivered)
    }

    /// The app asks for body and none is here: RFC 9110 §10.1.1, `100
    /// Continue` only to 1.1 clients that asked, only once the app wants
    /// the body, and not once a final response started (the client then
    /// sends the body on its own or not at all). True when it is due now.
    #[inline]
    pub(super) fn want_body(&mut self) -> bool {
        self.reader_waiting = true;
        if !self.expect_continue || self.body_wanted {
            return false;
        }
        self.body_wanted = true;
        if self.response_started() || self.final_delivered {
            return false;
        }
        self.continue_sent = true;
        true
    }

    /// Apply one response message, appending to `out`; `Ok(Some(keep))`
    /// when it completed the response (`keep`: the response allows another
    /// request on the connection).
    #[inline]
    pub(super) fn send<'h, H>(
        &mut self,
        out: &mut Vec<u8>,
        part: ResponsePart<'_, H>,
        date: Option<&[u8]>,
        server: Option<&[u8]>,
        defaults: &DefaultHeaders,
    ) -> Result<Option<bool>, SendError>
    where
        H: IntoIterator<Item = (&'h [u8], &'h [u8])>,
    {
        let mark = out.len();
        // In place: the common path (start, then one final body) moves no
        // state around.
        let result = match (&mut self.response, part) {
            (
                ResponseState::NotStarted,
                ResponsePart::Start {
                    status,
                    headers,
                    trailers,
                },
            ) => ResponseEncoder::start(
                out, self.info, status, headers, trailers, date, server, defaults,
            )
            .map(|enc| {
                self.status = status;
                self.trailers_declared = trailers;
                self.response = ResponseState::Started(enc);
                None
            })
            .map_err(SendError::from),
            (ResponseState::Started(enc), ResponsePart::Body { data, more }) => {
                match enc.body(out, data) {
                    Err(e) => Err(e.into()),
                    Ok(()) if more => Ok(None),
                    Ok(()) if self.trailers_declared => {
                        let state = std::mem::replace(&mut self.response, ResponseState::Done);
                        if let ResponseState::Started(enc) = state {
                            self.response = ResponseState::Trailers(enc, Vec::new());
                        }
                        Ok(None)
                    }
                    Ok(()) => match enc.finish(out, std::iter::empty()) {
                        Ok(()) => {
                            let keep = enc.keep_alive();
                            self.response = ResponseState::Done;
                            Ok(Some(keep))
                        }
                        Err(e) => Err(e.into()),
                    },
                }
            }
            (ResponseState::Started(enc), ResponsePart::File { len }) => {
                enc.file(out, len).map(|()| None).map_err(SendError::from)
            }
            (ResponseState::Trailers(enc, held), ResponsePart::Trailers { headers, more }) => {
                held.extend(headers.into_iter().map(|(n, v)| (n.to_vec(), v.to_vec())));
                if more {
                    Ok(None)
                } else {
                    let pairs = held.iter().map(|(n, v)| (n.as_slice(), v.as_slice()));
                    match enc.finish(out, pairs) {
                        Ok(()) => {
                            let keep = enc.keep_alive();
                            self.response = ResponseState::Done;
                            Ok(Some(keep))
                        }
                        Err(e) => Err(e.into()),
                    }
                }
            }
            (ResponseState::NotStarted, _) => Err(SendError::NotStarted),
            (ResponseState::Started(_), ResponsePart::Start { .. }) => {
                Err(SendError::AlreadyStarted)
            }
            (ResponseState::Started(_), _) => Err(SendError::TrailersNotDeclared),
            (ResponseState::Trailers(..), _) => Err(SendError::ExpectedTrailers),
            (ResponseState::Done, _) => Err(SendError::Completed),
        };
        if result.is_err() {
            out.truncate(mark);
        }
        result
    }
}
