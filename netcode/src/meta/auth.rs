//! Authorisation: the form the server sends (port 1), its verdict (port 2) and the filled form a client sends back (port 1).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::wire::{Part, Payload, Unread, present};
use super::{AUTH_DATA, AUTH_RESPONSE, AUTH_RESULT, MetaError};

/// One field of the auth form: `{"name":…,"value":…,"options":…}`.
///
/// `value` and `options` are the game's (options: control, label, validator key…) and are
/// passed through; when missing on the wire they read as `null`, and are always written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthParam {
    /// The field's name.
    pub name: String,
    /// Its default value.
    #[serde(default)]
    pub value: Value,
    /// Its descriptor (control, label, limits…).
    #[serde(default)]
    pub options: Value,
}

impl AuthParam {
    const PART: Part = Part { what: "auth param", expected: "{\"name\": string, \"value\"?: any, \"options\"?: any}" };
}

/// The auth form (port 1): `{"elems":…,"params":[…],"texts":…}`, `texts` left out when `None`.
///
/// `elems` (the DOM ids the form uses) and `texts` (`{title, sections}`) are the game's
/// and passed through as they are.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(into = "AuthForm<AuthParam>")]
pub struct AuthData {
    /// The DOM ids of the auth screen the game uses.
    pub elems: Value,
    /// The form's fields.
    pub params: Vec<AuthParam>,
    /// Title and sections, if any.
    pub texts: Option<Value>,
}

impl AuthData {
    const PART: Part =
        Part { what: "auth data", expected: "{\"elems\": any, \"params\": [params…], \"texts\"?: any}" };
}

/// `{"elems":…,"params":[…],"texts":…}`; the params are [`AuthParam`]s when written,
/// [`Unread`] when read. A `"texts": null` read is `Some(null)`, and written back so.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthForm<P> {
    elems: Value,
    params: Vec<P>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    texts: Option<Value>,
}

impl From<AuthData> for AuthForm<AuthParam> {
    fn from(AuthData { elems, params, texts }: AuthData) -> Self {
        Self { elems, params, texts }
    }
}

impl Payload<AUTH_DATA> for AuthData {
    fn read(value: Value) -> Result<Self, MetaError> {
        let AuthForm { elems, params, texts } = Self::PART.read_object::<AuthForm<Unread>>(value)?;
        let params = params.into_iter().map(|param| AuthParam::PART.read_object(param)).collect::<Result<_, _>>()?;
        Ok(Self { elems, params, texts })
    }
}

/// The auth verdict (port 2): `null` when accepted, else `{"field":"error",…}`.
///
/// Errors are kept sorted by field, so they are written in that order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Option<BTreeMap<String, String>>", into = "Option<BTreeMap<String, String>>")]
pub enum AuthResult {
    /// `null`: no errors.
    Accepted,
    /// Field name → error text.
    Rejected(BTreeMap<String, String>),
}

impl AuthResult {
    const PART: Part = Part { what: "auth result", expected: "null or an object of field → error string" };
}

impl From<Option<BTreeMap<String, String>>> for AuthResult {
    fn from(errors: Option<BTreeMap<String, String>>) -> Self {
        errors.map_or(Self::Accepted, Self::Rejected)
    }
}

impl From<AuthResult> for Option<BTreeMap<String, String>> {
    fn from(result: AuthResult) -> Self {
        match result {
            AuthResult::Accepted => None,
            AuthResult::Rejected(errors) => Some(errors),
        }
    }
}

impl Payload<AUTH_RESULT> for AuthResult {
    fn read(value: Value) -> Result<Self, MetaError> {
        Self::PART.read(value)
    }
}

/// The filled auth form a client sends (port 1): an object of field → value plus the lobby JWT in `token`.
///
/// Kept as the object it is; the host checks fields against its own schema and takes the
/// nick from the verified token, not from a field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AuthResponse(pub Map<String, Value>);

impl AuthResponse {
    const PART: Part = Part { what: "auth response", expected: "an object" };

    /// The `token` field, if it is a string.
    pub fn token(&self) -> Option<&str> {
        self.0.get("token").and_then(Value::as_str)
    }
}

impl Payload<AUTH_RESPONSE> for AuthResponse {
    fn read(value: Value) -> Result<Self, MetaError> {
        Self::PART.read_object(value)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::meta::testing::{both_ways, client_both_ways, client_dec, dec, s, shape_err};
    use crate::meta::{ClientMeta, MetaMessage};

    #[test]
    fn auth_data_forms() {
        both_ways(
            AuthData {
                elems: json!({"authId": "auth", "fieldsId": "fields"}),
                params: vec![AuthParam {
                    name: s("nick"),
                    value: json!(""),
                    options: json!({"control": "input", "maxlength": 16, "validator": "nick"}),
                }],
                texts: Some(json!({"title": "Tanks", "sections": []})),
            },
            r#"{"elems":{"authId":"auth","fieldsId":"fields"},"params":[{"name":"nick","value":"","options":{"control":"input","maxlength":16,"validator":"nick"}}],"texts":{"title":"Tanks","sections":[]}}"#,
        );
        both_ways(AuthData { elems: json!({}), params: vec![], texts: None }, r#"{"elems":{},"params":[]}"#);
        // A param's missing value and options read as null.
        assert_eq!(
            dec(AUTH_DATA, r#"{"params":[{"name":"team"}],"elems":{}}"#),
            Ok(MetaMessage::AuthData(AuthData {
                elems: json!({}),
                params: vec![AuthParam { name: s("team"), value: Value::Null, options: Value::Null }],
                texts: None,
            }))
        );
        for json in [
            r#"{"params":[]}"#,
            r#"{"elems":{}}"#,
            r#"{"elems":{},"params":{}}"#,
            r#"{"elems":{},"params":[],"x":1}"#,
            "[]",
        ] {
            shape_err(AUTH_DATA, json, "auth data");
        }
        for json in [
            r#"{"elems":{},"params":[{}]}"#,
            r#"{"elems":{},"params":[{"name":"a","x":1}]}"#,
            r#"{"elems":{},"params":[1]}"#,
        ] {
            shape_err(AUTH_DATA, json, "auth param");
        }
    }

    #[test]
    fn auth_result_forms() {
        both_ways(AuthResult::Accepted, "null");
        let errors = BTreeMap::from([(s("nick"), s("taken")), (s("pass"), s("short"))]);
        both_ways(AuthResult::Rejected(errors.clone()), r#"{"nick":"taken","pass":"short"}"#);
        // Written sorted by field, whatever the order read.
        assert_eq!(
            dec(AUTH_RESULT, r#"{"pass":"short","nick":"taken"}"#),
            Ok(MetaMessage::AuthResult(AuthResult::Rejected(errors)))
        );
        for json in [r#"{"nick":1}"#, "[]", r#""taken""#] {
            shape_err(AUTH_RESULT, json, "auth result");
        }
    }

    #[test]
    fn auth_response_form() {
        let json = r#"{"nick":"bob","model":2,"token":"e30.e30.sig"}"#;
        let Ok(ClientMeta::AuthResponse(response)) = client_dec(AUTH_RESPONSE, json) else { panic!("decodes") };
        assert_eq!(response.token(), Some("e30.e30.sig"));
        assert_eq!(response.0.get("model"), Some(&json!(2)));
        client_both_ways(ClientMeta::AuthResponse(response), json);
        assert_eq!(AuthResponse::default().token(), None);
        assert_eq!(
            client_dec(AUTH_RESPONSE, "[]"),
            Err(MetaError::Shape { what: "auth response", expected: "an object" })
        );
    }
}
