//! What the meta tests share: a message's exact bytes, and reading them back.

use super::{ClientMeta, MetaError, MetaMessage};

pub(in crate::meta) fn s(text: &str) -> String {
    text.to_owned()
}

/// The exact bytes of a message, as a string.
pub(in crate::meta) fn enc(msg: impl Into<MetaMessage>) -> String {
    String::from_utf8(msg.into().encode()).expect("JSON is UTF-8")
}

pub(in crate::meta) fn dec(port: u8, text: &str) -> Result<MetaMessage, MetaError> {
    MetaMessage::decode(port, text.as_bytes())
}

pub(in crate::meta) fn client_dec(port: u8, text: &str) -> Result<ClientMeta, MetaError> {
    ClientMeta::decode(port, text.as_bytes())
}

/// `msg` is written as exactly `json`, and `json` reads back as `msg`.
#[track_caller]
pub(in crate::meta) fn both_ways(msg: impl Into<MetaMessage>, json: &str) {
    let msg = msg.into();
    assert_eq!(msg.validate(), Ok(()), "{msg:?} validates");
    assert_eq!(enc(msg.clone()), json, "encoding {msg:?}");
    assert_eq!(dec(msg.port(), json), Ok(msg), "decoding {json}");
}

#[track_caller]
pub(in crate::meta) fn client_both_ways(msg: ClientMeta, json: &str) {
    assert_eq!(String::from_utf8(msg.encode()).expect("UTF-8"), json, "encoding {msg:?}");
    assert_eq!(client_dec(msg.port(), json), Ok(msg), "decoding {json}");
}

#[track_caller]
pub(in crate::meta) fn shape_err(port: u8, json: &str, what: &'static str) {
    match dec(port, json) {
        Err(MetaError::Shape { what: w, .. }) => assert_eq!(w, what, "port {port}, {json}"),
        other => panic!("port {port}, {json}: expected a {what} shape error, got {other:?}"),
    }
}
