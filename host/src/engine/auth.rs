//! The form a game may ask a player to fill in before it plays (`AUTH_DATA`), and the host's checks of the answer (`AUTH_RESPONSE` → `AUTH_RESULT`).
//!
//! A game that wants one inserts an [`AuthForm`] resource from its plugin (the reference
//! game has none: its players play at once). The server then sends the form's [`AuthData`] to a
//! player who wants to play — at its welcome, or at `/play` — and keeps it watching until
//! an answer passes [`AuthForm::check`]: `AUTH_RESULT null`, and the player joins the game
//! with the values kept ([`crate::engine::server::ServerCore::auth_values`]). A refused
//! answer gets `AUTH_RESULT {"field": "why"}` and the player may answer again.
//!
//! Each param's `options` are checked on the host, whatever the client did:
//!
//! | option | rule |
//! |--------|------|
//! | `required: true` | a value that is not `null` or `""` |
//! | `maxlength: n` | a string of at most `n` characters |
//! | `numeric: true`, `min`, `max` | a number (or a string of one) within the bounds |
//! | `options: [v, …]` or `[{"value": v, …}, …]` | one of the values |
//! | `validator: "key"` | the game's check [`AuthForm::validators`]`["key"]` |
//!
//! A value must be a string, a number or a boolean; a field the form does not have is
//! refused (`token`, the lobby JWT, aside). `regExp` is the client's hint only: a host-side
//! pattern is a validator. A field left out takes the param's `value`.
//!
//! An identity check (the lobby JWT in `token`, from which the host will take the
//! nickname) plugs in here, beside the field checks: the form's answer is the one place
//! where a player says who it is before it plays.

use std::collections::BTreeMap;

use bevy::prelude::*;
use serde_json::{Map, Value};
use vimp_netcode::meta::{AuthData, AuthParam, AuthResponse};

/// A host-side check of one field's value: `Err` is the text the player sees next to the field.
pub type Validator = fn(&Value) -> Result<(), String>;

/// The field of an answer that carries the lobby JWT rather than a form value.
pub const TOKEN_FIELD: &str = "token";

/// The game's form (see the module docs): a resource its plugin inserts into the host.
#[derive(Resource, Clone, Debug)]
pub struct AuthForm {
    /// What clients get on `AUTH_DATA`.
    pub data: AuthData,
    /// The game's checks, by the key a param's `options.validator` names (their code never
    /// goes over the wire).
    pub validators: BTreeMap<String, Validator>,
}

/// Why an answer was refused: field name → the text the player sees ([`vimp_netcode::meta::AuthResult::Rejected`]).
pub type AuthErrors = BTreeMap<String, String>;

impl AuthForm {
    /// Checks an answer: the form's values (a field left out takes its param's `value`), or
    /// an error per field that fails.
    pub fn check(&self, answer: &AuthResponse) -> Result<Map<String, Value>, AuthErrors> {
        let mut errors = AuthErrors::new();
        for field in answer.0.keys() {
            if field != TOKEN_FIELD && !self.data.params.iter().any(|p| &p.name == field) {
                errors.insert(field.clone(), "no such field".to_owned());
            }
        }
        let mut values = Map::new();
        for param in &self.data.params {
            let value = answer.0.get(&param.name).unwrap_or(&param.value);
            match self.check_param(param, value) {
                Ok(()) => {
                    values.insert(param.name.clone(), value.clone());
                }
                Err(why) => {
                    errors.insert(param.name.clone(), why);
                }
            }
        }
        if errors.is_empty() { Ok(values) } else { Err(errors) }
    }

    /// One field's value against its param's options and validator.
    fn check_param(&self, param: &AuthParam, value: &Value) -> Result<(), String> {
        let option = |key: &str| param.options.get(key);
        let flag = |key: &str| option(key).and_then(Value::as_bool).unwrap_or(false);
        if !(value.is_null() || value.is_string() || value.is_number() || value.is_boolean()) {
            return Err("must be a single value".to_owned());
        }
        if value.is_null() || value.as_str() == Some("") {
            return if flag("required") { Err("required".to_owned()) } else { Ok(()) };
        }
        if let (Some(max), Some(text)) = (option("maxlength").and_then(Value::as_u64), value.as_str())
            && text.chars().count() as u64 > max
        {
            return Err(format!("at most {max} characters"));
        }
        if flag("numeric") {
            check_number(value, option("min").and_then(Value::as_f64), option("max").and_then(Value::as_f64))?;
        }
        if let Some(choices) = option("options").and_then(Value::as_array) {
            let listed = |choice: &Value| choice.get("value").unwrap_or(choice) == value;
            if !choices.iter().any(listed) {
                return Err("not one of the choices".to_owned());
            }
        }
        match option("validator").and_then(Value::as_str) {
            Some(key) => match self.validators.get(key) {
                Some(validator) => validator(value),
                None => Err("cannot be checked".to_owned()),
            },
            None => Ok(()),
        }
    }
}

/// A number, or a string of one, within `min..=max`.
fn check_number(value: &Value, min: Option<f64>, max: Option<f64>) -> Result<(), String> {
    let n = value.as_f64().or_else(|| value.as_str().and_then(|s| s.trim().parse::<f64>().ok()));
    let Some(n) = n.filter(|n| n.is_finite()) else { return Err("must be a number".to_owned()) };
    if let Some(min) = min.filter(|min| n < *min) {
        return Err(format!("at least {min}"));
    }
    if let Some(max) = max.filter(|max| n > *max) {
        return Err(format!("at most {max}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn param(name: &str, value: Value, options: Value) -> AuthParam {
        AuthParam { name: name.to_owned(), value, options }
    }

    fn even(value: &Value) -> Result<(), String> {
        match value.as_u64() {
            Some(n) if n % 2 == 0 => Ok(()),
            _ => Err("must be even".to_owned()),
        }
    }

    /// A form with one field of each kind of rule.
    fn form() -> AuthForm {
        AuthForm {
            data: AuthData {
                elems: json!({}),
                params: vec![
                    param("motto", json!(""), json!({ "required": true, "maxlength": 5 })),
                    param("age", json!(null), json!({ "numeric": true, "min": 13, "max": 99 })),
                    param("model", json!("light"), json!({ "options": [{ "value": "light" }, { "value": "heavy" }] })),
                    param("seat", json!(2), json!({ "validator": "even" })),
                    param("note", json!(null), json!({ "validator": "missing" })),
                ],
                texts: None,
            },
            validators: BTreeMap::from([("even".to_owned(), even as Validator)]),
        }
    }

    fn answer(value: Value) -> AuthResponse {
        AuthResponse(value.as_object().cloned().unwrap_or_default())
    }

    fn errors(pairs: &[(&str, &str)]) -> AuthErrors {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_good_answer_gives_the_values_and_defaults_fill_what_was_left_out() {
        let form = form();
        let values = form.check(&answer(json!({ "motto": "gg", "age": "30", "token": "jwt" }))).expect("passes");
        assert_eq!(
            Value::Object(values),
            json!({ "motto": "gg", "age": "30", "model": "light", "seat": 2, "note": null }),
            "the token is not a form value"
        );
        let heavy = form.check(&answer(json!({ "motto": "x", "model": "heavy", "seat": 4 }))).expect("passes");
        assert_eq!((heavy["model"].clone(), heavy["seat"].clone()), (json!("heavy"), json!(4)));
    }

    #[test]
    fn every_failing_field_gets_its_error() {
        let form = form();
        let bad = json!({ "motto": "", "age": 7, "model": "tiny", "seat": 3, "extra": 1 });
        assert_eq!(
            form.check(&answer(bad)),
            Err(errors(&[
                ("age", "at least 13"),
                ("extra", "no such field"),
                ("model", "not one of the choices"),
                ("motto", "required"),
                ("seat", "must be even"),
            ]))
        );
        let more = json!({ "motto": "toolong", "age": "old", "seat": [2], "note": "x" });
        assert_eq!(
            form.check(&answer(more)),
            Err(errors(&[
                ("age", "must be a number"),
                ("motto", "at most 5 characters"),
                ("note", "cannot be checked"),
                ("seat", "must be a single value"),
            ]))
        );
        assert_eq!(form.check(&answer(json!({ "motto": "a", "age": 100 }))), Err(errors(&[("age", "at most 99")])));
        assert_eq!(form.check(&answer(json!({}))), Err(errors(&[("motto", "required")])));
    }

    proptest::proptest! {
        /// Whatever a peer answers, the check gives values for exactly the form's fields, or
        /// errors only for fields the answer or the form has; it never panics.
        #[test]
        fn any_answer_is_checked_without_panicking(
            fields in proptest::collection::vec(("[a-z]{1,6}", crate::engine::auth::tests::any_value()), 0..6),
        ) {
            let form = form();
            let answer = AuthResponse(fields.into_iter().collect());
            match form.check(&answer) {
                Ok(values) => {
                    let mut names: Vec<&String> = values.keys().collect();
                    names.sort();
                    let mut want: Vec<&String> = form.data.params.iter().map(|p| &p.name).collect();
                    want.sort();
                    proptest::prop_assert_eq!(names, want);
                }
                Err(errors) => {
                    proptest::prop_assert!(!errors.is_empty());
                    for field in errors.keys() {
                        let known = form.data.params.iter().any(|p| &p.name == field) || answer.0.contains_key(field);
                        proptest::prop_assert!(known, "{field}");
                    }
                }
            }
        }
    }

    /// Any small JSON value.
    pub(super) fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            ".{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| proptest::collection::vec(inner, 0..3).prop_map(Value::Array))
    }
}
